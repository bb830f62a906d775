"""What every command shares: exit codes, reading the program and its bindings,
and the report of the first non-finite value."""

import enum
import errno
import re
import sys

from ..errors import AdgradError, UsageError, first_line, numerical  # noqa: F401 - shared
from ..table.bindings import input_values, where  # noqa: F401 - shared

# Patterns as text, compiled (by re's cache) only for a value that needs one:
# compiling them costs more than the rest of reading x=2 y=3 (see _is_number).
_FLOAT = r'[+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|inf|infinity|nan)'
_STATEMENT = r'(?<![<>=!])=(?!=)|;'   # x=y=2, x=1;2: a program, not a value


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
    starts, so that bindings, constants and notes behave alike in all of them."""
    graph, words = load_program(args, env)
    return graph, parse_bindings(words, graph)


def load_program(args, env):
    """The program's graph and the words after it, unread. What lowering noted
    (a constant bound as a variable, numbers bound where inputs were meant)
    goes to stderr."""
    from ..language.lower import lower
    source, words = read_program(args, env.stdin)
    graph = lower(source)
    env.keep(graph)
    for note in graph.notes:
        env.say(f'adgrad: note: {note}')
    return graph, words


def parse_bindings(words, graph=None):
    """{name: value} from NAME=VALUE words: a number, a constant expression,
    an array literal, or @FILE for an array in a file. `pi` and `e` can be
    bound only where the program made them its own variables."""
    from ..language.lower import constant
    from ..core.primitives import CONSTANTS
    bindings = {}
    for word in words:
        name, equals, text = word.partition('=')
        if not (equals and name.isascii() and name.isidentifier()):   # [A-Za-z_][A-Za-z0-9_]*
            raise UsageError(f"bad binding '{word}': write NAME=VALUE, such as x=2 or x=pi/4")
        if not text.strip():
            raise UsageError(f"bad binding '{word}': no value after '='")
        if ('=' in text or ';' in text) and re.search(_STATEMENT, text):
            raise UsageError(f"bad binding '{word}': the value must be one expression, "
                             'such as x=2 or x=pi/4')
        if name in CONSTANTS and (graph is None or name not in graph.inputs):
            raise UsageError(f"cannot bind the constant '{name}'")
        if name in bindings:
            raise UsageError(f"'{name}' is bound twice")
        if _is_number(text.strip()):
            bindings[name] = float(text)  # fast and exact; also inf and nan, for probing edges
            continue
        if text.startswith('@'):   # W=@w.npy: an array from a file
            from ..table.array_files import read_array
            bindings[name] = read_array(text[1:])
            continue
        try:
            bindings[name] = constant(text)
        except AdgradError as error:
            raise AdgradError(f'in {name}=: {error.message}', text, error.pos) from None
    return bindings


def _is_number(text):
    """Whether text (stripped) is a decimal number, inf, infinity or nan, as
    _FLOAT spells them. For ASCII text without '_', that is exactly what
    float() reads; other text (digits of other scripts, 1_000) takes the
    pattern."""
    if text.isascii() and '_' not in text:
        try:
            float(text)
        except ValueError:
            return False
        return True
    return re.fullmatch(_FLOAT, text, re.I) is not None


def refuse_arrays(graph, bindings, what):
    """A usage error for an array program where `what` takes numbers only, so far."""
    from ..core.tensors import is_array_program
    if is_array_program(graph, bindings):
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
