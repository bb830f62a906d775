"""A batch of points, streamed: chunks of rows from a source, each through a
command's computation (computations.py), then out through a writer, in order.

Nothing is written unless every row is good. With -o FILE the rows go to
a temporary file beside FILE, renamed over it only at the end. On stdout a
first pass reads and checks every row before anything is written; standard
input that cannot be read twice is copied to a temporary file on the way.
"""

import signal
import time

from ..errors import RowError, UsageError
from .computations import input_values, merge_bad
from .formats import Format, by_ending
from .input import Input
from .registry import WRITERS


def run(options, graph, bindings, computation, out, warn, stdin=None):
    """The rows of options.points through `computation`, written to -o or to `out`.
    A Ctrl-C is acted on between chunks (AtBoundaries): never inside a lazy
    import, which it would leave half done, nor inside a write."""
    output = options.output
    with Input(options.points, stdin) as source_input, AtBoundaries() as boundary:
        source = source_input.points()
        fmt = output_format(options, source.kind)
        kind = WRITERS[fmt]
        target = None
        if output not in (None, '-'):   # where it goes, and whether it can be, before any row is read
            from .files import Output
            target = Output(output, binary=kind.binary)
        plan = Plan(graph, bindings, computation, warn)
        needs_header = source.kind == Format.JSONL and not kind.own_keys
        count = None
        # Rows that go straight out (stdout, or -o a pipe or /dev/stdout) are
        # all checked first, so that a bad one stops the run before any is written.
        if target is None or target.in_place or needs_header:
            source, count = _scanned(plan, source, source_input, options.strict, boundary)
        plan.check(source)
        if target is None:
            sink = _binary(out) if kind.binary else out
            bad, done = plan.stream(source, kind.make(fmt, source, plan.outputs, sink),
                                    boundary, count, warn)
            out.flush()
            _report(plan, bad, done, options.strict, warn)
            return
        with target:
            bad, done = plan.stream(source, kind.make(fmt, source, plan.outputs, target.file),
                                    boundary, count, warn)
            if not target.file.closed:   # the rows before a warning, where both go to one place
                target.file.flush()
            _report(plan, bad, done, options.strict, warn)
            target.commit()


def _report(plan, bad, done, strict, warn):
    """What the rows written found; that there were none, where a points file
    is a header only (no error: the header is still written)."""
    if not done:
        warn('the points have no rows')
    plan.report(bad, done, strict, warn)


def run_totals(options, graph, bindings, computation, out, warn, stdin=None):
    """The sum (options.reduce 'sum') or mean ('mean') of each of the
    computation's columns over the rows of options.points, read once in
    bounded memory, then written as one row by write_totals."""
    from .totals import Totals
    with Input(options.points, stdin, again=False) as source_input, \
            AtBoundaries() as boundary:
        source = source_input.points()
        fmt = output_format(options, source.kind)
        target = totals_target(options, fmt)
        plan = Plan(graph, bindings, computation, warn, outputs=())
        plan.check(source)
        totals = Totals(len(computation.outputs))
        bad, _ = plan.stream(source, totals, boundary, None, warn)
    write_totals(options, plan, totals, bad, fmt, target, out)


def totals_target(options, fmt):
    """-o FILE's Output for a row of totals, checked before any row is read; None: stdout."""
    if options.output in (None, '-'):
        return None
    from .files import Output
    return Output(options.output, binary=WRITERS[fmt].binary)


def write_totals(options, plan, totals, bad, fmt, target, out):
    """The end of --sum and --mean (here and on Dask): the rows' report and
    the totals' check, either an error under --strict, then the one row
    (totals.write_row) to `target` or `out`. Nothing is written before."""
    from .totals import check_totals, write_row
    outputs = plan.computation.outputs
    plan.report(bad, totals.rows, options.strict, plan.warn)
    check_totals(totals, options.reduce, outputs, bad, options.strict, plan.warn)
    values = totals.result(options.reduce)
    if target is not None:
        with target:
            write_row(fmt, outputs, totals.rows, values, target.file)
            target.commit()
    else:
        write_row(fmt, outputs, totals.rows, values,
                  _binary(out) if WRITERS[fmt].binary else out)
        out.flush()


def each_chunk(options, graph, bindings, computation, warn, stdin=None):
    """Every chunk's (chunk, computed) of options.points, all rows read and
    checked before the first is given: for a command that gathers its own output."""
    with Input(options.points, stdin) as source_input:
        source = source_input.points()
        plan = Plan(graph, bindings, computation, warn)
        source, _ = _scanned(plan, source, source_input, strict=False)
        plan.check(source)
        for chunk in source.chunks():
            computed, _ = plan.chunk_values(chunk)
            yield chunk, computed


def _scanned(plan, source, source_input, strict, boundary=None):
    """The first pass over `source`, every row checked (and computed under
    --strict); returns the source opened again for the second, and the rows."""
    scan = plan.scan(source, strict, boundary)
    first, source = source, source_input.points()
    source.read_again(first)
    if source.kind == Format.JSONL:
        source.header = scan.header
    return source, scan.rows


def output_format(options, kind):
    """The format of the rows out: by -o's ending, else --format, else the points' own."""
    output = options.output
    ending = by_ending(output) if output not in (None, '-') else None
    if ending is Format.PARQUET:
        if options.format is not None:
            raise UsageError(f'{output} is written as Parquet, by its ending: drop --format')
        import importlib.util
        if importlib.util.find_spec('pyarrow') is None:   # refused before any row is read
            raise UsageError(f"{output}: writing Parquet needs pyarrow, adgrad's "
                             "parquet extra: pip install pyarrow")
        return Format.PARQUET
    if options.format is not None:
        return options.format
    return ending or (Format.CSV if kind == Format.PARQUET else kind)


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


