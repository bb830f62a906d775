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


def names_a_size(value):
    """Whether a static argument holds a size's name, known only from the
    arrays: 'n' (of eye(n)), or a shape with one, (n, 2)."""
    return isinstance(value, str) or type(value) is tuple and any(type(n) is str for n in value)


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
#
# A rule computes through the algebra's primitives alone (k.matmul, k.mul,
# k.broadcast_to…), never NumPy on its arguments, so that a recording algebra
# (derive/array_record.py) can run it and differentiate what it recorded: that
# is the Hessian. `k.shape(x)` and `k.value(x)` ask what x is; `k.np` only
# builds constants (eye, zeros).

def _t(k, a):
    return k.transpose(a) if len(k.shape(a)) >= 2 else a


def _select(k, condition, a, b):
    # where, not the language's `if`: its cotangents are torch.where's, so the
    # Hessian meets a masked inf as torch's double backward does (nan).
    return k.where(condition, a, b)


def _drop_last(k, a):   # x[..., 0] of a trailing axis of size 1
    return k.reshape(a, k.shape(a)[:-1])


def _with_last(k, a):   # x[..., None]
    return k.reshape(a, k.shape(a) + (1,))


def _solve(k, a, b):
    """solve(a, b), nan where a holds inf or nan: its forward value is nan
    already, and LAPACK would meet an exact zero pivot."""
    np = k.np
    if not np.isfinite(k.value(a)).all():
        return np.full(np.broadcast_shapes(k.shape(b), k.shape(a)[:-1] + k.shape(b)[-1:])
                       if len(k.shape(b)) > 1 else k.shape(b), np.nan)
    return k.solve(a, b)


def matmul_vjp(k, g, out, a, b):
    rank_a, rank_b = len(k.shape(a)), len(k.shape(b))
    if rank_a == 1 and rank_b == 1:
        return k.mul(g, b), k.mul(g, a)
    if rank_b == 1:     # (…, m, n) @ (n,)
        column = _with_last(k, g)
        return k.mul(column, b), _drop_last(k, k.matmul(_t(k, a), column))
    if rank_a == 1:     # (n,) @ (…, n, p)
        shape = k.shape(g)
        return (_drop_last(k, k.matmul(b, _with_last(k, g))),
                k.mul(_with_last(k, a), k.reshape(g, shape[:-1] + (1,) + shape[-1:])))
    return (Deferred(lambda: k.matmul(g, _t(k, b))),
            Deferred(lambda: k.matmul(_t(k, a), g)))


def transpose_vjp(k, g, out, a):
    return (_t(k, g),)


def outer_vjp(k, g, out, a, b):
    return k.matmul(g, b), k.matmul(_t(k, g), a)


def _spread(k, g, a, axis):
    """g, reduced over `axis` of a (None: all), laid back over a's shape."""
    shape = k.shape(a)
    if axis is not None:
        axis %= len(shape)
        g = k.reshape(g, shape[:axis] + (1,) + shape[axis + 1:])
    return k.broadcast_to(g, shape)


def sum_vjp(k, g, out, a, axis):
    return _spread(k, g, a, axis), None


def mean_vjp(k, g, out, a, axis):
    shape = k.shape(a)
    sizes = shape if axis is None else (shape[axis],)
    # an algebra over symbolic shapes counts with its own numbers ('n')
    count = k.count(sizes) if hasattr(k, 'count') else float(_size(sizes))
    return k.div(_spread(k, g, a, axis), count), None


def prod_vjp(k, g, out, a, axis):
    if not k.shape(a):
        return g, None
    spread_g = _spread(k, g, a, axis)
    if not (k.value(a) == 0).any():
        return k.mul(spread_g, k.div(_spread(k, out, a, axis), a)), None
    return k.mul(spread_g, k.others_product(a, axis)), None


def _pairs_product(k, a, axis):
    """P[..., i, j, ...] = the product of a's entries along axis but the i-th
    and the j-th, 0 where i = j: others_product's derivative, with i inserted
    before axis."""
    shape = k.shape(a)
    n = shape[axis]
    wide = shape[:axis] + (n,) + shape[axis:]
    diagonal = k.np.eye(n).reshape((1,) * axis + (n, n) + (1,) * (len(shape) - axis - 1))
    rows = _select(k, diagonal, 1.0, k.broadcast_to(k.reshape(a, shape[:axis] + (1,) + shape[axis:]),
                                                     wide))
    return _select(k, diagonal, 0.0, k.others_product(rows, axis + 1))


