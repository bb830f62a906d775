"""Derivative and shape rules of the array primitives (primitives.ARRAYS).

A VJP rule is primitives.py's `rule(k, g, out, *args)`, over the array
algebra (tensors.py), whose `k.np` is NumPy; a static argument (an axis, an
index, a shape) arrives as its plain value and gets no cotangent. Each rule
follows PyTorch's formula (derivatives.yaml and FunctionsManual.cpp), so that
edges agree with torch float64: ties of max share the gradient, norm'(0) = 0,
prod with zeros takes the product of the others, det' of a singular matrix
is 0. A cotangent may have a broadcast shape: the algebra sums it back
to its argument's shape.

A shape rule takes one shape (a tuple) per argument, a static argument's
value in its place, and returns the result's shape, or raises ShapeError
with a message whose {0}, {1}… stand for the arguments as written.
"""


class ShapeError(Exception):
    """Shapes that cannot go together; str() is a message with {0}, {1}… slots."""


class Deferred:
    """A cotangent worth computing only if its argument needs one (torch's
    needs_input_grad): a matrix product's, whose cost is a product as large."""
    __slots__ = ('compute',)

    def __init__(self, compute):
        self.compute = compute


# ---- shapes ----

def shown(shape):
    """A shape as the language writes it: [2,3], or 'a scalar'."""
    return '[' + ','.join(map(str, shape)) + ']' if shape else 'a scalar'


def broadcast(*shapes):
    """NumPy's broadcast of the shapes: sizes compared from the last axis."""
    if len(shapes) == 1:   # the common cases, at once
        return shapes[0]
    if len(shapes) == 2:
        a, b = shapes
        if a == b or not b:
            return a
        if not a:
            return b
    result = []
    for sizes in zip(*[(1,) * (max(map(len, shapes)) - len(s)) + tuple(s) for s in shapes]):
        wide = {n for n in sizes if n != 1}
        if len(wide) > 1:
            a, b = sorted(wide)[:2]
            raise ShapeError(f'sizes {a} and {b} differ')
        result.append(wide.pop() if wide else 1)
    return tuple(result)


def _axis(shape, axis):
    if not isinstance(axis, int) or not -len(shape) <= axis < len(shape):
        raise ShapeError(f'axis {axis} is out of range for {{0}}, which has {len(shape)} '
                         f"ax{'i' if len(shape) == 1 else 'e'}s")
    return axis % len(shape)


def matmul_shape(a, b):
    if not a or not b:
        raise ShapeError("cannot multiply {0} by {1} with @: both must be arrays (use * for a scalar)")
    m = a[:-1] if len(a) > 1 else ()
    p = b[-1:] if len(b) > 1 else ()
    n_a, n_b = a[-1], (b[-2] if len(b) > 1 else b[0])
    if n_a != n_b:
        raise ShapeError(f'cannot multiply {{0}} by {{1}}: sizes {n_a} and {n_b} differ')
    leading = broadcast(a[:-2], b[:-2]) if len(a) > 2 or len(b) > 2 else ()
    return leading + m[-1:] + p


def transpose_shape(a):
    return a[:-2] + a[-1:] + a[-2:-1] if len(a) >= 2 else a


def outer_shape(a, b):
    if len(a) != 1 or len(b) != 1:
        raise ShapeError('outer takes two vectors, not {0} and {1}')
    return a + b


def reduce_shape(a, axis):
    if axis is None:
        return ()
    axis = _axis(a, axis)
    return a[:axis] + a[axis + 1:]


def norm_shape(a, order):
    if order not in (1, 2):
        raise ShapeError(f'norm takes order 1 or 2, not {order}')
    return ()


def softmax_shape(a, axis):
    if not a:
        raise ShapeError('softmax takes an array, not {0}')
    _axis(a, axis)
    return a


def trace_shape(a):
    if len(a) != 2:
        raise ShapeError('trace takes a matrix, not {0}')
    return ()


def _square(a, what):
    if len(a) != 2 or a[0] != a[1]:
        raise ShapeError(f'{what} takes a square matrix, not {{0}}')
    return a


def square_to_scalar(a):
    _square(a, 'this function')
    return ()


def inv_shape(a):
    return _square(a, 'inv')


def solve_shape(a, b):
    n = _square(a, 'solve')[0]
    if len(b) not in (1, 2) or b[0] != n:
        raise ShapeError(f'cannot solve {{0}} against {{1}}: {{1}} must have {n} rows')
    return b


