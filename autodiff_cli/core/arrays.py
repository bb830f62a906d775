"""Array forms of the primitives whose NumPy function differs from ieee.py.

The table (primitives.py) names each op's array form; batch.py looks the
name up here first, then in NumPy. Each function below matches its scalar
twin in ieee.py, and PyTorch, where NumPy alone would not. `diff --lang
numpy` copies the text of those that use nothing but `np` into the module
it prints, so they are written to be read there too.
"""

import math

import numpy as np

from . import ieee


def sigmoid(x):  # PyTorch's formula, as ieee.sigmoid, in one buffer
    if np.ndim(x) == 0:   # a constant's sigmoid(2): a NumPy scalar has no buffer for out=
        return 1.0 / (1.0 + np.exp(-x))
    t = np.negative(x)
    np.exp(t, out=t)
    np.add(t, 1.0, out=t)
    return np.divide(1.0, t, out=t)


def relu(x):  # nan stays nan, -0.0 stays -0.0, as torch.relu
    return np.where(x < 0, 0.0, x)


# nan wins, and a tie returns the first argument (max(-0.0, 0.0) is -0.0, as
# in torch); np.minimum and np.maximum return the second.
def minimum(a, b):
    return np.where((a <= b) | np.isnan(a), a, b)


def maximum(a, b):
    return np.where((a >= b) | np.isnan(a), a, b)


def sign(x):  # torch.sgn: zero for zero and for nan
    return np.where(x > 0, 1.0, np.where(x < 0, -1.0, 0.0))


def where(condition, a, b):
    return np.where(condition, a, b)


# ---- issue 10's functions: each in the steps of its twin in ieee.py ----

def cot(x):
    return 1.0 / np.tan(x)


def sec(x):
    return 1.0 / np.cos(x)


def csc(x):
    return 1.0 / np.sin(x)


def acot(x):
    return np.arctan(1.0 / x)


def _sqrt_square_minus_one(magnitude):
    return np.sqrt(magnitude - 1.0) * np.sqrt(magnitude + 1.0)


def asec(x):
    return np.arctan2(_sqrt_square_minus_one(np.abs(x)), sign(x))


def acsc(x):
    return np.arctan2(sign(x), _sqrt_square_minus_one(np.abs(x)))


def coth(x):
    return 1.0 / np.tanh(x)


def sech(x):
    c = np.cosh(x)
    return np.where(c == np.inf, 2.0 * np.exp(-np.abs(x)), 1.0 / c)


def csch(x):
    s = np.sinh(x)
    return np.where(np.abs(s) == np.inf, np.copysign(2.0 * np.exp(-np.abs(x)), x), 1.0 / s)


def acoth(x):
    return np.copysign(0.5 * np.log1p(2.0 / (np.abs(x) - 1.0)), x)


def asech(x):
    root = np.sqrt((1.0 - x) * (1.0 + x))
    return np.where(np.abs(x) < ieee.TINY, ieee.LN2 - np.log(x), np.log1p(((1.0 - x) + root) / x))


def acsch(x):
    tiny = np.copysign(ieee.LN2 - np.log(np.abs(x)), x)
    return np.where(np.abs(x) < ieee.TINY, tiny, np.arcsinh(1.0 / x))


def sinc(x):  # torch.sinc, not np.sinc's steps: pi*x first, as torch
    product = np.pi * x
    return np.where(x == 0, 1.0, np.sin(product) / product)


def softplus(x):
    return np.where(x > 20.0, x, np.log1p(np.exp(x)))


# NumPy has no erf and SciPy is not a dependency: C's erf (math.erf) per
# element. A Python call per row, but exactly the scalar path's results.
_tanh = np.frompyfunc(math.tanh, 1, 1)
_erf = np.frompyfunc(math.erf, 1, 1)
_erfc = np.frompyfunc(math.erfc, 1, 1)
# A Python step boxes each result (32 bytes, where the array holds 8): so many
# elements at a time keep the boxes to a few MB, whatever the array's size.
BLOCK = 1 << 16


