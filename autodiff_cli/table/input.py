"""The points as a binary stream, read from the start as often as asked."""

import os
import sys

from ..errors import UsageError


class Input:
    """The points as a binary stream, from the start, as often as asked:
    a regular file is opened again; standard input, or a path that is no
    regular file (a pipe: `--points <(...)`), is sought back when it can
    be, else copied to a temporary file while the first pass reads it
    (unless `again` is false: a caller that reads it once needs no copy)."""

    def __init__(self, points, stdin=None, again=True):
        self.path = None if points == '-' else points
        self.given, self.again = stdin, again
        self.name = '<stdin>' if points == '-' else points
        self.opened, self.spool, self.start, self.calls = [], None, None, 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for stream in reversed(self.opened):   # a source before the stream it reads
            stream.close()

    def points(self):
        """A source over the stream from its start, closed on the way out."""
        from .sources import open_points
        source = open_points(self.open(), self.name, self.path)
        self.opened.append(source)
        return source

    def _open_path(self):
        try:
            stream = open(self.path, 'rb')
        except OSError as error:
            raise UsageError(f'cannot read {self.name}: {error.strerror}') from None
        self.opened.append(stream)
        return stream

    def _regular_file(self):
        import stat
        try:
            return stat.S_ISREG(os.stat(self.path).st_mode)
        except OSError:
            return True   # open() says why it cannot be read

    def _standard_input(self):
        text = self.given if self.given is not None else sys.stdin
        binary = getattr(text, 'buffer', None)
        if binary is not None:
            return binary
        import io   # a text stream in place of stdin (tests, embedding)
        try:
            return io.BytesIO(text.read().encode('utf-8', 'surrogateescape'))
        except OSError as error:
            raise UsageError(f'cannot read <stdin>: {error.strerror or error}') from None

    def open(self):
        self.calls += 1
        if self.calls == 1:
            self.regular = self.path is not None and self._regular_file()
            if not self.regular:
                return self._first_reading(
                    self._open_path() if self.path is not None else self._standard_input())
        if self.regular:
            return self._open_path()
        if self.start is not None:
            self.once.seek(self.start)
            return self.once
        self.spool.seek(0)
        return self.spool

    def _first_reading(self, once):
        """A stream that cannot be opened again: read from where it is, if it
        can be sought back there; else copied to a spool as it is read."""
        self.once = once
        try:
            self.start = once.tell() if once.seekable() else None
        except OSError:
            self.start = None
        if self.start is not None or not self.again:
            return once
        import tempfile
        self.spool = tempfile.TemporaryFile(prefix='adgrad-points-')
        self.opened.append(self.spool)
        return _Tee(once, self.spool)


class _Tee:
    """A stream that can be read only once, copied to the spool as it is read."""

    def __init__(self, stream, spool):
        self.stream, self.spool = stream, spool

    def read(self, n=-1):
        data = self.stream.read(n)
        self.spool.write(data)
        return data

    def read1(self, n=-1):
        data = self.stream.read1(n) if hasattr(self.stream, 'read1') else self.stream.read(n)
        self.spool.write(data)
        return data


