"""`adgrad plot`'s figures, drawn with matplotlib (the plot extra) into bytes.

Only Figure objects and the Agg canvas are used, never pyplot, so nothing
process-wide is set but the rc settings that make the bytes the same on
every run (svg.hashsalt, no dates, no version in the metadata), and those
only while a figure is saved.
"""

from .curves import spread

FORMATS = ('png', 'svg', 'pdf')
SIZE = (8.0, 5.0)   # inches
DPI = 120           # of PNG: 960 x 600 pixels
_COLOURS = ('#1f77b4', '#d62728', '#2ca02c')   # f, f′, f″
ARROWS = 15        # gradient arrows per side of a contour plot
_METADATA = {'png': {'Software': None},
             'svg': {'Date': None, 'Creator': None},
             'pdf': {'CreationDate': None, 'ModDate': None, 'Creator': None, 'Producer': None}}


def _figure():
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    figure = Figure(figsize=SIZE, dpi=DPI, layout='constrained')
    FigureCanvasAgg(figure)
    return figure


def _plain(text):
    """Text shown as written: '$' would start matplotlib's mathtext."""
    return text.replace('$', r'\$')


def _save(figure, fmt):
    import io

    import matplotlib
    buffer = io.BytesIO()
    with matplotlib.rc_context({'svg.hashsalt': 'adgrad', 'svg.fonttype': 'path',
                                'pdf.fonttype': 42}):
        figure.savefig(buffer, format=fmt, dpi=DPI, metadata=_METADATA[fmt])
    return buffer.getvalue()


def _view(curves):
    """y limits that show the curves' shape: their whole range, unless a
    pole makes it many times the width of their middle 90%, then that
    middle, widened by half its width each way."""
    import numpy as np
    finite = np.concatenate([c[np.isfinite(c)] for c in curves])
    if finite.size == 0:
        return -1.0, 1.0
    lo, hi = float(finite.min()), float(finite.max())
    middle = spread(finite)
    if middle > 0 and hi - lo > 4 * middle:
        low, high = np.quantile(finite, [0.05, 0.95])
        lo, hi = max(lo, low - middle / 2), min(hi, high + middle / 2)
    if hi - lo <= 0:
        lo, hi = lo - 1, hi + 1
    pad = 0.05 * (hi - lo)
    return lo - pad, hi + pad


def curve_figure(curve, fmt, title, at=None, path=None):
    """The curves of a curves.Curve on one axis, as `fmt` bytes. `at`: (a,
    f(a), f′(a)) for a tangent line; `path`: (xs, fs) of points to mark."""
    figure = _figure()
    axes = figure.add_subplot()
    name = curve.name
    labels = [f'f({name})', f'f′({name}) = ∂f/∂{name}', f'f″({name}) = ∂²f/∂{name}²']
    for values, label, colour in zip(curve.curves, labels, _COLOURS):
        axes.plot(curve.x, values, color=colour, linewidth=1.6, label=_plain(label))
    if at is not None:
        a, fa, slope = at
        line = fa + slope * (curve.x - a)
        axes.plot(curve.x, line, color='0.35', linestyle='--', linewidth=1.2,
                  label=_plain(f'tangent at {name} = {a:.4g}: slope {slope:.4g}'))
        axes.plot([a], [fa], 'o', color='black', markersize=5)
    if path is not None:
        axes.plot(path[0], path[1], '.-', color='#9467bd', markersize=6, linewidth=1,
                  label='path')
    axes.set_xlim(curve.x[0], curve.x[-1])
    axes.set_ylim(*_view(curve.curves))
    axes.axhline(0, color='0.75', linewidth=0.8, zorder=0)
    axes.grid(True, color='0.9')
    axes.set_xlabel(_plain(name))
    axes.set_title(_plain(title))
    axes.legend(loc='best')
    return _save(figure, fmt)