def diag_shape(a):
    if len(a) == 1:
        return a + a
    if len(a) == 2:
        return (min(a),)
    raise ShapeError('diag takes a vector or a matrix, not {0}')


def reshape_shape(a, shape):
    size, known = _size(a), [n for n in shape if n != -1]
    if len(known) < len(shape) - 1 or any(n < 0 for n in known):
        raise ShapeError(f'cannot reshape {{0}} to {shown(shape)}: sizes must be positive, '
                         'with at most one -1')
    rest = _size(known)
    if len(known) < len(shape):
        if rest == 0 or size % rest:
            raise ShapeError(f'cannot reshape {{0}} to {shown(shape)}')
        shape = tuple(size // rest if n == -1 else n for n in shape)
    if _size(shape) != size:
        raise ShapeError(f'cannot reshape {{0}} ({size} entries) to {shown(shape)}')
    return tuple(shape)


def _size(shape):
    size = 1
    for n in shape:
        size *= n
    return size


def concat_shape(*shapes_and_axis):
    *shapes, axis = shapes_and_axis
    first = shapes[0]
    if not first:
        raise ShapeError('concat joins arrays, not {0}')
    axis = _axis(first, axis)
    for k, shape in enumerate(shapes[1:], 1):
        if len(shape) != len(first) or shape[:axis] + shape[axis + 1:] != first[:axis] + first[axis + 1:]:
            raise ShapeError(f'cannot concat {{0}} and {{{k}}}: they differ off axis {axis}')
    return first[:axis] + (sum(s[axis] for s in shapes),) + first[axis + 1:]


def stack_shape(*shapes):
    for k, shape in enumerate(shapes[1:], 1):
        if shape != shapes[0]:
            raise ShapeError(f'cannot stack {{0}} and {{{k}}}: every element must have the '
                             'same shape')
    return (len(shapes),) + shapes[0]


def index_shape(a, key):
    if len(key) > len(a):
        raise ShapeError(f'{{0}} has {len(a)} ax{"i" if len(a) == 1 else "e"}s, so it takes at '
                         f'most {len(a)} subscripts, not {len(key)}')
    result = []
    for n, k in zip(a, key):
        if isinstance(k, slice):
            result.append(len(range(*k.indices(n))))
        elif not -n <= k < n:
            raise ShapeError(f'index {k} is out of range for {{0}}: its size there is {n}')
    return tuple(result) + a[len(key):]


# ---- derivative rules ----

def _t(np, a):
    return np.swapaxes(a, -1, -2) if np.ndim(a) >= 2 else a


def _solve(np, a, b):
    """solve(a, b), nan where a is singular: a matrix holding inf or nan,
    whose forward value is already nan, gives LAPACK an exact zero pivot."""
    try:
        return np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        return np.full(np.broadcast_shapes(np.shape(b), np.shape(a)[:-1] + np.shape(b)[-1:])
                       if np.ndim(b) > 1 else np.shape(b), np.nan)


def matmul_vjp(k, g, out, a, b):
    np = k.np
    if np.ndim(a) == 1 and np.ndim(b) == 1:
        return g * b, g * a
    if np.ndim(b) == 1:     # (…, m, n) @ (n,)
        return np.expand_dims(g, -1) * b, np.matmul(_t(np, a), np.expand_dims(g, -1))[..., 0]
    if np.ndim(a) == 1:     # (n,) @ (…, n, p)
        return (np.matmul(b, np.expand_dims(g, -1))[..., 0],
                np.expand_dims(a, -1) * np.expand_dims(g, -2))
    return (Deferred(lambda: np.matmul(g, _t(np, b))),
            Deferred(lambda: np.matmul(_t(np, a), g)))


def transpose_vjp(k, g, out, a):
    return (_t(k.np, g),)


def outer_vjp(k, g, out, a, b):
    return k.np.matmul(g, b), k.np.matmul(_t(k.np, g), a)


def _spread(np, g, a, axis):
    """g, reduced over `axis` of a (None: all), laid back over a's shape."""
    return np.broadcast_to(g if axis is None else np.expand_dims(g, axis), np.shape(a))


def sum_vjp(k, g, out, a, axis):
    return _spread(k.np, g, a, axis), None


def mean_vjp(k, g, out, a, axis):
    np = k.np
    count = np.size(a) if axis is None else np.shape(a)[axis]
    return _spread(np, g, a, axis) / count, None


def _others_product(np, a, axis):
    """The product of every other entry along axis, exact where there are
    zeros: torch's prod_safe_zeros_backward, by cumulative products from both ends."""
    ones = np.ones_like(np.take(a, [0], axis=axis))
    before = np.cumprod(np.concatenate([ones, np.take(a, range(a.shape[axis] - 1), axis=axis)],
                                       axis=axis), axis=axis)
    flipped = np.flip(np.take(a, range(1, a.shape[axis]), axis=axis), axis=axis)
    after = np.flip(np.cumprod(np.concatenate([ones, flipped], axis=axis), axis=axis), axis=axis)
    return before * after


def prod_vjp(k, g, out, a, axis):
    np = k.np
    a = np.asarray(a, dtype=np.float64)
    if a.ndim == 0:
        return g, None
    spread_g, spread_out = _spread(np, g, a, axis), _spread(np, out, a, axis)
    if not (a == 0).any():
        return spread_g * (spread_out / a), None
    if axis is None:
        return spread_g * _others_product(np, a.ravel(), 0).reshape(a.shape), None
    return spread_g * _others_product(np, a, axis), None


def extreme_vjp(k, g, out, a, axis):
    # torch: a full reduction spreads g evenly over the ties (nan: over the
    # nans); along an axis, amax's scale_grad_by_count.
    np = k.np
    if axis is None:
        mask = np.isnan(a) if np.isnan(out) else np.equal(a, out)
        return mask * (g / np.sum(mask)), None
    mask = np.equal(a, _spread(np, out, a, axis))
    return mask * _spread(np, g / np.sum(mask, axis=axis), a, axis), None


def norm_vjp(k, g, out, a, order):
    np = k.np
    if order == 1:   # torch.sgn: 0 at nan, so a nan entry sends the others no nan
        return np.where(a > 0, 1.0, np.where(a < 0, -1.0, 0.0)) * g, None
    return a * np.where(out == 0, 0.0, g / out), None   # torch masks the origin to 0


def logsumexp_vjp(k, g, out, a, axis):
    np = k.np
    return _spread(np, g, a, axis) * np.exp(a - _spread(np, out, a, axis)), None


def softmax_vjp(k, g, out, a, axis):
    np = k.np
    return out * (g - np.sum(g * out, axis=axis, keepdims=True)), None


def trace_vjp(k, g, out, a):
    np = k.np
    d = np.zeros(np.shape(a))   # g on the diagonal alone: an inf g is no nan off it (0 * inf)
    np.fill_diagonal(d, g)
    return (d,)


def det_vjp(k, g, out, a):
    # torch's linalg_det_backward: g det A^-T, which torch makes 0 where det
    # is exactly 0 (a singular matrix), not the cofactors.
    np = k.np
    if np.shape(a) == (1, 1):   # det' = 1, singular or not
        return (g * np.ones((1, 1)),)
    if out == 0:
        return (np.zeros(np.shape(a)),)
    return (_solve(np, _t(np, a), g * out * np.eye(np.shape(a)[0])),)


def logdet_vjp(k, g, out, a):
    # torch.logdet is slogdet's log|det| where det >= 0 and nan elsewhere,
    # chosen by a where(): no gradient reaches a negative determinant.
    np = k.np
    if np.isnan(out):
        return (np.zeros(np.shape(a)),)
    if out == -np.inf:   # singular: the cofactors over a zero determinant, inf as torch's
        return (g * _t(np, _adjugate(np, a)) / np.linalg.det(a),)
    return (_solve(np, _t(np, a), g * np.eye(np.shape(a)[0])),)


def _adjugate(np, a):
    """adj(A), which det(A) A^-1 is where A is invertible, from the SVD: exact
    for a singular A too."""
    u, s, vh = np.linalg.svd(a)
    others = _others_product(np, s, 0) if s.size > 1 else np.ones(1)
    return np.linalg.det(u) * np.linalg.det(vh) * (_t(np, vh) * others) @ _t(np, u)


def inv_vjp(k, g, out, a):
    np = k.np
    return (-np.matmul(_t(np, out), np.matmul(g, _t(np, out))),)


def solve_vjp(k, g, out, a, b):
    np = k.np
    d_b = _solve(np, _t(np, a), g)
    if np.ndim(b) == 1:
        return -np.outer(d_b, out), d_b
    return -np.matmul(d_b, _t(np, out)), d_b


def diag_vjp(k, g, out, a):
    np = k.np
    if np.ndim(a) == 1:
        return (np.diagonal(g).copy(),)
    d = np.zeros(np.shape(a))
    np.fill_diagonal(d, g)
    return (d,)


def reshape_vjp(k, g, out, a, shape):
    return k.np.reshape(g, k.np.shape(a)), None


def concat_vjp(k, g, out, *arrays_and_axis):
    np = k.np
    *arrays, axis = arrays_and_axis
    ends = np.cumsum([np.shape(a)[axis] for a in arrays])[:-1]
    return (*np.split(g, ends, axis=axis), None)


def stack_vjp(k, g, out, *arrays):
    return tuple(g[i] for i in range(len(arrays)))


def index_vjp(k, g, out, a, key):
    d = k.np.zeros(k.np.shape(a))
    d[key] = g   # basic indexing: each entry at most once
    return d, None


# ---- forward mode: JVP rules, `jvp(k, tangents, out, *args)` with None for an
# argument that has no tangent (derive/forward.py) ----

def _each(tangents, args, np):
    """The tangents with zeros in place of None, in each argument's shape."""
    return [np.zeros(np.shape(a)) if t is None else t for t, a in zip(tangents, args)]


def _bilinear(product):
    def jvp(k, tangents, out, a, b):
        ta, tb = tangents
        parts = ([product(k.np, ta, b)] if ta is not None else []) + (
            [product(k.np, a, tb)] if tb is not None else [])
        return parts[0] if len(parts) == 1 else parts[0] + parts[1]
    return jvp


matmul_jvp = _bilinear(lambda np, a, b: np.matmul(a, b))
outer_jvp = _bilinear(lambda np, a, b: np.outer(a, b))


def transpose_jvp(k, tangents, out, a):
    return _t(k.np, tangents[0])


def grouped_jvp(vjp):
    """The JVP of a reduction, each input entry feeding one output entry: the
    tangent weighted by the VJP of ones, summed over the reduced axis."""
    def jvp(k, tangents, out, a, axis):
        np = k.np
        weight = vjp(k, np.ones(np.shape(out)), out, a, axis)[0]
        return np.sum(tangents[0] * weight, axis=axis)
    return jvp


def norm_jvp(k, tangents, out, a, order):
    return k.np.sum(tangents[0] * norm_vjp(k, 1.0, out, a, order)[0])


def softmax_jvp(k, tangents, out, a, axis):
    t = tangents[0]
    return out * (t - k.np.sum(out * t, axis=axis, keepdims=True))


def trace_jvp(k, tangents, out, a):
    return k.np.trace(tangents[0])


def det_jvp(k, tangents, out, a):
    np = k.np
    if np.shape(a) == (1, 1):
        return np.sum(tangents[0])
    if out == 0:   # as det_vjp: torch's 0 at a singular matrix
        return np.zeros(())
    return out * np.trace(np.linalg.solve(a, tangents[0]))


def logdet_jvp(k, tangents, out, a):
    np = k.np
    if np.isnan(out):
        return np.zeros(())
    if out == -np.inf:
        return np.sum(_adjugate(np, a).T * tangents[0].T) / np.linalg.det(a)
    return np.trace(np.linalg.solve(a, tangents[0]))


def inv_jvp(k, tangents, out, a):
    return -k.np.matmul(out, k.np.matmul(tangents[0], out))


def solve_jvp(k, tangents, out, a, b):
    np = k.np
    ta, tb = tangents
    rhs = (tb if tb is not None else 0.0) - (np.matmul(ta, out) if ta is not None else 0.0)
    return np.linalg.solve(a, np.broadcast_to(rhs, np.shape(out)))


def diag_jvp(k, tangents, out, a):
    return k.np.diag(tangents[0])


def reshape_jvp(k, tangents, out, a, shape):
    return k.np.reshape(tangents[0], shape)


def concat_jvp(k, tangents, out, *arrays_and_axis):
    *arrays, axis = arrays_and_axis
    return k.np.concatenate(_each(tangents[:-1], arrays, k.np), axis=axis)


def stack_jvp(k, tangents, out, *arrays):
    return k.np.stack(_each(tangents, arrays, k.np))


def index_jvp(k, tangents, out, a, key):
    return k.np.asarray(tangents[0])[key]
