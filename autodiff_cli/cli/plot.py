"""`adgrad plot`: f and its derivatives over a range, or the contours and
gradient of f over two, as PNG, SVG or PDF (matplotlib: the plot extra).

The numbers come from pictures/curves.py (the batch engine), the figure
from pictures/plot.py; this module reads the command line and writes the bytes.
"""

import argparse
import os

from ..errors import UsageError
from .common import Exit, input_values, load_program, parse_bindings, refuse_arrays
from .evaluate import add_input

ENDINGS = {'.png': 'png', '.svg': 'svg', '.pdf': 'pdf'}
MOST_PER_SIDE = 2000   # of a grid: 4 million points
NEEDS_MATPLOTLIB = ("adgrad plot needs matplotlib, adgrad's plot extra: "
                    "pip install matplotlib")

_EXAMPLES = """examples:
  adgrad plot 'x^2*sin(x)' x=-3..3 -o f.png          # f and f′
  adgrad plot 'x^2*sin(x)' x=-3..3 --order 2 -o f.svg # and f″
  adgrad plot 'x^3 - x' x=-2..2 --at x=1 -o tangent.png
  adgrad plot '(1-x)^2 + 100*(y-x^2)^2' x=-2..2 y=-1..3 -o rosen.pdf
  adgrad plot 'sin(a*x)' x=-pi..pi a=2 --format svg > f.svg

A range is NAME=LO..HI (LO and HI numbers or constant expressions such as
-pi); one range draws curves, two draw contours with the gradient's direction.
Other variables take NAME=VALUE or their input defaults."""


def add_arguments(parser, command):
    parser.usage = 'adgrad plot [options] (EXPR | -f FILE) NAME=LO..HI [NAME=LO..HI] [NAME=VALUE ...]'
    parser.epilog = _EXAMPLES
    add_input(parser)
    parser.add_argument('-o', '--output', metavar='FILE',
                        help="the picture: .png, .svg or .pdf; '-' is standard output, the "
                             'default when that is not a terminal')
    parser.add_argument('--format', choices=list(ENDINGS.values()), default=None,
                        help="png, svg or pdf (default: from FILE's ending, else png)")
    parser.add_argument('--order', type=int, choices=(1, 2), default=1,
                        help='with one range: 1 draws f and f′, 2 adds f″')
    parser.add_argument('--at', metavar='NAME=VALUE',
                        help='with one range: draw the tangent line at this point')
    parser.add_argument('--path', metavar='FILE',
                        help="overlay a path: a CSV file with a column per variable, such as "
                             "minimize --trace writes")
    parser.add_argument('--samples', type=_samples, default=None, metavar='N',
                        help='points along the range (default 1000), or per side of the grid '
                             'of two ranges (default 200)')


def _samples(text):
    if not (text.isascii() and text.isdigit()) or not 2 <= int(text) <= 10**6:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number from 2 to 1000000")
    return int(text)


def run(args, env):
    import importlib.util
    fmt, path = _destination(args, env)
    if importlib.util.find_spec('matplotlib') is None:
        raise UsageError(NEEDS_MATPLOTLIB)
    graph, words = load_program(args, env)
    ranges, words = split_ranges(words, graph)
    bindings = parse_bindings(words, graph)
    refuse_arrays(graph, bindings, 'adgrad plot and its options')
    fixed = input_values(graph, bindings, env.warn)
    for name in ranges:
        fixed.pop(name, None)
    from ..core.passes import require_inputs
    require_inputs(graph, {**fixed, **dict.fromkeys(ranges, 0.0)})
    trace = read_path(args.path, list(ranges)) if args.path is not None else None
    title = _title(graph, fixed, args.file)
    from ..pictures import curves, plot
    if len(ranges) == 1:
        (name, (lo, hi)), = ranges.items()
        curve = curves.sample_curve(graph, name, lo, hi, args.samples or 1000, fixed,
                                    args.order)
        at = None
        if args.at is not None:
            a = _at(args.at, name, graph)
            f, slope = (float(v[0]) for v in curves.sampler(graph, name, fixed)([a]))
            at = (a, f, slope)
        if trace is not None:
            xs = trace[0]
            trace = (xs, curves.sampler(graph, name, fixed)(xs)[0])
        _warn_empty(curve.curves[0], ranges, env)
        data = plot.curve_figure(curve, fmt, title, at, trace)
    else:
        if args.order != 1 or args.at is not None:
            raise UsageError(f"{'--order' if args.order != 1 else '--at'} is for one range: "
                             'two ranges draw the contours of f and its gradient')
        if (args.samples or 0) > MOST_PER_SIDE:   # a grid is the square of it
            raise UsageError(f'--samples {args.samples}: a grid of two ranges takes at most '
                             f'{MOST_PER_SIDE:,} per side')
        names, spans = list(ranges), list(ranges.values())
        grid = curves.sample_grid(graph, names, spans, args.samples or 200, fixed)
        arrows = curves.sample_grid(graph, names, spans, plot.ARROWS, fixed, centred=True)
        _warn_empty(grid.f, ranges, env)
        data = plot.grid_figure(grid, arrows, fmt, title, trace)
    from .render import _to_stdout, write_atomic
    if path == '-':
        _to_stdout(data, env.stdout)
    else:
        write_atomic(path, data)
    return Exit.OK


