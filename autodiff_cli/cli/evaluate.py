"""`adgrad eval` and `adgrad grad`: the value, and the gradient by reverse mode,
at one point or (with --points) at every row of a points file."""

import argparse

from ..errors import UsageError
from .common import (Exit, input_values, load, memory_wanted, numerical, report_nonfinite,
                     wrt_names)
from .context import Command
from .output import Format, Result, node_records, write

_EXAMPLES = {
    Command.EVAL: """examples:
  adgrad eval 'x*y*z' x=2 y=3 z=4          # 24.0
  adgrad eval 'sin(x)^2 + cos(x)^2' x=pi/7
  adgrad eval -f samples/product.ad --json
  echo 'exp(-x^2)' | adgrad eval - x=0.5""",
    Command.GRAD: """examples:
  adgrad grad 'x*y*z' x=2 y=3 z=4          # value 24, d_x 12, d_y 8, d_z 6
  adgrad grad 'x*y*z' x=2 y=3 z=4 --nodes  # every node, ∂f/∂(x*y) = 4 included
  adgrad grad 'tanh(w*x + b)' w=0.5 x=2 b=-1 --wrt w,b --json
  adgrad grad -f samples/blocks.ad""",
}


def add_input(parser):
    """The program and its bindings, as every command that reads a program takes them."""
    parser.add_argument('words', nargs='*', metavar='EXPR [NAME=VALUE ...]',
                        help="the expression or program ('-' reads standard input), "
                             'then values for its variables')
    parser.add_argument('-f', '--file', metavar='FILE',
                        help="read the program from FILE ('-' for standard input); "
                             'every positional argument is then a binding')
    parser.add_argument('--traceback', action='store_true', help=argparse.SUPPRESS)


def add_arguments(parser, command):
    parser.usage = f'adgrad {command} [options] (EXPR | -f FILE) [NAME=VALUE ...]'
    parser.epilog = _EXAMPLES[command]
    add_input(parser)
    parser.add_argument('--format', type=Format.parse, choices=Format.words(), default=None,
                        help='output format (default: table on a terminal, plain otherwise; '
                             'with --points, the format of the points file)')
    parser.add_argument('--json', dest='format', action='store_const', const=Format.JSON,
                        help='same as --format json')
    parser.add_argument('--points', metavar='FILE',
                        help="evaluate at every row of FILE: CSV (or TSV) whose header names the "
                             "variables, JSON Lines or Parquet; '-' reads standard input; "
                             'with --engine dask, a glob or a folder of CSV or Parquet files')
    parser.add_argument('--data', metavar='FILE',
                        help='bind each column of FILE (CSV, TSV, JSON Lines or Parquet; '
                             "'-' reads standard input) that names a variable as a vector of "
                             'all its rows, as in mean((w*x - y)^2); read whole into memory')
    parser.add_argument('--nodes', action='store_true',
                        help='also list every node: id, op, expression, value'
                             + (', gradient' if command is Command.GRAD else ''))
    parser.add_argument('--strict', action='store_true',
                        help='a non-finite value is an error (exit 1), not a warning')
    if command is Command.GRAD:
        parser.add_argument('--wrt', metavar='X,Y',
                            help='list only these variables, comma-separated')
        parser.add_argument('--mode', choices=('reverse', 'forward'), default='reverse',
                            help='reverse (one backward pass for every variable) or forward '
                                 '(one tangent pass per variable; --nodes shows each pass)')
        parser.add_argument('--tangent', metavar='NAME=VALUE', action='append', default=None,
                            help='with --mode forward: the direction, such as x=[1,0,0] (repeat '
                                 'for several variables; the others get none); prints the '
                                 'Jacobian-vector product instead of the gradient')
        parser.add_argument('--explain', action='store_true',
                            help='then diagnose the gradients: where each shrinks or grows '
                                 'most, what blocks them, the first non-finite one')
        parser.add_argument('--memory', action='store_true',
                            help='also report what the backward pass keeps: values, bytes, the '
                                 'peak and what holds the most')
        parser.add_argument('--checkpoint', metavar='POLICY', default=None,
                            help='keep only checkpoints in forward and compute each segment '
                                 'again in backward: sqrt, every:K or auto (with '
                                 '--memory-limit); the same gradients, bit for bit')
        parser.add_argument('--memory-limit', metavar='SIZE', default=None,
                            help='for --checkpoint auto: the peak to stay within, such as 200MB')
    from .batch import add_options  # -o, --engine, --scheduler, for --points
    add_options(parser)


