"""An algebra that records: run a derivative rule over it and the rule builds
nodes of a new tape instead of computing numbers.

Passed to core.passes.backward, it turns the backward pass into a builder of
the gradient's own graph; passed to forward.tangents, a builder of the
tangent's. That graph is an ordinary Graph: it can be evaluated, printed, and
differentiated again, which is how `diff`, `--order K`, `hessian` and the
symbolic forward mode are all one mechanism.

Values in this algebra are Refs (node ids of the tape) or plain floats, the
constants. An operation whose arguments are all constants is folded on the
spot with the primitive's own float function, so constant folding follows
exactly the IEEE conventions of evaluation. Every other operation first goes
through simplify.py's identities, then is made at most once: asking for the
same op on the same arguments again returns the same node, so shared
subexpressions stay shared (hash-consing).
"""


from ..core.branches import MaskedBranches, for_branches
from ..core.graph import Graph, Node
from ..core.passes import backward
from ..core.primitives import PRIMITIVES
from ..errors import AdgradError
from .simplify import SIMPLIFY, Ref

DERIVATIVE_WALK_LIMIT = 250_000   # tape nodes walked (or, with loops, recorded) by higher orders


_FORWARD = {name: row.forward for name, row in PRIMITIVES.items()}
_new_node = tuple.__new__     # Node(op, args) without namedtuple's keyword handling


def const_key(value):
    # 0.0 == -0.0 and nan != nan, so a float cannot be its own key.
    return ('const', float(value).hex())


class Tape:
    """The recording algebra: one method per primitive, as NUMBERS has."""

    # both branches are recorded: gate what leaves each
    meeting = staticmethod(for_branches(MaskedBranches))

    def __init__(self, simplify=True, exact=False):
        self.exact = exact         # only identities exact in IEEE (simplify.py)
        self.nodes = []
        self.index = {}
        self.inputs = {}
        self.names = {}            # Ref -> the program's name for it (a binding)
        self.simplify = simplify
        self.replaying = False     # the program's own operands keep the order it wrote
        self.gates = 0             # `if` and `where` nodes recorded: none, no gate to look for
        self.loops = []            # loop nodes (recurrence.py), as Graph.loops

    def branches(self, condition, g):
        """What the two branches of an `if` receive: g, gated by the
        condition, so that the untaken branch's part of a derivative is
        never computed, let alone multiplied by an inf (simplify.py pushes
        every later product inside the gate)."""
        if not isinstance(condition, Ref):
            return (g, None) if condition else (None, g)
        return self.apply('if', condition, g, 0.0), self.apply('if', condition, 0.0, g)

    def coerce(self, value):       # forward() asks this of an input's value
        return value

    def ref(self, x):
        """The node for x: x itself, or a constant node for a float."""
        if isinstance(x, Ref):
            return x
        key = const_key(x)
        found = self.index.get(key)
        if found is None:
            found = self.index[key] = Ref(len(self.nodes))
            self.nodes.append(_new_node(Node, ('const', (), None, float(x), None, None)))
        return found

    def input(self, name):
        ref = self.interned(('input', name), Node('input', name=name))
        self.inputs.setdefault(name, ref)
        return ref

    def interned(self, key, node):
        """The one node for `key`: `node`, appended the first time it is asked for.
        (ref() and _record() spell this out: they run once per recorded node.)"""
        found = self.index.get(key)
        if found is None:
            found = self.index[key] = Ref(len(self.nodes))
            self.nodes.append(node)
        return found

    # apply(), specialised by arity: one and two arguments are nearly every
    # node, and the general loop over *args costs a third of recording.

    def _unary(self, op, a):
        if type(a) is Ref:
            node = self.nodes[a]
            if node.op == 'const':
                return float(_FORWARD[op](node.value))
        else:
            return float(_FORWARD[op](a))
        if self.simplify:
            rule = SIMPLIFY.get(op)
            if rule is not None:
                result = rule(self, a)
                if result is not None:
                    return result
        return self._record((op, a))

    def _binary(self, op, a, b):
        nodes = self.nodes
        a_is_node = type(a) is Ref
        if a_is_node:
            node = nodes[a]
            if node.op == 'const':
                a, a_is_node = node.value, False
        if type(b) is Ref:
            node = nodes[b]
            if node.op == 'const':
                b = node.value
            elif self.simplify:
                return self._simplified(op, a, b)
            else:
                return self._record((op, a if a_is_node else self.ref(a), b))
        elif not a_is_node:
            return float(_FORWARD[op](a, b))
        if self.simplify:
            return self._simplified(op, a, b)
        return self._record((op, a, self.ref(b)) if a_is_node else (op, self.ref(a), b))

    def _simplified(self, op, a, b):
        rule = SIMPLIFY.get(op)
        if rule is not None:
            result = rule(self, a, b)
            if result is not None:
                return result
        return self._record((op, a if type(a) is Ref else self.ref(a),
                             b if type(b) is Ref else self.ref(b)))

    def _record(self, key):
        """The node for key = (op, *argument ids): found, or made."""
        found = self.index.get(key)
        if found is None:
            found = self.index[key] = Ref(len(self.nodes))
            self.nodes.append(_new_node(Node, (key[0], key[1:], None, None, None, None)))
            if key[0] == 'if' or key[0] == 'where':
                self.gates += 1
        return found

    def apply(self, op, *args):
        # One pass over the arguments: a recorded constant becomes its number,
        # and whether any argument is still a node decides folding (this runs
        # once per node of every derivative: two any() scans cost a sixth).
        nodes, folded, refs = self.nodes, None, False
        for k, a in enumerate(args):
            if type(a) is Ref:
                node = nodes[a]
                if node.op == 'const':
                    if folded is None:
                        folded = list(args)
                    folded[k] = node.value
                else:
                    refs = True
        if folded is not None:
            args = tuple(folded)
        if not refs:
            return float(PRIMITIVES[op].forward(*args))
        if op in ('where', 'if') and not isinstance(args[0], Ref):
            return args[1] if args[0] else args[2]
        if self.simplify:
            rule = SIMPLIFY.get(op)
            if rule is not None:
                result = rule(self, *args)
                if result is not None:
                    return result
        return self._record((op, *[self.ref(a) for a in args]))

    # ---- looking at what was recorded (for simplify.py) ----

    def op(self, x):
        return self.nodes[x].op if isinstance(x, Ref) else 'const'

    def args(self, x):
        return self.nodes[x].args

    def value(self, x):
        """x's constant value, or None when x is not a constant."""
        if isinstance(x, Ref):
            node = self.nodes[x]
            return node.value if node.op == 'const' else None
        return x



