"""The adgrad command line: read input, call the library, write output.

`main(argv) -> int` is the one place where errors become exit codes, and the
one place that touches process-wide state: it builds the Environment (the
standard streams), pauses the cycle collector, and makes stdout survive text
its encoding cannot show. (console(), the process's entry point, also sets
what a Ctrl-C does once the command is over: see there.)

Commands are a registry: the `Command` enum in context.py, one line per
command naming its word, its module under `autodiff_cli/cli/` and a summary.
A command module holds two functions:

    def add_arguments(parser, command):   # add options; may set parser.usage, .epilog
    def run(args, env) -> Exit:            # args.command is the Command member

so adding a command is that module plus its line in `Command` (two commands
may share a module, as eval and grad do, and branch on `command`). Only the
parser of the command being run is built and only its module is imported;
`adgrad --help` and `adgrad completion` build the rest.
"""

import argparse
import gc
import os
import re
import sys

from .. import __version__
from ..errors import AdgradError, CheckFailed, NumericalError, UsageError, did_you_mean
from .common import Exit
from .context import UNPRINTABLE, Command, Environment, silence

_WINDOW = 100  # characters of a long source line shown around an error's caret

# Every error type and its exit code, in one place: the first class in an
# error's MRO that is listed here decides. (OSError, KeyboardInterrupt and
# bugs are handled by _failed below.)
EXIT_CODES = {
    NumericalError: Exit.NUMERICAL,   # a non-finite value under --strict
    CheckFailed: Exit.FAILED,         # a derivative check that did not hold
    UsageError: Exit.USAGE,
    AdgradError: Exit.USAGE,          # bad input: syntax, names, files
}


def exit_code(error):
    return next(EXIT_CODES[k] for k in type(error).__mro__ if k in EXIT_CODES)


def main(argv=None, keep=None):
    """Run one command; its exit code. With `keep`, a list, the command's
    large results are left in it for the caller to free (Environment.keep)."""
    env = Environment.from_system()
    env.kept = keep
    # Syntax trees and tapes hold no reference cycles, so reference counting
    # frees them; while they grow, the cycle collector only re-scans them (half
    # the time of parsing and lowering 10^6 tokens). It stays paused for the
    # whole command, and is resumed for a caller that runs main() in-process.
    enabled = gc.isenabled()
    gc.disable()
    # Text that stdout's encoding cannot show (a comment's stray bytes, a
    # Latin-1 terminal) is escaped, not an error.
    restore = _lenient(env.stdout)
    try:
        return _main(sys.argv[1:] if argv is None else list(argv), env)
    finally:
        restore()
        if enabled:
            gc.enable()


def console():
    """The `adgrad` command (and `python -m autodiff_cli`): main(), then the
    interpreter's own exit. A command closes what it started (pyarrow's
    readers, a Dask client and cluster, the writer thread) before main()
    returns, so that exit has nothing left to wait for or to abort in."""
    try:
        code = main()
        _flush()
        _after_the_command()
    except KeyboardInterrupt:   # between main()'s return and the line above
        return Exit.INTERRUPTED
    return code


def _after_the_command():
    """From here on a Ctrl-C ends the process by SIGINT, which the shell
    shows as 130, quietly: the command is over and its output flushed, and
    in the exit (a Dask cluster's finalizers) Python would print it as an
    'Exception ignored' traceback. Only where a command dealt with Ctrl-C
    (and so imported signal), and where SIGINT is Python's own: one that is
    ignored (nohup) or handled by a caller stays so."""
    signal = sys.modules.get('signal')
    if signal is not None and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.SIG_DFL)


def _flush():
    for stream in {id(s): s for s in (sys.stdout, sys.stderr) if s is not None}.values():
        try:
            stream.flush()
        except (OSError, ValueError):   # the interpreter's exit reports it, as it always has
            pass


def _lenient(stream):
    errors = getattr(stream, 'errors', None)
    if errors != 'strict' or not hasattr(stream, 'reconfigure'):
        return lambda: None
    try:
        stream.reconfigure(errors='backslashreplace')
    except (OSError, ValueError):
        return lambda: None

    def restore():
        try:
            stream.reconfigure(errors=errors)
        except (OSError, ValueError):
            pass
    return restore


def _main(argv, env):
    show_traceback = '--traceback' in argv
    try:
        code = _dispatch(argv, env)
    except BaseException as error:   # noqa: B036 - SystemExit and Ctrl-C are mapped too
        code = _failed(error, env, show_traceback)
    # Flush here, inside the error handling rather than at exit: a full disk
    # shows now, and so does what --help printed before argparse's SystemExit.
    try:
        env.stdout.flush()
    except OSError as error:
        if code == Exit.OK:
            code = _output_failed(error, env)
        else:   # the error that came first has been said
            silence(env.stdout)
    return code


