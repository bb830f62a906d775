"""A graph over a whole batch of points at once, with NumPy.

The forward and backward loops of evaluate.py run unchanged over an algebra
of arrays: each primitive's forward function is swapped for its NumPy
counterpart, and the derivative rules, written over the algebra, follow.
Per-row Python overhead is thus paid once per node, not once per node per
row. NumPy is imported only on this path.
"""

from types import SimpleNamespace

from .evaluate import backward, forward
from .primitives import PRIMITIVES


def _arrays():
    import numpy as np

    def flag(compare):
        return lambda a, b: compare(a, b).astype(np.float64)

    def sign(x):  # torch.sgn: zero for zero and for nan
        return np.where(x > 0, 1.0, np.where(x < 0, -1.0, 0.0))

    def sigmoid(x):  # PyTorch's formula, as in ieee.sigmoid
        return 1.0 / (1.0 + np.exp(-x))

    forwards = {
        'add': np.add, 'sub': np.subtract, 'mul': np.multiply, 'div': np.divide,
        'neg': np.negative, 'pos': np.positive, 'pow': np.power,
        'sin': np.sin, 'cos': np.cos, 'tan': np.tan, 'asin': np.arcsin, 'acos': np.arccos,
        'atan': np.arctan, 'sinh': np.sinh, 'cosh': np.cosh, 'tanh': np.tanh,
        'exp': np.exp, 'log': np.log, 'log2': np.log2, 'log10': np.log10, 'sqrt': np.sqrt,
        'abs': np.abs, 'sigmoid': sigmoid, 'relu': lambda x: np.where(x < 0, 0.0, x),
        # As ieee.minimum/maximum: nan wins, and a tie returns the first argument
        # (so max(-0.0, 0.0) is -0.0, as in torch); np.maximum returns the second.
        'min': lambda a, b: np.where((a <= b) | np.isnan(a), a, b),
        'max': lambda a, b: np.where((a >= b) | np.isnan(a), a, b),
        'atan2': np.arctan2,
        'sign': sign, 'eq': flag(np.equal), 'lt': flag(np.less), 'ge': flag(np.greater_equal),
        'where': lambda c, a, b: np.where(c, a, b),
    }
    missing = set(PRIMITIVES) - set(forwards)
    if missing:
        raise NotImplementedError(f'no array form for {sorted(missing)}')
    return np, SimpleNamespace(coerce=lambda v: np.asarray(v, dtype=np.float64), **forwards)


def run_batch(graph, columns, rows, wrt=()):
    """Values, and gradients for the names in `wrt`, at `rows` points.

    `columns` maps each input name to an array of `rows` values, or to one
    number for every row. Returns (value, {name: gradient}, bad): float64
    arrays of length `rows`, and (node id, rows) for the first node whose
    value is not finite in some rows, or None.
    """
    np, arrays = _arrays()
    with np.errstate(all='ignore'):  # IEEE results, as in the scalar path
        values = forward(graph, columns, arrays)
        bad = next(((i, int(np.broadcast_to(~np.isfinite(v), (rows,)).sum()))
                    for i, v in enumerate(values) if not np.isfinite(v).all()), None)
        result = np.broadcast_to(values[graph.output], (rows,))
        if not wrt:
            return result, {}, bad
        grads = backward(graph, values, algebra=arrays)
    return result, {n: np.broadcast_to(grads[graph.inputs[n]], (rows,)) for n in wrt}, bad
