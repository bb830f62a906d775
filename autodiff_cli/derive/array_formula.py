"""The derivative of an array program as a formula: a recording algebra over shapes.

`Shapes` is record.Tape over arrays whose sizes may be symbols (`input A[m, n]`):
a node holds no value, only its shape, so `diff` needs no numbers. The array
rules (core/array_rules.py) run over it unchanged and record the gradient's
graph; array_simplify.py rewrites what they record into the Cookbook's forms
(transposes, symmetric parts, identities). A rule that looks at a value
(det' = 0 where det is 0, prod's zeros) is shown GENERAL, a value that is no
edge point, so the formula is the general one. The Hessian with respect to a
vector is the gradient differentiated again with a symbolic cotangent u, whose
coefficient (linear.py's transposition of H u) is the matrix.
"""

from ..core.array_rules import ShapeError, broadcast, shown
from ..core.graph import Graph, Node
from ..core.passes import backward
from ..core.primitives import PRIMITIVES, TENSOR
from ..core.tensors import Unbroadcast, loop_shapes
from ..errors import AdgradError
from .array_simplify import ELEMENTWISE_RULES, TENSOR_RULES, factors, size_value, unwrap
from .record import Derivative, Tape
from .simplify import Ref

MAX_SYMBOLIC_AXES = 3
# The ops recorded through tensor(): arrays', and a formula's own constants.
TENSORS = frozenset(name for name, row in PRIMITIVES.items()
                    if row.kind == TENSOR or name in ('eye', 'size'))


class _General:
    """The value a rule sees at a symbolic point: equal to nothing, nan nowhere."""
    __slots__ = ()

    def __eq__(self, other):
        return self

    __ne__ = __lt__ = __gt__ = __le__ = __ge__ = __eq__

    def __bool__(self):
        return False

    def __hash__(self):
        return 0

    def any(self):
        return False

    def all(self):
        return True


GENERAL = _General()


class _Numbers:
    """The little of NumPy the rules ask of `k.np`, over symbolic shapes: the
    identity and zeros as nodes, and no value that is inf or nan."""

    inf, nan = float('inf'), float('nan')

    def __init__(self, tape):
        self.tape = tape

    def eye(self, n, m=None):
        if m is not None and m != n:
            raise AdgradError(f'no identity of shape [{n},{m}] in a formula')
        return self.tape.tensor('eye', (n,))

    def zeros(self, shape):
        return self.tape.fit(0.0, tuple(shape))

    def isnan(self, value):
        return GENERAL

    def isinf(self, value):
        return GENERAL

    def isfinite(self, value):
        return _Finite()


class _Finite:
    def all(self):
        return True

    def __bool__(self):
        return True


class FormulaMeeting(Unbroadcast):
    """Cotangents summed back to each argument's shape, as over arrays; an
    `if` gates them symbolically (Tape.branches) rather than by masks."""

    def __init__(self, graph, values, grads, algebra):
        super().__init__(graph, values, grads, algebra)
        self.live = None

    def result(self):
        return [self.k.fit(0.0, shape) if g is None and shape is not None else g
                for g, shape in zip(self.grads, self.shapes)]


