"""--engine dask: the batch over many files, one task per file, on a local
cluster or an existing one (--scheduler ADDRESS).

Each task reads its file as the single process reads one (the same reader,
streamed in bounded chunks, with the same checks and the same messages
naming the file and line), so a part is byte for byte what `--points FILE`
writes for that file. The graph travels to the workers as data: the
program's text, lowered again on each worker (once per process), with the
bindings as numbers. No code built from the user's input is ever pickled.
Each task writes its own file, part-NNNNN.EXT, into a temporary folder
beside -o DIR, which becomes DIR only when every file has succeeded.
"""

import glob
import io
import logging
import os
import signal

from ..errors import AdgradError, UsageError, first_line
from .computations import merge_bad, values_for
from .formats import Format
from .pipeline import AtBoundaries, Plan
from .registry import WRITERS
from .sources import open_points

_PARQUET = ('.parquet', '.pq')
_TEXT = ('.csv', '.tsv')
_JSON_LINES = ('.jsonl', '.ndjson', '.json')
_GRAPHS = {}  # program text -> Graph, per worker process


def run_dask(options, graph, bindings, names, warn, out=None):
    """options.points (files) through values_for(), each file a task:
    a part each in -o DIR, or with options.reduce their sum or mean, one row
    to -o FILE or `out` (each task sums its file; the client adds the sums)."""
    output = options.output
    if output in (None, '-') and not options.reduce:
        raise UsageError('--engine dask writes one file per points file: give -o DIR')
    files = input_files(options.points, warn)
    kind = Format.PARQUET if files[0].endswith(_PARQUET) else \
        Format.TSV if files[0].endswith('.tsv') else Format.CSV
    if options.reduce:
        from .pipeline import output_format
        fmt = output_format(options, kind)
    else:
        fmt = options.format or kind
        if not WRITERS[fmt].in_parts:
            raise UsageError(f'--engine dask writes csv, tsv, jsonl or parquet files, not {fmt}')
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise UsageError("--engine dask needs Dask, adgrad's dask extra: "
                         "pip install 'dask[distributed]' pyarrow") from None
    computation = values_for(graph, bindings, names)
    plan = Plan(graph, bindings, computation, warn, outputs=() if options.reduce else None)
    # The first file's header here, so that the usual mistakes (a column
    # missing, one the output would repeat) are said before a cluster starts.
    # The workers may run elsewhere, in another folder: they get each file's
    # whole path, and messages the name as the user wrote it.
    where = [os.path.join(os.getcwd(), name) for name in files]
    with _opened(where[0], files[0]) as source:
        _checked(plan, source)
    if options.reduce:
        return _reduced(options, plan, fmt, files, where, out, Client, LocalCluster)
    folder = _Folder(output)
    # Ctrl-C from here on is noted and acted on between waits, and cleaning
    # up after it runs to the end: a second Ctrl-C cannot cut it short.
    with AtBoundaries() as boundary, folder, _client(options, Client, LocalCluster) as client:
        futures = client.map(part, where, files, range(len(files)), text=graph.source,
                             bindings=dict(bindings), names=list(names), fmt=str(fmt),
                             folder=folder.temp, pure=False)
        bad, count = None, 0
        for found, rows in _waited(client, futures, files, boundary):   # in file order
            bad, count = merge_bad(bad, found), count + rows
        # under --strict a non-finite row is an error: DIR is then not written
        plan.report(bad, count, options.strict, warn)
        folder.commit()


def _reduced(options, plan, fmt, files, where, out, client_class, local_class):
    """--sum or --mean over the files: each task's Totals.partial() merged
    here, in file order, then checked and written as the single process does."""
    from .pipeline import totals_target, write_totals
    from .totals import Totals
    target = totals_target(options, fmt)   # whether it can be written, before a cluster starts
    totals, bad = Totals(len(plan.computation.outputs)), None
    with AtBoundaries() as boundary, _client(options, client_class, local_class) as client:
        futures = client.map(part_totals, where, files, text=plan.graph.source,
                             bindings=dict(plan.bindings), names=list(plan.computation.names),
                             pure=False)
        for found, partial in _waited(client, futures, files, boundary):
            bad = merge_bad(bad, found)
            totals.merge(partial)
    write_totals(options, plan, totals, bad, fmt, target, out)


