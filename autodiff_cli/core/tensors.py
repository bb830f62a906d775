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
from .array_rules import ShapeError, broadcast, shown
from .primitives import PRIMITIVES, TENSOR

MAX_AXES = 3   # vectors, matrices, and stacks of matrices (a layer per slice)
# Entries of one value at most: a mistyped size (zeros(100000, 100000)) is
# refused before it is allocated, not an out-of-memory crash.
MAX_ENTRIES = 2 ** 27

_ALGEBRA = []


def algebra():
    """TENSORS: each primitive's array form, and the meeting that unbroadcasts."""
    if not _ALGEBRA:
        from types import SimpleNamespace

        import numpy as np

        from . import arrays
        forms = {row.name: getattr(arrays, row.array, None) or getattr(np, row.array)
                 for row in PRIMITIVES.values()}
        _ALGEBRA.append(SimpleNamespace(np=np, coerce=lambda v: np.asarray(v, dtype=np.float64),
                                        meeting=Unbroadcast, **forms))
    return _ALGEBRA[0]


class Unbroadcast:
    """Cotangents meet at an argument in its own shape: a broadcast one is
    summed over the axes broadcasting added or stretched.

    An `if` (and where) over arrays runs both sides; as branches.LiveRows
    does for batches, live[i] holds the entries of node i a gradient has
    reached (True: all), so the side an entry did not take adds -0.0 there,
    never its 0 * inf = nan."""

    def __init__(self, graph, values, grads, algebra):
        self.nodes, self.values, self.grads, self.np = graph.nodes, values, grads, algebra.np
        self.live = [True] * len(values)

    def __call__(self, i, args, cotangents):
        np, grads, live, values = self.np, self.grads, self.live, self.values
        rows = live[i]
        node = self.nodes[i]
        if rows is not True and PRIMITIVES[node.op].kind == TENSOR:
            # entries mix here: what the dead ones hold (nan) must not reach live ones
            cotangents = self._rerun(i, args, np.where(rows, grads[i], 0.0))
            rows = True
        if node.op == 'if':
            taken = np.asarray(values[args[0]]) != 0
            reach = (False, _settle(np, rows & taken), _settle(np, rows & ~taken))
        else:
            reach = (rows,) * len(args)
        for a, da, rows_a in zip(args, cotangents, reach):
            if da is None or rows_a is False:
                continue
            shape = np.shape(values[a])
            if rows_a is not True:   # the dead entries out (-0.0), before any sum mixes them in
                full = np.broadcast_shapes(np.shape(da), np.shape(rows_a))
                mask = np.broadcast_to(rows_a, full)
                da = np.where(mask, np.broadcast_to(da, full), -0.0)
                rows_a = _settle(np, any_to(np, mask, shape))
            da = sum_to(np, da, shape)
            if grads[a] is None:
                grads[a], live[a] = da, rows_a
            elif live[a] is True:
                grads[a] = grads[a] + da
                live[a] = True
            else:
                grads[a] = np.where(live[a], grads[a], -0.0) + da
                live[a] = True if rows_a is True else _settle(np, live[a] | rows_a)

    def _rerun(self, i, args, g):
        from .passes import RULES
        values = self.values
        return RULES[self.nodes[i].op](algebra(), g, values[i], *[values[a] for a in args])

    def result(self):
        np = self.np
        return [np.zeros(np.shape(v)) if g is None else g if rows is True else
                np.where(rows, g, 0.0) for g, v, rows in zip(self.grads, self.values, self.live)]


def _settle(np, rows):
    """An entry mask as True (every entry), False (none) or the boolean array."""
    rows = np.asarray(rows)
    return True if rows.all() else rows if rows.any() else False


def any_to(np, mask, shape):
    """A boolean mask reduced by `any` to `shape`, which it broadcasts from."""
    if np.shape(mask) == shape:
        return mask
    extra = np.ndim(mask) - len(shape)
    mask = np.any(mask, axis=tuple(range(extra))) if extra > 0 else mask
    stretched = tuple(k for k, n in enumerate(shape) if n == 1 and np.shape(mask)[k] != 1)
    return np.any(mask, axis=stretched, keepdims=True) if stretched else mask


