"""`adgrad check`: reverse mode against finite differences, per variable (and
per Hessian entry with --order 2). Exit 1 when any disagrees."""

import argparse

from ..errors import CheckFailed, NumericalError
from .common import Exit, input_values, load, refuse_arrays
from .diff import variables
from .evaluate import add_input
from .output import Format, json_number, number

FORMATS = (Format.TABLE, Format.PLAIN, Format.JSON, Format.CSV, Format.TSV)
COLUMNS = ('point', 'variable', 'ad', 'fd', 'abs_error', 'rel_error', 'verdict', 'reason')

EXAMPLES = """examples:
  adgrad check 'x^2*sin(x)' x=1.5
  adgrad check -f samples/mlp.ad --order 2      # the Hessian too
  adgrad check 'abs(x)' x=0                   # a kink: a warning, no failure
  adgrad check 'if(x > 0, x, 1)' x=0          # a jump: the `if` switches
  adgrad check -f f.ad --points points.csv

Each variable is moved by its own step h = 2^-10·max(1, |x|) (smaller where
the differences do not settle); the derivative is the central difference
improved by Richardson extrapolation. A variable fails (exit 1) when reverse
mode and the differences disagree beyond their error estimate; where
differences cannot be trusted it is a warning instead: at a kink or a jump
(an `if`, comparison, min/max, abs, clamp... switching within ±h), near the
edge of a domain or an overflow, where a value is not finite, and where
rounding (subnormal values, cancellation) outweighs the differences."""


def add_arguments(parser, command):
    parser.usage = 'adgrad check [options] (EXPR | -f FILE) [NAME=VALUE ...]'
    parser.epilog = EXAMPLES
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    add_input(parser)
    parser.add_argument('--wrt', metavar='X,Y', help='check only these variables')
    parser.add_argument('--order', type=int, choices=(1, 2), default=1,
                        help='2: also check every Hessian entry against differences of the gradient')
    parser.add_argument('--points', metavar='FILE',
                        help="check at every row of FILE (CSV, TSV, JSON Lines or Parquet; "
                             "'-' is standard input)")
    parser.add_argument('--format', type=Format.parser(FORMATS), default=None,
                        help='table on a terminal, plain (tab-separated) otherwise; json, csv, tsv')
    parser.add_argument('--json', dest='format', action='store_const', const=Format.JSON,
                        help='same as --format json')
    parser.add_argument('--strict', action='store_true',
                        help='where the function or its derivative is not finite, exit 1 '
                             '(else a warning)')


def run(args, env):
    from ..table.computations import CheckVerdicts

    fmt = args.format or (Format.TABLE if env.stdout_isatty else Format.PLAIN)
    graph, bindings = load(args, env)
    names = variables(graph, args.wrt, 'check')
    verdicts = CheckVerdicts(graph, names, args.order)
    from ..core.graph import is_array_program
    if is_array_program(graph, bindings):
        refuse_arrays(graph, bindings, '--points of adgrad check'
                      if args.points is not None else None)
        from ..derive.array_check import check_array_hessian, check_arrays
        point = input_values(graph, bindings, env.warn)
        rows = check_arrays(graph, point, names)   # the gradient's rows, then the Hessian's, as for numbers
        if args.order == 2:
            rows += check_array_hessian(graph, point, names)
        results = [(1, row) for row in rows]
        verdicts.done = 1
    elif args.points is None:
        results, _ = verdicts(input_values(graph, bindings, env.warn), 1)
    else:   # read as grad --points reads them: every format, the same errors
        from ..table.pipeline import each_chunk
        from .batch import options
        results = [pair for _, computed in each_chunk(options(args, False), graph, bindings,
                                                        verdicts, env.warn, env.stdin)
                   for pair in computed]
    env.stdout.write(_WRITERS[fmt](results, env))
    if not verdicts.done:   # a points file of a header only: as the pipeline says it
        env.warn('the points have no rows')
    many = verdicts.done > 1
    _warn_untrusted(results, verdicts.done, env.warn)
    nonfinite = [(k, row) for k, row in results if row.ad - row.ad != 0
                 or row.reason == 'the function is not finite here']
    if args.strict and nonfinite:
        k, row = nonfinite[0]
        raise NumericalError(f'∂f/∂{row.what}{f" at point {k}" if many else ""}: the function '
                             'or its derivative is not finite')
    failed = [(k, row) for k, row in results if row.verdict == 'FAIL']
    if failed:
        k, row = failed[0]
        where = f' at point {k}' if many else ''
        raise CheckFailed(f'∂f/∂{row.what}{where}: reverse mode gives {number(row.ad)}, finite '
                          f'differences {number(row.fd)} ({len(failed)} of {len(results)} '
                          f'checks failed){_declared(graph)}')
    return Exit.OK


