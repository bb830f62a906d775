"""The numbers behind `adgrad plot`: a function and its derivatives sampled
by the batch engine, so each sample is exact; NumPy only, no drawing.

A sample that is not finite is NaN, which a plot leaves as a gap. So is the
place of a jump or a pole between two samples: an interval whose increment
stands out from its neighbours' is bisected, and where the increment does
not shrink as the interval does, the function is not continuous there. Its
two ends, found to near the spacing of doubles, join the samples with a NaN
between them, so a step is drawn as a step and a pole without a spike.
"""

from collections import namedtuple

# x: the sample points, increasing; curves: f, then f′ (and f″ at order 2),
# each an array of len(x); NaN where not finite or f is not, and at each gap.
Curve = namedtuple('Curve', 'name x curves')
# x, y: the axes (1-D); f, dx, dy: arrays [len(y), len(x)], NaN where not
# finite or f is not.
Grid = namedtuple('Grid', 'names x y f dx dy')

_LEVELS = 40          # bisections of a suspect interval: its width shrinks 2^40-fold
_STANDS_OUT = 2.0     # an increment this many times both neighbours' is suspect
_VISIBLE = 1e-3       # ... if it is this fraction of the curve's spread
_KEPT = 0.25          # a jump keeps this much of its increment however narrow the interval
_ROUNDS = 3


def derivative_graph(graph, name):
    """The graph of ∂f/∂name (recorded, derive/hessian.py; with loops, their
    recurrence, record.differentiate), or a float where the derivative is a
    constant."""
    if graph.loops:
        from ..derive.record import differentiate
        derivative = differentiate(graph, [name], exact=True)
        root = derivative.results[0][1]
        return root if isinstance(root, float) else derivative.graph(0)
    from ..derive.hessian import gradient_graph
    grad_graph, (root,) = gradient_graph(graph, [name])
    return root if isinstance(root, float) else grad_graph._replace(output=root)


def sampler(graph, name, fixed, order=1):
    """A function from an array of values of `name` to the arrays [f, f′]
    (and f″ at order 2), the other inputs at their `fixed` values."""
    import numpy as np

    from ..core.batch import run_batch
    second = derivative_graph(graph, name) if order >= 2 else None

    def at(x):
        x = np.asarray(x, dtype=np.float64)
        columns = {**fixed, name: x}
        value, grads, _ = run_batch(graph, columns, len(x), [name])
        out = [value, grads[name]]
        if order >= 2:
            if isinstance(second, float):
                out.append(np.zeros(len(x)))
            else:
                _, grads2, _ = run_batch(second, columns, len(x), [name])
                out.append(grads2[name])
        # A derivative where f itself is not finite (log's 1/x at x < 0) is
        # no slope of the curve: a gap there too.
        defined = np.isfinite(value)
        return [np.where(defined & np.isfinite(v), v, np.nan) for v in out]
    return at


def sample_curve(graph, name, lo, hi, samples=1000, fixed=None, order=1):
    """f and its derivatives in `name` at `samples` evenly spaced points of
    [lo, hi] (plus the ends of each jump, see above), other inputs `fixed`."""
    import numpy as np
    at = sampler(graph, name, dict(fixed or {}), order)
    x = np.linspace(lo, hi, samples)
    curves = at(x)
    with np.errstate(all='ignore'):
        x, curves = _with_gaps(x, curves, at)
    return Curve(name, x, curves)


def spread(values):
    """The width of the middle 90% of the finite values (0 if none)."""
    import numpy as np
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return 0.0
    lo, hi = np.quantile(finite, [0.05, 0.95])
    return float(hi - lo) or float(np.abs(finite).max())


def _suspects(values):
    """Indices i of the intervals [i, i+1] worth bisecting: an increment that
    stands out from its neighbours' (larger than both by _STANDS_OUT, or
    against both in sign), or a finite end beside one that is not."""
    import numpy as np
    step = np.diff(values)
    size = np.abs(step)
    pad = np.concatenate(([0.0], size, [0.0]))
    signs = np.sign(np.concatenate(([0.0], step, [0.0])))
    before, after = pad[:-2], pad[2:]
    larger = size > _STANDS_OUT * np.maximum(before, after)
    against = (np.sign(step) * signs[:-2] < 0) & (np.sign(step) * signs[2:] < 0) & \
        (size > np.maximum(before, after))
    visible = size > _VISIBLE * spread(values)
    finite = np.isfinite(values)
    edge = finite[:-1] != finite[1:]
    return np.flatnonzero(((larger | against) & visible) | edge)


