"""`check` of an array program: reverse mode against finite differences along
directions, as JAX's check_grads does.

Each variable is probed along a few random directions v (fixed seeds, so the
same input gives the same report), comparing the gradient's g·v with the
central difference of f along v, improved by Richardson extrapolation; a
variable of at most FULL entries is also probed along each entry. Where the
one-sided differences disagree, a kink or a jump lies within the step, and
the differences cannot be trusted: a warning, not a failure.
"""

import math

from ..core import tensors
from .check import RTOL, Row, _richardson

FULL = 16          # entries: each is checked on its own up to this many
DIRECTIONS = 3     # random directions per variable
_OFFSETS = (-1.0, -0.5, 0.5, 1.0)


def check_arrays(graph, point, names):
    """Rows of (what, ad, fd, …) for each variable's probes; `point` binds every input."""
    np = tensors.algebra().np
    with np.errstate(all='ignore'):   # IEEE results: a non-finite probe is a warning row
        return _rows(np, graph, point, names)


def _rows(np, graph, point, names):
    values = tensors.evaluate(graph, point)
    out = values[graph.output]
    if np.ndim(out):
        from ..errors import UsageError
        raise UsageError(f'check needs a scalar output, and this one has shape '
                         f'{tensors.shown(np.shape(out))}: take sum(...) of it')
    grads = tensors.gradients(graph, values, wrt=names)
    rows = []
    for name in names:
        x = np.asarray(values[graph.inputs[name]], dtype=np.float64)
        g = np.asarray(grads[graph.inputs[name]], dtype=np.float64)
        for what, v, index in _probes(np, name, x):
            # an entry's own: an inf elsewhere in g times 0 is no nan here
            ad = float(g[index]) if index is not None else float(np.sum(g * v))
            scale = abs(float(x[index])) if index is not None else float(np.max(np.abs(x)))
            rows.append(_probe(graph, point, name, x, v, ad, float(out), what, scale))
    return rows


def _probes(np, name, x):
    """(label, direction, entry or None) triples: every entry of a small
    variable, then random unit directions."""
    if 0 < x.size <= FULL and x.ndim:
        for index in np.ndindex(x.shape):
            v = np.zeros(x.shape)
            v[index] = 1.0
            yield f'{name}[{",".join(map(str, index))}]', v, index
    if x.ndim == 0:
        yield name, np.ones(()), ()
        return
    rng = np.random.default_rng(sum(map(ord, name)))   # the same directions every run
    for k in range(DIRECTIONS):
        v = rng.standard_normal(x.shape)
        yield f'{name}·r{k + 1}', v / np.linalg.norm(v), None


def _probe(graph, point, name, x, v, ad, centre, what, scale):
    """One probe's Row: the scalar check's step by the entry's own size, made
    smaller (twice, by 16) while the one-sided differences disagree, as a
    curved f does at a coarse step; disagreeing still, a kink or a jump."""
    h = 2.0 ** -10 * max(1.0, scale)
    for _ in range(3):
        row, fd = _at_step(graph, point, name, x, v, ad, centre, what, h)
        if row is not None:
            return row
        h /= 16
    return _row(what, ad, fd, 'warn', 'a kink or a jump: the one-sided differences disagree '
                                      'within ±h')


def _row(what, ad, fd, verdict, reason=''):
    error = abs(ad - fd)
    scale = max(abs(ad), abs(fd))
    return Row(what, ad, fd, error, error / scale if scale > 0 else 0.0, verdict, reason)


def _at_step(graph, point, name, x, v, ad, centre, what, h):
    """(the Row at step h, or None where the one-sided differences disagree; the difference)."""
    def f(d):
        moved = tensors.evaluate(graph, {**point, name: x + d * h * v})
        return float(moved[graph.output])

    probes = {d: f(d) for d in _OFFSETS}
    fd, estimate = _richardson(probes, h)
    if not all(map(math.isfinite, [centre, *probes.values()])):
        return _row(what, ad, fd, 'warn', 'near a domain edge or an overflow: not finite '
                                          'within ±h'), fd
    if not math.isfinite(ad):
        return _row(what, ad, fd, 'warn', 'the derivative is not finite'), fd
    right, left = (probes[0.5] - centre) / (h / 2), (centre - probes[-0.5]) / (h / 2)
    if abs(right - left) > 0.1 * max(abs(right), abs(left)) + 1e-6:
        return None, fd
    rounding = 1e-13 * max(1.0, abs(centre)) / h
    tolerance = max(RTOL * max(abs(ad), abs(fd)), 10 * estimate, 100 * rounding)
    return _row(what, ad, fd, 'pass' if abs(ad - fd) <= tolerance else 'FAIL'), fd
