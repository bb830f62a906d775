"""The adgrad command line: read input, call the library, write output.

`main(argv) -> int` is the one place where errors become exit codes.
"""

import argparse
import gc
import math
import os
import re
import sys

from .. import __version__
from ..errors import AdgradError, NumericalError, UsageError
from ..core.passes import check_names
from .common import (Exit, input_values, numerical, parse_bindings, read_program, report_nonfinite)
from .output import FORMATS

_WINDOW = 100  # characters of a long source line shown around an error's caret
_NUMBER = re.compile(r'-(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?')


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f'{message} (see {self.prog} --help)')


# ---- commands ----

def _gradient_names(graph, args):
    if args.command != 'grad':
        return []
    if not args.wrt:
        return sorted(graph.inputs)
    names = [n.strip() for n in args.wrt.split(',') if n.strip()]
    check_names(graph, names)
    twice = [n for i, n in enumerate(names) if n in names[:i]]
    if twice:
        raise UsageError(f"--wrt lists '{twice[0]}' twice")
    return names


# The collector stays paused for the whole command, not only while lowering:
# resumed between lowering and evaluating, it would first re-scan the whole
# graph (~40 ms per 10^5 nodes); freed when run() returns, the graph is never
# scanned at all.
def run(args, out, warn):
    from ..language.lower import lower

    if args.points == '-' and (args.file == '-' or (args.file is None and args.words[:1] == ['-'])):
        raise UsageError('the program and the points cannot both come from standard input')
    source, words = read_program(args)
    graph = lower(source)
    bindings = parse_bindings(words)
    names = _gradient_names(graph, args)
    if args.points is not None:
        from .batch import run_points
        return run_points(args, graph, bindings, names, out, warn)
    return run_point(args, graph, input_values(graph, bindings, warn), names, out, warn)


def run_point(args, graph, inputs, names, out, warn):
    from ..core.passes import backward, forward
    from .output import node_records, write

    values = forward(graph, inputs)
    report_nonfinite(graph, values, args.strict, warn)
    result = {'value': values[graph.output], 'inputs': {n: inputs[n] for n in sorted(graph.inputs)}}
    grads = backward(graph, values) if args.command == 'grad' else None
    if grads is not None:
        result['gradient'] = {name: grads[graph.inputs[name]] for name in names}
        infinite = [n for n, g in result['gradient'].items() if not math.isfinite(g)]
        if infinite:
            numerical(f'the gradient ∂f/∂{infinite[0]} is {result["gradient"][infinite[0]]!r}',
                       args.strict, warn)
    if args.nodes:
        result['nodes'] = node_records(graph, values, grads)
    write(result, args.format, out, title=graph.text(graph.output, 60))
    return Exit.OK


# ---- parser ----

_EXAMPLES = {
    'eval': """examples:
  adgrad eval 'x*y*z' x=2 y=3 z=4          # 24.0
  adgrad eval 'sin(x)^2 + cos(x)^2' x=pi/7
  adgrad eval -f samples/product.ad --json
  echo 'exp(-x^2)' | adgrad eval - x=0.5""",
    'grad': """examples:
  adgrad grad 'x*y*z' x=2 y=3 z=4          # value 24, d_x 12, d_y 8, d_z 6
  adgrad grad 'x*y*z' x=2 y=3 z=4 --nodes  # every node, ∂f/∂(x*y) = 4 included
  adgrad grad 'tanh(w*x + b)' w=0.5 x=2 b=-1 --wrt w,b --json
  adgrad grad -f samples/blocks.ad""",
    'render': """examples:
  adgrad render 'x*y*z' x=2 y=3 z=4 -o product.svg    # values and gradients
  adgrad render 'x*y*z' x=2 y=3 z=4 --pass forward -o forward.png
  adgrad render -f samples/blocks.ad -o blocks.svg       # each block call as a box
  adgrad render 'x*y*z' x=2 y=3 z=4 --steps steps      # then open steps/index.html
  adgrad render 'tanh(w*x + b)' --format text            # no values: the structure
  adgrad render 'x*y*z' x=2 y=3 z=4 -o - --format dot | dot -Tpng > product.png

colours: blue is the forward pass (arrows, values); cyan dashed arrows carry
gradients backward; green nodes have a known gradient ∂f/∂node (bright green:
the node a step has just finished). Inputs are ovals, constants grey boxes,
the output has a double border.""",
}


