"""Array programs at a point: the algebra of NumPy arrays, the shape pass, and
the checks that differ from floats'.

A value is a float64 array of any shape (a scalar is 0-d). The forward and
backward loops of passes.py run unchanged over TENSORS; what differs is said
by the algebra: each primitive's array form (arrays.py's, else NumPy's), and
a `meeting` that sums a broadcast cotangent back to its argument's shape, as
torch's sum_to does. Shapes are checked before anything runs (`shapes`).
NumPy is imported only on this path.
"""

from ..errors import AdgradError
from .array_rules import Deferred, ShapeError, broadcast, names_a_size, shown
# (is_array_program is imported from here too, where the library has looked for it)
from .graph import is_array_program, leading_to_inputs  # noqa: F401
from .primitives import PRIMITIVES, TENSOR

MAX_AXES = 3   # vectors, matrices, and stacks of matrices (a layer per slice)
# Entries of one value at most: a mistyped size (zeros(100000, 100000)) is
# refused before it is allocated, not an out-of-memory crash.
MAX_ENTRIES = 2 ** 27

_ALGEBRA = []


def algebra():
    """TENSORS: each primitive's array form and rule, and the meeting that
    unbroadcasts."""
    if not _ALGEBRA:
        from types import SimpleNamespace

        import numpy as np

        from . import arrays
        forms = {row.name: getattr(arrays, row.array, None) or getattr(np, row.array)
                 for row in PRIMITIVES.values()}
        # arrays.tanh is C's per element, so a batch row equals its single point;
        # an array program has no such twin, and NumPy's is within an ulp of it.
        forms['tanh'] = np.tanh
        settle = lambda t, value: np.broadcast_to(t, np.shape(value))   # noqa: E731
        # (the rules that have an array form of their own: fewer arrays in flight)
        rules = {row.name: getattr(arrays, row.array_vjp) if row.array_vjp else row.vjp
                 for row in PRIMITIVES.values()}
        _ALGEBRA.append(SimpleNamespace(np=np, coerce=lambda v: np.asarray(v, dtype=np.float64),
                                        meeting=Unbroadcast, deferred=Deferred, settle=settle,
                                        wanted=None, value=lambda v: v,
                                        shape=lambda v: getattr(v, 'shape', ()),
                                        rules=rules, **forms))
    return _ALGEBRA[0]


class Unbroadcast:
    """Cotangents meet at an argument in its own shape: a broadcast one is
    summed over the axes broadcasting added or stretched. Only an argument
    that leads to an input whose gradient is wanted (`algebra.wanted`: their
    names, or None for all) gets one: a Deferred one (array_rules.py) is
    computed only then, and a constant's is never summed back."""

    def __init__(self, graph, values, grads, algebra):
        self.grads, self.np, self.nodes, self.values = grads, algebra.np, graph.nodes, values
        self.k, self.select = algebra, getattr(algebra, 'if')
        self.shapes = [algebra.shape(v) for v in values]
        self.needed = leading_to_inputs(graph, algebra.wanted)
        # Below an `if`, the entries that took each branch: None is every entry.
        self.live = [None] * len(values) if any(n.op == 'if' for n in graph.nodes) else None

    def __call__(self, i, args, cotangents):
        grads, shapes, needed = self.grads, self.shapes, self.needed
        masks = self.masks(i, args) if self.live is not None else None
        for k, (a, da) in enumerate(zip(args, cotangents)):
            if da is None or not needed[a]:   # a constant's, the data's: never read
                continue
            if type(da) is Deferred:
                da = da.compute()
            shape = shapes[a]
            mask = None if masks is None else masks[k]
            if mask is not None:   # an untaken entry's 0 * inf is no gradient: 0
                da = self.select(mask, da, 0.0)
                mask = _any_to(self.np, mask, shape)
            if self.k.shape(da) != shape:
                da = self.k.sum_to(da, shape)
            if masks is not None:
                before = self.live[a]
                self.live[a] = mask if grads[a] is None else (
                    None if before is None or mask is None else before | mask)
            grads[a] = da if grads[a] is None else self.k.add(grads[a], da)

    def masks(self, i, args):
        """Each argument's live entries, in node i's shape: an `if` splits its
        own by its condition; an elementwise op passes them on; an op of
        arrays mixes entries, so every entry of its arguments is live."""
        np, live = self.np, self.live[i]
        op = self.nodes[i].op
        if op == 'if':
            taken = np.broadcast_to(self.k.value(self.values[args[0]]) != 0, self.shapes[i])
            return (None, taken if live is None else live & taken,
                    ~taken if live is None else live & ~taken)
        if live is None or PRIMITIVES[op].kind == TENSOR:
            return (None,) * len(args)
        return (live,) * len(args)

    def result(self):
        zeros = self.np.zeros
        return [zeros(shape) if g is None else g for g, shape in zip(self.grads, self.shapes)]


