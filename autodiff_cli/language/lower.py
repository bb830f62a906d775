"""Syntax tree to graph: one input node per variable, one node per operation.

Lowering walks each expression with an explicit stack, so depth is bounded
by memory, not by Python's recursion limit. A call of a user block is
inlined: its body is lowered again with the parameters bound to the
argument nodes, and every node it makes records the block instance.
"""

from ..errors import AdgradError
from ..core.graph import Graph, Node
from ..errors import did_you_mean
from .parse import parse
from ..core.primitives import CONSTANTS, FUNCTIONS


MAX_NODES = 10_000_000  # about 1.2 GB of tape: past any program of 10^6 tokens


def lower(source):
    """Parse and lower a program into a Graph."""
    return _Lowering(source).program(parse(source))


def constant(source):
    """The value of a constant expression such as `pi/4`."""
    from ..core.passes import forward
    graph = lower(source)
    if graph.inputs:
        name = next(iter(graph.inputs))
        raise AdgradError(f"a value must be a number or a constant expression, not use '{name}'")
    return forward(graph, {})[graph.output]


def _calls(expr):
    """(name, syntax node) of every call in an expression."""
    stack, found = [expr], []
    while stack:
        node = stack.pop()
        if node[0] == 'call':
            found.append((node[3], node))
            stack.extend(node[4])
        elif node[0] == 'op':
            stack.extend(node[4])
        elif node[0] == 'group':
            stack.append(node[3])
    return found


def _plural(n, word):
    return f'{n} {word}' + ('' if n == 1 else 's')