def _first_key(objects, keys):
    """(row, key) of the first of `keys` that a row has, in row order, or None."""
    for i, row in enumerate(objects):
        for key in keys:
            if key in row:
                return i, key
    return None


class Plan:
    """What every chunk goes through: the graph, the values the command line
    gives, and the computation that adds the columns out (`outputs`, by
    default the computation's own; none where the rows are not written)."""

    def __init__(self, graph, bindings, computation, warn, outputs=None):
        self.graph, self.bindings, self.computation = graph, bindings, computation
        self.fills = input_values(graph, bindings, warn)
        self.outputs = computation.outputs if outputs is None else outputs
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
        fixed = getattr(self.computation, 'fixed', ())   # arrays, which no row gives
        if source.kind == Format.JSONL and not source.header:   # not scanned: any row, any key
            return [n for n in self.graph.inputs if n not in fixed]
        return [n for n in self.graph.inputs if n in source.header and n not in fixed]

    def check(self, source):
        """The header against the program: a column for every variable without
        a value, none that the output adds, and a word on bindings it overrides."""
        if self.checked or (source.kind == Format.JSONL and not source.header):
            return
        self.checked = True
        header = source.header
        unbound = [n for n in self.graph.inputs if n not in header and n not in self.fills]
        if unbound:
            columns = ', '.join(repr(c) for c in header[:8]) + (', ...' if len(header) > 8 else '')
            raise UsageError(f"no value for '{unbound[0]}': the points have no such column "
                             f'(theirs: {columns}); give it as {unbound[0]}=VALUE')
        clash = set(self.outputs) & set(header)
        if clash:
            raise UsageError(f"the points already have a column '{sorted(clash)[0]}', "
                             'which the output would repeat')
        for name in getattr(self.computation, 'fixed', ()):   # arrays no column may give
            if name in header:
                raise UsageError(f"the points have a column '{name}', but {name} is an array: "
                                 'it stays fixed while rows vary, so it is bound on the '
                                 f'command line ({name}=@FILE)')
        for name in self.bindings:
            if name in header and name in self.graph.inputs:
                self.warn(f"the points have a column '{name}': its cells win over {name}= "
                          'on the command line, which fills only its empty cells')

    def chunk_values(self, chunk, compute=True):
        """(computed, bad) of one chunk, as the computation gives them; its rows checked."""
        source = chunk.source
        if chunk.objects is not None:
            clash = _first_key(chunk.objects, self.outputs)
            if clash is not None:
                raise chunk.error(clash[0], f"the row already has a key '{clash[1]}', "
                                            'which the output would repeat')
            array = _first_key(chunk.objects, getattr(self.computation, 'fixed', ()))
            if array is not None:
                raise chunk.error(array[0], f"the row has a key '{array[1]}', but {array[1]} "
                                            'is an array: it stays fixed while rows vary')
        key = _key(chunk)
        columns = self.kept.pop(key, None)
        if columns is not None:
            chunk.maybe_blank = False  # as columns() found it the first time
        else:
            columns = chunk.columns(self.wanted(source), self.fills)
            self.keep(key, chunk, columns)
        if not compute:
            return None
        try:
            return self.computation({**self.fills, **columns}, len(chunk))
        except RowError as error:
            raise type(error.cause)(chunk.error(error.row, error.message).message) from None

    def scan(self, source, strict, boundary=None):
        """The first pass: read and check every row; compute too under --strict,
        where a non-finite row is an error that must stop the run before output."""
        scan = _Scan()
        self.keeping = True
        for chunk in source.chunks():
            if boundary is not None:
                boundary.check()
            if chunk.objects is not None:
                for row in chunk.objects:
                    scan.keys.update(dict.fromkeys(row))
            if source.kind != Format.JSONL:
                self.check(source)
            result = self.chunk_values(chunk, compute=strict)
            if result is not None:
                scan.bad = merge_bad(scan.bad, result[1])
            scan.rows += len(chunk)
        self.keeping = False
        if source.kind == Format.JSONL:
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
                if source.kind != Format.JSONL:
                    self.check(source)
                computed, chunk_bad = self.chunk_values(chunk)
                bad = merge_bad(bad, chunk_bad)
                writer.write(chunk, computed)
                done += len(chunk)
                advance(len(chunk))
                if boundary is not None:
                    boundary.check()
            self.check(source)
            writer.close()
        return bad, done

    def report(self, bad, count, strict, warn):
        """What the computation found over `count` rows: the first non-finite node, say."""
        self.computation.report(bad, count, strict, warn)


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


class AtBoundaries:
    """Ctrl-C noted, then acted on where the caller looks (check()): between
    chunks, so that rows on stdout end with a whole row and a lazy import
    (pyarrow's) is never cut short; between a cluster's waits (dask_batch),
    so that it never lands in a callback that only prints it, nor cuts the
    cleaning up short. A second Ctrl-C before the first is acted on stops
    at once: a read of a terminal would otherwise wait for its input. The
    exit code is still 130. A SIGINT the shell ignores (nohup, a background
    job) stays ignored."""

    def __enter__(self):
        self.hit, self.stopping, self.installed = False, False, False
        try:
            if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
                self.old = signal.signal(signal.SIGINT, self._interrupted)
                self.installed = True
        except ValueError:  # not the main thread: no handler, Python's own behaviour
            pass
        return self

    def _interrupted(self, *_):
        if self.hit and not self.stopping:
            self.stopping = True   # the way out is not cut short by a third
            raise KeyboardInterrupt
        self.hit = True

    def check(self):
        if self.hit:
            self.stopping = True
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