class Shapes(Tape):
    """The recording algebra over symbolic shapes: a Tape whose nodes carry
    shapes, with the tensor ops recorded through array_simplify.py."""

    meeting = FormulaMeeting
    higher_order = True

    def __init__(self, declared, exact=False):
        super().__init__(simplify=True, exact=exact)
        self.declared = declared          # input name -> its shape
        self.node_shapes = []
        self.np = _Numbers(self)
        self.wanted = None
        self.bodies = {}                  # a loop node -> its body's tape (array_loops.py)

    # ---- what rules ask of the algebra ----

    def shape(self, x):
        """x's shape: a tuple of ints and symbols; None for a static argument."""
        if type(x) is Ref:
            shapes = self.node_shapes
            while len(shapes) <= x:
                shapes.append(self._node_shape(len(shapes)))
            return shapes[x]
        return () if isinstance(x, float) else None

    def value(self, x):
        """For simplify.py, a constant's number or None; for the array rules
        (through `point`), GENERAL: so both read their own meaning."""
        if type(x) is Ref:
            node = self.nodes[x]   # (an array constant, ones(2), is not a number)
            return node.value if node.op == 'const' and not getattr(node.value, 'ndim', 0) \
                else None
        return x if isinstance(x, float) else None

    def count(self, sizes):
        found = size_value(sizes)
        return found if isinstance(found, float) else self.tensor('size', (found,))

    def coerce(self, value):
        return value

    # ---- making nodes ----

    def ref(self, x):
        if type(x) is Ref:
            return x
        if isinstance(x, float):
            return super().ref(x)
        return self.static(x)

    def static(self, value):
        """A static argument (an axis, a shape, a key, a size): a node of its own."""
        return self.interned(('static', repr(value)), Node('static', value=value))

    def literal(self, array):
        """A constant array of the program, by its bytes."""
        return self.interned(('literal', array.shape, array.tobytes()), Node('const', value=array))

    def _node_shape(self, i):
        node = self.nodes[i]
        op = node.op
        if op == 'input':
            return self.declared[node.name]
        if op == 'const':
            return tuple(getattr(node.value, 'shape', ()))
        if op == 'static':
            return None
        given = [self.nodes[a].value if self.shape(a) is None else self.shape(a)
                 for a in node.args]
        return shape_of(op, given)

    def fit(self, x, shape):
        """x, broadcast to `shape` where simplifying lost its shape (0*x is 0)."""
        if self.shape(x) == shape:
            return x
        return self.tensor('broadcast_to', (x, shape))

    def tensor(self, op, args):
        rule = TENSOR_RULES.get(op)
        if rule is not None:
            result = rule(self, *args)
            if result is not None:
                return result
        ref = self._record((op, *[self.ref(a) for a in args]))
        self.shape(ref)
        return ref

    def _elementwise(self, op, args, record):
        expected = broadcast(*[self.shape(a) for a in args])
        args = [unwrap(self, a) for a in args]
        rule = ELEMENTWISE_RULES.get(op)
        result = rule(self, *args) if rule is not None and not self.replaying else None
        if result is None and any(type(a) is Ref and self.nodes[a].op == 'const' for a in args):
            # an array literal (eye(3), [[1], [2]]) stays a node: Tape's
            # folding takes a constant for a number
            result = self._record((op, *[self.ref(a) for a in args]))
        if result is None:
            result = record(op, *args)
        return self.fit(result, expected)

    def _unary(self, op, a):
        if op in TENSORS:
            return self.tensor(op, (a,))
        return self._elementwise(op, (a,), super()._unary)

    def _binary(self, op, a, b):
        if op in TENSORS:
            return self.tensor(op, (a, b))
        return self._elementwise(op, (a, b), super()._binary)

    def apply(self, op, *args):
        if op in TENSORS:
            return self.tensor(op, args)
        return self._elementwise(op, args, super().apply)


class _Point:
    """The algebra the array rules run over: the tape, with GENERAL for any
    value a rule looks at (rules read `k.value` as the value at the point)."""

    def __init__(self, tape):
        # from the class: a tape's own `index` is its table of nodes, not the op
        self.__dict__.update({name: getattr(Shapes, name).__get__(tape) for name in PRIMITIVES})
        self.tape, self.np, self.shape, self.count = tape, tape.np, tape.shape, tape.count
        self.meeting, self.higher_order, self.fit = tape.meeting, True, tape.fit
        self.branches = tape.branches
        self.wanted = None

    def loop_vjp(self, loop, recorded, cotangents, wanted):
        """A loop's backward pass, recorded as one loop (loops.vjp asks)."""
        from .array_loops import backward
        return backward(self.tape, loop, recorded, cotangents, replay_arrays, _Point, wanted)

    def value(self, x):
        return x if isinstance(x, float) else GENERAL


# ---- shapes, symbolic ----

def shape_of(op, given):
    """The result's shape from the arguments' (a static argument's value in
    its place): the row's rule, with symbols where it can take them."""
    row = PRIMITIVES[op]
    if op == 'index' and _symbolic(given[0]):
        return _symbolic_index(*given)
    if op == 'reshape' and (_symbolic(given[0]) or _symbolic(given[1])):
        return _symbolic_reshape(*given)
    try:
        return row.shape(*given) if row.shape else broadcast(*given)
    except TypeError:
        raise ShapeError(f'{op} needs numbers for the sizes of {{0}} here, not symbols') from None


def _symbolic(shape):
    return any(isinstance(n, str) for n in shape)