def _waited(client, futures, files, boundary):
    """The futures' results, in file order, once every one has finished; Ctrl-C
    (boundary) acted on between waits; the first file in order that failed
    raised, whichever worker finished first."""
    import asyncio

    from dask.distributed import wait
    while not boundary.hit:
        try:
            wait(futures, timeout=0.25)
            break
        except (TimeoutError, asyncio.TimeoutError):   # (one class from 3.11 on)
            continue
        except Exception as error:   # nothing of adgrad's runs here: the cluster's
            raise UsageError(f'the Dask cluster failed: {first_line(error)}') from None
    boundary.check()   # nothing is written
    for name, future in zip(files, futures):
        if future.status != 'finished':
            raise _failure(name, future)
    return client.gather(futures)


def _failure(name, future):
    """The error of a file whose task did not finish: adgrad's own as it was
    raised (it names the file and line); else one line naming the file. A
    worker that died, memory that ran out, a cluster lost on the way or a
    file that cannot be written are the cluster's trouble, not a bug of
    adgrad's; any other exception is one (exit 70)."""
    if future.status != 'error':   # cancelled: the scheduler or its workers went away
        return UsageError(f'{name}: the Dask cluster lost this file\'s task ({future.status})')
    error = future.exception()
    if isinstance(error, AdgradError):
        return error
    if isinstance(error, OSError):
        return UsageError(f'{name}: {(error.strerror or str(error)).lower()}')
    if isinstance(error, MemoryError):
        return UsageError(f'{name}: a Dask worker ran out of memory')
    if type(error).__name__ == 'KilledWorker':
        return UsageError(f'{name}: the Dask workers that ran it died (out of memory?), '
                          'as many times as the cluster retries a task')
    return error


def input_files(pattern, warn):
    """The files a glob or a folder names, in order: all CSV/TSV or all Parquet."""
    if pattern == '-':
        raise UsageError('--engine dask reads files, a glob or a folder of them, not standard '
                         'input')
    if os.path.isdir(pattern):
        found = sorted(os.path.join(pattern, n) for n in os.listdir(pattern)
                       if n.endswith(_PARQUET + _TEXT) and not n.startswith(('.', '_')))
    else:
        found = sorted(glob.glob(pattern))
    if not found:
        others = glob.glob(os.path.join(pattern, '*')) if os.path.isdir(pattern) else []
        hint = ' (--engine dask reads no JSON Lines)' if any(
            n.endswith(_JSON_LINES) for n in others) else ''
        raise UsageError(f"--points '{pattern}' matches no .csv, .tsv or .parquet file{hint}"
                         if others else f"--points '{pattern}' matches no file")
    kinds = {f.endswith(_PARQUET) for f in found}
    if len(kinds) > 1 or not all(f.endswith(_PARQUET + _TEXT) for f in found):
        odd = next((f for f in found if not f.endswith(_PARQUET + _TEXT)), None)
        raise UsageError(f"--points '{pattern}': --engine dask reads .csv and .tsv files, or "
                         '.parquet files, not both' if odd is None else
                         f"--points '{pattern}': --engine dask reads .csv, .tsv or .parquet "
                         f'files, not {odd}')
    if os.path.isdir(pattern):
        skipped = [n for n in os.listdir(pattern)
                   if n.endswith(_JSON_LINES) and not n.startswith(('.', '_'))]
        if skipped:
            warn(f"--points '{pattern}': {len(skipped)} JSON Lines "
                 f"file{'s' if len(skipped) > 1 else ''} left out (--engine dask reads CSV, "
                 'TSV and Parquet)')
    return found