def _per_element(function, x):
    """`function`, a frompyfunc of C's math, over x in float64, BLOCK
    elements at a time."""
    x = np.asarray(x, dtype=np.float64)
    out = np.empty(x.shape)
    flat, into = x.reshape(-1), out.reshape(-1)
    for start in range(0, flat.size, BLOCK):
        into[start:start + BLOCK] = function(flat[start:start + BLOCK])
    return out


def tanh(x):
    """C's tanh, element by element: np.tanh is an ulp away from it at about
    one point in three, and near saturation tanh' = (1 - y)(1 + y) turns that
    ulp into a relative difference of 1e-7, so a batch row would not equal its
    single point. A Python step per element, as for erf."""
    return _per_element(_tanh, x)


def tanh_vjp(k, g, out, a):
    """tanh's rule over arrays, g·((1 − y)(1 + y)) as primitives._tanh_vjp
    computes it, rounding for rounding, in one array beside g, where the
    rule over the algebra holds three: two layers' worth less at the peak
    of a backward pass, which holds few more. In place only where the
    result's layout and type are the rule's (C order, float64): a sum over
    the result adds in the order of its layout."""
    owned = np.subtract(1.0, out)
    if type(g) is not np.ndarray or type(owned) is not np.ndarray or g.shape != owned.shape \
            or g.dtype != owned.dtype or not (g.flags.c_contiguous and owned.flags.c_contiguous
                                              and out.flags.c_contiguous):
        return (np.multiply(g, np.multiply(owned, np.add(1.0, out))),)
    into, y = owned.reshape(-1), out.reshape(-1)   # (views: both are C order)
    for start in range(0, into.size, _BLOCK):   # 1 + y a block at a time, not a whole array
        block = slice(start, start + _BLOCK)
        np.multiply(into[block], np.add(1.0, y[block]), into[block])   # (the third: where it goes)
    return (np.multiply(g, owned, owned),)


_BLOCK = 1 << 15   # elements: 256 kB, within a cache


def erf(x):
    return _per_element(_erf, x)


def erfc(x):
    return _per_element(_erfc, x)


def gelu(x):
    return x * 0.5 * (1.0 + erf(x * ieee.SQRT1_2))


def silu(x):
    return x / (1.0 + np.exp(-x))


def clamp(x, low, high):
    return minimum(maximum(x, low), high)


# ---- the language's logic (primitives.LOGIC): 1.0 or 0.0, and `if` ----

def eq(a, b):
    return np.equal(a, b).astype(np.float64)


def lt(a, b):
    return np.less(a, b).astype(np.float64)


def ge(a, b):
    return np.greater_equal(a, b).astype(np.float64)


def le(a, b):
    return np.less_equal(a, b).astype(np.float64)


def gt(a, b):
    return np.greater(a, b).astype(np.float64)


def ne(a, b):
    return np.not_equal(a, b).astype(np.float64)


def logical_and(a, b):
    return np.logical_and(a != 0, b != 0).astype(np.float64)


def logical_or(a, b):
    return np.logical_or(a != 0, b != 0).astype(np.float64)


def logical_not(a):
    return np.equal(a, 0).astype(np.float64)


def select(condition, a, b):  # nan counts as true, as in the scalar `if`
    return np.where(condition != 0, a, b)


def branches(condition, g):
    """The gradient each branch of an `if` receives: the rows that take it."""
    taken = condition != 0
    return np.where(taken, g, 0.0), np.where(taken, 0.0, g)


def first(value, *rest):
    return value


def loop(*args):
    """A loop and its parts run through the passes' loop hooks (loops.py), never as functions."""
    raise NotImplementedError('a loop node runs through passes.forward')


part = loop