def _symbolic_index(a, key):
    if len(key) > len(a):
        raise ShapeError(f'{{0}} has {len(a)} axes, so it takes at most {len(a)} subscripts')
    result = []
    for n, k in zip(a, key):
        if isinstance(k, slice):
            if k != slice(None):
                if isinstance(n, str):
                    raise ShapeError(f'a slice of {{0}} along its size {n} needs a number for it')
                result.append(len(range(*k.indices(n))))
            else:
                result.append(n)
        elif isinstance(n, int) and not -n <= k < n:
            raise ShapeError(f'index {k} is out of range for {{0}}: its size there is {n}')
    return tuple(result) + a[len(key):]


def _symbolic_reshape(a, shape):
    """reshape's shape rule over symbols: the same sizes multiplied out, a
    -1 standing for what is left when that is a whole product."""
    number, symbols = factors(a)
    known = [n for n in shape if n != -1]
    k_number, k_symbols = factors(known)
    rest = list(symbols)
    for symbol in k_symbols:
        if symbol not in rest:
            raise ShapeError(f'cannot reshape {{0}} to {shown(shape)}: its size has no {symbol}')
        rest.remove(symbol)
    if number % k_number:
        raise ShapeError(f'cannot reshape {{0}} to {shown(shape)}')
    left = number // k_number
    if len(known) == len(shape):
        if rest or left != 1:
            raise ShapeError(f'cannot reshape {{0}} to {shown(shape)}: the sizes differ')
        return tuple(shape)
    if len(known) < len(shape) - 1 or len(rest) > 1 or rest and left != 1:
        raise ShapeError(f'cannot reshape {{0}} to {shown(shape)}')
    return tuple((rest[0] if rest else left) if n == -1 else n for n in shape)


def program_shapes(graph, declared=None):
    """Each node's shape from the declared shapes alone (a loop's body's,
    from its slots'); an AdgradError with a caret where they cannot go
    together, or where an input has none."""
    from ..core.tensors import shape_error
    declared = declared_shapes(graph) if declared is None else declared
    result = [None] * len(graph.nodes)
    looped = {}
    for i, node in enumerate(graph.nodes):
        op = node.op
        if op == 'input':
            result[i] = declared[node.name]
        elif op == 'const':
            result[i] = tuple(getattr(node.value, 'shape', ()))
        elif op == 'loop':
            looped[i] = loop_shapes(graph, i, [result[a] for a in node.args],
                                    lambda body, given: program_shapes(
                                        body._replace(source=graph.source), given))
        elif op == 'part':
            result[i] = looped[node.args[0]][node.value]
        elif op != 'static':
            given = [graph.nodes[a].value if result[a] is None else result[a] for a in node.args]
            try:
                result[i] = shape_of(op, given)
            except ShapeError as error:
                raise shape_error(graph, i, str(error), result) from None
            if len(result[i]) > MAX_SYMBOLIC_AXES:
                raise AdgradError(f'{graph.text(i, 30)} has {len(result[i])} axes; adgrad takes '
                                  f'at most {MAX_SYMBOLIC_AXES}', graph.source,
                                  node.span[0] if node.span else None)
    return result


def declared_shapes(graph):
    """{input: shape}: its `input` declaration, else its default's shape. An
    input with neither has no shape to differentiate over: an AdgradError."""
    declared = dict(graph.shapes or {})
    for name, i in graph.inputs.items():
        if name in declared:
            continue
        if name in graph.defaults:
            declared[name] = tuple(getattr(graph.defaults[name], 'shape', ()))
            continue
        node = graph.nodes[i]
        raise AdgradError(f"'{name}' has no declared shape: declare it, as in `input {name}[n]` "
                          f'for a vector or `input {name} = 0` for a number', graph.source,
                          node.span[0] if node.span else None)
    return declared


# ---- recording ----

def replay_arrays(graph, tape):
    """Each node of `graph` recorded on `tape` (program_shapes() has checked
    it): a Ref, a float, or a static argument's plain value."""
    values = []
    tape.replaying = True
    for node in graph.nodes:
        op = node.op
        if op == 'input':
            values.append(tape.input(node.name))
            continue
        if op == 'static':
            values.append(node.value)
            continue
        if op == 'const':
            value = node.value
            values.append(tape.literal(value) if getattr(value, 'ndim', 0) else float(value))
            continue
        if op == 'loop':
            from .array_loops import record
            values.append(record(tape, node.value, [values[a] for a in node.args], replay_arrays))
            continue
        if op == 'part':
            values.append(values[node.args[0]].outputs[node.value])
            continue
        value = getattr(Shapes, op)(tape, *[values[a] for a in node.args])
        if node.name and type(value) is Ref and tape.nodes[value].op != 'input' \
                and '[' not in node.name:   # (X[i] = ...'s value: a row, no name)
            tape.names.setdefault(value, node.name.split('#')[0])
        values.append(value)
    tape.replaying = False
    for name in graph.inputs:
        tape.input(name)
    return values


