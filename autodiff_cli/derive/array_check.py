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


def check_array_hessian(graph, point, names):
    """Rows comparing the Hessian (array_record.py) with central differences
    of the gradient, each a u·H·v: every pair of entries of the variables of
    at most FULL entries, and v·H·v along each random direction v."""
    from .array_record import array_hessian
    np = tensors.algebra().np
    with np.errstate(all='ignore'):
        matrix = array_hessian(graph, point, names)
        point = {name: tensors.algebra().coerce(value) for name, value in point.items()}
        probes = _flat_probes(np, point, names)
        rows = []
        for what, name, v, flat in probes:
            ad, fd, estimate, noise, h, distrust = _gradient_differences(
                np, graph, point, names, name, v, matrix @ flat)
            for other, _, _, u in probes:
                if (other == what or '·' not in what + other) and (u is not None):
                    rows.append(_second_row(np, f'{other},{what}', u, ad, fd, estimate, noise, h,
                                            distrust))
    return rows


def _flat_probes(np, point, names):
    """(label, variable, direction, the direction over every variable flattened)."""
    sizes = [int(np.size(point[name])) for name in names]
    starts = np.cumsum([0] + sizes)
    probes = []
    for name, start in zip(names, starts):
        x = np.asarray(point[name], dtype=np.float64)
        for what, v, _ in _probes(np, name, x):
            flat = np.zeros(starts[-1])
            flat[start:start + x.size] = np.ravel(v)
            probes.append((what, name, v, flat))
    return probes


def _gradient_differences(np, graph, point, names, name, v, ad):
    """Richardson's central difference of the flattened gradient along v of
    `name`, with its error estimate, the rounding, the step, and why the
    differences cannot be trusted (or '')."""
    x = point[name]
    h = 2.0 ** -10 * max(1.0, float(np.max(np.abs(x))))

    def gradient(d):
        moved = {**point, name: x + d * h * v}
        grads = tensors.gradients(graph, tensors.evaluate(graph, moved), wrt=names)
        return np.concatenate([np.ravel(grads[graph.inputs[n]]) for n in names])

    probes = {d: gradient(d) for d in (0.0, *_OFFSETS)}
    fd, estimate = _richardson({d: probes[d] for d in _OFFSETS}, h)
    noise = np.max([np.abs(p) for p in probes.values()], axis=0) * 2.0 ** -52
    distrust = ''
    if not all(np.isfinite(p).all() for p in probes.values()):
        distrust = 'near a domain edge or an overflow: the gradient is not finite within ±h'
    right, left = (probes[0.5] - probes[0.0]) / (h / 2), (probes[0.0] - probes[-0.5]) / (h / 2)
    kinked = np.abs(right - left) > 0.1 * np.maximum(np.abs(right), np.abs(left)) + 1e-6
    return ad, fd, estimate, noise, h, distrust or kinked


def _second_row(np, what, u, ad, fd, estimate, noise, h, distrust):
    """One u·H·v Row; `distrust` is a reason, or per entry whether it is kinked."""
    from .check import _compare
    if not isinstance(distrust, str):
        distrust = ('a kink or a jump: the one-sided differences of the gradient disagree '
                    'within ±h') if bool(np.any(distrust[u != 0])) else ''
    weight = np.abs(u)
    return _compare(what, float(u @ ad), float(u @ fd), float(weight @ estimate),
                    float(weight @ noise), h, distrust)