def _score(a, b):
    """How much a half-interval looks like it holds the jump: its increment;
    infinite where one end is finite and the other not, -1 where neither is."""
    import numpy as np
    finite_a, finite_b = np.isfinite(a), np.isfinite(b)
    return np.where(finite_a & finite_b, np.abs(b - a),
                    np.where(finite_a | finite_b, np.inf, -1.0))


def _with_gaps(x, curves, at):
    """x and the curves with the ends of each jump added, and after each
    jump's left end a repeat of that point with NaN in the curves that jump.
    A round looks again beside the ends the last one added (abs′ at 0 is a
    third value between -1 and 1, with a jump on each side)."""
    import numpy as np
    marker = np.zeros(len(x), dtype=bool)   # the rows of NaN that mark a gap
    new = None
    for _ in range(_ROUNDS):
        jobs = []
        for k, values in enumerate(curves):
            if new is None:
                candidates = _suspects(values)
            else:
                touch = new[:-1] | new[1:]
                size = np.abs(np.diff(values))
                candidates = np.flatnonzero(touch & ~(size <= _VISIBLE * spread(values)))
            jobs += [(k, i) for i in candidates if not (marker[i] or marker[i + 1])]
        if not jobs:
            break
        found = _bisect(x, curves, at, jobs)
        if not found:
            break
        ends = np.setdiff1d([e for _, a, b in found for e in (a, b)], x)
        merged = np.concatenate((x, ends))
        order = np.argsort(merged, kind='stable')
        x = merged[order]
        curves = [np.concatenate((c, e))[order] for c, e in zip(curves, at(ends))]
        marker = np.concatenate((marker, np.zeros(len(ends), dtype=bool)))[order]
        new = np.isin(x, ends) & ~marker
        lefts = sorted({a for _, a, _ in found})
        spots = np.searchsorted(x, lefts, side='right')
        rows = np.array(curves)[:, spots - 1]
        for _k, a, _ in found:
            rows[_k, lefts.index(a)] = np.nan
        x = np.insert(x, spots, x[spots - 1])
        curves = [np.insert(c, spots, row) for c, row in zip(curves, rows)]
        marker = np.insert(marker, spots, True)
        new = np.insert(new, spots, False)
    return x, curves


def _bisect(x, curves, at, jobs):
    """(curve, left, right) of each job (curve, interval) that holds a jump:
    the interval halved _LEVELS times, towards its larger increment, and
    still keeping _KEPT of its first."""
    import numpy as np
    kind = np.array([k for k, _ in jobs])
    left = np.array([x[i] for _, i in jobs])
    right = np.array([x[i + 1] for _, i in jobs])
    f_left = np.array([curves[k][i] for k, i in jobs])
    f_right = np.array([curves[k][i + 1] for k, i in jobs])
    first = np.abs(f_right - f_left)
    for _ in range(_LEVELS):
        middle = 0.5 * (left + right)
        if not ((middle > left) & (middle < right)).any():
            break
        f_middle = np.choose(kind, at(middle))
        go_left = _score(f_left, f_middle) >= _score(f_middle, f_right)
        right, f_right = np.where(go_left, middle, right), np.where(go_left, f_middle, f_right)
        left, f_left = np.where(go_left, left, middle), np.where(go_left, f_left, f_middle)
    jumps = np.flatnonzero(~(np.abs(f_right - f_left) < _KEPT * first))
    return [(int(kind[j]), float(left[j]), float(right[j])) for j in jumps]


def sample_grid(graph, names, ranges, samples=200, fixed=None, centred=False):
    """f and its gradient over a samples × samples grid of the two `names`
    over their `ranges` ((lo, hi) each), other inputs `fixed`; `centred`:
    at the centres of samples × samples cells rather than on the edges too."""
    import numpy as np

    from ..core.batch import run_batch
    a, b = names

    def axis(lo, hi):
        if not centred:
            return np.linspace(lo, hi, samples)
        return lo + (np.arange(samples) + 0.5) * ((hi - lo) / samples)
    xs, ys = axis(*ranges[0]), axis(*ranges[1])
    gx, gy = np.meshgrid(xs, ys)
    columns = {**(fixed or {}), a: gx.ravel(), b: gy.ravel()}
    value, grads, _ = run_batch(graph, columns, gx.size, [a, b])
    defined = np.isfinite(value)   # no arrows where f itself is not finite
    shaped = [np.where(defined & np.isfinite(v), v, np.nan).reshape(gx.shape)
              for v in (value, grads[a], grads[b])]
    return Grid(tuple(names), xs, ys, *shaped)