def others_product_vjp(k, g, out, a, axis):
    shape = k.shape(a)
    if axis is None:
        flat = (_size(shape),)
        d = others_product_vjp(k, k.reshape(g, flat), None, k.reshape(a, flat), 0)[0]
        return k.reshape(d, shape), None
    axis %= len(shape)
    column = k.reshape(g, shape[:axis + 1] + (1,) + shape[axis + 1:])
    return k.sum(k.mul(column, _pairs_product(k, a, axis)), axis), None


def others_product_jvp(k, tangents, out, a, axis):
    shape = k.shape(a)
    if axis is None:
        flat = (_size(shape),)
        return k.reshape(others_product_jvp(k, [k.reshape(tangents[0], flat)], None,
                                            k.reshape(a, flat), 0), shape)
    axis %= len(shape)
    row = k.reshape(tangents[0], shape[:axis] + (1,) + shape[axis:])
    return k.sum(k.mul(row, _pairs_product(k, a, axis)), axis + 1)


def extreme_vjp(k, g, out, a, axis):
    # torch: a full reduction spreads g evenly over the ties (nan: over the
    # nans); along an axis, amax's scale_grad_by_count.
    if axis is None:
        mask = k.ne(a, a) if k.np.isnan(k.value(out)) else k.eq(a, out)
        return k.mul(mask, k.div(g, k.sum(mask, None))), None
    mask = k.eq(a, _spread(k, out, a, axis))
    return k.mul(mask, _spread(k, k.div(g, k.sum(mask, axis)), a, axis)), None


def norm_vjp(k, g, out, a, order):
    if order == 1:   # torch.sgn: 0 at nan, so a nan entry sends the others no nan
        return k.mul(k.sign(a), g), None
    # torch's linalg_vector_norm_backward: g * (a / |a|), masked to 0 at the
    # origin, so that its derivative there is nan, as torch's Hessian
    return k.mul(g, _select(k, k.eq(out, 0.0), 0.0, k.div(a, out))), None


def logsumexp_vjp(k, g, out, a, axis):
    return k.mul(_spread(k, g, a, axis), k.exp(k.sub(a, _spread(k, out, a, axis)))), None


def softmax_vjp(k, g, out, a, axis):
    return k.mul(out, k.sub(g, _spread(k, k.sum(k.mul(g, out), axis), a, axis))), None


def trace_vjp(k, g, out, a):
    # g on the diagonal alone: an inf g is no nan off it (0 * inf)
    return (_select(k, k.np.eye(*k.shape(a)), g, 0.0),)


def det_vjp(k, g, out, a):
    # torch's linalg_det_backward: g det A^-T, which torch makes 0 where det
    # is exactly 0 (a singular matrix), not the cofactors.
    shape = k.shape(a)
    if shape == (1, 1):   # det' = 1, singular or not
        return (k.broadcast_to(g, shape),)
    if k.value(out) == 0:
        # For a gradient that is differentiated again (create_graph), torch
        # takes the cofactors here, whose own derivative is not 0: so does an
        # algebra of `higher_order`.
        if getattr(k, 'higher_order', False):
            return (k.mul(g, _cofactors(k, a, shape[0])),)
        return (k.np.zeros(shape),)
    return (_solve(k, _t(k, a), k.mul(k.mul(g, out), k.np.eye(shape[0]))),)


def _cofactors(k, a, n):
    """The matrix of cofactors of a, each the det of a minor (minor_det):
    right where a is singular, and differentiable again."""
    def without(x, i, axis):
        key = (slice(None),) * axis
        parts = [k.index(x, key + (part,)) for part in (slice(0, i), slice(i + 1, n))
                 if len(range(*part.indices(n)))]
        return parts[0] if len(parts) == 1 else k.concat(*parts, axis)
    rows = [k.stack(*[k.mul(float((-1) ** (i + j)),
                            k.minor_det(without(without(a, i, 0), j, 1)))
                      for j in range(n)]) for i in range(n)]
    return k.stack(*rows)