def _warn_empty(values, ranges, env):
    """A warning where f is nowhere finite, so the plot has nothing on it."""
    import numpy as np
    if not np.isfinite(values).any():
        over = ' and '.join(f'{name}={lo:g}..{hi:g}' for name, (lo, hi) in ranges.items())
        env.warn(f'f is not finite anywhere on {over}: the plot is empty')


def _destination(args, env):
    """(format, path or '-'), before any work: -o's ending, else --format, else png."""
    path, fmt = args.output, args.format
    if path not in (None, '-') and fmt is None:
        ending = os.path.splitext(path)[1].lower()
        fmt = ENDINGS.get(ending)
        if fmt is None:
            raise UsageError(f"cannot tell the format from '{ending or path}': name the file "
                             '.png, .svg or .pdf, or give --format')
    if path is None:
        if env.stdout_isatty:
            raise UsageError('a plot is a picture, not text: give -o FILE.png (or .svg, .pdf), '
                             'or redirect standard output')
        path = '-'
    elif path == '-' and env.stdout_isatty and (fmt or 'png') != 'svg':
        raise UsageError(f'will not write {(fmt or "png").upper()} to a terminal: '
                         'redirect it or give -o FILE')
    return fmt or 'png', path


def split_ranges(words, graph):
    """({name: (lo, hi)} of the NAME=LO..HI words, in order; the other words)."""
    ranges, rest = {}, []
    for word in words:
        name, equals, text = word.partition('=')
        if not (equals and '..' in text):
            rest.append(word)
            continue
        if '...' in text:   # -1...1 would read as -1 to .1
            raise UsageError(f"bad range '{word}': write NAME=LO..HI with two dots, such as "
                             'x=-1..1')
        lo_text, _, hi_text = text.partition('..')
        lo, hi = (parse_bindings([f'{name}={t}'], graph)[name] for t in (lo_text, hi_text))
        if not (lo < hi) or not all(map(_finite, (lo, hi))):
            raise UsageError(f"bad range '{word}': write NAME=LO..HI with finite LO < HI, "
                             'such as x=-3..3')
        if name not in graph.inputs:
            raise UsageError(f"'{name}' is not a variable of the expression, so it has "
                             'no range to plot over')
        if name in ranges:
            raise UsageError(f"'{name}' has two ranges")
        ranges[name] = (float(lo), float(hi))
    if not 1 <= len(ranges) <= 2:
        raise UsageError('give one range to draw curves, or two for contours, as NAME=LO..HI '
                         f"(such as {next(iter(graph.inputs), 'x')}=-3..3)")
    clash = next((w.partition('=')[0] for w in rest if w.partition('=')[0] in ranges), None)
    if clash is not None:
        raise UsageError(f"'{clash}' has a range and a value: give one")
    return ranges, rest


def _finite(v):
    return v - v == 0


def _at(text, name, graph):
    bound = parse_bindings([text], graph)
    if list(bound) != [name] or not _finite(bound[name]):
        raise UsageError(f"--at '{text}': give a finite point of the plotted variable, "
                         f'such as --at {name}=1')
    return bound[name]


def read_path(file, names):
    """The columns `names` of a CSV file (minimize --trace's), as float arrays."""
    import csv

    import numpy as np

    from .common import read_text
    rows = list(csv.reader(read_text(file).splitlines()))
    if not rows:
        raise UsageError(f'--path {file} is empty')
    header = rows[0]
    missing = [n for n in names if n not in header]
    if missing:
        raise UsageError(f"--path {file} has no column '{missing[0]}' (its columns: "
                         f"{', '.join(header)})")
    where = [header.index(n) for n in names]
    columns = [[] for _ in names]
    for line, row in enumerate(rows[1:], start=2):
        for column, i in zip(columns, where):
            try:
                column.append(float(row[i]))
            except (IndexError, ValueError):
                raise UsageError(f'--path {file}, line {line}: '
                                 f"'{names[where.index(i)]}' is not a number") from None
    return [np.array(c, dtype=np.float64) for c in columns]


def _title(graph, fixed, file=None):
    """What is drawn: the output's name (f if it has none) and its text, or
    the block it comes out of; the file's name, and the values held fixed."""
    node = graph.nodes[graph.output]
    name = node.name or 'f'
    if node.block is None:
        shown = f"{name} = {' '.join(graph.text(graph.output, 80).split())}"
    else:   # its text is the block's body: y + 1 for z = f(y)
        shown = f"{name} = {node.block.split('/')[0].split('#')[0]}(…)"
    if file not in (None, '-'):
        shown = f'{os.path.basename(file)}: {shown}'
    bound = ', '.join(f'{k} = {v:g}' for k, v in fixed.items() if k in graph.inputs)
    return shown + (f'   ({bound})' if bound else '')