def _method(name, arity):
    """Tape.NAME(*args), the algebra's method for a primitive: apply() by arity.
    On the class, not bound into each tape, so a tape is freed as soon as it
    is unused (bound methods in its own dict would make it a cycle)."""
    if arity == 1:
        return lambda tape, a: tape._unary(name, a)
    if arity == 2:
        return lambda tape, a, b: tape._binary(name, a, b)
    return lambda tape, *args: tape.apply(name, *args)


for _name, _row in PRIMITIVES.items():
    if _name not in vars(Tape):      # branches is the tape's own
        setattr(Tape, _name, _method(_name, _row.arity))

def replay(graph, tape):
    """Each node of `graph` recorded on `tape`: its Ref, or a float for a
    constant. The program's binding names are kept for printing."""
    values = []
    tape.replaying = True
    unary, binary = tape._unary, tape._binary
    for node in graph.nodes:
        op, args = node.op, node.args
        if op == 'input':
            values.append(tape.input(node.name))
            continue
        if op == 'const':
            values.append(float(node.value))
            continue
        if len(args) == 2:
            value = binary(op, values[args[0]], values[args[1]])
        elif len(args) == 1:
            value = unary(op, values[args[0]])
        else:
            value = getattr(tape, op)(*[values[a] for a in args])
        if node.name and isinstance(value, Ref) and tape.nodes[value].op != 'input':
            tape.names.setdefault(value, node.name)
        values.append(value)
    tape.replaying = False
    for name in graph.inputs:
        tape.input(name)
    return values


