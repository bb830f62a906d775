"""A batch of points, streamed: chunks of rows from the points file, each
through the array algebra (core/batch.py), then out in order.

Nothing is written unless every row is good. With -o FILE the rows go to
a temporary file beside FILE, renamed over it only at the end. On stdout a
first pass reads and checks every row before anything is written; standard
input that cannot be read twice is copied to a temporary file on the way.
"""

import os
import signal
import sys
import time

from ..core.batch import run_batch
from ..errors import UsageError
from .common import Exit, input_values, numerical, where

_EXTENSIONS = {'.csv': 'csv', '.tsv': 'tsv', '.jsonl': 'jsonl', '.ndjson': 'jsonl',
               '.json': 'json', '.parquet': 'parquet', '.pq': 'parquet'}


def run_points(args, graph, bindings, names, out, warn, stdin=None):
    output = getattr(args, 'output', None)
    engine = getattr(args, 'engine', 'numpy')
    if args.points is None:
        raise UsageError('-o/--output and --engine go with --points')
    if args.nodes:
        raise UsageError('--nodes shows one point; it does not go with --points')
    if engine == 'dask':
        from .dask_batch import run_dask
        return run_dask(args, graph, bindings, names, warn)
    if getattr(args, 'scheduler', None):
        raise UsageError('--scheduler goes with --engine dask')
    from .batch_options import tune_allocator
    from .points import open_points

    tune_allocator()  # every chunk's buffers reuse the last one's memory
    with _Input(args.points, stdin) as source_input:
        source = source_input.closing(open_points(source_input.open(), source_input.name,
                                                  source_input.path))
        fmt = output_format(args, output, source.kind)
        to_file = output not in (None, '-')
        if to_file:   # where it goes, and whether it can be, before any row is read
            from .files import Output
            target = Output(output, binary=fmt != 'table')
        plan = Plan(graph, bindings, names, warn)
        needs_header = source.kind == 'jsonl' and fmt not in ('json', 'jsonl')
        count = None
        # Rows that go straight out (stdout, or -o a pipe or /dev/stdout) are
        # all checked first, so that a bad one stops the run before any is written.
        if not to_file or target.in_place or needs_header:
            scan = plan.scan(source, args.strict)  # the first pass: every row checked
            count = scan.rows
            first, source = source, source_input.closing(open_points(
                source_input.open(), source_input.name, source_input.path))
            source.read_again(first)
            if source.kind == 'jsonl':
                source.header = scan.header
        plan.check(source)
        if to_file:
            with target:
                bad, done = plan.stream(source, make_writer(fmt, source, plan, target.file),
                                        None, count, warn)
                if not target.file.closed:   # the rows before a warning, where both go to one place
                    target.file.flush()
                plan.report(bad, done, args.strict, warn)
                target.commit()
        else:
            with AtBoundaries() as boundary:
                bad, done = plan.stream(source, make_writer(fmt, source, plan, out), boundary,
                                        count, warn)
                out.flush()
            plan.report(bad, done, args.strict, warn)
    return Exit.OK


def output_format(args, output, kind):
    ext = os.path.splitext(output)[1].lower() if output not in (None, '-') else ''
    if _EXTENSIONS.get(ext) == 'parquet':
        if args.format_given:
            raise UsageError(f'{output} is written as Parquet, by its ending: drop --format')
        import importlib.util
        if importlib.util.find_spec('pyarrow') is None:   # refused before any row is read
            raise UsageError(f"{output}: writing Parquet needs pyarrow: pip install "
                             "'adgrad[parquet]'")
        return 'parquet'
    if args.format_given:
        return args.format
    return _EXTENSIONS.get(ext) or ('csv' if kind == 'parquet' else kind)


