"""Program text to graph, as it is parsed: one input node per variable, one
node per operation.

The parser (parse.py) calls a method of `Lowering` at each reduction of the
grammar, named after the rule's alias, with the value stack, whose top
`size` items are the values of the rule's children: the method replaces
them with the rule's value (the hot ones in place; the others take the
children as a list, through _children) and emits its nodes there and
then. There is no syntax
tree: an expression's value is `(start, end, id)`, the place of its text and
the id of the node that holds it (its own operation's, or a variable's, a
block call's result, a parenthesised value's).

A block is lowered once, when it is defined, into a `Template`: its body's
nodes with slots for the parameters. Each call copies the template onto the
tape, so a call costs one copy per node, however deeply blocks call blocks,
and a template's size is known before it is copied.
"""

import re
from itertools import repeat
from operator import itemgetter

from ..core.branches import shifted
from ..core.graph import Branch, Graph, Node
from ..core.graph import CARRY, FREE, SCAN, Loop
from ..core.primitives import CONSTANTS, FUNCTIONS, LOGIC
from ..errors import AdgradError, did_you_mean
from ..core.array_rules import names_a_size
from .array_lower import ARRAY_NAMES, MAX_LITERAL, REDUCING, ArrayLowering, Keyword
from .copier import LARGEST, WARM, copier
from .parse import parse

# Well past any program of 10^6 tokens: the tape and the blocks' stored bodies
# together, checked before copying, as a block that calls a block twice doubles.
MAX_NODES = 2_000_000
# A block's body, its calls inlined: twenty short lines that each call the one
# before twice would otherwise copy two million nodes before the tape's limit.
MAX_BODY = 250_000
# All blocks' bodies as stored, calls inlined: a chain `fN(a) = fN-1(a) + 1`
# stores N^2/2 nodes for a graph of 2N, and is refused long before memory runs out.
MAX_STORED = 500_000

# A loop's iterations, and loops within loops: the 10^6 of a deep recurrence
# runs; 10^8 is a typo's zeros, refused before it runs for hours.
MAX_ITERATIONS = 10_000_000
MAX_NESTING = 4

KEYWORDS = frozenset({'if', 'and', 'or', 'not', 'input', 'grad', 'for'})
ALIASES = {'ln': 'log', 'detach': 'stop_gradient'}
# Names check_name() has something to say about, besides blocks.
_RESERVED = frozenset(KEYWORDS | set(FUNCTIONS) | set(ALIASES) | set(CONSTANTS))
# The grammar's COMPARE terminal to its op, from the table's own symbols.
_COMPARISONS = {row.symbol: row.name for row in LOGIC if row.symbol and not row.symbol.isalpha()}
_UPDATES = {'+=': 'add', '-=': 'sub', '*=': 'mul', '/=': 'div', '^=': 'pow'}
_new_node = tuple.__new__   # Node(...) without NamedTuple's keyword handling: 3x cheaper
_NODE = repeat(Node)        # for map(_new_node, _NODE, rows): endless, so one serves every map
_VALUE_ID = itemgetter(2)   # of an expression's value (start, end, node id)


def lower(source):
    """Parse and lower a program into a Graph."""
    lowering = Lowering(source)
    parse(source, lowering)
    return lowering.graph()


def _tensors():
    from ..core import tensors  # only for a program with arrays: it is NumPy's path
    return tensors


def constant(source):
    """The value of a constant expression such as `pi/4`, or an array literal."""
    from ..core.passes import forward
    graph = lower(source)
    if graph.inputs:
        name = next(iter(graph.inputs))
        raise AdgradError("a value must be a number or a constant expression such as pi/4; "
                          f"'{name}' is a variable")
    if graph.shapes is not None:   # an array literal, or an array function
        from ..core import tensors
        value = tensors.evaluate(graph, {})[graph.output]
        return value if value.ndim else float(value)
    return forward(graph, {})[graph.output]


class Template:
    """A block's body, lowered once. Node ids in `nodes` are local and
    written ~j (negative); non-negative ids point at the tape (global inputs
    and bindings the body uses). The first len(params) nodes are the
    parameters' slots. A node's `block` is None or an index into
    `instances`, the calls made in the body. `outputs` holds the local ids of the body's value (or
    of each partial, for a grad declaration), and `grad` the block's
    declared derivative, another Template. (A plain class: dataclasses
    imports inspect, which every command's start-up would pay for.)"""

    __slots__ = ('name', 'params', 'nodes', 'branches', 'instances', 'outputs', 'grad', '_plan',
                 'copies', 'fast', 'size')

    def __init__(self, name, params):
        self.name, self.params = name, params
        self.nodes, self.branches, self.outputs, self.grad = [], [], (), None
        self.instances = []   # the calls made in the body: (parent call's index or -1, block name)
        self._plan = None
        self.copies = 0       # onto the tape so far, the general way
        self.fast = None      # the body's own copy function, once it has one: see warm()

    def plan(self):
        """The body's nodes as columns, made once for every copy (see
        Lowering.copy): the tape ids it uses; op, name, value and span of
        each copied node; where its block comes from; and its arguments as
        slices of one flat tuple gathered from the copy's table of ids,
        which holds the parameters' arguments, then the new nodes' ids, then
        the tape ids the body uses."""
        if self._plan is None:
            body = self.nodes[len(self.params):]
            tape_ids, references = self.references()
            flat, slices = [], []
            for refs in references:
                slices.append(slice(len(flat), len(flat) + len(refs)))
                flat += refs
            calls = len(self.instances)   # a node outside any call gets the copy's own call
            self._plan = (tuple(tape_ids), _gatherer(flat), slices,
                          [node.op for node in body], [node.name for node in body],
                          [node.value for node in body], [node.span for node in body],
                          [calls if node.block is None else node.block for node in body])
        return self._plan

    def references(self):
        """The tape ids the body uses, and each body node's args as indices
        into a copy's table of ids (see plan)."""
        size = len(self.nodes)
        body = self.nodes[len(self.params):]
        tape_ids = sorted({a for node in body for a in node.args if a >= 0})
        where = {a: size + k for k, a in enumerate(tape_ids)}
        return tape_ids, [tuple(~a if a < 0 else where[a] for a in node.args) for node in body]

    def warm(self):
        """Count a copy onto the tape; from the copier.WARM-th on, the body's
        own copy function (`fast`), if the body is small and has no ifs."""
        self.copies += 1
        if self.copies < WARM or self.branches or len(self.nodes) - len(self.params) > LARGEST:
            return None
        tape_ids, _, _, ops, names, values, spans, owners = self.plan()
        self.size = len(ops)
        self.fast = copier(len(self.params), tape_ids, self.references()[1], ops, names, values,
                           spans, owners, self.outputs, len(self.instances) + 1)
        return self.fast


