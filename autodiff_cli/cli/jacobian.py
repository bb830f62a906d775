"""`adgrad jacobian`: the value and the Jacobian of a vector output (or of
several outputs, [f, g]) with respect to each variable, by forward or
reverse mode, whichever takes fewer passes."""

from ..core.numbers import plain
from ..errors import UsageError
from .common import Exit, input_values, load, numerical, wrt_names
from .evaluate import add_input, bind_data
from .output import Format, Result, write

_EXAMPLES = """examples:
  adgrad jacobian 'tanh(W @ x)' 'W=[[1, 2], [3, 4]]' 'x=[0.5, -1]'
  adgrad jacobian '[x*y, x + y, sin(x)]' x=1 y=2 --json     # three outputs: forward mode
  adgrad jacobian 'softmax(z)' 'z=[1, 2, 3]' --mode reverse"""


def add_arguments(parser, command):
    parser.usage = 'adgrad jacobian [options] (EXPR | -f FILE) [NAME=VALUE ...]'
    parser.epilog = _EXAMPLES
    add_input(parser)
    parser.add_argument('--format', type=Format.parse, choices=Format.words(), default=None,
                        help='output format (default: table on a terminal, plain otherwise)')
    parser.add_argument('--json', dest='format', action='store_const', const=Format.JSON,
                        help='same as --format json; it also says which mode ran')
    parser.add_argument('--wrt', metavar='X,Y', help='only these variables, comma-separated')
    parser.add_argument('--mode', choices=('auto', 'forward', 'reverse'), default='auto',
                        help='forward (a pass per input entry), reverse (a pass per output '
                             'entry), or auto: whichever is fewer (default)')
    parser.add_argument('--data', metavar='FILE',
                        help="bind each column of FILE that names a variable as a vector of its "
                             'rows, as grad --data does')
    parser.add_argument('--strict', action='store_true',
                        help='a non-finite value is an error (exit 1), not a warning')


def run(args, env):
    from ..core import tensors
    from ..derive import jacobian
    if args.format is None:
        args.format = Format.TABLE if env.stdout_isatty else Format.PLAIN
    graph, bindings = load(args, env)
    names = wrt_names(graph, args.wrt)
    if args.data is not None:
        data = bind_data(args.data, graph, bindings, env)
        if args.wrt is None:   # as grad: the parameters, not the data
            names = [name for name in names if name not in data]
    inputs = input_values(graph, bindings, env.warn)
    values = tensors.evaluate(graph, inputs)
    if not tensors.is_finite(values[graph.output]):   # (an untaken side of an if may be)
        numerical('the value is not finite everywhere', args.strict, env.warn)
    if not names:
        raise UsageError('the expression has no variables to differentiate with respect to')
    jacobians, mode = jacobian.jacobian(graph, values, names,
                                       None if args.mode == 'auto' else args.mode)
    value = plain(values[graph.output])
    if Format(args.format) is Format.JSON:
        import json

        from ..table.formats import json_number
        env.stdout.write(json.dumps({'value': json_number(value), 'mode': mode,
                                     'jacobian': {n: json_number(plain(j))
                                                  for n, j in jacobians.items()}},
                                    allow_nan=False, ensure_ascii=False) + '\n')
        return Exit.OK
    result = Result(value=value, inputs={n: plain(inputs[n]) for n in sorted(graph.inputs)},
                    gradients={n: plain(j) for n, j in jacobians.items()},
                    title=graph.text(graph.output, 60))
    write(result, args.format, env)
    return Exit.OK
