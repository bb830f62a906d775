"""Typed errors. The library raises these; the CLI maps each to an exit code."""


class AdgradError(Exception):
    """Bad input: a message, and where in the source it points if it can."""

    def __init__(self, message, source=None, pos=None):
        super().__init__(message)
        self.message = message
        self.source = source
        self.pos = pos

    def location(self):
        """(line, column, line_text), 1-based, or None without a position."""
        if self.source is None or self.pos is None:
            return None
        start = self.source.rfind('\n', 0, self.pos) + 1
        end = self.source.find('\n', self.pos)
        line = self.source.count('\n', 0, self.pos) + 1
        return line, self.pos - start + 1, self.source[start:end if end >= 0 else None]


class NumericalError(AdgradError):
    """A non-finite value under --strict."""


class CheckFailed(AdgradError):
    """A derivative check that did not hold (exit code 1)."""


class UsageError(AdgradError):
    """Bad usage of the command line: a missing value, a bad option."""


class RowError(AdgradError):
    """An error at row `row` of a chunk, which the pipeline, knowing the file
    and line, raises again as `cause`'s own type with them named."""

    def __init__(self, row, cause):
        super().__init__(cause.message)
        self.row, self.cause = row, cause


def did_you_mean(name, candidates):
    """'; did you mean 'sin'?' for the closest candidate, or ''."""
    import difflib  # slow to import, and only an error message needs it
    close = difflib.get_close_matches(name, sorted(candidates), n=1)
    return f"; did you mean '{close[0]}'?" if close else ''


def numerical(message, strict, warn):
    """A non-finite result: an error under --strict, else a warning."""
    if strict:
        raise NumericalError(message)
    warn(message)


def first_line(error):
    """An exception's message as one line of ours: its first line, without
    the colon a library ends it with before the detail it prints below."""
    text = str(error).strip()
    return text.splitlines()[0].rstrip(':') if text else type(error).__name__


class TableError(Exception):
    """The shipped parse table does not match the grammar: a broken build, not bad
    input, so the CLI reports it as an internal error (exit 70)."""

    def __init__(self, why):
        super().__init__(f'{why}; rebuild it with: python -m autodiff_cli.language.grammar_table')
