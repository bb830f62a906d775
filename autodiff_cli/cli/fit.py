"""`adgrad fit`: non-linear least squares of a model over a data set, with
the exact Jacobian of its residuals (derive/fit.py does the work; this
module reads and writes)."""

import argparse

from ..errors import UsageError
from .common import Exit, load
from .minimize import NEEDS_SCIPY, _count, _positive, _text
from .output import Format, json_number, number

FORMATS = (Format.TABLE, Format.PLAIN, Format.JSON, Format.JSONL, Format.CSV, Format.TSV)

_EXAMPLES = """examples:
  adgrad fit 'b1*(1 - exp(-b2*x))' --data misra1a.csv --target y b1=500 b2=1e-4
  adgrad fit 'a*exp(-k*t) + c' --data decay.csv --target counts a=1 k=0.1 c=0 --json
  adgrad fit 'a*x + b' --data d.csv --target y a=1 b=0 --loss huber --plot fit.png

The parameters are the NAME=START bindings; every other variable of the
model is a column of --data. Exit code 1: the fit did not converge."""


def add_arguments(parser, command):
    from ..derive.fit import LOSSES
    from .evaluate import add_input
    parser.usage = 'adgrad fit [options] (EXPR | -f FILE) --data FILE --target COLUMN NAME=START ...'
    parser.epilog = _EXAMPLES
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    add_input(parser)
    parser.add_argument('--data', metavar='FILE', required=True,
                        help="the data set: CSV, TSV, JSON Lines or Parquet ('-' is standard "
                             "input), with a column for each of the model's other variables")
    parser.add_argument('--target', metavar='COLUMN', required=True,
                        help='the column the model is fitted to')
    parser.add_argument('--weights', metavar='COLUMN',
                        help="a column of positive weights, each multiplying its row's squared "
                             'residual (1/sigma^2 for errors sigma)')
    parser.add_argument('--loss', choices=LOSSES, default='linear',
                        help='linear: least squares (default, Levenberg-Marquardt); the others '
                             "are scipy's robust losses, less moved by outliers")
    parser.add_argument('--f-scale', type=_positive, default=1.0, metavar='C',
                        help='with a robust loss: the residual size where it starts to differ '
                             'from least squares (1)')
    parser.add_argument('--max-evaluations', type=_count, metavar='N',
                        help='the limit on evaluations of the residuals (default: 1000 '
                             'per parameter)')
    parser.add_argument('--plot', metavar='FILE',
                        help='draw the data, the fitted curve and the residuals to FILE (.png, '
                             ".svg or .pdf; matplotlib, adgrad's plot extra)")
    parser.add_argument('--format', type=Format.parser(FORMATS), default=None,
                        help='table on a terminal, plain (tab-separated) otherwise; json, jsonl, '
                             'csv, tsv')
    parser.add_argument('--json', dest='format', action='store_const', const=Format.JSON,
                        help='same as --format json (with the correlation and covariance)')


def run(args, env):
    import importlib.util
    if importlib.util.find_spec('scipy') is None:
        raise UsageError(NEEDS_SCIPY.replace('--method {method}', 'adgrad fit'))
    fmt = args.format or (Format.TABLE if env.stdout_isatty else Format.PLAIN)
    graph, bindings = load(args, env)
    from ..core.graph import is_array_program
    if is_array_program(graph, bindings):
        raise UsageError('adgrad fit takes models of numbers, not of arrays, so far')
    start = {name: value for name, value in bindings.items() if name in graph.inputs}
    if not start:
        raise UsageError('no parameters to fit: give each a start value, such as a=1')
    columns, target, weights = _read(args, graph, start, env)
    plot_format = _plot_format(args.plot) if args.plot is not None else None
    from ..derive.fit import fit
    result = fit(graph, columns, target, start, weights, args.loss, args.f_scale,
                 args.max_evaluations)
    if result.not_finite is not None:
        env.warn(f'scipy tried points where the model is not finite, and stepped back: first '
                 f'where {result.not_finite}')
    env.stdout.write(_WRITERS[fmt](result, env))
    if args.plot is not None:
        _draw(args, graph, columns, target, result, plot_format)
    if not result.converged:
        env.error(f'the fit did not converge: {result.why}')
        return Exit.FAILED
    return Exit.OK