def gradient(graph, tape, values, output=None):
    """Record the backward pass of `graph` (replayed on `tape` as `values`):
    the Ref or constant of ∂output/∂v for each variable v, by name."""
    grads = backward(graph, values, output=output, algebra=tape)
    return {name: grads[i] for name, i in graph.inputs.items()}


class Derivative:
    """A recorded tape with named results: (name, Ref or float) in order.
    `wrt` says what each result differentiates by: (x,), `order` times over,
    or for a mixed second derivative (x, y)."""

    def __init__(self, tape, results, source='', order=1, wrt=None):
        self.tape, self.results, self.source = tape, list(results), source
        self.order = order
        self.wrt = wrt or {name: (name,) for name, _ in self.results}
        self._reachable = None

    def graph(self, index=0):
        """The tape as a Graph whose output is the result at `index` (a
        constant result gets a node of its own)."""
        output = self.tape.ref(self.results[index][1])
        return Graph(self.tape.nodes, output, dict(self.tape.inputs), {}, self.source, (), (),
                     None, tuple(self.tape.loops))

    def reachable(self):
        """Ids of the nodes the results depend on, in tape order (found once:
        the results are fixed, and nodes recorded later cannot be theirs)."""
        if self._reachable is None:
            self._reachable = self._walk()
        return self._reachable

    def _walk(self):
        return reachable(self.tape.nodes, [r for _, r in self.results if isinstance(r, Ref)])


def reachable(nodes, roots):
    """Ids of the nodes `roots` depend on, in tape order, without recursion."""
    seen = bytearray(len(nodes))
    stack = list(roots)
    while stack:
        i = stack.pop()
        if not seen[i]:
            seen[i] = 1
            node = nodes[i]
            # A declared derivative's node is its body's value: its
            # partials and arguments are there for differentiating it.
            stack.extend(node.args[:1] if node.op == 'custom' else node.args)
    return [i for i in range(len(nodes)) if seen[i]]


def differentiate(graph, wrt=None, with_value=False, simplify=True, exact=False):
    """∂output/∂v of `graph` for each v in `wrt` (default: every variable),
    as one recorded tape that the derivatives share."""
    wrt = list(graph.inputs) if wrt is None else list(wrt)
    tape = Tape(simplify, exact)
    if graph.loops:   # forward mode, each loop kept a loop
        from .recurrence import record_loops
        return Derivative(tape, record_loops(graph, tape, wrt, with_value), graph.source)
    values = replay(graph, tape)
    grads = gradient(graph, tape, values)
    results = [('value', values[graph.output])] if with_value else []
    results += [(name, grads[name]) for name in wrt]
    return Derivative(tape, results, graph.source)


def nth_derivative(graph, wrt, order, simplify=True, exact=False, with_value=False):
    """The order-th derivative of the output with respect to one variable:
    the recorded derivative graph differentiated again, order times, each
    time on the same tape so that sharing is kept. `exact` keeps only the
    identities that hold in IEEE arithmetic (for numbers, not for reading)."""
    if graph.loops:
        return _loops_again(graph, wrt, order, simplify, exact, with_value)
    tape = Tape(simplify, exact)
    primal = result = replay(graph, tape)[graph.output]
    walked = 0
    for k in range(order):
        if not isinstance(result, Ref):
            result = 0.0
            break
        # Each order walks the whole tape again, and a product's tape doubles
        # with every order (sin(x)*exp(x): 433,000 nodes at order 19): past the
        # first derivative, stop before the walks pass a bound, so that any
        # --order, however large, answers in seconds.
        walked += len(tape.nodes) if k else 0
        if walked > DERIVATIVE_WALK_LIMIT:
            raise AdgradError(f'the derivative of order {k + 1} would take more than '
                              f'{DERIVATIVE_WALK_LIMIT:,} steps to record (its tape has '
                              f'{len(tape.nodes):,} nodes); ask for a lower --order')
        current = Graph(tape.nodes, result, dict(tape.inputs), {}, graph.source)
        values = [n.value if n.op == 'const' else Ref(i) for i, n in enumerate(tape.nodes)]
        grads = backward(current, values, algebra=tape)
        result = grads[tape.inputs[wrt]]
    value = [('value', primal)] if with_value else []
    return Derivative(tape, value + [(wrt, result)], graph.source, order)