def _failed(error, env, show_traceback):
    """The exit code for an error, after its one line on stderr."""
    if isinstance(error, SystemExit):   # argparse, after --help and --version
        return error.code if isinstance(error.code, int) else Exit.OK
    if show_traceback and not isinstance(error, BrokenPipeError):
        import traceback   # for a bug report; the exit code is the one without it
        env.stderr.write(''.join(traceback.format_exception(error)))
    if isinstance(error, KeyboardInterrupt):
        return Exit.INTERRUPTED
    if isinstance(error, OSError):   # reading is checked where it happens; this is the output
        return _output_failed(error, env)
    if isinstance(error, AdgradError):
        env.error(*_error_lines(error))
        return exit_code(error)
    if isinstance(error, MemoryError):   # input too large for this machine, not a bug
        env.error('out of memory: the arrays of this program and its values do not fit; '
                  'make them smaller, or stream rows with --points')
        return Exit.USAGE
    if isinstance(error, Exception):   # a bug: still one line, and the way to see more
        env.say(f'adgrad: internal error: {type(error).__name__}: {error} '
                '(run with --traceback and report it)')
        return Exit.INTERNAL
    raise error


def _output_failed(error, env):
    """The one path for a stdout that is closed, full or gone: stop writing,
    keep the interpreter from failing again at exit, and say why, except to a
    reader that went away (| head), which is no error."""
    silence(env.stdout)
    if isinstance(error, BrokenPipeError):
        return Exit.OK
    env.error(f'cannot write the output: {error.strerror or error}')
    return Exit.USAGE


# ---- parsers ----

class _Parser(argparse.ArgumentParser):
    env = None   # where --help and --version print

    def error(self, message):
        flag = re.match(r"argument (?:\S+/)?(\S+): ignored explicit argument '(.*)'$", message)
        if flag:   # --json=true
            raise UsageError(f'{flag.group(1)} takes no value: write {flag.group(1)} alone, '
                             f'not {flag.group(1)}={flag.group(2)}')
        raise UsageError(f'{message}{self._suggestion(message)} (see {self.prog} --help)')

    def _suggestion(self, message):
        """'; did you mean ...?' for a mistyped command (`gard`), option (`--jsn`)
        or choice (`--pass backwards`); where another command has the option, which."""
        choice = re.match(r"argument [^:]*: invalid choice: '(.*)' \(choose from (.*)\)$", message)
        if choice:   # argparse quotes the choices, Choice.parse does not
            words = re.findall(r"'([^']*)'", choice.group(2)) or choice.group(2).split(', ')
            return did_you_mean(choice.group(1), words)
        unknown = re.match(r'unrecognized arguments: (--[^\s=]+)', message)
        if unknown:
            option = unknown.group(1)
            own = [option for action in self._actions for option in action.option_strings]
            others = [] if option in own or self.prog == 'adgrad' else _commands_with(option)
            if others:
                return (f"; {option} is an option of {', '.join(others)}, not of "
                        f"{self.prog.removeprefix('adgrad ')}")
            return did_you_mean(option, own)
        return ''

    def _print_message(self, message, file=None):
        if message:
            env = self.env
            if env is None:
                (file or sys.stderr).write(message)
            else:
                (env.stderr if file is env.stderr else env.stdout).write(message)


def _columns():
    # argparse's own default imports shutil (and with it bz2, lzma, fnmatch)
    # for this, on every command's start-up.
    try:
        return int(os.environ.get('COLUMNS', ''))
    except ValueError:
        pass
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 80


