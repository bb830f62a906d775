"""A gradient check: reverse mode against finite differences, per variable.

Each variable gets its own step, h = 2^-10 · max(1, |x|) (a power of two, so
that x ± h is exact), and the derivative is the central difference
D(h) = (f(x+h) - f(x-h)) / 2h improved by one Richardson step,
R = (4 D(h/2) - D(h)) / 3, whose error falls as h⁴ instead of h². The
difference |R - D(h/2)| estimates what is left of the truncation error, and
ε·|f|/h the rounding; an agreement within those (or within 1e-6 relative)
passes.

Finite differences cannot be trusted everywhere, and the check says so
instead of failing: where the function or the gradient is not finite, where
a probe point leaves the domain (the function is finite at x but not at
x ± h), and at a kink, which is found exactly, not guessed: a non-smooth
operation (abs, relu, sign, min, max, a conditional or a comparison) that
takes another branch at a probe point than at x.
"""

import math
from typing import NamedTuple

from ..core.passes import backward, forward

RTOL = 1e-6
_EPS = 2.0 ** -52
_BRANCHING = {'abs', 'relu', 'sign', 'min', 'max', 'where', 'eq', 'lt', 'ge'}


class Row(NamedTuple):
    what: str            # 'x', or 'x,y' for a Hessian entry
    ad: float
    fd: float
    abs_error: float
    rel_error: float
    verdict: str         # 'pass', 'FAIL' or 'warn'
    reason: str = ''


def _branches(graph, values):
    """Which way each non-smooth node went: a tuple to compare."""
    taken = []
    for i, node in enumerate(graph.nodes):
        if node.op in _BRANCHING:
            args = [values[a] for a in node.args]
            if node.op in ('abs', 'relu', 'sign'):
                taken.append((args[0] > 0) - (args[0] < 0))
            elif node.op in ('min', 'max'):
                taken.append((args[0] > args[1]) - (args[0] < args[1]))
            elif node.op == 'where':
                taken.append(bool(args[0]))
            else:
                taken.append(values[i])
    return tuple(taken)


def step(x):
    return 2.0 ** -10 * max(1.0, abs(x))


def _richardson(f, x, h):
    """(R, error estimate, the probe values) of the derivative of f at x."""
    probes = {d: f(x + d) for d in (-h, -h / 2, h / 2, h)}
    wide = (probes[h] - probes[-h]) / (2 * h)
    narrow = (probes[h / 2] - probes[-h / 2]) / h
    extrapolated = (4 * narrow - wide) / 3
    return extrapolated, abs(extrapolated - narrow), probes


def _compare(what, ad, fd, estimate, scale, h, distrust):
    error = abs(ad - fd)
    relative = error / max(abs(ad), abs(fd)) if max(abs(ad), abs(fd)) > 0 else 0.0
    if distrust:
        return Row(what, ad, fd, error, relative, 'warn', distrust)
    if not math.isfinite(ad):
        return Row(what, ad, fd, error, relative, 'warn', 'the derivative is not finite')
    tolerance = max(RTOL * max(abs(ad), abs(fd)), 10 * estimate, 100 * _EPS * scale / h)
    return Row(what, ad, fd, error, relative, 'pass' if error <= tolerance else 'FAIL')


def _distrust(graph, point, name, h):
    """Why finite differences along `name` cannot be trusted here, or ''."""
    at = forward(graph, point)
    if not math.isfinite(at[graph.output]):
        return 'the function is not finite here'
    signature = _branches(graph, at)
    for d in (-h, -h / 2, h / 2, h):
        moved = forward(graph, {**point, name: point[name] + d})
        if not math.isfinite(moved[graph.output]):
            return 'near a domain edge: not finite within ±h'
        if _branches(graph, moved) != signature:
            return 'at a kink: a non-smooth operation changes branch within ±h'
    return ''


def check_gradient(graph, point, names=None):
    """One Row per variable: reverse mode against finite differences."""
    names = list(graph.inputs) if names is None else list(names)
    values = forward(graph, point)
    grads = backward(graph, values)
    rows = []
    for name in names:
        h = step(point[name])

        def f(x, name=name):
            return forward(graph, {**point, name: x})[graph.output]
        fd, estimate, _ = _richardson(f, point[name], h)
        rows.append(_compare(name, grads[graph.inputs[name]], fd, estimate,
                             abs(values[graph.output]), h, _distrust(graph, point, name, h)))
    return rows


def check_hessian(graph, point, names=None):
    """One Row per Hessian entry: forward over reverse against finite
    differences of the reverse-mode gradient."""
    from .hessian import hessian
    names = list(graph.inputs) if names is None else list(names)
    matrix = hessian(graph, point, names)
    rows = []
    for j, column in enumerate(names):
        h = step(point[column])
        distrust = _distrust(graph, point, column, h)
        probes = {}
        for d in (-h, -h / 2, h / 2, h):
            moved = {**point, column: point[column] + d}
            grads = backward(graph, forward(graph, moved))
            probes[d] = [grads[graph.inputs[n]] for n in names]
        for i, row_name in enumerate(names):
            wide = (probes[h][i] - probes[-h][i]) / (2 * h)
            narrow = (probes[h / 2][i] - probes[-h / 2][i]) / h
            fd = (4 * narrow - wide) / 3
            scale = max(abs(p[i]) for p in probes.values())
            rows.append(_compare(f'{row_name},{column}', matrix[i][j], fd, abs(fd - narrow),
                                 scale, h, distrust))
    return rows
