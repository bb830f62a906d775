"""The adgrad command line: read input, call the library, write output.

`main(argv) -> int` is the one place where errors become exit codes.
"""

import argparse
import enum
import os
import re
import sys

from . import __version__
from .errors import AdgradError, NumericalError
from .output import FORMATS

_NUMBER = re.compile(r'-(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?')
_BINDING = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)=(.*)', re.S)


class Exit(enum.IntEnum):
    OK = 0
    NUMERICAL = 1   # a non-finite result under --strict, or a failed check
    USAGE = 2       # bad usage or bad input
    INTERRUPTED = 130


class UsageError(AdgradError):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f'{message} (see {self.prog} --help)')


# ---- input ----

def _read(path):
    if path == '-':
        return sys.stdin.read()
    try:
        with open(path, encoding='utf-8') as f:
            return f.read()
    except OSError as error:
        raise UsageError(f'cannot read {path}: {error.strerror}') from None


def read_program(args):
    """(source, bindings words) from EXPR, -f FILE, or stdin for '-'."""
    words = list(args.words)
    if args.file is not None:
        return _read(args.file), words
    if not words:
        raise UsageError('give an expression, -f FILE, or - to read standard input '
                         f'(see adgrad {args.command} --help)')
    expr = words.pop(0)
    return (_read('-') if expr == '-' else expr), words


def parse_bindings(words):
    from .lower import constant
    from .primitives import CONSTANTS
    bindings = {}
    for word in words:
        match = _BINDING.fullmatch(word)
        if not match:
            raise UsageError(f"bad binding '{word}': write NAME=VALUE, such as x=2 or x=pi/4")
        name, text = match.groups()
        if name in CONSTANTS:
            raise UsageError(f"cannot bind the constant '{name}'")
        if name in bindings:
            raise UsageError(f"'{name}' is bound twice")
        try:
            bindings[name] = float(text)
        except ValueError:
            try:
                bindings[name] = constant(text)
            except AdgradError as error:
                raise AdgradError(f'in {name}=: {error.message}', text, error.pos) from None
    return bindings


def input_values(graph, bindings, warn):
    for name in bindings:
        if name not in graph.inputs:
            if any(node.name == name for node in graph.nodes):
                raise UsageError(f"cannot bind '{name}': the program computes it")
            warn(f"'{name}' is not used by the expression")
    values = dict(graph.defaults)
    values.update((k, v) for k, v in bindings.items() if k in graph.inputs)
    return values


# ---- commands ----

def _nonfinite(graph, values, strict, warn):
    from .evaluate import first_nonfinite
    i = first_nonfinite(values)
    if i is None:
        return
    message = f'{graph.text(i, 60) or graph.label(i)} is {values[i]!r} (node {i}, the first non-finite value)'
    if strict:
        raise NumericalError(message)
    warn(message)


def run(args, out, warn):
    from .evaluate import backward, check_names, forward
    from .lower import lower
    from .output import node_records

    source, words = read_program(args)
    graph = lower(source)
    values = forward(graph, input_values(graph, parse_bindings(words), warn))
    _nonfinite(graph, values, args.strict, warn)
    result = {'value': values[graph.output]}
    grads = None
    if args.command == 'grad':
        grads = backward(graph, values)
        names = sorted(graph.inputs)
        if args.wrt:
            names = [n.strip() for n in args.wrt.split(',') if n.strip()]
            check_names(graph, names)
        result['gradient'] = {name: grads[graph.inputs[name]] for name in names}
        bad = [n for n in names if grads[graph.inputs[n]] != grads[graph.inputs[n]]
               or abs(grads[graph.inputs[n]]) == float('inf')]
        if bad:
            message = f"the gradient ∂f/∂{bad[0]} is {grads[graph.inputs[bad[0]]]!r}"
            if args.strict:
                raise NumericalError(message)
            warn(message)
    if args.nodes:
        result['nodes'] = node_records(graph, values, grads)
    from .output import write
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
}


def _add_common(parser, command):
    parser.add_argument('words', nargs='*', metavar='EXPR [NAME=VALUE ...]',
                        help="the expression or program ('-' reads standard input), "
                             'then values for its variables')
    parser.add_argument('-f', '--file', metavar='FILE',
                        help="read the program from FILE ('-' for standard input); "
                             'every positional argument is then a binding')
    parser.add_argument('--format', choices=FORMATS, default=None,
                        help='output format (default: table on a terminal, plain otherwise)')
    parser.add_argument('--json', dest='format', action='store_const', const='json',
                        help='same as --format json')
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
    return top, commands


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
                    and arg[:2] not in short and not _NUMBER.fullmatch(arg)):
            masked.append(f'\0{len(words)}')
            words.append(arg)
        else:
            masked.append(arg)
    args = parser.parse_intermixed_args(masked)
    args.words = [words[int(w[1:])] if w.startswith('\0') else w for w in args.words]
    return args


def _error_lines(error):
    location = error.location()
    if location is None:
        return [f'adgrad: error: {error.message}']
    line, column, text = location
    where = f'line {line}, column {column}' if error.source.count('\n') else f'column {column}'
    return [f'adgrad: error: {error.message} ({where})', f'  {text}', '  ' + ' ' * (column - 1) + '^']


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    out, err = sys.stdout, sys.stderr
    show_traceback = '--traceback' in argv

    def warn(message):
        print(f'adgrad: warning: {message}', file=err)

    try:
        top, commands = build_parser()
        if not argv:
            top.print_help(err)
            return Exit.USAGE
        if argv[0] not in commands:
            top.parse_args(argv)  # --help, --version, or an unknown command
            return Exit.USAGE
        args = _parse(commands[argv[0]], argv[1:])
        if args.format is None:
            args.format = 'table' if out.isatty() else 'plain'
        return int(args.run(args, out, warn))
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
        return Exit.USAGE