def _gatherer(indices):
    """A function of a list that returns its items at `indices` as a tuple, in C."""
    if len(indices) > 1:
        return itemgetter(*indices)
    if indices:
        return lambda table, i=indices[0]: (table[i],)
    return lambda table: ()


def _plural(n, word):
    return f'{n} {word}' + ('' if n == 1 else 's')


def _clip(name, limit=40):
    return name if len(name) <= limit else name[:limit - 1] + '…'


def _children(method):
    """A builder method of its rule's children, as a list, that returns the
    rule's value: as the driver calls it, on the value stack (parse.py)."""
    def reduce(self, stack, size):
        children = stack[-size:]
        del stack[-size:]
        stack.append(method(self, children))
    reduce.__name__ = method.__name__
    return reduce


class _LoopScope:
    """A loop being read: its range, its index's node, and its slots,
    {(kind, id outside): input node in the body}; `saved` holds the scope
    around it while its body is read."""

    __slots__ = ('start', 'first', 'count', 'name', 'reverse', 'index', 'slots', 'kinds',
                 'names_of', 'taken', 'saved', 'bound', 'stacks')

    def __init__(self, start, first, count, name, reverse):
        self.start, self.first, self.count, self.name = start, first, count, name
        self.reverse = reverse
        self.index, self.slots, self.kinds, self.names_of = None, {}, {}, {}
        self.taken, self.saved, self.bound = {name}, None, {}
        self.stacks = {}   # X of `X[i] = ...` -> the body id of its value