def _any_to(np, mask, shape):
    """A mask of a broadcast result, down to an argument's shape: an entry is
    live where any entry it was broadcast to is."""
    if mask.shape == shape:
        return mask
    extra = mask.ndim - len(shape)
    mask = np.any(mask, axis=tuple(range(extra))) if extra > 0 else mask
    stretched = tuple(k for k, n in enumerate(shape) if n == 1 and mask.shape[k] != 1)
    return np.any(mask, axis=stretched, keepdims=True) if stretched else mask


def has_arrays(nodes):
    """Whether any of the nodes is an array op or holds an array: for graphs
    that lowering did not make whole."""
    return any(PRIMITIVES[node.op].kind == TENSOR if node.args else getattr(node.value, 'ndim', 0)
               for node in nodes)


def shape_of(value):
    return tuple(getattr(value, 'shape', ()))


def shapes(graph, inputs):
    """Each node's shape, given the inputs' values; an AdgradError with a
    caret under the operator where shapes cannot go together."""
    result = [()] * len(graph.nodes)
    sizes = {}   # a size's name -> the size the first value with it gave
    after_loop = {}   # a loop node -> the shapes of its parts
    for i, node in enumerate(graph.nodes):
        op = node.op
        if op == 'loop':
            after_loop[i] = loop_shapes(graph, i, [result[a] for a in node.args])
        elif op == 'part':
            result[i] = after_loop[node.args[0]][node.value]
        elif op == 'input':
            result[i] = shape_of(inputs[node.name])
            declared = graph.shapes.get(node.name) if graph.shapes is not None else None
            if declared is not None:
                check_declared(graph, node, declared, result[i], sizes)
        elif not node.args:
            if op != 'const':   # a static argument: its value, not a shape
                result[i] = None
                continue
            result[i] = shape_of(node.value)
        else:
            row = PRIMITIVES[op]
            given = [graph.nodes[a].value if result[a] is None else result[a] for a in node.args]
            try:
                result[i] = row.shape(*given) if row.shape else broadcast(*given)
            except ShapeError as error:
                raise shape_error(graph, i, str(error), result) from None
        check_shape(graph, i, result[i])
    return result


def bind_sizes(graph, inputs):
    """The graph with each size name in a static argument (the n of ones(n),
    eye(n), or of n read as a number) replaced by the size the inputs'
    values give it, checked as their declarations ask; else the graph itself."""
    symbolic = [i for i, node in enumerate(graph.nodes)
                if node.op == 'static' and names_a_size(node.value)]
    if not symbolic:
        return graph
    sizes = {}
    for name, declared in graph.shapes.items():
        if name in inputs:
            node = graph.nodes[graph.inputs[name]]
            check_declared(graph, node, declared, shape_of(inputs[name]), sizes)
    nodes = list(graph.nodes)
    for i in symbolic:
        value = nodes[i].value
        names = (value,) if isinstance(value, str) else value
        for n in names:
            if isinstance(n, str) and n not in sizes:
                raise AdgradError(f'no array gives the size {n} here', graph.source,
                                  nodes[i].span[0] if nodes[i].span else None)
        value = tuple(sizes[n][0] if isinstance(n, str) else n for n in names)
        nodes[i] = nodes[i]._replace(value=value[0] if isinstance(nodes[i].value, str) else value)
    return graph._replace(nodes=nodes)


def loop_shapes(graph, i, given, body_shapes=None):
    """The shapes of loop node i's parts, given its arguments' shapes: its
    body's shape pass, once, and an error where a slice is out of range or
    an iteration would change a carried name's shape. `body_shapes(body,
    {input: shape})` is that pass (default: shapes(), over numbers; a
    formula's takes symbolic sizes)."""
    from .graph import SCAN
    loop = graph.nodes[i].value
    body = loop.body
    declared = {}
    for (kind, sid), shape in zip(loop.slots, given):
        node = body.nodes[sid]
        if kind == SCAN:
            last = loop.first + loop.count - 1   # (whichever way the index runs)
            if not shape or isinstance(shape[0], int) and shape[0] <= last:
                what = (f'{node.name} takes slice {last} of {shown(shape)}, but its size is '
                        f'{shape[0]} along the first axis' if shape else
                        f'{node.name} takes slices of a scalar, which has none')
                raise AdgradError(what, graph.source, node.span[0] if node.span else None)
            shape = shape[1:]
        declared[node.name] = shape
    if loop.index is not None:
        declared[body.nodes[loop.index].name] = ()
    if body_shapes is None:
        np = algebra().np   # (a shape, no memory)
        inner = shapes(body, {name: np.broadcast_to(np.float64(0.0), shape)
                              for name, shape in declared.items()})
    else:
        inner = body_shapes(body, declared)
    for (kind, sid), out in zip(loop.slots, loop.carry):
        if out is not None and inner[out] != inner[sid]:
            name = body.nodes[sid].name
            raise AdgradError(f"'{name}' is {shown(inner[sid]) or 'a scalar'} before an iteration "
                              f"and {shown(inner[out]) or 'a scalar'} after it: a loop keeps each "
                              "name's shape", graph.source, _column(body, out))
    stacked = set(loop.stacked)
    return [(loop.count,) + inner[o] if k in stacked else inner[o]
            for k, o in enumerate(loop.outputs)]