def _add_input(parser):
    parser.add_argument('words', nargs='*', metavar='EXPR [NAME=VALUE ...]',
                        help="the expression or program ('-' reads standard input), "
                             'then values for its variables')
    parser.add_argument('-f', '--file', metavar='FILE',
                        help="read the program from FILE ('-' for standard input); "
                             'every positional argument is then a binding')


def _add_common(parser, command):
    _add_input(parser)
    parser.add_argument('--format', choices=FORMATS, default=None,
                        help='output format (default: table on a terminal, plain otherwise; '
                             'with --points, the format of the points file)')
    parser.add_argument('--json', dest='format', action='store_const', const='json',
                        help='same as --format json')
    parser.add_argument('--points', metavar='FILE',
                        help="evaluate at every row of FILE: CSV (or TSV) whose header names the "
                             "variables, or JSON Lines; '-' reads standard input")
    parser.add_argument('--nodes', action='store_true',
                        help='also list every node: id, op, expression, value'
                             + (', gradient' if command == 'grad' else ''))
    parser.add_argument('--strict', action='store_true',
                        help='a non-finite value is an error (exit 1), not a warning')
    parser.add_argument('--traceback', action='store_true', help=argparse.SUPPRESS)


def build_parser():
    top = _Parser(prog='adgrad', allow_abbrev=False,
                  description='Evaluate and differentiate expressions from the command line.',
                  epilog="run 'adgrad COMMAND --help' for a command's options and examples")
    top.add_argument('--version', action='version', version=f'adgrad {__version__}')
    sub = top.add_subparsers(dest='command', metavar='COMMAND', parser_class=_Parser)
    commands = {}
    for name, summary in (('eval', 'print the value of an expression'),
                          ('grad', 'print the value and the gradient by reverse mode')):
        parser = sub.add_parser(name, help=summary, description=summary, allow_abbrev=False,
                                usage=f'adgrad {name} [options] (EXPR | -f FILE) [NAME=VALUE ...]',
                                epilog=_EXAMPLES[name],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
        _add_common(parser, name)
        if name == 'grad':
            parser.add_argument('--wrt', metavar='X,Y',
                                help='list only these variables, comma-separated')
        parser.set_defaults(command=name, run=run, wrt=None)
        commands[name] = parser
    commands['render'] = _add_render(sub)
    completion = sub.add_parser(
        'completion', help='print a shell completion script',
        description='Print a completion script for bash, zsh or fish.',
        epilog="""examples:
  adgrad completion bash > ~/.local/share/bash-completion/completions/adgrad
  adgrad completion zsh > "${fpath[1]}/_adgrad"
  adgrad completion fish > ~/.config/fish/completions/adgrad.fish""",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    completion.add_argument('shell', choices=('bash', 'zsh', 'fish'))
    completion.set_defaults(command='completion', run=lambda args, out, warn: _completion(
        top, args.shell, out))
    commands['completion'] = completion
    return top, commands


def _add_render(sub):
    from .render import FORMATS as PICTURE_FORMATS, MAX_NODES, MAX_STEP_NODES, run_render
    summary = 'draw the computational graph with its values and gradients'
    parser = sub.add_parser('render', help=summary, description=summary, allow_abbrev=False,
                            usage='adgrad render [options] (EXPR | -f FILE) [NAME=VALUE ...] '
                                  '[-o FILE] [--steps DIR]',
                            epilog=_EXAMPLES['render'],
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_input(parser)
    parser.add_argument('-o', '--output', metavar='FILE',
                        help="where to write the picture; '-' is standard output, the default "
                             'when that is not a terminal')
    parser.add_argument('--format', choices=PICTURE_FORMATS, default=None,
                        help="svg, png, pdf, dot (Graphviz's source) or text (a table); "
                             "default: from FILE's extension, else svg")
    parser.add_argument('--pass', dest='mode', choices=('forward', 'backward'), default=None,
                        help='forward: values only; backward: values, gradients and the '
                             'backward flow (the default when every variable has a value; '
                             'with none, the structure alone is drawn)')
    parser.add_argument('--rankdir', choices=('LR', 'TB'), default='LR',
                        help='lay the graph out left to right (default) or top to bottom')
    parser.add_argument('--steps', metavar='DIR',
                        help='also write the backward pass to DIR as numbered SVG frames, one '
                             'per node, and an index.html that steps through them')
    parser.add_argument('--max-nodes', type=_positive, metavar='N', default=None,
                        help=f'refuse to lay out a larger graph (default {MAX_NODES}, and '
                             f'{MAX_STEP_NODES} with --steps, which lays it out once per node)')
    parser.add_argument('--traceback', action='store_true', help=argparse.SUPPRESS)
    parser.set_defaults(command='render', run=run_render)
    return parser


def _positive(text):
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not a positive whole number")
    return int(text)


def _completion(top, shell, out):
    import shtab  # generates the script from the parser itself, so it never drifts
    out.write(shtab.complete(top, shell=shell))
    return Exit.OK


def _parse(parser, argv):
    """Parse options anywhere among the words; a word after `--`, or one like
    `-x^2` that starts with '-' but is no option, is an expression or binding."""
    short = {s for a in parser._actions for s in a.option_strings if not s.startswith('--')}
    words, masked, rest = [], [], False
    for arg in argv:
        if not rest and arg == '--':
            rest = True
            continue
        if rest or (arg.startswith('-') and len(arg) > 1 and not arg.startswith('--')
                    and arg not in short and not _NUMBER.fullmatch(arg)):
            masked.append(f'\0{len(words)}')
            words.append(arg)
        else:
            masked.append(arg)
    args = parser.parse_intermixed_args(masked)
    args.words = [words[int(w[1:])] if w.startswith('\0') else w
                  for w in getattr(args, 'words', ())]
    return args


def _error_lines(error):
    location = error.location()
    if location is None:
        return [f'adgrad: error: {error.message}']
    line, column, text = location
    where = f'line {line}, column {column}' if error.source.count('\n') else f'column {column}'
    # Show at most a window of the line around the caret, tabs as single spaces,
    # so the caret stays under its character whatever the terminal does.
    start = max(0, column - 1 - _WINDOW // 2)
    shown = text[start:start + _WINDOW].replace('\t', ' ')
    if start:
        shown, column = '…' + shown[1:], column - start
    if start + _WINDOW < len(text):
        shown = shown[:-1] + '…'
    return [f'adgrad: error: {error.message} ({where})', f'  {shown}', '  ' + ' ' * (column - 1) + '^']


def main(argv=None):
    # Syntax trees and tapes hold no reference cycles, so reference counting
    # frees them; while they grow, the cycle collector only re-scans them (half
    # the time of parsing and lowering 10^6 tokens). It stays paused for the
    # whole command, and is resumed for a caller that runs main() in-process.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _main(argv)
    finally:
        if enabled:
            gc.enable()


def _main(argv):
    argv = sys.argv[1:] if argv is None else list(argv)
    out, err = sys.stdout, sys.stderr
    show_traceback = '--traceback' in argv

    def warn(message):
        print(f'adgrad: warning: {message}', file=err)
    warn.stream = err

    try:
        top, commands = build_parser()
        if not argv:
            top.print_help(err)
            return Exit.USAGE
        if argv[0] not in commands:
            top.parse_args(argv)  # --help, --version, or an unknown command
            return Exit.USAGE
        args = _parse(commands[argv[0]], argv[1:])
        args.format_given = getattr(args, 'format', None) is not None
        if not args.format_given:
            args.format = 'table' if out.isatty() else 'plain'
        code = int(args.run(args, out, warn))
        out.flush()  # a full disk shows here, inside the error handling, not at exit
        return code
    except SystemExit as done:  # argparse after --help and --version
        return done.code or 0
    except KeyboardInterrupt:
        if show_traceback:
            raise
        return Exit.INTERRUPTED
    except BrokenPipeError:
        # The reader went away (| head): stop quietly, and keep Python from
        # complaining again when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return Exit.OK
    except OSError as error:  # reading is checked where it happens; this is the output
        if show_traceback:
            raise
        print(f'adgrad: error: cannot write the output: {error.strerror or error}', file=err)
        return Exit.USAGE
    except AdgradError as error:
        if show_traceback:
            raise
        print('\n'.join(_error_lines(error)), file=err)
        return Exit.NUMERICAL if isinstance(error, NumericalError) else Exit.USAGE
    except Exception as error:  # a bug: still one line, and the way to see more
        if show_traceback:
            raise
        print(f'adgrad: internal error: {type(error).__name__}: {error} '
              '(run with --traceback and report it)', file=err)
        return Exit.INTERNAL