class Lowering(ArrayLowering):
    """The builder the parser drives: one method per rule alias of the grammar."""

    def __init__(self, source):
        self.source = source
        self.nodes = []           # the tape
        self.input_ids = {}          # variable name -> input node id
        self.defaults = {}
        self.shapes = None        # of an array program: name -> the shape its `input` declares
        self.keywords = 0         # NAME=value arguments read, not yet taken by their call
        self.literal_entries = 0  # in the array literals read so far (MAX_LITERAL)
        self.declared = set()     # names declared with `input`
        self.names = {}           # name -> node id of its current version
        self.versions = {}        # name -> how many versions it has had
        self.blocks = {}          # block name -> Template
        self.called = set()       # blocks called so far
        self.instances = {}       # block name -> calls copied onto the tape so far
        self.branches = []
        self.marks = []           # where an `if`'s condition and branches start
        self.body = None          # the Template being read, inside a block or grad body
        self.target = self.nodes  # where nodes go: the tape, or the body's nodes
        self.stored = 0           # nodes in the finished blocks' bodies
        self.limit = MAX_NODES    # the length the target may reach: see enter()
        self.flip = 0             # ids on the tape are i, in a body ~i: i ^ flip
        self.last_bare = None          # (node id, position) of a bare expression statement
        self.output = None
        self.statements = 0
        self.mark = 0             # tape length when the current statement began
        self.notes = []
        self.loops = []           # the loops being read, outermost first (_LoopScope)
        self.loop_ids = []        # the loop nodes of the tape (or of the body being read)

    # ---- emitting ----

    def error(self, message, pos):
        return AdgradError(message, self.source, pos)

    def emit(self, op, args, span, name=None, value=None, block=None):
        target = self.target
        if len(target) >= self.limit:
            raise self.too_many(span)
        target.append(_new_node(Node, (op, args, name, value, span, block)))
        return (len(target) - 1) ^ self.flip

    def too_many(self, span):
        if self.body is not None and self.stored + len(self.target) >= MAX_STORED:
            message = (f"the program's blocks hold more than {MAX_STORED:,} nodes, each body "
                       'with its calls inlined; adgrad stops here')
        else:
            message = f'the program has more than {MAX_NODES:,} nodes; adgrad stops here'
        return AdgradError(message, self.source, span[1] - 1 if span else None)

    def enter(self, template):
        """Emit into a block's body from here on: as far as the bodies' budget
        and the whole program's (the tape's nodes counted) allow."""
        self.body, self.target, self.flip = template, template.nodes, -1
        self.limit = min(MAX_STORED - self.stored, MAX_NODES - self.stored - len(self.nodes))

    def leave(self):
        """Back to the tape, the body just read counted as stored."""
        self.stored += len(self.body.nodes)
        self.body, self.target, self.flip = None, self.nodes, 0
        self.limit = MAX_NODES - self.stored

    def resolve(self, name, start, end):
        """The node a name refers to here: a parameter, a binding's current
        version, an input (made at first use), or a constant."""
        if self.body is not None and name in self.body.params:
            return ~self.body.params.index(name)
        node_id = self.names.get(name)
        if node_id is not None:
            return node_id
        if self.loops:
            node_id = self.outside(len(self.loops) - 1, name, (start, end))
            if node_id is not None:
                return node_id
        if name in CONSTANTS:
            return self.emit('const', (), (start, end), name=name, value=CONSTANTS[name])
        if name in FUNCTIONS or name in self.blocks or name in ALIASES:
            raise self.error(f"'{name}' is a function; call it as {name}(...)", start)
        if name in KEYWORDS:
            raise self.error(f"'{name}' is a keyword, not a value", start)
        if any(name in scope.stacks for scope in self.loops):
            raise self.error(f"'{_clip(name)}' is stacked by this loop, an array once it ends; "
                             'here, read the value it stacks', start)
        node_id = self.input_ids.get(name)
        if node_id is None and self.shapes:
            node_id = self.size_value(name, (start, end))
        if node_id is None:
            # Always on the tape, even while a body is read: an input belongs
            # to the whole program, not to each call (nor to a loop's body).
            tape = self.top_tape()
            tape.append(_new_node(Node, ('input', (), name, None, (start, end), None)))
            node_id = self.input_ids[name] = len(tape) - 1
            if self.loops:
                return self.outside(len(self.loops) - 1, name, (start, end))
        return node_id

    # ---- statements ----

    def statement_begins(self):
        if self.last_bare is not None:
            raise self.error('only the last statement may be a bare expression; '
                             'name this one with NAME = ...', self.last_bare[1])
        self.statements += 1

    def statement_ends(self):
        self.mark = len(self.nodes)

    def bare(self, stack, size):
        self.statement_begins()
        start, _, node_id = stack[-1]
        if self.loops:
            raise self.error("a loop body binds names: write NAME = ... here, or close the "
                             "loop with '}' before this line", start)
        stack[-1] = None
        self.last_bare = (node_id, start)
        self.output = node_id
        self.statement_ends()

    def binding(self, stack, size):
        name, _, (start, end, node_id) = stack[-3:]
        del stack[-2:]
        stack[-1] = None
        if self.last_bare is not None:
            self.statement_begins()   # raises
        self.statements += 1
        self.bind(name, node_id, (start, end))

    @_children
    def update(self, children):
        name, (_, op_start, _, op), value = children
        self.statement_begins()
        _, name_start, _, text = name
        current = self.names.get(text)
        if current is None and self.loops:
            current = self.outside(len(self.loops) - 1, text, (name_start, name_start + len(text)))
        if current is None:
            raise self.error(f"'{_clip(text)}' has no value to update: bind it first "
                             f'({text} = ...) or declare it (input {text} = ...)', name_start)
        _, end, node_id = value
        self.bind(name, self.emit(_UPDATES[op], (current, node_id), (name_start, end)),
                  (name_start, end))

    def bind(self, token, node_id, span):
        _, start, _, name = token
        if name in _RESERVED or name in self.blocks:
            self.check_name(name, start, 'binding')
        if self.shapes:
            self.not_a_size(name, start, 'binding')
        if name in self.input_ids and name not in self.declared:
            use = self.top_tape()[self.input_ids[name]].span[0]
            if self.loops:   # x = x*2 in a body: the loop's start value is missing
                raise self.error(f"'{_clip(name)}' is read before it has a value: give it one "
                                 f'before the loop ({name} = ... or input {name} = ...)', use)
            raise self.error(f"'{_clip(name)}' is used before its definition; to start from "
                             f'a value, declare it: input {_clip(name)} = 1', use)
        versions, nodes = self.versions, self.nodes
        count = versions[name] = versions.get(name, 0) + 1
        shown = name if count == 1 else f'{name}#{count}'
        op, args, own_name, value, own_span, block = nodes[node_id]
        if own_name is None and node_id == len(nodes) - 1 and op != 'input':
            nodes[node_id] = _new_node(Node, (op, args, shown, value, own_span, block))
        else:
            # Already someone's node (a variable, another binding, a block's
            # argument): the new name gets a node of its own.
            node_id = self.emit('pos', (node_id,), span, name=shown)
        self.names[name] = node_id
        self.output = node_id
        self.mark = len(nodes)   # the statement ends
        if self.loops:   # where the loop's part for this name will point
            self.loops[-1].bound[name] = span

    @_children
    def stacked(self, children):
        """`X[i] = value` in a loop's body: X stacks the value of every
        iteration, an array with a row per index after the loop."""
        (_, start, _, name), _, subscripts, _, _, (_, end, node_id) = children
        if self.last_bare is not None:
            self.statement_begins()   # raises
        self.statements += 1
        if not self.loops:
            raise self.error(f'{_clip(name)}[...] = ... stacks a value per iteration of a loop; '
                             f'outside one, bind a name: {_clip(name)} = ...', start)
        scope = self.loops[-1]
        if len(subscripts) != 1 or type(subscripts[0]) is not tuple \
                or subscripts[0][2] != scope.index:
            raise self.error(f"a loop stacks its values by its own index: "
                             f"{_clip(name)}[{scope.name}] = ...", start)
        if scope.first != 0:
            raise self.error(f'{_clip(name)}[{scope.name}] = ... stacks rows from {scope.name} = 0: '
                             f'write the range from 0', start)
        self.check_name(name, start, 'stacked array')
        if name in self.names or name in scope.stacks or self.outside_name(name) is not None \
                or name in self.input_ids:
            raise self.error(f"'{_clip(name)}' is already defined; a stacked array needs a "
                             'name of its own', start)
        self.has_arrays()
        nodes = self.nodes
        op, args, own_name, value, own_span, block = nodes[node_id]
        if own_name is None and node_id == len(nodes) - 1 and op != 'input':
            nodes[node_id] = _new_node(Node, (op, args, f'{name}[{scope.name}]', value, own_span,
                                              block))
        else:
            node_id = self.emit('pos', (node_id,), (start, end), name=f'{name}[{scope.name}]')
        scope.stacks[name] = node_id
        scope.bound[name] = (start, end)
        self.mark = len(nodes)

    def check_name(self, name, pos, what):
        if name in KEYWORDS:
            raise self.error(f"'{name}' is a keyword; choose another name for the {what}", pos)
        if name in FUNCTIONS or name in ALIASES:
            if what != 'block':
                raise self.error(f"'{name}' is a built-in function; choose another name for "
                                 f'the {what}', pos)
            # A block may take a built-in's name (softplus, with its own
            # declared derivative): later calls are the program's block.
            self.notes.append(f"'{name}' is this program's own block from here on, "
                              'not the built-in function')
        if name in self.blocks:
            raise self.error(f"'{_clip(name)}' is already defined as a block", pos)
        if name in CONSTANTS and name not in self.names:
            self.notes.append(f"'{name}' is this program's own {what} from here on, "
                              f"not the constant {name} = {CONSTANTS[name]!r}")

    def top_tape(self):
        """The program's own tape, where its inputs are, even while a loop's body is read."""
        return self.loops[0].saved[0] if self.loops else self.nodes

    def refuse_in_loop(self, what, pos):
        if self.loops:
            raise self.error(f'{what} goes outside loops: a loop body binds names', pos)

    @_children
    def input_head(self, children):
        self.refuse_in_loop("an 'input' declaration", children[0][1])
        self.statement_begins()
        self.mark = len(self.nodes)
        return children[0]

    @_children
    def default(self, children):
        (_, start, end, name), _, value = children
        used_at, _, node_id = value
        value = self.constant_value(name, node_id, used_at)
        self.check_name(name, start, 'input')
        self.declare(name, start, end, value)

    def declare(self, name, start, end, value):
        """An input of the program, declared by `input`: with its default, unless None."""
        if self.shapes:
            self.not_a_size(name, start, 'input')
        if name in self.names or name in self.input_ids:
            raise self.error(f"'{_clip(name)}' is already defined" if name in self.names
                             else f"'{_clip(name)}' is used before its definition",
                             start if name in self.names else self.nodes[self.input_ids[name]].span[0])
        self.nodes.append(_new_node(Node, ('input', (), name, None, (start, end), None)))
        self.input_ids[name] = self.names[name] = len(self.nodes) - 1
        self.declared.add(name)
        self.versions[name] = 1
        if value is not None:
            self.defaults[name] = value
        self.mark = len(self.nodes)

    def constant_value(self, name, node_id, used_at):
        """The value of a default, whose nodes are the tape's last: then drop them."""
        from ..core.passes import forward
        first = self.mark
        for i in range(first, len(self.nodes)):
            node = self.nodes[i]
            if node.op == 'input' or any(a < first for a in node.args) or \
                    node.op == 'static' and names_a_size(node.value):
                raise self.error(f"the default of '{_clip(name)}' must be a constant expression",
                                 node.span[0] if node.op == 'input' else used_at)
        if node_id < first:
            raise self.error(f"the default of '{_clip(name)}' must be a constant expression",
                             used_at)
        nodes = [node._replace(args=tuple(a - first for a in node.args))
                 for node in self.nodes[first:]]
        branches = [shifted(b, -first) for b in self.branches if b.node >= first]
        graph = Graph(nodes, node_id - first, {}, {}, self.source, tuple(branches))
        if self.shapes is not None and _tensors().has_arrays(nodes):   # an array default
            value = _tensors().evaluate(graph, {})[node_id - first]
        else:
            value = forward(graph, {})[node_id - first]
        del self.nodes[first:]
        self.branches = [b for b in self.branches if b.node < first]
        return value

    @_children
    def inputs(self, children):
        self.statement_ends()

    # ---- blocks ----

    @_children
    def block_head(self, children):
        (_, start, _, name), _, arguments, _, _ = children
        self.refuse_in_loop('a block definition', start)
        self.statement_begins()
        self.check_name(name, start, 'block')
        if name in self.names or name in self.input_ids:
            raise self.error(f"'{_clip(name)}' is already a variable; choose another name "
                             'for the block', start)
        self.enter(Template(name, self.parameters(arguments)))
        self.emit_slots()
        return name

    def parameters(self, arguments):
        """The parameter names of a block or grad head, whose arguments were
        read as expressions: each must be a plain name (the text of any other
        expression is not one). A name seen there for the first time became
        an input node; it was a parameter all along."""
        names = []
        for argument in arguments:
            if type(argument) is Keyword:   # f(a=p) = ...
                raise self.error('a block parameter must be a name', argument.start)
            start, end, _ = argument
            name = self.source[start:end]
            if not (name.isascii() and name.isidentifier()):   # the grammar's NAME
                raise self.error('a block parameter must be a name', start)
            if name in CONSTANTS or name in FUNCTIONS or name in KEYWORDS or name in ALIASES:
                raise self.error(f"'{name}' is built in; choose another parameter name", start)
            if name in names:
                raise self.error(f"parameter '{_clip(name)}' appears twice", start)
            names.append(name)
        while self.nodes and len(self.nodes) > self.mark and self.nodes[-1].op == 'input':
            del self.input_ids[self.nodes.pop().name]
        return tuple(names)

    def emit_slots(self):
        for name in self.body.params:
            self.emit('param', (), None, name=name)

    @_children
    def block(self, children):
        name, value = children
        _, _, node_id = value
        self.body.outputs = (node_id,)
        self.blocks[name] = self.body
        self.leave()
        self.statement_ends()

    @_children
    def grad_head(self, children):
        _, (_, start, _, name), _, arguments, _, _ = children
        self.refuse_in_loop('a grad declaration', start)
        self.statement_begins()
        block = self.blocks.get(name)
        if block is None:
            raise self.error(f"grad {_clip(name)}(...): define the block {_clip(name)} first", start)
        if block.grad is not None:
            raise self.error(f"the derivative of '{name}' is already declared", start)
        if name in self.called:
            raise self.error(f"declare grad {name}(...) before the first call of {name}", start)
        params = self.parameters(arguments)
        if len(params) != len(block.params):
            raise self.error(f'{name}() takes {_plural(len(block.params), "parameter")}, '
                             f'so its grad declaration needs as many, not {len(params)}', start)
        self.grad_at = start
        # `out` is the block's output, unless a parameter is called that.
        self.enter(Template(f'grad {name}', params + (() if 'out' in params else ('out',))))
        self.emit_slots()
        return name

    @_children
    def partial(self, children):
        (_, _, node_id), = children
        return [node_id]

    @_children
    def partial_list(self, children):
        _, first, _, rest, _ = children
        return [node_id for _, _, node_id in [first, *rest]]

    @_children
    def custom_grad(self, children):
        name, partials = children
        block = self.blocks[name]
        if len(partials) != len(block.params):
            raise self.error(f'{name}() has {_plural(len(block.params), "parameter")}: give one '
                             f'partial derivative for each, in order, not {len(partials)}',
                             self.grad_at)
        self.body.outputs = tuple(partials)
        block.grad = self.body
        self.leave()
        self.statement_ends()

    # ---- expressions ----

    def number(self, stack, size):
        _, start, end, text = stack[-1]
        target = self.target   # emit(), inlined: one per number in the text
        node_id = len(target)
        if node_id >= self.limit:
            raise self.too_many((start, end))
        target.append(_new_node(Node, ('const', (), None, float(text), (start, end), None)))
        stack[-1] = (start, end, node_id ^ self.flip)

    def variable(self, stack, size):
        _, start, end, name = stack[-1]
        node_id = self.names.get(name) if self.body is None else None
        stack[-1] = (start, end, self.resolve(name, start, end) if node_id is None else node_id)

    def look_up(self, name, start, end):
        node_id = self.names.get(name) if self.body is None else None
        return self.resolve(name, start, end) if node_id is None else node_id

    def group(self, stack, size):
        (_, start, _, _), (_, _, node_id), (_, _, end, _) = stack[-3:]
        del stack[-2:]
        stack[-1] = (start, end, node_id)

    def arguments(self, stack, size):
        if size == 1:
            stack[-1] = [stack[-1]]
        else:
            value = stack.pop()
            del stack[-1]
            stack[-1].append(value)
            if len(stack[-1]) > MAX_LITERAL and stack[-2][-1] == '[':   # a literal's, as read
                self.literal_too_large(value)

    def compare(self, stack, size):
        (start, _, a), (_, _, _, op), (_, end, b) = stack[-3:]
        del stack[-2:]
        stack[-1] = (start, end, self.emit(_COMPARISONS[op], (a, b), (start, end)))

    # ---- conditionals ----

    @_children
    def if_head(self, children):
        self.push_mark()
        return children[0]

    @_children
    def then_mark(self, children):
        self.push_mark()

    @_children
    def else_mark(self, children):
        self.push_mark()

    def push_mark(self):
        self.marks.append(len(self.target))

    @_children
    def conditional(self, children):
        (_, start, _, _), condition, _, then, _, otherwise, (_, _, end, _) = children
        else_start = self.marks.pop()
        then_start = self.marks.pop()
        self.marks.pop()
        stop = len(self.target)
        (_, _, c), (_, _, a), (_, _, b) = condition, then, otherwise
        node_id = self.emit('if', (c, a, b), (start, end))
        branches = self.branches if self.body is None else self.body.branches
        here = node_id if node_id >= 0 else ~node_id
        branches.append(Branch(here, c, then_start, else_start, stop))
        return (start, end, node_id)

    # ---- calls ----

    def call(self, stack, size):
        arguments, end = stack[-2], stack[-1][2]
        del stack[-3:]
        _, start, _, name = stack[-1]
        block = self.blocks.get(name)
        if block is not None and block.fast is not None and block.grad is None \
                and self.body is None and not self.loops and len(arguments) == len(block.params) \
                and not self.keywords and len(self.nodes) + block.size <= self.limit:
            # instantiate() inlined for a block with its own copy function (so
            # called before): the hot path, once per call in the text.
            count = self.instances[name] = self.instances.get(name, 0) + 1
            path = f'{name}#{count}'
            calls = [*self.nested_calls(block, path, False), path] if block.instances else (path,)
            target = self.nodes
            # (one argument, the usual call: no map and list to make for it)
            ids = (arguments[0][2],) if len(arguments) == 1 else [*map(_VALUE_ID, arguments)]
            stack[-1] = (start, end, block.fast(target, ids, len(target), calls)[0])
            return
        row = FUNCTIONS.get(name)
        if row is not None and len(arguments) == row.arity and block is None \
                and not self.keywords:   # no NAME=value waits for its call
            # emit() inlined for a built-in at its plain arity, once per call in
            # the text; n-ary min, log(x, b) and wrong counts go through function().
            target = self.target
            node_id = len(target)
            if node_id >= self.limit:
                raise self.too_many((start, end))
            args = (arguments[0][2],) if len(arguments) == 1 else tuple(map(_VALUE_ID, arguments))
            target.append(_new_node(Node, (name, args, None, None, (start, end), None)))
            stack[-1] = (start, end, node_id ^ self.flip)
            return
        stack[-1] = self.called_value(name, arguments, start, end)

    def called_value(self, name, arguments, start, end):
        """The value of a call that is not a built-in's plain one nor a hot
        block call on the tape (see call)."""
        self.keywords -= sum(type(a) is Keyword for a in arguments)   # this call takes its own
        if name not in self.blocks:
            name = ALIASES.get(name, name)
            if name in ARRAY_NAMES or name in REDUCING and (
                    len(arguments) == 1 or any(type(a) is Keyword for a in arguments)):
                return (start, end, self.array_call(name, arguments, (start, end)))
        keyword = next((a for a in arguments if type(a) is Keyword), None)
        if keyword is not None:
            raise self.error(f'{name}() takes no NAME=value arguments', keyword.start)
        args = [node_id for _, _, node_id in arguments]
        span = (start, end)
        if name in FUNCTIONS and name not in self.blocks:
            return (start, end, self.function(name, args, span))
        block = self.blocks.get(name)
        if block is None:
            raise self.unknown_call(name, start)
        if len(args) != len(block.params):
            raise self.error(f'{name}() takes {_plural(len(block.params), "argument")}, '
                             f'got {len(args)}', start)
        self.called.add(name)
        return (start, end, self.instantiate(block, args, span))

    def function(self, name, args, span):
        count = len(args)
        if name in ('min', 'max') and count > 2:
            # n-ary: torch.maximum chained left to right, ties split as it splits them
            node_id = self.emit(name, tuple(args[:2]), span)
            for a in args[2:]:
                node_id = self.emit(name, (node_id, a), span)
            return node_id
        if name == 'log' and count == 2:   # log(x, b) = log(x) / log(b)
            x, base = args
            return self.emit('div', (self.emit('log', (x,), span), self.emit('log', (base,), span)),
                             span)
        arity = FUNCTIONS[name].arity
        if count != arity:
            extra = ' (or 2: log(x, base))' if name == 'log' else (
                ' or more' if name in ('min', 'max') else '')
            raise self.error(f'{name}() takes {_plural(arity, "argument")}{extra}, got {count}',
                             span[0])
        return self.emit(name, tuple(args), span)

    def unknown_call(self, name, start):
        if self.body is not None and self.body.name in (name, f'grad {name}'):
            return self.error(f"blocks cannot recurse: '{_clip(name)}' calls itself", start)
        if name in self.names or name in self.input_ids or name in CONSTANTS:
            return self.error(f"'{_clip(name)}' is a value, not a function", start)
        later = re.compile(rf'(?:^|[;\n])[ \t]*{re.escape(name)}[ \t]*\([^()]*\)[ \t]*=(?!=)')
        if later.search(self.source, start):
            return self.error(f"block '{_clip(name)}' is used before its definition", start)
        if name == 'range':   # Python's loop, as a newcomer writes it
            from .hints import loop_spelling
            after = self.source.find(')', start) + 1
            return self.error('there is no range(): loops are written '
                              + loop_spelling(self.source, after), start)
        known = set(FUNCTIONS) | set(self.blocks) | set(ALIASES) | set(ARRAY_NAMES)
        return self.error(f"unknown function '{_clip(name)}'{did_you_mean(name, known)}", start)

    def instantiate(self, block, args, span):
        """Copy a block's template where it is called; the id of its value."""
        size = len(block.nodes) - len(block.params)
        if block.grad is not None:
            size += len(block.grad.nodes) - len(block.grad.params) + 1
        if self.body is not None and len(self.target) + size > MAX_BODY:
            raise self.error(f"calling '{block.name}' here would make the body of "
                             f"'{self.body.name}' more than {MAX_BODY:,} nodes once its blocks "
                             'are inlined; adgrad stops there', span[0])
        if self.body is not None and self.stored + len(self.target) + size > MAX_STORED:
            raise self.error(f"calling '{block.name}' here would make the program's blocks "
                             f'more than {MAX_STORED:,} nodes, each body with its calls '
                             'inlined; adgrad stops there', span[0])
        if len(self.target) + size > self.limit:
            raise self.error(f"calling '{block.name}' here would grow the graph past "
                             f'{MAX_NODES:,} nodes once its blocks are inlined '
                             f'({size:,} for this call)', span[0])
        if self.body is None:   # instance_path(), inlined for the tape
            count = self.instances[block.name] = self.instances.get(block.name, 0) + 1
            path = f'{block.name}#{count}'
        else:
            path = self.instance_path(block.name)
        value = self.copy(block, args, path)[0]
        if block.grad is None:
            return value
        partials = self.copy(block.grad, [*args, value][:len(block.grad.params)], path)
        return self.emit('custom', (value, *partials, *args), span, block=path)

    def instance_path(self, name):
        """Where a call's nodes say they come from: on the tape the path 'f#3';
        inside a body, an index into the body's table of calls, which gets
        its path when the body is copied onto the tape."""
        if self.body is not None:
            self.body.instances.append((-1, name))
            return len(self.body.instances) - 1
        count = self.instances[name] = self.instances.get(name, 0) + 1
        return f'{name}#{count}'

    def copy(self, template, args, call):
        """Append a template's nodes with its parameters bound to `args`, and
        the calls inside it below `call`; the new ids of its outputs.

        The hot path of a program of blocks, so the copy runs in C: the new
        ids are the target's next places, so every argument is gathered from
        one table at once and the nodes are zipped from the template's
        columns. A body copied often gets a function of its own (copier.py)."""
        into_body = self.body is not None
        target = self.target
        slots = len(template.params)
        tape_ids, gather, slices, ops, names, values, spans, blocks = (
            template._plan or template.plan())
        if self.loops:   # the tape's values a body uses come into the loop as slots
            tape_ids = [self.tape_slot(t) for t in tape_ids]
        base = len(target)
        if not into_body and not template.branches and not self.loops:
            fast = template.fast or template.warm()
            if fast is not None:
                calls = self.nested_calls(template, call, False) if template.instances else []
                calls.append(call)
                return list(fast(target, args, base, calls))
        count = len(ops)
        made = range(base, base + count) if not into_body else range(~base, ~base - count, -1)
        local = [*args, *made, *tape_ids]
        flat = gather(local)
        if template.instances:
            calls = self.nested_calls(template, call, into_body)
            calls.append(call)
            owners = map(calls.__getitem__, blocks)
        else:
            owners = repeat(call)
        target.extend(map(_new_node, _NODE, zip(ops, map(flat.__getitem__, slices), names, values,
                                                 spans, owners)))
        if not template.branches:
            return [local[~out] if out < 0 else out for out in template.outputs]
        branches = self.branches if not into_body else self.body.branches
        shift = base - slots
        for branch in template.branches:
            condition = local[~branch.condition] if branch.condition < 0 else branch.condition
            branches.append(shifted(branch, shift, condition))
        return [local[~out] if out < 0 else out for out in template.outputs]

    def nested_calls(self, template, call, into_body):
        """What each call made inside a template becomes in this copy: an
        entry of the body's table below `call`, or on the tape the path of a
        fresh instance ('f#2/h#5'), numbered in the order the calls were made."""
        calls = []
        for parent, name in template.instances:
            parent = call if parent < 0 else calls[parent]
            if into_body:
                self.body.instances.append((parent, name))
                calls.append(len(self.body.instances) - 1)
            else:
                count = self.instances[name] = self.instances.get(name, 0) + 1
                calls.append(f'{parent}/{name}#{count}')
        return calls

    # ---- loops ----

    @_children
    def loop_head(self, children):
        """`for i in a..b {`: check the range, then read the body into a graph
        of its own (a _LoopScope), whose slots stand for what it reads from
        outside."""
        (_, start, _, _), (_, name_start, _, name), _, low, _, high, _ = children
        return self.open_loop(start, name_start, name, low, high, False)

    @_children
    def reversed_head(self, children):
        """`for i in reversed(a..b) {`: the same loop, its index running down."""
        (_, start, _, _), (_, name_start, _, name), _, word, _, low, _, high, _, _ = children
        if word[3] != 'reversed':
            raise self.error(f"a loop runs over a range, a..b, or reversed(a..b), not "
                             f"{_clip(word[3])}(...)", word[1])
        return self.open_loop(start, name_start, name, low, high, True)

    def open_loop(self, start, name_start, name, low, high, reverse):
        if self.last_bare is not None:
            self.statement_begins()   # raises
        if len(self.loops) >= MAX_NESTING:
            raise self.error(f'loops nest at most {MAX_NESTING} deep', start)
        if self.source[high[0] - 1:high[0] + 1] == '..':   # 0...3: the end read as .3
            raise self.error('a range has two dots, not three: a..b, such as 0..3', high[0] - 2)
        stop = self.integer(high, "a loop's end", '10')    # (its nodes are the target's last)
        first = self.integer(low, "a loop's start", '0')
        if first < 0:
            raise self.error(f"a loop's range starts at 0 or more, not {first}", low[0])
        count = stop - first
        if count < 1:
            raise self.error(f'the range {first}..{stop} is empty: a..b runs i = a, ..., b-1, '
                             'so b must be more than a', low[0])
        total = count
        for scope in self.loops:
            total *= scope.count
        if total > MAX_ITERATIONS:
            raise self.error(f'this loop runs {total:,} iterations in all; adgrad runs at most '
                             f'{MAX_ITERATIONS:,}', start)
        self.check_name(name, name_start, 'loop index')
        if self.outside_name(name) is not None or name in self.input_ids:
            raise self.error(f"'{_clip(name)}' is already defined; a loop index needs a name "
                             'of its own', name_start)
        scope = _LoopScope(start, first, count, name, reverse)
        scope.saved = (self.nodes, self.names, self.branches, self.mark, self.output,
                       self.limit, self.loop_ids)
        self.loops.append(scope)
        self.nodes = self.target = []
        self.names, self.branches, self.loop_ids = {}, [], []
        self.limit = self.limit - len(scope.saved[0])
        self.mark, self.output = 0, None
        self.nodes.append(_new_node(Node, ('input', (), name, None, (name_start, name_start + len(name)),
                                           None)))
        self.names[name] = scope.index = 0
        return scope

    def outside_name(self, name):
        """The id of `name` in the scope the innermost loop sits in, or None."""
        for scope in reversed(self.loops):
            found = scope.saved[1].get(name)
            if found is not None:
                return found
        return self.names.get(name) if not self.loops else None

    def scope_of(self, level):
        """(nodes, names) of loop `level`'s body: the current ones for the innermost."""
        if level == len(self.loops) - 1:
            return self.nodes, self.names
        saved = self.loops[level + 1].saved
        return saved[0], saved[1]

    def outside(self, level, name, span):
        """The id, in loop `level`'s body, of a name bound outside it: a slot
        made on first use; None if no scope around it binds the name."""
        nodes, names = self.scope_of(level)
        found = names.get(name)
        if found is not None:
            return found
        scope = self.loops[level]
        if level == 0:
            outer = scope.saved[1].get(name)
            if outer is None:
                outer = self.input_ids.get(name)
        else:
            outer = self.outside(level - 1, name, span)
        if outer is None:
            return None
        slot = self.slot(level, outer, name, span)
        names[name] = slot
        return slot

    def slot(self, level, outer, name, span, kind=FREE, key='name'):
        """The input node in loop `level`'s body that stands for the id `outer`
        of the scope around it: a name read there (`key` 'name'), a value a
        block's body uses ('tape'), or the slices of a stacked array (SCAN)."""
        scope = self.loops[level]
        found = scope.slots.get((key, outer))
        if found is not None:
            return found
        nodes, _ = self.scope_of(level)
        shown = name
        while shown in scope.taken:   # an input's name is unique in its graph
            shown += "'"
        scope.taken.add(shown)
        nodes.append(_new_node(Node, ('input', (), shown, None, span, None)))
        sid = scope.slots[(key, outer)] = len(nodes) - 1
        scope.kinds[sid], scope.names_of[sid] = kind, name
        return sid

    def tape_slot(self, tape_id):
        """A tape id a block's body uses, as the innermost loop's body sees it:
        the value it had when the block was defined, whatever the loop rebinds."""
        outer = tape_id
        for level in range(len(self.loops)):
            node = (self.loops[0].saved[0] if level == 0 else self.scope_of(level - 1)[0])[outer]
            outer = self.slot(level, outer, node.name or f'_{outer}', node.span, key='tape')
        return outer

    def loop_slice(self, a, subscripts, span):
        """W[i] of a value W from outside the innermost loop and its index i:
        a slot that takes W's i-th slice at each iteration (None where the
        subscripts do not use the index)."""
        scope = self.loops[-1]
        values = [item for item in subscripts if type(item) is tuple]
        outer_of = {sid: o for (key, o), sid in scope.slots.items() if key == 'name'}
        around = self.loops[-2] if len(self.loops) > 1 else None
        first = subscripts[0][2] if type(subscripts[0]) is tuple else None
        if around is not None and outer_of.get(first) == around.index and \
                outer_of.get(a) in around.kinds:
            # W[i][j], W[i, j] of a W from outside both loops: the slice of the
            # loop around, taken here (W[j, i] or a W bound inside get the old word)
            name, index = scope.names_of[a], around.name
            raise self.error(f'{name}[{index}] slices in the loop over {index} only: write '
                             f'{name}_{index} = {name}[{index}] there and use {name}_{index} here',
                             span[0])
        if not any(item[2] == scope.index for item in values):
            return None
        outer = outer_of.get(a)
        if len(subscripts) != 1 or subscripts[0][2] != scope.index or outer is None:
            raise self.error(f"a loop's index subscripts a value from outside the loop alone, "
                             f'as W[{scope.name}]', span[0])
        name = scope.names_of[a]
        slot = self.slot(len(self.loops) - 1, outer, f'{name}[{scope.name}]', span, SCAN, 'scan')
        scope.names_of[slot] = name
        return slot

    def loop(self, stack, size):
        """The loop's `}`: its body becomes a graph, and the loop one node of
        the scope around it, followed by a `part` per name the body binds."""
        scope, brace = stack[-size], stack[-1]
        del stack[-size + 1:]
        stack[-1] = None
        body_nodes, body_names, body_branches = self.nodes, self.names, self.branches
        body_loops = self.loop_ids
        (self.nodes, self.names, self.branches, self.mark, self.output, self.limit,
         self.loop_ids) = scope.saved
        self.target = self.nodes
        self.loops.pop()
        slot_ids = set(scope.slots.values())
        bound = sorted([(node_id, name) for name, node_id in body_names.items()
                        if node_id not in slot_ids and node_id != scope.index]
                       + [(node_id, name) for name, node_id in scope.stacks.items()])
        if not bound:
            raise self.error('this loop binds no name: its body is NAME = ... statements',
                             scope.start)
        bound_names = {name for _, name in bound}
        slots, args, carry = [], [], []
        for (key, outer), sid in scope.slots.items():
            name, kind = scope.names_of[sid], scope.kinds[sid]
            if kind == SCAN and name in bound_names:
                raise self.error(f"'{_clip(name)}' changes in the loop, so its slices cannot be "
                                 f'taken there', body_nodes[sid].span[0])
            if key == 'name' and name in bound_names:
                kind = CARRY
            slots.append((kind, sid))
            carry.append(body_names[name] if kind == CARRY else None)
            args.append(outer)
        inputs = {body_nodes[sid].name: sid for sid in [scope.index, *scope.slots.values()]}
        outputs = tuple(node_id for node_id, _ in bound)
        names = tuple(name for _, name in bound)
        body = Graph(body_nodes, outputs[-1], inputs, {}, self.source, tuple(body_branches),
                     (), None, tuple(body_loops))
        stacked = tuple(k for k, name in enumerate(names) if name in scope.stacks)
        loop = Loop(body, scope.first, scope.count, scope.index, tuple(slots), tuple(carry),
                    outputs, names, stacked, scope.reverse)
        span = (scope.start, brace[2])
        loop_id = self.emit('loop', tuple(args), span, value=loop)
        self.loop_ids.append(loop_id)
        self.statements += 1
        for k, (node_id, name) in enumerate(bound):
            node_span = scope.bound.get(name, span)   # the statement NAME = ... in the body
            part = self.emit('part', (loop_id,), node_span, value=k)
            self.bind(('NAME', node_span[0], node_span[0] + len(name), name), part, node_span)
        self.statement_ends()

    # ---- the whole program ----

    def hint_at_number_bindings(self):
        """A program with no variable that binds plain numbers (micrograd's
        `a = Value(-4.0)`, translated) most likely meant inputs: say so."""
        for name, i in self.names.items():
            node = self.nodes[i]
            number = node if node.op != 'neg' else self.nodes[node.args[0]]
            if number.op == 'const' and number.name in (None, name) and node.span:
                text = self.source[node.span[0]:node.span[1]]
                self.notes.append(f"'{name} = {text}' is a constant, so nothing here is a "
                                  f"variable; write 'input {name} = {text}' to differentiate "
                                  'with respect to it')
                return

    def graph(self):
        if self.statements == 0:
            raise AdgradError('empty program: write an expression, such as x*y')
        if self.output is None:
            raise AdgradError('the program has no output: end it with an expression or a binding')
        if not self.input_ids:
            self.hint_at_number_bindings()
        return Graph(self.nodes, self.output, self.input_ids, self.defaults, self.source,
                     tuple(self.branches), tuple(dict.fromkeys(self.notes)), self.shapes,
                     tuple(self.loop_ids))


