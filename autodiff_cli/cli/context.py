"""What a command runs in: the registry of commands, and the Environment.

The Environment (after httpie's) holds the standard streams, whether each is
a terminal, colour, how to spell ∂, and the warning sink. main() builds it
once; commands read their input and write their output through it, and never
touch sys.stdin/stdout/stderr or any other process-wide state themselves.
"""

import errno
import os
import re
import sys

from ..table.formats import Choice


class Command(Choice):
    """The registry of commands: one line each. See main.py for what a command module holds."""

    def __new__(cls, word, module, summary):
        member = str.__new__(cls, word)
        member._value_ = word
        member.module = module      # its module under autodiff_cli.cli
        member.summary = summary    # one line for `adgrad --help`
        return member

    EVAL = 'eval', 'evaluate', 'print the value of an expression'
    GRAD = 'grad', 'evaluate', 'print the value and the gradient by reverse mode'
    RENDER = 'render', 'render_command', 'draw the computational graph with its values and gradients'
    DIFF = 'diff', 'diff', 'print the derivative as a formula, or as NumPy, C or LaTeX'
    JACOBIAN = 'jacobian', 'jacobian', 'print the value and the Jacobian of a vector output'
    HESSIAN = 'hessian', 'hessian', 'print the matrix of second derivatives'
    CHECK = 'check', 'check', 'compare reverse mode with finite differences'
    MINIMIZE = 'minimize', 'minimize', 'find a minimiser with the exact gradient (and Hessian)'
    PLOT = 'plot', 'plot', 'draw f and its derivatives over a range, or contours over two'
    FIT = 'fit', 'fit', 'fit a model to data by least squares, with the exact Jacobian'
    COMPLETION = 'completion', 'completion', 'print a shell completion script'

    def load(self):
        # __import__ rather than importlib.import_module: the same import, but
        # through the interpreter's own path, which -X importtime reports.
        return __import__(f'{__package__}.{self.module}', fromlist=('run',))


# ---- the standard streams ----

class Closed:
    """Stands in for a standard stream that was closed when adgrad started
    (`<&-`, `>&-`, `2>&-`): reading or writing it fails like a closed file."""

    encoding, errors = 'utf-8', 'strict'

    def __init__(self, what):
        self.what = what

    def _fail(self, *args):
        raise OSError(errno.EBADF, f'{self.what} is closed')

    read = write = _fail

    def flush(self):
        pass

    def isatty(self):
        return False


def silence(stream):
    """Point a stream's file descriptor at /dev/null, so that what it still
    buffers, and the interpreter's flush at exit, go nowhere instead of failing
    again (no 'Exception ignored', no exit code 120)."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)


def can_encode(stream, text):
    try:
        text.encode(getattr(stream, 'encoding', None) or 'utf-8')
    except (UnicodeEncodeError, LookupError):
        return False
    return True


# Patterns as text, compiled (by re's cache) when a message first needs one:
# compiling them all at start-up would slow every command.
# Controls, line separators, stray surrogates:
UNPRINTABLE = r'[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]'
WORD_LIMIT = 100        # characters of one word of a message: a name, a path
_LONG_WORD = r'\S{%d,}' % (WORD_LIMIT + 1)
MESSAGE_LIMIT = 400     # characters of a whole message


def printable(message, stream):
    """One line of a message, safe to print: long words (user text: a name, a
    token) and the whole line elided, control characters and stray surrogates
    escaped, and ∂ spelled d where the stream's encoding has no ∂."""
    message = re.sub(_LONG_WORD, lambda m: elide(m.group(), WORD_LIMIT), message)
    message = re.sub(UNPRINTABLE, lambda m: repr(m.group())[1:-1], elide(message, MESSAGE_LIMIT))
    return message if can_encode(stream, '∂') else message.replace('∂', 'd')


def elide(text, limit):
    """text, or its two ends around '…' in `limit` characters."""
    if len(text) <= limit:
        return text
    return text[:limit // 2] + '…' + text[-(limit - limit // 2 - 1):]


class Warnings:
    """The warning sink: each warning goes to stderr as it happens, and is kept."""

    def __init__(self, env):
        self.env = env
        self.messages = []

    @property
    def stream(self):   # where a progress bar may go
        return self.env.stderr

    def __call__(self, message):
        self.messages.append(message)
        self.env.say(f'adgrad: warning: {message}')


class Environment:
    """The standard streams and what is known about them, and the warning sink."""

    def __init__(self, stdin, stdout, stderr, stdin_isatty=False, stdout_isatty=False,
                 stderr_isatty=False, colour=False, partial='∂'):
        self.stdin, self.stdout, self.stderr = stdin, stdout, stderr
        self.stdin_isatty = stdin_isatty
        self.stdout_isatty = stdout_isatty
        self.stderr_isatty = stderr_isatty
        self.colour = colour        # stdout is a terminal that wants colour
        self.partial = partial      # 'd' where stdout cannot show ∂: df/dx
        self.warn = Warnings(self)
        self.kept = None   # a list given by main(keep=...), else nothing is kept

    def keep(self, *objects):
        """Hand a command's large results (its graph, its passes' values) to
        a caller that asked for them (main(keep=...)), to free when it
        chooses. Otherwise they are freed as the command returns: held here,
        they would wait for the cycle collector (the Environment and its
        warning sink refer to each other)."""
        if self.kept is not None:
            self.kept.extend(objects)

    @classmethod
    def from_system(cls, environ=os.environ):
        streams = [sys.stdin, sys.stdout, sys.stderr]
        names = ('standard input', 'standard output', 'standard error')
        stdin, stdout, stderr = [Closed(n) if s is None else s for s, n in zip(streams, names)]
        ttys = [_isatty(s) for s in (stdin, stdout, stderr)]
        colour = ttys[1] and 'NO_COLOR' not in environ and environ.get('TERM') != 'dumb'
        return cls(stdin, stdout, stderr, *ttys, colour=colour,
                   partial='∂' if can_encode(stdout, '∂') else 'd')

    def say(self, line, verbatim=False):
        """A line on stderr, made printable() unless `verbatim`. Should stderr be
        closed or full, the line is lost, quietly: there is nowhere left to say so."""
        try:
            self.stderr.write((line if verbatim else printable(line, self.stderr)) + '\n')
            self.stderr.flush()
        except (OSError, ValueError):
            silence(self.stderr)
            self.stderr = Closed('standard error')

    def error(self, message, *context):
        """An error's line, then any lines of context (a source line and its caret) as they are."""
        self.say(f'adgrad: error: {message}')
        for line in context:
            self.say(line, verbatim=True)


def _isatty(stream):
    try:
        return stream.isatty()
    except (AttributeError, OSError, ValueError):
        return False