class _Formatter(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
        super().__init__(prog, indent_increment, max_help_position,
                         max(40, _columns() - 2) if width is None else width)


def _top_parser(env):
    top = _Parser(prog='adgrad', allow_abbrev=False, formatter_class=_Formatter,
                  description='Evaluate and differentiate expressions from the command line.',
                  epilog="run 'adgrad COMMAND --help' for a command's options and examples")
    top.env = env
    top.add_argument('--version', action='version', version=f'adgrad {__version__}')
    return top


def _subparsers(top):
    return top.add_subparsers(dest='command', metavar='COMMAND', parser_class=_Parser)


def _shape(parser, command, env):
    parser.env = env
    command.load().add_arguments(parser, command)
    return parser


def command_parser(command, env):
    """The parser of one command, alone: nothing else is built or imported."""
    return _shape(_Parser(prog=f'adgrad {command}', description=command.summary,
                          allow_abbrev=False, formatter_class=_Formatter), command, env)


def full_parser(env=None):
    """Every command's parser under the top one (for completion scripts)."""
    top = _top_parser(env)
    sub = _subparsers(top)
    for command in Command:
        _shape(sub.add_parser(command.value, help=command.summary, description=command.summary,
                              allow_abbrev=False, formatter_class=_Formatter), command, env)
    return top


def _commands_with(option):
    """The commands that take `option`: only an error message builds them all."""
    return [str(c) for c in Command if option in command_parser(c, None)._option_string_actions]


def _command(word):
    try:
        return Command(word)
    except ValueError:
        return None


def _dispatch(argv, env):
    command = _command(argv[0]) if argv else None
    if command is not None:
        args = parse(command_parser(command, env), argv[1:])
        args.command = command
        return command.load().run(args, env)
    top = _top_parser(env)
    sub = _subparsers(top)
    for command in Command:   # names and summaries for --help; no options built
        sub.add_parser(command.value, help=command.summary)
    if not argv:
        top.print_help(env.stderr)
        return Exit.USAGE
    later = next((k for k, word in enumerate(argv) if _command(word) is not None), None)
    if later and argv[0].startswith('-') and argv[0] not in ('-h', '--help', '--version'):
        import shlex   # only this error needs it
        reordered = shlex.join([argv[later], *argv[later + 1:], *argv[:later]])
        raise UsageError(f'options go after the command: adgrad {reordered}')
    top.parse_args(argv)   # --help, --version, or an unknown command: it exits or raises
    return Exit.USAGE


_PATH_LIKE = r'[A-Za-z_]\.|(?<![0-9])\.[A-Za-z_./]'   # compiled only when needed


def parse(parser, argv):
    """Parse options anywhere among the words. An option's value is the next
    word, whatever it is (`-f -prog.ad`, `-o --`). A word after `--`, or one
    like `-x^2` or `-5e3` that starts with '-' but is no option, is an
    expression or a binding.

    argparse would read such words as options (and drops a value of `--`), so
    it sees each as a placeholder, unmasked by each option's type and in
    args.words afterwards."""
    with_value = {s for a in parser._actions if a.nargs != 0 for s in a.option_strings}
    words, masked, rest = {}, [], False

    def mask(word):
        placeholder = f'\0{len(words)}\0'
        words[placeholder] = word
        return placeholder
    for action in parser._actions:
        if action.option_strings and action.nargs != 0:
            action.type = _unmasking(action.type, words)
    argv = iter(argv)
    for arg in argv:
        if not rest and arg == '--':
            rest = True
        elif not rest and arg in with_value:
            value = next(argv, None)
            masked += [arg] if value is None else [arg, mask(value)]
        elif rest or (arg.startswith('-') and len(arg) > 1 and not arg.startswith('--')
                      and arg not in parser._option_string_actions):
            if not rest:
                _refuse_attached_value(arg, with_value)
            masked.append(mask(arg))
        else:
            masked.append(arg)
    args = parser.parse_intermixed_args(masked)
    if hasattr(args, 'words'):
        args.words = [words.get(w, w) for w in args.words]
    return args


def _unmasking(convert, words):
    def unmask(text):
        text = words.get(text, text)
        if convert is None:
            return text
        try:
            return convert(text)
        except (TypeError, ValueError):
            raise argparse.ArgumentTypeError(f"invalid value: '{text}'") from None
    unmask.__name__ = getattr(convert, '__name__', 'value')
    return unmask


def _refuse_attached_value(word, with_value):
    """`-fprog.ad` is an option with its value attached, which adgrad does not
    read (`-factor*x` is an expression); say so rather than fail to parse it."""
    option, value = word[:2], word[2:]
    if option not in with_value:
        return
    value = value.removeprefix('=')
    if word[2:3] == '=' or re.search(_PATH_LIKE, value.split('#', 1)[0]) or os.path.isfile(value):
        raise UsageError(f"'{word}' is not an expression: write {option} {value or 'VALUE'}, "
                         "with a space (put -- before an expression that starts with "
                         f"'{option}')")


def _error_lines(error):
    location = error.location()
    if location is None:
        return [error.message]
    line, column, text = location
    where = f'line {line}, column {column}' if error.source.count('\n') else f'column {column}'
    # Show at most a window of the line around the caret, one column per
    # character (a tab as a space, control characters and stray bytes as '?'),
    # so the caret stays under its character whatever the terminal does.
    start = max(0, column - 1 - _WINDOW // 2)
    shown = re.sub(UNPRINTABLE, '?', text[start:start + _WINDOW].replace('\t', ' '))
    if start:
        shown, column = '…' + shown[1:], column - start
    if start + _WINDOW < len(text):
        shown = shown[:-1] + '…'
    return [f'{error.message} ({where})', f'  {shown}', '  ' + ' ' * (column - 1) + '^']