def array_derivative(graph, wrt, with_value=False):
    """∂output/∂v for each v of `wrt`, as formulas over the declared shapes
    on one tape; an AdgradError for shapes that cannot agree, or an output
    that is not a scalar."""
    shapes = program_shapes(graph)
    if shapes[graph.output]:
        raise AdgradError(f'diff needs a scalar output, and this one has shape '
                          f'{shown(shapes[graph.output])}: take sum(...) or mean(...) of it')
    tape = Shapes(declared_shapes(graph))
    values = replay_arrays(graph, tape)
    point = _Point(tape)
    point.wanted = frozenset(wrt)
    grads = backward(graph, values, algebra=point)
    results = [('value', values[graph.output])] if with_value else []
    results += [(name, tape.fit(grads[graph.inputs[name]], tape.declared[name])) for name in wrt]
    return Derivative(tape, results, graph.source)


def array_hessian_formula(graph, names, with_value=False):
    """∂²output/∂x∂y for each pair x, y of `names` (vectors or numbers), y
    not before x, as formulas on one tape: the VJP of y's gradient along a
    symbolic u is, at x, H_xy u, whose coefficient of u is H_xy. One name's
    result is labelled by it (d2_x), a pair's as x_y (d2_x_y)."""
    from .linear import coefficient
    names = [names] if isinstance(names, str) else list(names)
    first = array_derivative(graph, names, with_value)
    tape = first.tape
    for name in names:
        if len(tape.declared[name]) > 1:
            raise AdgradError(f"--order 2 takes vectors or numbers, and '{name}' has shape "
                              f'{shown(tape.declared[name])}: choose others with --wrt')
    gradients = dict(first.results[len(first.results) - len(names):])
    seeded = {}    # y -> (u, the VJP of y's gradient along u at every input)

    def along(y):
        if y not in seeded:
            g = gradients[y]
            direction = f' u{len(seeded)}'
            u = tape.input(direction)
            tape.declared[direction] = tape.declared[y]
            current = Graph(tape.nodes, g, dict(tape.inputs), {}, graph.source)
            values = [n.value if n.op in ('const', 'static') and not getattr(n.value, 'ndim', 0)
                      else Ref(i) for i, n in enumerate(tape.nodes)]
            point = _Point(tape)
            point.wanted = frozenset(names)
            seeded[y] = u, backward(current, values, algebra=point, seed=u)
            del tape.inputs[direction]
        return seeded[y]

    blocks = {}
    for i, x in enumerate(names):
        for y in names[i:]:
            # along a number's direction where there is one: the rules of a
            # coefficient by a number take any linear op (x's block by a number
            # y is y's by x, both of x's shape)
            by, at = (x, y) if tape.declared[x] == () and tape.declared[y] != () else (y, x)
            if type(gradients[by]) is not Ref:
                blocks[x, y] = tape.fit(0.0, tape.declared[x] + tape.declared[y])
                continue
            u, grads = along(by)
            hu = tape.fit(grads[tape.inputs[at]], tape.declared[at])
            blocks[x, y] = coefficient(tape, hu, u)
    results = first.results[:len(first.results) - len(names)]
    pairs = {}
    for i, x in enumerate(names):     # as the mixed partials of numbers: x_x, x_y, y_y
        for y in names[i:]:
            label = x if len(names) == 1 else f'{x}_{y}'
            pairs[label] = (x, y)
            results.append((label, blocks[x, y]))
    return Derivative(tape, results, graph.source, order=2, wrt=pairs)


def result_shape(derivative, label):
    """The shape of a result of array_derivative or array_hessian_formula:
    the value's, a gradient's input's, or a Hessian block's (x's then y's)."""
    if label == 'value':
        return ()
    declared = derivative.tape.declared
    if derivative.order == 1:
        return declared[label]
    x, y = derivative.wrt[label]
    return declared[x] + declared[y]