def grid_figure(grid, arrows, fmt, title, path=None):
    """Filled contours of a curves.Grid with the gradient's direction drawn
    on `arrows` (a coarser Grid), as `fmt` bytes; `path`: (xs, ys) to overlay."""
    import numpy as np
    figure = _figure()
    axes = figure.add_subplot()
    values = np.ma.masked_invalid(grid.f)
    levels = _levels(grid.f)
    if levels is not None:
        from matplotlib.colors import BoundaryNorm
        # A colour per band, evenly over the map, as the levels are quantiles.
        filled = axes.contourf(grid.x, grid.y, values, levels=levels, cmap='viridis',
                               norm=BoundaryNorm(levels, 256))
        axes.contour(grid.x, grid.y, values, levels=levels, colors='white', linewidths=0.5,
                     linestyles='solid',
                     alpha=0.6)
        bar = figure.colorbar(filled, ax=axes, format='%.4g')
        bar.set_label('f (bands of about equal area)')
    norm = np.hypot(arrows.dx, arrows.dy)
    with np.errstate(all='ignore'):
        u, v = arrows.dx / norm, arrows.dy / norm
    keep = np.isfinite(u) & np.isfinite(v)
    ax, ay = np.meshgrid(arrows.x, arrows.y)
    axes.quiver(ax[keep], ay[keep], u[keep], v[keep], color='white', edgecolor='black',
                linewidth=0.5, angles='xy', pivot='mid', scale=ARROWS * 1.5, width=0.004,
                headwidth=4, label='∇f (direction)')
    if path is not None:
        axes.plot(path[0], path[1], '.-', color='#ff7f0e', markersize=5, linewidth=1.4,
                  label='path')
        axes.plot(path[0][:1], path[1][:1], 'o', color='#ff7f0e', markersize=8)
        axes.plot(path[0][-1:], path[1][-1:], '*', color='#d62728', markersize=12)
    axes.set_xlim(grid.x[0], grid.x[-1])
    axes.set_ylim(grid.y[0], grid.y[-1])
    axes.set_xlabel(_plain(grid.names[0]))
    axes.set_ylabel(_plain(grid.names[1]))
    axes.set_title(_plain(title))
    axes.legend(loc='upper right', facecolor='0.85')
    return _save(figure, fmt)


def _levels(values, count=16):
    """Contour levels at about equal quantiles of the finite values: a deep
    valley and a steep wall both get lines. None where f is nowhere finite or flat."""
    import numpy as np
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return None
    levels = np.unique(np.quantile(finite, np.linspace(0, 1, count + 1)))
    return _readable(levels) if levels.size >= 2 else None


def _readable(levels):
    """Levels rounded for the colour bar's labels (0.6, 1.3, 140 rather than
    0.6425, 1.29, 143.3): each to the power of ten below its gap to the
    nearest other level, so none passes another; the ends outwards, so that
    every value stays inside the bar."""
    import numpy as np
    gaps = np.diff(levels)
    nearest = np.minimum(np.append(gaps, np.inf), np.insert(gaps, 0, np.inf))
    unit = 10.0 ** np.floor(np.log10(nearest))
    rounded = np.round(levels / unit) * unit
    rounded[0] = np.floor(levels[0] / unit[0]) * unit[0]
    rounded[-1] = np.ceil(levels[-1] / unit[-1]) * unit[-1]
    # 0.30000000000000004 is 0.3 to the colour bar, but not to a test of it
    return np.unique([float(f'{v:.12g}') for v in rounded])


def fit_figure(graph, name, x, y, result, fmt, title):
    """The data, the fitted model over the range of `name` and, below, the
    residuals, as `fmt` bytes; `result` is derive.fit's FitResult."""
    import numpy as np

    from ..core.batch import run_batch
    figure = _figure()
    top, bottom = figure.subplots(2, 1, sharex=True, height_ratios=(3, 1))
    grid = np.linspace(float(np.min(x)), float(np.max(x)), 400)
    curve = run_batch(graph, {name: grid, **result.parameters}, grid.size)[0]
    fitted = run_batch(graph, {name: np.asarray(x), **result.parameters}, np.size(x))[0]
    top.plot(x, y, 'o', color='black', markersize=4, label='data')
    fits = ', '.join(f'{n} = {v:.6g}' for n, v in result.parameters.items())
    top.plot(grid, curve, color=_COLOURS[0], linewidth=1.6, label=_plain(f'fit: {fits}'))
    top.set_title(_plain(title))
    top.grid(True, color='0.9')
    top.legend(loc='best')
    bottom.axhline(0, color='0.6', linewidth=0.8)
    bottom.plot(x, np.asarray(y) - fitted, 'o', color=_COLOURS[1], markersize=3)
    bottom.set_ylabel('residual')
    bottom.set_xlabel(_plain(name))
    bottom.grid(True, color='0.9')
    return _save(figure, fmt)