def _binary(op):
    def build(self, stack, size):
        """`a OP b`: one node; emit() inlined, as this runs once per operator."""
        _, end, b = stack.pop()   # (cheaper than unpacking a slice of three)
        del stack[-1]
        start, _, a = stack[-1]
        target = self.target
        node_id = len(target)
        if node_id >= self.limit:
            raise self.too_many((start, end))
        target.append(_new_node(Node, (op, (a, b), None, None, (start, end), None)))
        stack[-1] = (start, end, node_id ^ self.flip)
    return build


def _unary(op):
    def build(self, stack, size):
        (_, start, _, _), (_, end, a) = stack[-2:]
        del stack[-1]
        stack[-1] = (start, end, self.emit(op, (a,), (start, end)))
    return build


for _op, _method in (('add', 'add'), ('sub', 'sub'), ('mul', 'mul'), ('div', 'div'),
                     ('pow', 'pow'), ('and', 'and_'), ('or', 'or_')):
    setattr(Lowering, _method, _binary(_op))
_matmul = _binary('matmul')


def _array_matmul(self, stack, size):
    self.has_arrays()
    _matmul(self, stack, size)


Lowering.matmul = _array_matmul
for _op, _method in (('neg', 'neg'), ('pos', 'pos'), ('not', 'not_')):
    setattr(Lowering, _method, _unary(_op))