def make_writer(fmt, source, plan, file):
    """The writer of a format into `file`: a text stream (stdout) or a binary file."""
    from .rows import JsonRows, ParquetRows, TableRows, TextRows
    header = source.header + plan.outputs
    if fmt == 'parquet':
        return ParquetRows(source.header, plan.outputs, file)
    if fmt == 'table':
        return TableRows(header, file)
    file = _binary(file)
    if fmt in ('json', 'jsonl'):
        return JsonRows(fmt, source.header, plan.outputs, file,
                        cells_are_text=source.kind in ('csv', 'tsv'))
    same = (fmt, source.kind) in (('csv', 'csv'), ('tsv', 'tsv'), ('plain', 'tsv'))
    return TextRows(fmt, header, file, echo=same)


def _binary(file):
    """Rows are UTF-8 bytes: a text stream's own buffer takes them directly."""
    if not hasattr(file, 'encoding'):
        return file
    file.flush()
    buffer = getattr(file, 'buffer', None)
    return buffer if buffer is not None else _Decoding(file)


class _Decoding:
    def __init__(self, file):
        self.file = file

    def write(self, data):
        self.file.write(bytes(data).decode('utf-8', 'surrogateescape'))


class _Scan:
    def __init__(self):
        self.rows, self.keys, self.bad = 0, {}, None

    @property
    def header(self):
        return list(self.keys)


class Plan:
    """What every chunk goes through: the graph, the values the command line
    gives, and the columns out."""

    def __init__(self, graph, bindings, names, warn):
        self.graph, self.bindings, self.names = graph, bindings, names
        self.fills = input_values(graph, bindings, warn)
        self.outputs = ['value'] + [f'd_{n}' for n in names]
        self.warn = warn
        self.checked = False
        self.kept, self.room, self.keeping = {}, _KEPT_BYTES, False

    def keep(self, key, chunk, columns):
        """During the first pass, keep a chunk's parsed columns for the second,
        while they fit in _KEPT_BYTES: a million rows of a few columns are
        then parsed once. Only plain CSV chunks, whose bounds both passes
        cut alike."""
        if not self.keeping or key is None or chunk.maybe_blank or key != _key(chunk):
            return
        size = sum(getattr(c, 'nbytes', 0) for c in columns.values())
        if size <= self.room:
            self.room -= size
            self.kept[key] = columns

    def wanted(self, source):
        if source.kind == 'jsonl' and not source.header:
            return list(self.graph.inputs)  # not scanned: any row may have any key
        return [n for n in self.graph.inputs if n in source.header]

    def check(self, source):
        """The header against the program: a column for every variable without
        a value, none that the output adds, and a word on bindings it overrides."""
        if self.checked or (source.kind == 'jsonl' and not source.header):
            return
        self.checked = True
        header = source.header
        unbound = [n for n in self.graph.inputs if n not in header and n not in self.fills]
        if unbound:
            raise UsageError(f"no value for '{unbound[0]}': the points have no such column; "
                             f'give it as {unbound[0]}=VALUE')
        clash = set(self.outputs) & set(header)
        if clash:
            raise UsageError(f"the points already have a column '{sorted(clash)[0]}', "
                             'which the output would repeat')
        for name in self.bindings:
            if name in header and name in self.graph.inputs:
                self.warn(f"the points have a column '{name}': its cells win over {name}= "
                          'on the command line, which fills only its empty cells')

    def chunk_values(self, chunk, compute=True):
        """(value, {name: gradient}, bad) of one chunk; its rows checked."""
        source = chunk.source
        if chunk.objects is not None:
            clash = next((k for k in self.outputs if any(k in row for row in chunk.objects)), None)
            if clash is not None:
                i = next(i for i, row in enumerate(chunk.objects) if clash in row)
                raise chunk.error(i, f"the row already has a key '{clash}', "
                                     'which the output would repeat')
        key = _key(chunk)
        columns = self.kept.pop(key, None)
        if columns is not None:
            chunk.maybe_blank = False  # as columns() found it the first time
        else:
            columns = chunk.columns(self.wanted(source), self.fills)
            self.keep(key, chunk, columns)
        if not compute:
            return None
        return run_batch(self.graph, {**self.fills, **columns}, len(chunk), self.names)

    def scan(self, source, strict):
        """The first pass: read and check every row; compute too under --strict,
        where a non-finite row is an error that must stop the run before output."""
        scan = _Scan()
        self.keeping = True
        for chunk in source.chunks():
            if chunk.objects is not None:
                for row in chunk.objects:
                    scan.keys.update(dict.fromkeys(row))
            if source.kind != 'jsonl':
                self.check(source)
            result = self.chunk_values(chunk, compute=strict)
            if result is not None:
                scan.bad = merge_bad(scan.bad, result[2])
            scan.rows += len(chunk)
        self.keeping = False
        if source.kind == 'jsonl':
            source.header = scan.header
            self.check(source)
        if strict and scan.bad is not None:
            self.report(scan.bad, scan.rows, strict, self.warn)
        return scan

    def stream(self, source, writer, boundary, count, warn):
        """Every chunk computed and written; returns the first non-finite node
        and in how many rows (or None), and how many rows there were."""
        bad, done = None, 0
        with _progress(count, warn.stream) as advance, _Behind(writer) as writer:
            for chunk in source.chunks():
                if source.kind != 'jsonl':
                    self.check(source)
                value, gradient, chunk_bad = self.chunk_values(chunk)
                bad = merge_bad(bad, chunk_bad)
                writer.write(chunk, [value, *gradient.values()])
                done += len(chunk)
                advance(len(chunk))
                if boundary is not None:
                    boundary.check()
            self.check(source)
            writer.close()
        return bad, done

    def report(self, bad, count, strict, warn):
        """The first non-finite node and in how many rows (bad, or None), of `count` rows."""
        if bad is None:
            return
        node, rows_hit = bad
        past = node - len(self.graph.nodes)   # a gradient's, past the tape (see run_batch)
        if past >= 0:
            numerical(f'the gradient ∂f/∂{self.names[past]} is not finite in {rows_hit} of '
                      f'{count} rows', strict, warn)
        else:
            numerical(f'{where(self.graph, node)} is not finite in {rows_hit} of {count} rows, '
                      'the first node where that happens', strict, warn)