def second_derivatives(graph, wrt, simplify=True, exact=False, with_value=False):
    """∂²output/∂a∂b for each pair a, b of `wrt`, b not before a: the
    gradient recorded once, then each of its entries differentiated on the
    same tape, so that what the entries share is recorded once."""
    if graph.loops:
        return _loops_second(graph, wrt, simplify, exact, with_value)
    tape = Tape(simplify, exact)
    values = replay(graph, tape)
    grads = gradient(graph, tape, values)
    results, pairs = [('value', values[graph.output])] if with_value else [], {}
    walked = 0
    for i, a in enumerate(wrt):
        first = grads[a]
        seconds = {}
        if isinstance(first, Ref):
            walked += len(tape.nodes)   # as nth_derivative: a bound on the passes' work
            if walked > DERIVATIVE_WALK_LIMIT:
                raise _too_many(wrt)
            current = Graph(tape.nodes, first, dict(tape.inputs), {}, graph.source)
            here = [n.value if n.op == 'const' else Ref(k) for k, n in enumerate(tape.nodes)]
            found = backward(current, here, algebra=tape)
            seconds = {b: found[tape.inputs[b]] if b in tape.inputs else 0.0 for b in wrt[i:]}
        _entries(a, wrt[i:], seconds, results, pairs)
    return Derivative(tape, results, graph.source, 2, pairs)


def _entries(a, others, seconds, results, pairs):
    """The results ∂²/∂a∂b for b in `others`, labelled a_b, from {b: Ref or float}."""
    for b in others:
        label = f'{a}_{b}'
        results.append((label, seconds.get(b, 0.0)))
        pairs[label] = (a, b)


def _too_many(wrt):
    return AdgradError(f'the second derivatives by {len(wrt)} variables would take more than '
                       f'{DERIVATIVE_WALK_LIMIT:,} steps to record; ask for fewer with --wrt')


# ---- programs with loops: forward mode again, each loop kept a loop ----

def _loops_again(graph, wrt, order, simplify, exact, with_value):
    """nth_derivative of a program with loops: the derivative's own graph
    differentiated again, `order` times (each order doubles the tangents a
    loop carries, so the recorded size is bounded as the walks are)."""
    from .recurrence import record_loops
    current, recorded = graph, 0
    for k in range(order):
        tape = Tape(simplify, exact)
        (result,) = [r for _, r in record_loops(current, tape, [wrt])]
        recorded += _recorded_size(tape)
        if k + 1 < order and recorded > DERIVATIVE_WALK_LIMIT:
            raise AdgradError(f'the derivative of order {order} would take more than '
                              f'{DERIVATIVE_WALK_LIMIT:,} steps to record (each order doubles '
                              f'what the loop carries): ask for --order {k + 1} or lower')
        current = Derivative(tape, [(wrt, result)], graph.source).graph(0)
    value = record_loops(graph, tape, [], True) if with_value else []
    return Derivative(tape, value + [(wrt, result)], graph.source, order)


def _loops_second(graph, wrt, simplify, exact, with_value):
    """second_derivatives of a program with loops: each variable's first
    derivative (a loop carrying its one tangent) differentiated by the
    variables from its own on, all on one tape: n² recorded tangents."""
    from .recurrence import record_loops
    tape = Tape(simplify, exact)
    results = record_loops(graph, tape, [], True) if with_value else []
    pairs = {}
    for i, a in enumerate(wrt):
        if _recorded_size(tape) > DERIVATIVE_WALK_LIMIT:
            raise _too_many(wrt)
        first = differentiate(graph, [a], simplify=simplify, exact=exact)
        _entries(a, wrt[i:], dict(record_loops(first.graph(0), tape, wrt[i:])), results, pairs)
    return Derivative(tape, results, graph.source, 2, pairs)


def _recorded_size(tape):
    """Nodes of a tape and of its loops' bodies, nested ones too."""
    size, bodies = len(tape.nodes), [tape.nodes[i].value.body for i in tape.loops]
    while bodies:
        body = bodies.pop()
        size += len(body.nodes)
        bodies.extend(body.nodes[i].value.body for i in body.loops)
    return size
