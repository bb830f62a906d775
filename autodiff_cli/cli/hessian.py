"""`adgrad hessian`: the matrix of second derivatives at a point, or one
flattened row per point of a points file."""

import argparse

from ..core.graph import is_array_program
from ..core.passes import require_inputs
from ..errors import UsageError
from .common import Exit, input_values, load, numerical, where
from .diff import variables
from .evaluate import add_input, bind_data, check_sources
from .output import Format, json_number, number

FORMATS = (Format.TABLE, Format.PLAIN, Format.JSON, Format.JSONL, Format.CSV, Format.TSV)

EXAMPLES = """examples:
  adgrad hessian 'x^3*y + sin(x*y)' x=0.7 y=-1.3
  adgrad hessian -f samples/logistic.ad --wrt w1,w2,b --json
  adgrad hessian 'x*y^2' --points points.csv   # a row per point: d2_x_x, ...
  adgrad hessian 'x @ A @ x' 'x=[1, 2]' 'A=[[1, 2], [3, 4]]' --wrt x

Rows and columns follow --wrt (default: every variable, sorted by name). An
array is flattened row-major, its entries labelled x[0], W[0,1], ..."""


def add_arguments(parser, command):
    parser.usage = 'adgrad hessian [options] (EXPR | -f FILE) [NAME=VALUE ...]'
    parser.epilog = EXAMPLES
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    add_input(parser)
    parser.add_argument('--wrt', metavar='X,Y', help='rows and columns for these variables')
    parser.add_argument('--format', type=Format.parser(FORMATS), default=None,
                        help='table on a terminal, plain (tab-separated) otherwise; json, jsonl, '
                             'csv, tsv (with --points: the points file\'s format by default)')
    parser.add_argument('--json', dest='format', action='store_const', const=Format.JSON,
                        help='same as --format json')
    parser.add_argument('--data', metavar='FILE',
                        help="bind each column of FILE that names a variable as a vector of its "
                             'rows, as grad --data does')
    parser.add_argument('--points', metavar='FILE',
                        help='a Hessian at every row of FILE (CSV, TSV, JSON Lines or Parquet '
                             "whose names are the variables; '-' is standard input), one row each")
    parser.add_argument('--strict', action='store_true',
                        help='a non-finite value or entry is an error (exit 1), not a warning')


def run(args, env):
    from ..derive.hessian import hessian

    fmt = args.format or (Format.TABLE if env.stdout_isatty else Format.PLAIN)
    check_sources(args)
    graph, bindings = load(args, env)
    data = bind_data(args.data, graph, bindings, env) if args.data is not None else ()
    names = variables(graph, args.wrt, 'differentiate')
    if is_array_program(graph, bindings):
        if args.points is not None:
            raise UsageError('hessian --points takes programs of numbers only, so far; an '
                             "array program's Hessian is at one point")
        if args.wrt is None:   # as grad: the parameters, not the data
            names = [name for name in names if name not in data]
        matrix, labels = _array_hessian(graph, bindings, names, args.strict, env)
        env.stdout.write(_MATRIX_WRITERS[fmt](matrix, labels, env))
        return Exit.OK
    if args.points is not None:   # one row per point, as grad --points writes them
        from ..table.computations import HessianEntries
        from ..table.pipeline import run as run_rows
        from .batch import options
        computation = HessianEntries(graph, names)
        run_rows(options(args, args.format is not None), graph, bindings, computation,
                 env.stdout, env.warn, env.stdin)
        return Exit.OK
    inputs = input_values(graph, bindings, env.warn)
    require_inputs(graph, inputs)   # pointing into the program, not the gradient's graph
    from ..core.passes import forward
    matrix = hessian(graph, inputs, names)
    _report(graph, forward(graph, inputs), matrix, names, args.strict, env)
    env.stdout.write(_MATRIX_WRITERS[fmt](matrix, names, env))
    return Exit.OK


def _report(graph, values, matrix, labels, strict, env):
    """One warning (an error under --strict), as grad gives: the first node
    whose value is not finite, else the first entry of the Hessian that is not."""
    from ..core import tensors
    bad = tensors.first_nonfinite(values)
    if bad is not None:
        shown = repr(values[bad]) if isinstance(values[bad], float) else 'not finite'
        numerical(f'{where(graph, bad)} is {shown}, the first non-finite value', strict, env.warn)
        return
    entry = next(((a, b, v) for a, row in zip(labels, matrix) for b, v in zip(labels, row)
                  if v - v != 0), None)
    if entry is not None:
        a, b, v = entry
        d = env.partial
        numerical(f'the Hessian entry {d}²f/{d}{a}{d}{b} is {v!r}', strict, env.warn)


def _array_hessian(graph, bindings, names, strict, env):
    """(the matrix, a label per row) of an array program at the bound point."""
    from ..core import tensors
    from ..derive.array_record import array_hessian, entry_labels
    if not names:
        raise UsageError('the expression has no variables to differentiate with respect to')
    inputs = input_values(graph, bindings, env.warn)
    require_inputs(graph, inputs)
    matrix = array_hessian(graph, inputs, names).tolist()
    labels = [label for n in names for label in entry_labels(n, tensors.shape_of(inputs[n]))]
    _report(graph, tensors.evaluate(graph, inputs), matrix, labels, strict, env)
    return matrix, labels


def _matrix_json(matrix, names, env):
    """One object, on one line, for json and jsonl alike."""
    import json
    return json.dumps({'variables': names,
                       'hessian': [[json_number(v) for v in row] for row in matrix]},
                      ensure_ascii=False) + '\n'


def _matrix_table(matrix, names, env):
    from ..table.rich_tables import rich_text, table
    columns = [('', 'left', 'bold')] + [(n, 'right', None) for n in names]
    rows = [[n] + [number(v) for v in row] for n, row in zip(names, matrix)]
    d = env.partial
    return rich_text([table(columns, rows, title=f'{d}²f/{d}row {d}column')], env.stdout,
                     colour=env.colour)


def _matrix_delimited(delimiter):
    def text(matrix, names, env):
        lines = [delimiter.join([''] + names)]
        lines += [delimiter.join([n] + [number(v) for v in row]) for n, row in zip(names, matrix)]
        return '\n'.join(lines) + '\n'
    return text


_MATRIX_WRITERS = {Format.JSON: _matrix_json, Format.JSONL: _matrix_json,
                   Format.TABLE: _matrix_table, Format.CSV: _matrix_delimited(','),
                   Format.TSV: _matrix_delimited('\t'), Format.PLAIN: _matrix_delimited('\t')}