_KEPT_BYTES = 32 << 20


def _key(chunk):
    """A plain CSV chunk's place in its file: its first line, rows and bytes."""
    if chunk.block is None or not len(chunk):
        return None
    return chunk.numbers[0], len(chunk), len(chunk.block)


class _Behind:
    """A CSV or TSV writer in a thread of its own, one chunk behind: the next
    chunk is read, parsed and computed (pyarrow and NumPy let go of Python's
    lock while they work) while this one is formatted and written, so the
    second core has work. Chunks are written whole and in order; a write's
    error is raised by the next write() or by close(); leaving the block
    (Ctrl-C between chunks, a bad row) first waits for the chunk in hand, so
    the output still ends with a whole row. Other writers run as they are."""

    def __init__(self, writer):
        self.writer, self.thread, self.error, self.failed = writer, None, None, False
        self.stopping = False
        if getattr(writer, 'may_lag', False):
            import queue
            import threading
            self.queue = queue.Queue(maxsize=1)
            self.thread = threading.Thread(target=self._run, name='adgrad-writer', daemon=True)
            self.thread.start()

    def __enter__(self):
        return self

    def _run(self):
        while (item := self.queue.get()) is not None:
            if not self.failed:  # after an error, nothing more is written
                try:
                    self.writer.write(*item)
                except BaseException as error:  # raised again in the main thread
                    self.error, self.failed = error, True

    def write(self, chunk, computed):
        if self.thread is None:
            return self.writer.write(chunk, computed)
        self._raise()
        prepare = getattr(self.writer, 'prepare', None)   # its share that holds Python's lock
        self.queue.put((chunk, computed) if prepare is None else
                       (chunk, computed, prepare(chunk, computed)))

    def _wait(self):
        """The thread ended and joined, even through a Ctrl-C (raised after):
        left running, it could still be writing as the interpreter ends."""
        interrupted = False
        while self.thread is not None:
            try:
                if not self.stopping:
                    self.queue.put(None)
                    self.stopping = True
                self.thread.join()
                self.thread = None
            except KeyboardInterrupt:
                interrupted = True
        if interrupted:
            raise KeyboardInterrupt

    def _raise(self):
        if self.error is not None:
            error, self.error = self.error, None
            raise error

    def close(self):
        self._wait()
        self._raise()
        self.writer.close()

    def __exit__(self, error_type, *_):
        try:
            self._wait()
        except KeyboardInterrupt:
            error_type = KeyboardInterrupt
            raise
        finally:
            if error_type is not None and hasattr(self.writer, 'abandon'):
                self.writer.abandon()