def check_shape(graph, i, shape):
    """An AdgradError at node i if its shape is one adgrad does not take:
    more than MAX_AXES axes, no entries (x[3:] of x[3]), or too many."""
    if len(shape) < 2 and (not shape or 0 < shape[0] <= MAX_ENTRIES):   # at once: most are
        return
    problem = None
    if len(shape) > MAX_AXES:
        problem = f'has {len(shape)} axes; adgrad takes at most {MAX_AXES}'
    elif 0 in shape:
        problem = 'is empty: adgrad takes arrays of one entry or more'
    else:
        entries = 1
        for n in shape:
            entries *= n
        if entries > MAX_ENTRIES:
            problem = f'would hold {entries} entries; adgrad takes at most {MAX_ENTRIES}'
    if problem is not None:
        what = graph.text(i, 30) or graph.label(i)
        what += f' (shape {shown(shape)})' if 0 in shape else shown(shape)
        raise AdgradError(f'{what} {problem}', graph.source, _column(graph, i))


def check_declared(graph, node, declared, actual, sizes):
    """A bound value has the shape its `input` declared: a size that is a name
    is bound, in `sizes`, by the first value that has it."""
    where = node.span[0] if node.span else None
    if len(declared) != len(actual) or any(
            isinstance(d, int) and d != n for d, n in zip(declared, actual)):
        raise AdgradError(f"'{node.name}' is declared {shown(declared)} but its value is "
                          f'{shown(actual)}', graph.source, where)
    for d, n in zip(declared, actual):
        if isinstance(d, str) and sizes.setdefault(d, (n, node.name))[0] != n:
            size, first = sizes[d]
            raise AdgradError(f"'{node.name}' is declared {shown(declared)}, so {d} is {n} "
                              f"here, but '{first}' made it {size}", graph.source, where)


_VERBS = {'add': 'add {0} and {1}', 'sub': 'subtract {1} from {0}', 'mul': 'multiply {0} by {1}',
          'div': 'divide {0} by {1}', 'pow': 'raise {0} to {1}'}


def shape_error(graph, i, message, result):
    node = graph.nodes[i]
    described = [_describe(graph, a, result[a]) for a in node.args]
    if message.startswith('sizes'):   # from broadcast: say what was being done
        every = ', '.join(f'{{{k}}}' for k in range(len(node.args) - 1)) + f' and {{{len(node.args) - 1}}}'
        verb = _VERBS.get(node.op, f'combine {every} in {node.op}')
        message = f'cannot {verb}: {message}'
    return AdgradError(message.format(*described, *[''] * 3), graph.source, _column(graph, i))


def _describe(graph, a, shape):
    """W[2,3] for a name, as the language declares it; else 'x > 0' of shape [2]."""
    text = graph.text(a, 30) or graph.label(a)
    if not shape:
        return f'{text} (a scalar)'
    return f'{text}{shown(shape)}' if text.isidentifier() else f"'{text}' of shape {shown(shape)}"


def _column(graph, i):
    """Where to point at node i: its operator, between its two arguments' texts."""
    node = graph.nodes[i]
    if node.span is None:
        return None
    start, end = node.span
    if len(node.args) == 2 and PRIMITIVES[node.op].symbol:
        left = graph.nodes[node.args[0]].span
        if left is not None and start <= left[1] <= end:
            k = left[1]
            source = graph.source
            while k < end and (source[k].isspace() or source[k] == ')'):
                k += 1
            return k
    return start


def first_nonfinite(values):
    """Id of the first node with an entry that is inf or nan, or None."""
    import numpy as np
    for i, value in enumerate(values):
        if value is not None and not isinstance(value, (tuple, slice)) and \
                not np.isfinite(value).all():
            return i
    return None


def is_finite(value):
    import numpy as np
    return bool(np.isfinite(value).all())


def evaluate(graph, inputs):
    """Every node's value: the shapes checked first, then the forward pass."""
    from .passes import forward, require_inputs
    require_inputs(graph, inputs)
    k = algebra()
    inputs = {name: k.coerce(value) for name, value in inputs.items()}
    graph = bind_sizes(graph, inputs)
    shapes(graph, inputs)
    with k.np.errstate(all='ignore'):   # IEEE results, as the scalar path's
        return forward(graph, inputs, k)


def gradients(graph, values, seed=1.0, wrt=None):
    """∂output/∂node for every node, each in its node's shape; `seed` is the
    cotangent of the output (1 for a scalar output). With `wrt`, input names,
    a node that leads to none of them may get 0 instead (as the data of a loss)."""
    from types import SimpleNamespace

    from .passes import backward
    k = algebra()
    if wrt is not None:
        k = SimpleNamespace(**{**vars(k), 'wanted': frozenset(wrt)})
    with k.np.errstate(all='ignore'):
        return backward(graph, values, algebra=k, seed=seed)