def _warn_untrusted(results, points, warn):
    """One warning per untrusted check at one point; over many, one line for
    them all, naming the first, as a batch reports its non-finite rows."""
    warned = [(k, row) for k, row in results if row.verdict == 'warn']
    if points <= 1:
        for _, row in warned:
            warn(f'∂f/∂{row.what}: finite differences cannot be trusted ({row.reason})')
    elif warned:
        k, row = warned[0]
        at = len({k for k, _ in warned})
        more = (f' (and {len(warned) - 1} more of {len(results)} checks, at {at} of '
                f'{points} points)') if len(warned) > 1 else ''
        warn(f'∂f/∂{row.what} at point {k}: finite differences cannot be trusted '
             f'({row.reason}){more}')


def _declared(graph):
    """'; the derivative declared for block 'f' is used': where reverse mode
    takes a program's own word for a derivative, that is the first suspect."""
    blocks = list(dict.fromkeys(node.block.rpartition('/')[2].partition('#')[0]
                                for node in graph.nodes if node.op == 'custom'))
    if not blocks:
        return ''
    listed = ', '.join(f"'{name}'" for name in blocks)
    return (f"; reverse mode used the derivative declared for block {listed}"
            if len(blocks) == 1 else f'; reverse mode used the derivatives declared for blocks {listed}')


def _cells(k, row):
    return [k, row.what, row.ad, row.fd, row.abs_error, row.rel_error, row.verdict, row.reason]


def _json(results, env):
    import json
    return json.dumps([dict(zip(COLUMNS, [json_number(c) if isinstance(c, float) else c
                                          for c in _cells(k, row)]))
                       for k, row in results], ensure_ascii=False) + '\n'


def _table(results, env):
    from ..table.rich_tables import rich_text, table
    columns = [(c.replace('_', ' '), 'right' if c in ('ad', 'fd', 'abs_error', 'rel_error')
                else 'left', None) for c in COLUMNS]
    rows = [[c if isinstance(c, str) else number(c) if isinstance(c, float) else str(c)
             for c in _cells(k, row)] for k, row in results]
    return rich_text([table(columns, rows)], env.stdout, colour=env.colour)


def _delimited(delimiter, header, first=()):
    """Delimited lines: `header` on top, `first` before each row's cells. A
    CSV cell that holds a comma (a Hessian entry's `x,y`, a reason) is quoted."""
    def cell(text):
        if delimiter == ',' and any(c in text for c in ',"\n'):
            return '"' + text.replace('"', '""') + '"'
        return text

    def text(results, env):
        lines = [delimiter.join(COLUMNS)] if header else []
        for k, row in results:
            cells = [number(c) if isinstance(c, float) else str(c) for c in _cells(k, row)]
            lines.append(delimiter.join([*first, *map(cell, cells)]))
        return '\n'.join(lines) + '\n'
    return text


_WRITERS = {Format.JSON: _json, Format.TABLE: _table, Format.CSV: _delimited(',', True),
            Format.TSV: _delimited('\t', True), Format.PLAIN: _delimited('\t', False, ['check'])}