class _client:
    """A client of --scheduler ADDRESS, or of a local cluster on this machine's cores."""

    def __init__(self, options, client, local):
        self.options, self.make_client, self.make_local = options, client, local
        self.cluster = self.scratch = self.config = None

    def __enter__(self):
        address = self.options.scheduler
        # The client's own log (a lost connection, a task's traceback) stays
        # out of stderr too: what went wrong is said once, as adgrad's error.
        # (Every logger of the process, restored after: distributed's own
        # loggers each have a level of their own.)
        self.disabled = logging.root.manager.disable
        logging.disable(logging.CRITICAL)
        try:
            if address is None:
                # Its workers' own logs stay out of the user's stderr. Its
                # HTTP server (always started) takes a free port of loopback:
                # the default, 8787, warns when another cluster holds it. Its
                # scratch space is a temporary folder of its own, removed
                # afterwards (by default it stays in $TMPDIR).
                import tempfile

                import dask
                self.scratch = tempfile.mkdtemp(prefix='adgrad-dask-')
                # Its workers run the caller's setup (the command line's leaves Ctrl-C to it).
                self.config = dask.config.set({'temporary-directory': self.scratch,
                                               **worker_preload(dask.config.get,
                                                                self.options.worker_setup)})
                try:
                    with _interrupts_held():
                        self.cluster = self.make_local(n_workers=os.cpu_count() or 1,
                                                       threads_per_worker=1,
                                                       dashboard_address='127.0.0.1:0',
                                                       silence_logs=logging.CRITICAL)
                except (OSError, RuntimeError, TimeoutError) as error:
                    raise UsageError('cannot start a local Dask cluster: '
                                     f'{first_line(error)}') from None
                address = self.cluster
            try:
                self.client = self.make_client(address, timeout='20s')
            except (OSError, TimeoutError, ValueError) as error:
                raise UsageError(f'cannot reach the Dask scheduler at {address}: '
                                 f'{first_line(error)}') from None
            if self.cluster is None and self.options.worker_setup is not None:
                import importlib      # a user's cluster: its workers have no preload of ours
                self.client.run(importlib.import_module(self.options.worker_setup).on_worker)
        except BaseException:   # Ctrl-C too: nothing is left behind
            self.close()
            raise
        return self.client

    def close(self):
        """Each step whatever happened in the one before."""
        try:
            if self.cluster is not None:
                self.cluster.close()
        finally:
            if self.config is not None:   # dask's settings as they were, for a caller here
                self.config.__exit__(None, None, None)
            if self.scratch is not None:
                import shutil
                shutil.rmtree(self.scratch, ignore_errors=True)
            logging.disable(self.disabled)

    def __exit__(self, *exc):
        try:
            if hasattr(self, 'client'):
                self.client.close()
        finally:
            self.close()


class _interrupts_held:
    """SIGINT held back (blocked, not lost) while a local cluster starts:
    delivered when the start is over, and acted on at the first boundary
    (pipeline.AtBoundaries)."""

    # Ctrl-C at a terminal signals the whole process group: a worker still
    # importing Dask, before its preload can ignore it, would die printing a
    # traceback ('Nanny failed to start'). A blocked signal stays blocked
    # across fork and exec, and so do the threads the cluster starts from
    # this one: the workers begin with SIGINT held; their preload drops it.

    def __enter__(self):
        self.mask = None
        if hasattr(signal, 'pthread_sigmask'):   # (not on Windows)
            # multiprocessing's resource tracker, started on first need, ends
            # its own start by unblocking SIGINT in the thread that started
            # it (the cluster's event loop): started here first, it is not.
            from multiprocessing import resource_tracker
            resource_tracker.ensure_running()
            self.mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        return self

    def __exit__(self, *exc):
        if self.mask is not None:   # as it was: a caller's own block stays
            signal.pthread_sigmask(signal.SIG_SETMASK, self.mask)


def worker_preload(get, module):
    """Dask settings that add `module` to the workers' preloads, after any
    the user's own configuration names (with an empty argument list of its
    own where the user's give one list per preload); none for no module."""
    if module is None:
        return {}
    preload = get('distributed.worker.preload', None) or []
    preload = [preload] if isinstance(preload, str) else list(preload)
    argv = list(get('distributed.worker.preload-argv', None) or [])
    settings = {'distributed.worker.preload': [*preload, module]}
    if argv and all(isinstance(a, (list, tuple)) for a in argv):
        settings['distributed.worker.preload-argv'] = [*argv, []]
    return settings


