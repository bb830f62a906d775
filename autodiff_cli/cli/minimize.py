"""`adgrad minimize`: the minimiser of a scalar program from a start, by
scipy.optimize with the exact gradient and Hessian, or by gd, momentum or
adam (derive/optimize.py does the work; this module reads and writes)."""

import re

from ..errors import UsageError
from .common import Exit, input_values, load, wrt_names
from .evaluate import add_input
from .output import Format, json_number, number

FORMATS = (Format.TABLE, Format.PLAIN, Format.JSON, Format.JSONL, Format.CSV, Format.TSV)
NEEDS_SCIPY = ("--method {method} needs scipy, adgrad's optimize extra: "
               "pip install scipy")
KEYS = ('f', 'grad_norm', 'iterations', 'evaluations', 'hessians', 'converged')
_NUMBER = r'[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?inf'

_EXAMPLES = """examples:
  adgrad minimize '(1-x)^2 + 100*(y-x^2)^2' x=-1.2 y=1      # lbfgs: x 1, y 1
  adgrad minimize '(1-x)^2 + 100*(y-x^2)^2' x=-1.2 y=1 --method newton --json
  adgrad minimize 'x^2 + 3*y^2' x=4 y=1 --method adam --lr 0.1 --steps 500
  adgrad minimize '(x-2)^2 + y^2' x=0 y=1 --bounds 'x<=1' --trace path.csv
  adgrad plot '(x-2)^2 + y^2' x=-1..3 y=-1..2 --path path.csv -o path.png

Every variable is minimised over (or those of --wrt), from its NAME=VALUE or
its input default. Exit code 1: the method did not converge."""


def add_arguments(parser, command):
    from ..derive.optimize import METHODS
    parser.usage = 'adgrad minimize [options] (EXPR | -f FILE) NAME=START ...'
    parser.epilog = _EXAMPLES
    add_input(parser)
    parser.add_argument('--method', choices=METHODS, default='lbfgs',
                        help="lbfgs (default), newton (exact Hessian), trust (trust region, "
                             "exact Hessian): scipy.optimize's; gd, momentum, adam: with --lr "
                             'and --steps')
    parser.add_argument('--wrt', metavar='X,Y', help='minimise over these variables only')
    parser.add_argument('--lr', type=_positive, metavar='RATE',
                        help='the step size of gd, momentum (1e-3) and adam (1e-2)')
    parser.add_argument('--steps', type=_count, metavar='N',
                        help="the iteration limit (gd, momentum, adam: 1000; else scipy's)")
    parser.add_argument('--gtol', type=_positive, metavar='TOL',
                        help="gd, momentum, adam: stop once |∇f| <= TOL (1e-6); else "
                             "scipy's tolerance (newton: Newton-CG's xtol, 1e-8)")
    parser.add_argument('--bounds', action='append', metavar="'x>=0'",
                        help="bounds for lbfgs and trust: 'x>=0', 'y<=2', '0<=x<=1', comma-"
                             'separated or repeated')
    parser.add_argument('--data', metavar='FILE',
                        help='bind each column of FILE that names a variable as a vector of its '
                             'rows, as grad --data does: minimise a loss over a data set')
    parser.add_argument('--trace', metavar='FILE',
                        help='write the path to FILE as CSV: iteration, the variables, f, '
                             'grad_norm (adgrad plot --path draws it)')
    parser.add_argument('--format', type=Format.parser(FORMATS), default=None,
                        help='table on a terminal, plain (tab-separated) otherwise; json, '
                             'jsonl, csv, tsv')
    parser.add_argument('--json', dest='format', action='store_const', const=Format.JSON,
                        help='same as --format json')


def _positive(text):
    import argparse
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not (value > 0 and value - value == 0):
        raise argparse.ArgumentTypeError(f"'{text}' is not a positive number")
    return value


def _count(text):
    import argparse
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= 10**9:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number from 1")
    return int(text)


def parse_bounds(items, names):
    """{name: (lo, hi)} from 'x>=0', 'x<=1', '0<=x<=1' (and >, < alike), comma-separated."""
    bounds = {}
    for item in [part.strip() for text in items for part in text.split(',')]:
        both = re.fullmatch(rf'({_NUMBER})\s*<=?\s*(\w+)\s*<=?\s*({_NUMBER})', item)
        one = re.fullmatch(rf'(\w+)\s*([<>])=?\s*({_NUMBER})', item)
        if both:
            name, lo, hi = both.group(2), float(both.group(1)), float(both.group(3))
        elif one:
            name, value = one.group(1), float(one.group(3))
            lo, hi = (value, None) if one.group(2) == '>' else (None, value)
        else:
            raise UsageError(f"bad bound '{item}': write NAME>=LO, NAME<=HI or LO<=NAME<=HI")
        if name not in names:
            raise UsageError(f"bound '{item}': '{name}' is not a variable being minimised over")
        old_lo, old_hi = bounds.get(name, (None, None))
        lo = lo if lo is not None else old_lo
        hi = hi if hi is not None else old_hi
        if lo is not None and hi is not None and lo > hi:
            raise UsageError(f"bound '{item}': '{name}' cannot be both >= {lo:g} and <= {hi:g}")
        bounds[name] = (lo, hi)
    return bounds