def merge_bad(so_far, chunk_bad):
    """The first non-finite node over chunks: the lowest node id, with the rows
    where it is not finite summed over the chunks where it is the first."""
    if chunk_bad is None:
        return so_far
    if so_far is None or chunk_bad[0] < so_far[0]:
        return chunk_bad
    if chunk_bad[0] == so_far[0]:
        return (so_far[0], so_far[1] + chunk_bad[1])
    return so_far


# ---- input and output files ----

class _Input:
    """The points as a binary stream, from the start, as often as asked:
    a regular file is opened again; standard input, or a path that is no
    regular file (a pipe: `--points <(...)`), is sought back when it can
    be, else copied to a temporary file while the first pass reads it."""

    def __init__(self, points, stdin=None):
        self.path = None if points == '-' else points
        self.given = stdin
        self.name = '<stdin>' if points == '-' else points
        self.opened, self.spool, self.start, self.calls = [], None, None, 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for stream in reversed(self.opened):   # a source before the stream it reads
            stream.close()

    def closing(self, source):
        """`source`, to be closed on the way out, before its stream."""
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
        if self.start is not None:
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


class AtBoundaries:
    """Ctrl-C noted, then acted on where the caller looks (check()): between
    chunks, so that rows on stdout end with a whole row; between a cluster's
    waits (dask_batch), so that it never lands in a callback that only
    prints it, nor cuts the cleaning up short. The exit code is still 130.
    A SIGINT the shell ignores (nohup, a background job) stays ignored."""

    def __enter__(self):
        self.hit, self.installed = False, False
        try:
            if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
                self.old = signal.signal(signal.SIGINT, self._interrupted)
                self.installed = True
        except ValueError:  # not the main thread: no handler, Python's own behaviour
            pass
        return self

    def _interrupted(self, *_):
        self.hit = True

    def check(self):
        if self.hit:
            raise KeyboardInterrupt

    def __exit__(self, *exc):
        if self.installed:   # (None: a handler set outside Python, which cannot be put back)
            signal.signal(signal.SIGINT, signal.SIG_DFL if self.old is None else self.old)
        if exc[0] is None:
            self.check()


class _progress:
    """A rich progress bar on a terminal's stderr, once a batch has run a second."""

    def __init__(self, total, stream):
        self.total, self.stream, self.bar, self.done = total, stream, None, 0

    def __enter__(self):
        self.started = time.monotonic()
        return self.advance

    def advance(self, n):
        self.done += n
        if self.bar is None and self.stream.isatty() and time.monotonic() - self.started > 1:
            from rich.progress import Progress
            self.bar = Progress(console=_console(self.stream), transient=True)
            self.bar.start()
            self.task = self.bar.add_task('rows', total=self.total)
        if self.bar is not None:
            self.bar.update(self.task, completed=self.done)

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.stop()


def _console(stream):
    from rich.console import Console
    return Console(file=stream)