class _Lowering:
    def __init__(self, source):
        self.source = source
        self.nodes = []
        self.inputs = {}
        self.defaults = {}
        self.bindings = {}
        self.blocks = {}          # name -> (parameter names, body)
        self.block_sizes = {}     # name -> nodes one call makes, all blocks inside inlined
        self.instances = {}       # block name -> calls lowered so far
        self.bound_later = set()  # names a later statement binds or declares
        self.defined_later = {}   # block name -> names its body calls

    def error(self, message, pos):
        return AdgradError(message, self.source, pos)

    def emit(self, node):
        if len(self.nodes) >= MAX_NODES:
            raise AdgradError(f'the program has more than {MAX_NODES:,} nodes; adgrad stops there')
        self.nodes.append(node)
        return len(self.nodes) - 1

    # ---- statements ----

    def program(self, statements):
        for statement in statements:
            if statement[0] in ('bind', 'inputs'):
                tokens = [statement[1]] if statement[0] == 'bind' else [t for t, _ in statement[1]]
                self.bound_later.update(t.value for t in tokens)
            elif statement[0] == 'block':
                self.defined_later[statement[1].value] = {n for n, _ in _calls(statement[3])}
        output = None
        for index, statement in enumerate(statements):
            kind = statement[0]
            if kind == 'bind':
                output = self.bind(statement[1], statement[2])
            elif kind == 'block':
                self.define(*statement[1:])
            elif kind == 'inputs':
                for token, default in statement[1]:
                    self.declare(token, default)
            elif index < len(statements) - 1:
                raise self.error('only the last statement may be a bare expression; '
                                 'name this one with NAME = ...', statement[1])
            else:
                output = self.expr(statement)
        if output is None:
            raise AdgradError('the program has no output: end it with an expression or a binding')
        return Graph(self.nodes, output, self.inputs, self.defaults, self.source)

    def check_new_name(self, token, what):
        name = token.value
        if name in CONSTANTS:
            raise self.error(f"cannot redefine the constant '{name}'", token.start_pos)
        if name in FUNCTIONS:
            raise self.error(f"'{name}' is a built-in function; choose another name for the {what}",
                             token.start_pos)
        if name in self.bindings or name in self.blocks or name in self.defaults:
            raise self.error(f"'{name}' is already defined", token.start_pos)
        if name in self.inputs:
            raise self.error(f"'{name}' is used before its definition", token.start_pos)

    def bind(self, token, expr):
        self.check_new_name(token, 'binding')
        node_id = self.expr(expr)  # before the name is bound: x = x + 1 uses x before its definition
        self.bound_later.discard(token.value)
        node = self.nodes[node_id]
        if node.name is not None or node_id < len(self.nodes) - 1:
            # Already a named node: give the new name a node of its own.
            node_id = self.emit(Node('pos', (node_id,), span=node.span))
            node = self.nodes[node_id]
        self.nodes[node_id] = node._replace(name=token.value)
        self.bindings[token.value] = node_id
        return node_id

    def declare(self, token, default):
        self.check_new_name(token, 'input')
        self.bound_later.discard(token.value)
        sub = _Lowering(self.source)
        sub.bound_later = self.bound_later
        value_graph = Graph(sub.nodes, sub.expr(default), sub.inputs, {}, self.source)
        if value_graph.inputs:
            raise self.error(f"the default of '{token.value}' must be a constant expression",
                             default[1])
        from ..core.passes import forward
        self.defaults[token.value] = forward(value_graph, {})[value_graph.output]
        self.inputs[token.value] = self.emit(
            Node('input', name=token.value, span=(token.start_pos, token.end_pos)))

    def define(self, token, params, body):
        name = token.value
        self.check_new_name(token, 'block')
        names = []
        for param in params:
            if param[0] != 'var':
                raise self.error('a block parameter must be a name', param[1])
            if param[3] in CONSTANTS or param[3] in FUNCTIONS:
                raise self.error(f"'{param[3]}' is built in; choose another parameter name",
                                 param[1])
            if param[3] in names:
                raise self.error(f"parameter '{param[3]}' appears twice", param[1])
            names.append(param[3])
        del self.defined_later[name]
        for callee, call in _calls(body):
            if callee == name or name in self.reachable(callee):
                raise self.error(f"blocks cannot recurse: '{name}' calls itself"
                                 + (f" through '{callee}'" if callee != name else ''), call[1])
            if callee in self.defined_later:
                raise self.error(f"block '{callee}' is used before its definition", call[1])
            self.check_call(call)
        self.blocks[name] = (tuple(names), body)
        self.block_sizes[name] = self.inlined_size(body)

    def inlined_size(self, body):
        """Nodes one call of a body makes: a block calling a block twice doubles,
        so this is counted before inlining rather than discovered by running out of memory."""
        size, stack = 0, [body]
        while stack:
            syntax = stack.pop()
            kind = syntax[0]
            if kind == 'num' or (kind == 'var' and syntax[3] in CONSTANTS):
                size += 1
            elif kind == 'group':
                stack.append(syntax[3])
            elif kind in ('op', 'call'):
                size += self.block_sizes.get(syntax[3], 1) if kind == 'call' else 1
                stack.extend(syntax[4])
        return size

    def reachable(self, start):
        seen, stack = set(), [start]
        while stack:
            for callee in self.defined_later.get(stack.pop(), ()):
                if callee not in seen:
                    seen.add(callee)
                    stack.append(callee)
        return seen

    # ---- expressions ----

    def check_call(self, call):
        _, start, _, name, args = call
        if name in FUNCTIONS:
            arity = FUNCTIONS[name].arity
        elif name in self.blocks:
            arity = len(self.blocks[name][0])
        elif name in self.defined_later:
            raise self.error(f"block '{name}' is used before its definition", start)
        elif name in self.bindings or name in self.inputs or name in CONSTANTS:
            raise self.error(f"'{name}' is a value, not a function", start)
        else:
            known = set(FUNCTIONS) | set(self.blocks)
            raise self.error(f"unknown function '{name}'{did_you_mean(name, known)}", start)
        if len(args) != arity:
            raise self.error(f'{name}() takes {_plural(arity, "argument")}, got {len(args)}', start)

    def variable(self, syntax, env, block):
        _, start, end, name = syntax
        if name in env:
            return env[name]
        if name in self.bindings:
            return self.bindings[name]
        if name in CONSTANTS:
            return self.emit(Node('const', name=name, value=CONSTANTS[name],
                                  span=(start, end), block=block))
        if name in FUNCTIONS or name in self.blocks:
            raise self.error(f"'{name}' is a function; call it as {name}(...)", start)
        if name in self.inputs:
            return self.inputs[name]
        if name in self.bound_later:
            raise self.error(f"'{name}' is used before its definition", start)
        node_id = self.emit(Node('input', name=name, span=(start, end)))
        self.inputs[name] = node_id
        return node_id

    def expr(self, root, env=None, block=None):
        """Lower one expression in postorder with an explicit stack; return its node id."""
        stack = [(root, env or {}, block, False)]
        results = []
        while stack:
            syntax, env, block, ready = stack.pop()
            kind = syntax[0]
            if kind == 'num':
                results.append(self.emit(Node('const', value=float(syntax[3]),
                                              span=(syntax[1], syntax[2]), block=block)))
            elif kind == 'var':
                results.append(self.variable(syntax, env, block))
            elif kind == 'group':
                stack.append((syntax[3], env, block, False))
            elif not ready:
                stack.append((syntax, env, block, True))
                stack.extend((child, env, block, False) for child in reversed(syntax[4]))
            else:
                count = len(syntax[4])
                args = tuple(results[-count:])
                del results[-count:]
                span = (syntax[1], syntax[2])
                if kind == 'op':
                    results.append(self.emit(Node(syntax[3], args, span=span, block=block)))
                    continue
                self.check_call(syntax)
                name = syntax[3]
                if name in FUNCTIONS:
                    results.append(self.emit(Node(name, args, span=span, block=block)))
                    continue
                params, body = self.blocks[name]
                if len(self.nodes) + self.block_sizes[name] > MAX_NODES:
                    raise self.error(f"calling '{name}' here would grow the graph past "
                                     f'{MAX_NODES:,} nodes once its blocks are inlined '
                                     f'({self.block_sizes[name]:,} for this call)', syntax[1])
                self.instances[name] = self.instances.get(name, 0) + 1
                instance = f'{name}#{self.instances[name]}'
                inner = f'{block}/{instance}' if block else instance
                stack.append((body, dict(zip(params, args)), inner, False))
        return results[0]