def sum_to(np, value, shape):
    """value summed down to `shape`, which it broadcasts from."""
    if np.shape(value) == shape:
        return value
    extra = np.ndim(value) - len(shape)
    value = np.sum(value, axis=tuple(range(extra))) if extra > 0 else value
    stretched = tuple(k for k, n in enumerate(shape) if n == 1 and np.shape(value)[k] != 1)
    if stretched:
        value = np.sum(value, axis=stretched, keepdims=True)
    return np.broadcast_to(value, shape) if np.shape(value) != shape else value


def is_array_program(graph, inputs=None):
    """Whether the program has arrays (lowering says so), or a value given for
    one of its inputs is one."""
    return graph.shapes is not None or inputs is not None and any(
        getattr(v, 'ndim', 0) for v in inputs.values())


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
    sizes = {}   # a size that is a name (A[m, n]): the first value that has it binds it
    for i, node in enumerate(graph.nodes):
        op = node.op
        if op == 'input':
            result[i] = shape_of(inputs[node.name])
            declared = graph.shapes.get(node.name) if graph.shapes is not None else None
            if declared is not None:
                check_declared(graph, node, declared, result[i], sizes)
        elif not node.args:
            result[i] = shape_of(node.value) if op == 'const' else None
        else:
            row = PRIMITIVES[op]
            given = [graph.nodes[a].value if result[a] is None else result[a] for a in node.args]
            try:
                result[i] = row.shape(*given) if row.shape else broadcast(*given)
            except ShapeError as error:
                raise shape_error(graph, i, str(error), result) from None
            check_shape(graph, i, result[i])
    return result


def check_shape(graph, i, shape):
    """An AdgradError at node i if its shape is one adgrad does not take:
    more than MAX_AXES axes, no entries (x[3:] of x[3]), or too many."""
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
    """A bound value has the shape its `input` declared: sizes that are names
    are bound in `sizes` {name: size} by the first value that has them."""
    where = node.span[0] if node.span else None
    if len(declared) != len(actual) or any(
            isinstance(d, int) and d != n for d, n in zip(declared, actual)):
        raise AdgradError(f"'{node.name}' is declared {shown(declared)} but its value is "
                          f'{shown(actual)}', graph.source, where)
    for d, n in zip(declared, actual):
        if isinstance(d, str) and sizes.setdefault(d, n) != n:
            raise AdgradError(f"'{node.name}' is declared {shown(declared)} but its value is "
                              f'{shown(actual)}, where {d} is {sizes[d]}', graph.source, where)


_VERBS = {'add': 'add {0} and {1}', 'sub': 'subtract {1} from {0}', 'mul': 'multiply {0} by {1}',
          'div': 'divide {0} by {1}', 'pow': 'raise {0} to {1}'}


def shape_error(graph, i, message, result):
    node = graph.nodes[i]
    described = [_describe(graph, a, result[a]) for a in node.args]
    if message.startswith('sizes'):   # from broadcast: say what was being done
        verb = _VERBS.get(node.op, f'combine {{0}} and {{1}} in {node.op}')
        message = f'cannot {verb}: {message}'
    return AdgradError(message.format(*described, *[''] * 3), graph.source, _column(graph, i))


def _describe(graph, a, shape):
    text = graph.text(a, 30) or graph.label(a)
    return f'{text}{shown(shape)}' if shape else f'{text} (a scalar)'


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
    shapes(graph, inputs)
    with k.np.errstate(all='ignore'):   # IEEE results, as the scalar path's
        return forward(graph, inputs, k)


def gradients(graph, values):
    """∂output/∂node for every node, each in its node's shape."""
    from .passes import backward
    k = algebra()
    with k.np.errstate(all='ignore'):
        return backward(graph, values, algebra=k)