def run(args, env):
    import importlib.util
    if args.method not in ('gd', 'momentum', 'adam') and importlib.util.find_spec('scipy') is None:
        raise UsageError(NEEDS_SCIPY.format(method=args.method))
    if args.lr is not None and args.method not in ('gd', 'momentum', 'adam'):
        raise UsageError(f'--lr is the step size of gd, momentum and adam, not of {args.method}')
    fmt = args.format or (Format.TABLE if env.stdout_isatty else Format.PLAIN)
    graph, bindings = load(args, env)
    names = wrt_names(graph, args.wrt)
    if args.data is not None:
        from .evaluate import bind_data
        data = bind_data(args.data, graph, bindings, env)
        if args.wrt is None:   # as grad: the parameters, not the data
            names = [name for name in names if name not in data]
        if not names:
            raise UsageError(f'every variable is a column of {args.data}: give the parameters '
                             'start values, such as w=0')
    values = input_values(graph, bindings, env.warn)
    from ..core.passes import require_inputs
    require_inputs(graph, values)
    clash = next((n for n in names if n in KEYS), None)
    if clash is not None and fmt not in (Format.JSON, Format.TABLE):
        raise UsageError(f"a variable named '{clash}' would repeat a line of the output: "
                         'use --format json or table')
    bounds = parse_bounds(args.bounds or [], names)
    start = {n: values[n] for n in names}
    fixed = {n: v for n, v in values.items() if n not in names}
    rows, progress = [], _Progress(env) if env.stderr_isatty else None

    def trace(iteration, x, f, norm):
        if args.trace is not None:
            rows.append([iteration, *map(float, x), f, norm])
        if progress is not None:
            progress(iteration, f, norm)
    from ..derive.optimize import minimize
    try:
        result = minimize(graph, start, names, args.method, fixed, bounds, args.lr, args.steps,
                          args.gtol, trace)
    finally:
        if progress is not None:
            progress.done()
        if args.trace is not None and rows:   # the path so far, also when it failed
            _write_trace(args.trace, _entries(names, start), rows)
    env.stdout.write(_WRITERS[fmt](result, names, env))
    if not result.converged:
        env.error(f'{args.method} did not converge: {result.why}')
        return Exit.FAILED
    return Exit.OK


class _Progress:
    """One line on a terminal's stderr, redrawn a few times a second."""

    def __init__(self, env):
        import time
        self.env, self.clock, self.shown, self.drawn = env, time.monotonic, 0.0, False

    def __call__(self, iteration, f, norm):
        now = self.clock()
        if now - self.shown < 0.2:
            return
        self.shown, self.drawn = now, True
        self.env.stderr.write(f'\riteration {iteration}  f {number(f, 8)}  |∇f| {number(norm, 3)}\x1b[K')
        self.env.stderr.flush()

    def done(self):
        if self.drawn:
            self.env.stderr.write('\r\x1b[K')
            self.env.stderr.flush()


def _entries(names, start):
    """A label per entry of the minimised vector: x, or W[0,1] for an array."""
    from ..core.tensors import shape_of
    from ..derive.array_record import entry_labels
    return [label for n in names for label in entry_labels(n, shape_of(start[n]))]


def _write_trace(path, names, rows):
    from .render import write_atomic
    lines = [','.join(['iteration', *names, 'f', 'grad_norm'])]
    lines += [','.join([str(row[0])] + [number(v) for v in row[1:]]) for row in rows]
    write_atomic(path, ('\n'.join(lines) + '\n').encode('utf-8'))


def _fields(result, names):
    return ([(n, result.x[n]) for n in names] +
            [('f', result.f), ('grad_norm', result.grad_norm), ('iterations', result.iterations),
             ('evaluations', result.evaluations), ('hessians', result.hessians),
             ('converged', result.converged)])


def _text(value):
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if hasattr(value, 'ndim'):   # an array: nested lists, as grad prints one
        import json
        return json.dumps(_json_value(value))
    return str(value) if isinstance(value, int) else number(value)


def _json_value(value):
    if hasattr(value, 'tolist'):
        import numpy as np
        return np.vectorize(json_number, otypes=[object])(value).tolist()
    return json_number(value)


def _plain(result, names, env):
    return ''.join(f'{key}\t{_text(value)}\n' for key, value in _fields(result, names))


def _json(result, names, env):
    import json
    record = {'minimiser': {n: _json_value(result.x[n]) for n in names},
              'f': json_number(result.f), 'grad_norm': json_number(result.grad_norm),
              'iterations': result.iterations, 'evaluations': result.evaluations,
              'hessians': result.hessians, 'converged': result.converged,
              'message': result.why}
    return json.dumps(record, ensure_ascii=False) + '\n'


def _delimited(delimiter):
    def text(result, names, env):
        fields = _fields(result, names)
        return (delimiter.join(k for k, _ in fields) + '\n' +
                delimiter.join(_text(v) for _, v in fields) + '\n')
    return text


def _table(result, names, env):
    from ..table.rich_tables import rich_text, table
    from .arrays import summary
    # a large array in short, as --nodes shows one: every entry is in --json
    rows = [[k, summary(v) if hasattr(v, 'ndim') else _text(v)] for k, v in _fields(result, names)]
    shown = rich_text([table([('', 'left', 'bold'), ('', 'right', None)], rows,
                             show_header=False)], env.stdout, colour=env.colour)
    return shown + result.why + '\n'


_WRITERS = {Format.PLAIN: _plain, Format.JSON: _json, Format.JSONL: _json,
            Format.CSV: _delimited(','), Format.TSV: _delimited('\t'), Format.TABLE: _table}