class _Folder:
    """-o DIR, all or nothing: parts go to a temporary folder beside DIR."""

    def __init__(self, path):
        self.path = path.rstrip('/') or path
        if os.path.islink(self.path):   # the folder it links to is what gets the parts
            self.path = os.path.realpath(self.path)
        if os.path.exists(self.path) and not os.path.isdir(self.path):
            raise UsageError(f'-o {path}: with --engine dask, the output is a folder, and this '
                             'is a file')
        if os.path.isdir(self.path) and os.listdir(self.path):
            raise UsageError(f'-o {path}: with --engine dask, the output is a folder that '
                             'must not exist yet, or be empty')

    def __enter__(self):
        import tempfile
        parent, base = os.path.split(os.path.abspath(self.path))
        try:
            self.temp = tempfile.mkdtemp(prefix=f'.{base}.', suffix='.tmp', dir=parent)
        except OSError as error:
            raise UsageError(f'cannot write {self.path}: {error.strerror.lower()}') from None
        return self

    def commit(self):
        if os.path.isdir(self.path):
            os.rmdir(self.path)  # empty, as checked
        from .files import umask
        os.chmod(self.temp, 0o777 & ~umask(os.path.dirname(self.temp)))
        os.replace(self.temp, self.path)
        self.temp = None

    def __exit__(self, *exc):
        if self.temp is not None:
            import shutil
            shutil.rmtree(self.temp, ignore_errors=True)


# ---- on the workers ----

def _graph(text):
    graph = _GRAPHS.get(text)
    if graph is None:
        from ..language.lower import lower
        graph = _GRAPHS[text] = lower(text)
    return graph


def part(path, name, number, text, bindings, names, fmt, folder):
    """One file, as the single process reads it (the same reader, the same
    checks, the same messages naming the file and line), streamed through
    the batch into folder/part-NNNNN.EXT. Returns what Plan.stream returns:
    the first non-finite node and in how many rows (or None), and the rows."""
    graph, fmt = _graph(text), Format(fmt)
    plan = Plan(graph, bindings, values_for(graph, bindings, names), _QUIET)
    target = os.path.join(folder, f'part-{number:05d}.{fmt}')
    with _opened(path, name) as source:
        _checked(plan, source)
        try:
            file = open(target, 'wb')
        except OSError as error:
            raise UsageError(f'cannot write {target}: {error.strerror.lower()}') from None
        with file:
            writer = WRITERS[fmt].make(fmt, source, plan.outputs, file)
            return plan.stream(source, writer, None, None, _QUIET)


def part_totals(path, name, text, bindings, names):
    """One file summed as the single process sums one (totals.Totals, the
    same reader, checks and messages): (the first non-finite node and in how
    many rows, or None; Totals.partial(), the rows and each column's sum)."""
    from .totals import Totals
    graph = _graph(text)
    plan = Plan(graph, bindings, values_for(graph, bindings, names), _QUIET, outputs=())
    with _opened(path, name) as source:
        _checked(plan, source)
        totals = Totals(len(plan.computation.outputs))
        bad, _ = plan.stream(source, totals, None, None, _QUIET)
    return bad, totals.partial()


class _opened:
    """The points file at `path` as a Source named `name`, closed at the end."""

    def __init__(self, path, name):
        self.path, self.name, self.stream, self.source = path, name, None, None

    def __enter__(self):
        if self.path.endswith(_PARQUET):
            self.source = open_points(None, self.name, self.path)
            return self.source
        try:
            self.stream = open(self.path, 'rb')
        except OSError as error:
            # (as --points FILE says it)
            raise UsageError(f'cannot read {self.name}: {error.strerror}') from None
        self.source = open_points(self.stream, self.name, self.path)
        return self.source

    def __exit__(self, *exc):
        try:
            if self.source is not None:
                self.source.close()
        finally:
            if self.stream is not None:
                self.stream.close()


def _checked(plan, source):
    """plan.check(source), its message naming the file."""
    try:
        plan.check(source)
    except UsageError as error:
        raise UsageError(f'{source.name}: {error}') from None


class _Quiet:
    """A warner that says nothing: the client reports what the parts found.
    Its stream is what Plan.stream asks whether it is a terminal (no)."""
    stream = io.StringIO()

    def __call__(self, message):
        pass


_QUIET = _Quiet()