def _read(args, graph, start, env):
    """The data's columns for the model's other variables, the target and the weights."""
    from ..table.data import read_data
    wanted = [n for n in graph.inputs if n not in start]
    extra = [c for c in (args.target, args.weights) if c is not None]
    twice = next((c for c in extra if c in start), None)
    if twice is not None:
        raise UsageError(f"'{twice}' is a parameter (bound {twice}=...), so it cannot also be "
                         'the target or the weights')
    data = read_data(args.data, wanted + extra, env.stdin)
    for name in wanted:
        if name not in data:
            raise UsageError(f"no value for '{name}': {args.data} has no such column, and a "
                             f'parameter needs a start value, {name}=VALUE')
    for option, name in (('--target', args.target), ('--weights', args.weights)):
        if name is not None and name not in data:
            raise UsageError(f"{option} {name}: {args.data} has no such column")
    for name in [*wanted, *extra]:
        if getattr(data[name], 'ndim', 1) != 1:
            raise UsageError(f"'{name}' must be one column of numbers, not {name}[0], {name}[1], …")
    columns = {n: data[n] for n in wanted}
    return columns, data[args.target], data.get(args.weights)


def _plot_format(path):
    import importlib.util
    import os
    from .plot import ENDINGS, NEEDS_MATPLOTLIB
    fmt = ENDINGS.get(os.path.splitext(path)[1].lower())
    if fmt is None:
        raise UsageError(f"--plot {path}: name the file .png, .svg or .pdf")
    if importlib.util.find_spec('matplotlib') is None:
        raise UsageError(NEEDS_MATPLOTLIB)
    return fmt


def _draw(args, graph, columns, target, result, fmt):
    if len(columns) != 1:
        raise UsageError(f'--plot draws a model of one column, and this one has {len(columns)} '
                         f"({', '.join(columns)})")
    from ..pictures.plot import fit_figure
    from .render import write_atomic
    (name, x), = columns.items()
    title = graph.text(graph.output, 60) or 'the model'
    write_atomic(args.plot, fit_figure(graph, name, x, target, result, fmt, title))


# ---- the writers ----

def _fields(result):
    fields = []
    for name, value in result.parameters.items():
        fields += [(name, value), (f'{name}_err', result.errors[name])]
    return fields + [('rss', result.rss), ('dof', result.dof), ('rsd', _rsd(result)),
                     ('rows', result.rows), ('evaluations', result.evaluations),
                     ('jacobians', result.jacobians), ('converged', result.converged)]


def _rsd(result):
    """The residual standard deviation, sqrt(RSS / dof): gnuplot's FIT_STDFIT."""
    return (result.rss / result.dof) ** 0.5


def _plain(result, env):
    return ''.join(f'{key}\t{_text(value)}\n' for key, value in _fields(result))


def _delimited(delimiter):
    def text(result, env):
        fields = _fields(result)
        return (delimiter.join(k for k, _ in fields) + '\n' +
                delimiter.join(_text(v) for _, v in fields) + '\n')
    return text


def _json(result, env):
    import json

    def matrix(m):
        return [[json_number(float(v)) for v in row] for row in m]
    record = {'parameters': {n: json_number(v) for n, v in result.parameters.items()},
              'errors': {n: json_number(v) for n, v in result.errors.items()},
              'rss': json_number(result.rss), 'dof': result.dof,
              'rsd': json_number(_rsd(result)), 'variance': json_number(result.rss / result.dof),
              'rows': result.rows, 'correlation': matrix(result.correlation),
              'covariance': matrix(result.covariance), 'evaluations': result.evaluations,
              'jacobians': result.jacobians, 'converged': result.converged,
              'message': result.why}
    return json.dumps(record, ensure_ascii=False) + '\n'


def _table(result, env):
    """gnuplot's summary: each parameter with its asymptotic standard error."""
    from ..table.rich_tables import rich_text, table
    rows = []
    for name, value in result.parameters.items():
        error = result.errors[name]
        share = f'({abs(error / value):.3%})' if value else ''
        rows.append([name, number(value), f'± {number(error)}', share])
    columns = [('parameter', 'left', 'bold'), ('value', 'right', None),
               ('standard error', 'left', None), ('', 'right', None)]
    summary = (f'rss {number(result.rss)}   dof {result.dof}   rsd {number(_rsd(result))}   '
               f'rows {result.rows}\n'
               f'{result.evaluations} evaluations, {result.jacobians} Jacobians: {result.why}\n')
    return rich_text([table(columns, rows)], env.stdout, colour=env.colour) + summary


_WRITERS = {Format.PLAIN: _plain, Format.JSON: _json, Format.JSONL: _json,
            Format.CSV: _delimited(','), Format.TSV: _delimited('\t'), Format.TABLE: _table}