def power(a, b):
    """C's pow over arrays. np.power with a scalar exponent of 0.5 (or 2, -1)
    takes a shortcut through sqrt (or a square, a reciprocal): (-inf)^0.5 is
    nan there and -0.0^0.5 is -0.0, where C, ieee.power and torch give inf and
    0.0. An exponent of its own in every row (a broadcast view, stride 0, is
    still seen as a scalar) takes pow's own path."""
    a, b = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    return np.power(a, b if b.strides == b.ndim * (8,) else b.copy())


# ---- the array primitives (primitives.ARRAYS) whose form is not NumPy's own,
# each as torch computes it ----

def transpose(a):   # the last two axes, as torch's .mT; a vector is its own transpose
    return np.swapaxes(a, -1, -2) if np.ndim(a) >= 2 else np.asarray(a)


def norm(a, order):
    return np.sum(np.abs(a)) if order == 1 else np.sqrt(np.sum(np.multiply(a, a)))


def logsumexp(a, axis):
    # torch: the largest entry out first, taken as 0 where it is infinite
    top = np.amax(a, axis=axis, keepdims=True)
    top = np.where(np.isinf(top), 0.0, top)
    total = np.sum(np.exp(a - top), axis=axis, keepdims=True)
    return np.squeeze(np.log(total) + top, axis=axis) if axis is not None else (
        np.log(total) + top).reshape(())


def softmax(a, axis):
    e = np.exp(a - np.amax(a, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def logdet(a):   # torch.logdet: log|det| where det >= 0, nan where it is negative
    sign, magnitude = np.linalg.slogdet(a)
    return np.where(sign < 0, np.nan, magnitude)


def det(a):
    return np.linalg.det(a)


def inv(a):
    return _solving(np.linalg.inv, a)


def solve(a, b):
    return _solving(np.linalg.solve, a, b)


def _solving(function, *args):
    from ..errors import NumericalError
    try:
        return function(*args)
    except np.linalg.LinAlgError:
        raise NumericalError(f'{function.__name__}: the matrix is singular') from None


def concat(*arrays_and_axis):
    *arrays, axis = arrays_and_axis
    return np.concatenate(arrays, axis=axis)


def stack(*arrays):
    return np.stack(arrays)


def size(sizes):   # a float, as every value: np.prod of sizes is an integer
    return np.float64(np.prod(sizes))


def index(a, key):
    return np.asarray(a)[key]


# ---- the adjoints the derivative rules are written with (not the language's:
# a rule over them can be recorded and differentiated again) ----

def sum_to(a, shape):
    """a summed down to `shape`, which it broadcasts from: broadcast_to's adjoint."""
    a = np.asarray(a)
    if a.shape == shape:
        return a
    extra = a.ndim - len(shape)
    if extra > 0:
        a = np.sum(a, axis=tuple(range(extra)))
    elif extra < 0:   # a 0-d gradient (of a constant's entries) stands for each entry
        a = a.reshape((1,) * -extra + a.shape)
    stretched = tuple(k for k, n in enumerate(shape) if n == 1 and a.shape[k] != 1)
    if stretched:
        a = np.sum(a, axis=stretched, keepdims=True)
    return np.broadcast_to(a, shape) if a.shape != shape else a


def unindex(g, key, shape):
    """Zeros of `shape` with g at a[key]: index's adjoint (basic indexing, so
    each entry is written at most once)."""
    result = np.zeros(shape)
    result[key] = g
    return result


def others_product(a, axis):
    """The product of every other entry along axis (None: of all), exact
    where there are zeros: torch's prod_safe_zeros_backward, by cumulative
    products from both ends."""
    a = np.asarray(a, dtype=np.float64)
    if axis is None:
        return others_product(a.ravel(), 0).reshape(a.shape)
    ones = np.ones_like(np.take(a, [0], axis=axis))
    before = np.cumprod(np.concatenate([ones, np.take(a, range(a.shape[axis] - 1), axis=axis)],
                                       axis=axis), axis=axis)
    flipped = np.flip(np.take(a, range(1, a.shape[axis]), axis=axis), axis=axis)
    after = np.flip(np.cumprod(np.concatenate([ones, flipped], axis=axis), axis=axis), axis=axis)
    return before * after