def minor_det_vjp(k, g, out, a):
    # A cofactor's det, inside det's own rule: its true derivative, the
    # cofactors, singular or not, as torch's SVD form of that rule has it.
    # They are a constant here: a Hessian differentiates the rule once.
    return (k.mul(g, _adjugate(k.np, k.value(a)).T),)


def minor_det_jvp(k, tangents, out, a):
    return k.np.sum(_adjugate(k.np, a).T * tangents[0])


def logdet_vjp(k, g, out, a):
    # torch.logdet is slogdet's log|det| where det >= 0 and nan elsewhere,
    # chosen by a where(): no gradient reaches a negative determinant.
    np, shape, value = k.np, k.shape(a), k.value(out)
    if np.isnan(value):
        return (np.zeros(shape),)
    if value == -np.inf:   # singular: the cofactors over a zero determinant, inf as torch's
        matrix = k.value(a)   # a constant here: the Hessian at a singular matrix is not had
        return (k.div(k.mul(g, _adjugate(np, matrix).T), np.linalg.det(matrix)),)
    return (_solve(k, _t(k, a), k.mul(g, np.eye(shape[0]))),)


def _adjugate(np, a):
    """adj(A), which det(A) A^-1 is where A is invertible, from the SVD: exact
    for a singular A too."""
    from .arrays import others_product
    if not np.isfinite(a).all():   # LAPACK's SVD does not converge on inf or nan
        return np.full(np.shape(a), np.nan)
    u, s, vh = np.linalg.svd(a)
    others = others_product(s, 0) if s.size > 1 else np.ones(1)
    return np.linalg.det(u) * np.linalg.det(vh) * (vh.T * others) @ u.T


def inv_vjp(k, g, out, a):
    return (k.neg(k.matmul(_t(k, out), k.matmul(g, _t(k, out)))),)


def solve_vjp(k, g, out, a, b):
    d_b = _solve(k, _t(k, a), g)
    if len(k.shape(b)) == 1:
        return k.neg(k.outer(d_b, out)), d_b
    return k.neg(k.matmul(d_b, _t(k, out))), d_b


def diag_vjp(k, g, out, a):
    shape = k.shape(a)
    if len(shape) == 1 or shape[0] == shape[1]:
        return (k.diag(g),)   # the diagonal of g; or g on a diagonal, exact zeros off it
    n = min(shape)
    return (k.unindex(k.diag(g), (slice(0, n), slice(0, n)), shape),)


def reshape_vjp(k, g, out, a, shape):
    return k.reshape(g, k.shape(a)), None


def concat_vjp(k, g, out, *arrays_and_axis):
    *arrays, axis = arrays_and_axis
    axis %= len(k.shape(g))
    pieces, start = [], 0
    for a in arrays:
        end = start + k.shape(a)[axis]
        pieces.append(k.index(g, (slice(None),) * axis + (slice(start, end),)))
        start = end
    return (*pieces, None)


def stack_vjp(k, g, out, *arrays):
    return tuple(k.index(g, (i,)) for i in range(len(arrays)))


def index_vjp(k, g, out, a, key):
    return k.unindex(g, key, k.shape(a)), None


# The adjoints the rules above are written with: each is the other's VJP.

def broadcast_to_vjp(k, g, out, a, shape):
    return g, None   # the meeting sums g back to a's shape


def sum_to_vjp(k, g, out, a, shape):
    return k.broadcast_to(g, k.shape(a)), None


def unindex_vjp(k, g, out, a, key, shape):
    return k.index(g, key), None, None


def broadcast_to_shape(a, shape):
    if broadcast(a, shape) != tuple(shape):
        raise ShapeError(f'cannot broadcast {{0}} to {shown(shape)}')
    return tuple(shape)


def sum_to_shape(a, shape):
    broadcast_to_shape(shape, a)
    return tuple(shape)


def unindex_shape(a, key, shape):
    return tuple(shape)


def same_shape(a, axis):
    return a


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
    return _t(k, tangents[0])


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



def broadcast_to_jvp(k, tangents, out, a, shape):
    return k.broadcast_to(tangents[0], shape)


def sum_to_jvp(k, tangents, out, a, shape):
    return k.sum_to(tangents[0], shape)


def unindex_jvp(k, tangents, out, a, key, shape):
    return k.unindex(tangents[0], key, shape)