# The collector stays paused (main) for the whole command, not only while
# lowering: resumed between lowering and evaluating, it would first re-scan the
# whole graph; freed when run() returns (or, kept for
# the adgrad process, by its exit: Environment.keep), it is never scanned at all.
def run(args, env):
    args.format_given = args.format is not None
    if not args.format_given:
        args.format = Format.TABLE if env.stdout_isatty else Format.PLAIN
    check_sources(args)
    if args.reduce and args.points is None:
        how = args.reduce
        raise UsageError(f'--{how} goes with --points FILE: the {how} over its rows'
                         + (f' (over --data, write {how}(...) in the program)'
                            if args.data is not None else ''))
    graph, bindings = load(args, env)
    names = gradient_names(graph, args)
    data = ()
    if args.data is not None:
        data = bind_data(args.data, graph, bindings, env)
        if getattr(args, 'wrt', None) is None:   # the parameters: a gradient per data row is seldom what is meant
            names = [name for name in names if name not in data]
    if (args.points is not None or args.output is not None or args.engine != 'numpy'
            or args.reduce):
        if getattr(args, 'mode', 'reverse') == 'forward':
            raise UsageError('--mode forward shows one point: leave out --points')
        if getattr(args, 'explain', False):
            raise UsageError('--explain diagnoses one point: leave out --points and -o')
        from .batch import run_points
        run_points(args, graph, bindings, names, env)
        return Exit.OK
    inputs = input_values(graph, bindings, env.warn)
    if memory_wanted(args):
        from . import memory
        if args.mode == 'forward' or args.tangent is not None:
            raise UsageError('--memory and --checkpoint are about the backward pass: '
                             'leave out --mode forward')
        return memory.run_point(args, graph, inputs, names, env, data)
    if getattr(args, 'tangent', None) is not None:
        if args.mode != 'forward':
            raise UsageError('--tangent is a direction for forward mode: add --mode forward')
        from .arrays import run_tangent
        return run_tangent(args, graph, inputs, env)
    from ..core.graph import is_array_program
    if is_array_program(graph, inputs):
        from .arrays import run_arrays
        return run_arrays(args, graph, inputs, names, env, data)
    if getattr(args, 'mode', 'reverse') == 'forward':
        from .forward_mode import run_forward
        return run_forward(args, graph, inputs, names, env)
    result = compute(graph, inputs, names, args, env)
    if not getattr(args, 'explain', False):
        write(result, args.format, env)
        return Exit.OK
    lines = findings(graph, inputs)
    if Format(args.format) in (Format.JSON, Format.JSONL):   # one document: the findings in it
        result.diagnosis = lines
        write(result, args.format, env)
        return Exit.OK
    write(result, args.format, env)
    # CSV and TSV stay rows to read: the findings go to stderr
    write_explanation(lines, env, env.stdout if Format(args.format) in (Format.PLAIN, Format.TABLE)
                      else env.stderr)
    return Exit.OK


def check_sources(args):
    """At most one of the program, --points and --data from standard input,
    and not both --data and --points."""
    program_from_stdin = args.file == '-' or (args.file is None and args.words[:1] == ['-'])
    if args.points == '-' and program_from_stdin:
        raise UsageError('the program and the points cannot both come from standard input')
    if args.data is not None and (args.points is not None or args.data == '-' and program_from_stdin):
        raise UsageError('--data binds whole columns and --points evaluates row by row: give one'
                         if args.points is not None else
                         'the program and the data cannot both come from standard input')


def bind_data(path, graph, bindings, env):
    """--data: each column that names a variable, bound as a vector of its rows; those columns."""
    from ..table.data import read_data
    columns = read_data(path, list(graph.inputs), env.stdin)
    twice = sorted(set(columns) & set(bindings))
    if twice:
        raise UsageError(f"'{twice[0]}' is both a column of {path} and bound on the command line")
    bindings.update(columns)
    return columns


def findings(graph, inputs):
    """`grad --explain`'s findings, a line each: the library's diagnosis
    (pictures/health.py), and what the backward pass keeps where it is large."""
    from ..pictures.health import explain_point
    return explain_point(graph, inputs) + memory_note(graph)


def write_explanation(lines, env, stream):
    """The findings after the result, under a heading that sets them apart from the numbers."""
    if stream is env.stdout and env.stdout_isatty:   # wrapped at spaces, not by the terminal mid-number; a pipe keeps a line each
        import shutil
        import textwrap
        width = max(40, shutil.get_terminal_size().columns - 1)
        lines = [textwrap.fill(line, width, initial_indent='  ', subsequent_indent='    ',
                               break_long_words=False) for line in lines]
    else:
        lines = [f'  {line}' for line in lines]
    text = '\ndiagnosis:\n' + ''.join(f'{line}\n' for line in lines)
    if env.partial != '∂':
        text = text.replace('∂', 'd')
    stream.write(text if stream is env.stdout else text.lstrip('\n'))


# Past this, --explain says what the backward pass keeps, and how to keep less.
LARGE = 100_000_000


def memory_note(graph):
    """--explain's line on memory, where the plain pass keeps much ([] else)."""
    from ..core.checkpoint import plain_estimate
    from .memory import size
    values, held = plain_estimate(graph)
    if held < LARGE:
        return []
    return [f'memory: the backward pass keeps {values:,} values, about {size(held)} '
            '(grad --memory says what holds them); --checkpoint sqrt keeps about √(2n) '
            'of n iterations (2√n of n block calls) and computes the rest again, with '
            'the same gradients']


def gradient_names(graph, args):
    """The variables whose gradient is shown: --wrt's, in its order, else all, sorted."""
    return wrt_names(graph, args.wrt) if args.command is Command.GRAD else []


def compute(graph, inputs, names, args, env):
    """One point's Result: the value, the gradients of `names` (grad), the nodes (--nodes)."""
    from ..core.passes import backward, forward

    start = len(env.warn.messages)
    values = forward(graph, inputs)
    report_nonfinite(graph, values, args.strict, env.warn)
    grads = backward(graph, values) if args.command is Command.GRAD else None
    if not getattr(args, 'explain', False):   # which runs its own passes next: free these first
        env.keep(values, grads)
    gradients = None
    if grads is not None:
        gradients = {name: grads[graph.inputs[name]] for name in names}
        infinite = [n for n, g in gradients.items() if g - g != 0]
        if infinite:
            numerical(f'the gradient ∂f/∂{infinite[0]} is {gradients[infinite[0]]!r}',
                      args.strict, env.warn)
    return Result(value=values[graph.output],
                  inputs={n: inputs[n] for n in sorted(graph.inputs)},
                  gradients=gradients,
                  nodes=node_records(graph, values, grads) if args.nodes else None,
                  warnings=env.warn.messages[start:],
                  title=graph.text(graph.output, 60))
