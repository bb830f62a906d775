"""What every command shares: exit codes, reading the program and its bindings,
and the report of the first non-finite value."""

import enum
import errno
import re
import sys

from ..errors import AdgradError, UsageError, first_line, numerical  # noqa: F401 - shared
from ..table.bindings import input_values, lower_program, parse_bindings, where  # noqa: F401 - shared



class Exit(enum.IntEnum):
    OK = 0
    NUMERICAL = 1   # a non-finite result under --strict
    FAILED = 1      # a check that failed
    USAGE = 2       # bad usage or bad input
    INTERNAL = 70   # a bug in adgrad (EX_SOFTWARE): not the user's input
    INTERRUPTED = 130


# ---- input ----

def read_text(path, stdin=None):
    """The text of a file, or of `stdin` (default sys.stdin) for '-'. Both are read
    as bytes and decoded here, so bad UTF-8 is reported the same way for both."""
    name = '<stdin>' if path == '-' else path
    try:
        if path == '-':
            stream = sys.stdin if stdin is None else stdin
            if stream is None:
                raise OSError(errno.EBADF, 'standard input is closed')
            data = getattr(stream, 'buffer', stream).read()
        else:
            with open(path, 'rb') as f:
                data = f.read()
    except OSError as error:
        raise UsageError(f'cannot read {name}: {error.strerror or error}') from None
    except ValueError:   # a stream closed in-process, or a NUL in a name main() was passed
        why = 'standard input is closed' if path == '-' else 'a file name cannot hold a NUL'
        raise UsageError(f'cannot read {name!r}: {why}') from None
    if isinstance(data, str):   # a text stream without bytes underneath (tests)
        return data.removeprefix('\ufeff')
    skip = 3 if data.startswith(b'\xef\xbb\xbf') else 0   # a spreadsheet's byte-order mark
    try:
        return data[skip:].decode('utf-8')
    except UnicodeDecodeError as error:
        raise UsageError(f'cannot read {name}: byte {skip + error.start} is not UTF-8 text') from None


def read_program(args, stdin=None):
    """(source, bindings words) from EXPR, -f FILE, or stdin for '-'."""
    words = list(args.words)
    if args.file is not None:
        if words and not re.match(r'\s*[A-Za-z_]\w*\s*=(?!=)', words[0]):
            raise UsageError(f"give the program as an expression or with -f, not both "
                             f"(here {words[0]!r} and -f {args.file})")
        return read_text(args.file, stdin), words
    if not words:
        raise UsageError('give an expression, -f FILE, or - to read standard input '
                         f'(see adgrad {args.command} --help)')
    expr = words.pop(0)
    later = next((word for word in words if '=' not in word), None)
    if later is not None and re.match(r'\s*[A-Za-z_]\w*\s*=[^=]', expr):
        import shlex   # only this error needs it
        bindings = ' '.join(map(shlex.quote, [expr] + [w for w in words if w is not later]))
        raise UsageError(f'{shlex.quote(later)} is not a binding: the expression comes first, '
                         f'as in adgrad {args.command} {shlex.quote(later)} {bindings}')
    return (read_text('-', stdin) if expr == '-' else expr), words


def load(args, env):
    """The program's graph and its command-line bindings: where every command
    starts, so that bindings, constants and notes behave alike in all of them
    (and in the library's Program, through the same table.bindings)."""
    graph, words = load_program(args, env)
    return graph, parse_bindings(words, graph)


def load_program(args, env):
    """The program's graph and the words after it, unread. What lowering noted
    (a constant bound as a variable, numbers bound where inputs were meant)
    goes to stderr."""
    source, words = read_program(args, env.stdin)
    graph = lower_program(source, lambda note: env.say(f'adgrad: note: {note}'))
    env.keep(graph)
    return graph, words


def memory_wanted(args):
    """Whether grad's options ask about memory (--memory, --checkpoint, --memory-limit)."""
    # (is not None: an empty --checkpoint '' is asked, and refused as unknown)
    return bool(getattr(args, 'memory', False) or getattr(args, 'checkpoint', None) is not None
                or getattr(args, 'memory_limit', None) is not None)


def refuse_arrays(graph, bindings, what):
    """A usage error for an array program where `what` takes numbers only, so
    far (None: nothing is refused)."""
    from ..core.graph import is_array_program
    if what is not None and is_array_program(graph, bindings):
        raise UsageError(f'{what} take programs of numbers only, not of arrays, so far: '
                         'eval and grad take arrays at one point')


def report_nonfinite(graph, values, strict, warn):
    """One warning (an error under --strict) naming the first non-finite node."""
    from ..core.passes import first_nonfinite
    bad = first_nonfinite(values)
    if bad is not None:
        numerical(f'{where(graph, bad)} is {values[bad]!r}, the first non-finite value',
                   strict, warn)


def wrt_names(graph, wrt):
    """--wrt's variables, in its order, else every variable sorted by name."""
    from ..core.passes import check_names
    if wrt is None:
        return sorted(graph.inputs)
    names = [n.strip() for n in wrt.split(',')]
    if not all(names):
        raise UsageError(f"--wrt '{wrt}' has an empty name: list variables as X,Y")
    check_names(graph, names)
    twice = [n for i, n in enumerate(names) if n in names[:i]]
    if twice:
        raise UsageError(f"--wrt lists '{twice[0]}' twice")
    return names
