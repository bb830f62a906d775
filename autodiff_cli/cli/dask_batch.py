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

from ..errors import UsageError
from .common import Exit

_PARQUET = ('.parquet', '.pq')
_TEXT = ('.csv', '.tsv')
_GRAPHS = {}  # program text -> Graph, per worker process


def run_dask(args, graph, bindings, names, warn):
    output = getattr(args, 'output', None)
    if output in (None, '-'):
        raise UsageError('--engine dask writes one file per points file: give -o DIR')
    files = input_files(args.points)
    kind = 'parquet' if files[0].endswith(_PARQUET) else \
        'tsv' if files[0].endswith('.tsv') else 'csv'
    fmt = str(args.format) if args.format_given else kind
    if fmt not in ('csv', 'tsv', 'jsonl', 'parquet'):
        raise UsageError(f'--engine dask writes csv, tsv, jsonl or parquet files, not {fmt}')
    try:
        from dask.distributed import Client, LocalCluster, wait
    except ImportError:
        raise UsageError("--engine dask needs Dask: pip install 'adgrad[dask]'") from None
    from .batch import Plan, merge_bad
    plan = Plan(graph, bindings, names, warn)
    # The first file's header here, so that the usual mistakes (a column
    # missing, one the output would repeat) are said before a cluster starts.
    with _opened(files[0]) as source:
        _checked(plan, source)
    folder = _Folder(output)
    with folder, _client(args, Client, LocalCluster) as client:
        futures = client.map(part, files, range(len(files)), text=graph.source,
                             bindings=dict(bindings), names=list(names), fmt=fmt,
                             folder=folder.temp, pure=False)
        wait(futures)
        # Every file tried, the first bad one in order is the one reported:
        # the same message whichever worker finished first.
        failed = next((f for f in futures if f.status == 'error'), None)
        if failed is not None:
            raise failed.exception()
        bad, count = None, 0
        for found, rows in client.gather(futures):   # in file order
            bad, count = merge_bad(bad, found), count + rows
        # under --strict a non-finite row is an error: DIR is then not written
        plan.report(None if bad is None else (*bad, count), args.strict, warn)
        folder.commit()
    return Exit.OK


def input_files(pattern):
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
        raise UsageError(f"--points '{pattern}' matches no .csv, .tsv or .parquet file "
                         '(--engine dask reads no JSON Lines)'
                         if glob.glob(os.path.join(pattern, '*')) or glob.glob(pattern) else
                         f"--points '{pattern}' matches no file")
    kinds = {f.endswith(_PARQUET) for f in found}
    if len(kinds) > 1 or not all(f.endswith(_PARQUET + _TEXT) for f in found):
        raise UsageError(f"--points '{pattern}': every file must be .csv, .tsv or every one "
                         '.parquet')
    return found


class _client:
    """A client of --scheduler ADDRESS, or of a local cluster on this machine's cores."""

    def __init__(self, args, client, local):
        self.args, self.make_client, self.make_local = args, client, local
        self.cluster = self.scratch = self.config = None

    def __enter__(self):
        address = getattr(self.args, 'scheduler', None)
        try:
            if address is None:
                # Its workers' own logs (a task's traceback) stay out of the
                # user's stderr: the error reaches the client and is said once.
                # Its HTTP server (always started) on a free port of loopback:
                # the default, 8787, warns when another cluster holds it.
                # Its workers' scratch space is a temporary folder of its own,
                # removed afterwards (by default it stays in $TMPDIR).
                import tempfile

                import dask
                self.scratch = tempfile.mkdtemp(prefix='adgrad-dask-')
                self.config = dask.config.set({'temporary-directory': self.scratch})
                self.cluster = self.make_local(n_workers=os.cpu_count() or 1, threads_per_worker=1,
                                               dashboard_address='127.0.0.1:0',
                                               silence_logs=logging.CRITICAL)
                address = self.cluster
            self.client = self.make_client(address, timeout='20s')
        except (OSError, TimeoutError) as error:
            self.close()
            raise UsageError(f'cannot reach the Dask scheduler at {address}: {error}') from None
        return self.client

    def close(self):
        if self.cluster is not None:
            self.cluster.close()
        if self.config is not None:   # dask's setting as it was, for a caller in this process
            self.config.__exit__(None, None, None)
        if self.scratch is not None:
            import shutil
            shutil.rmtree(self.scratch, ignore_errors=True)

    def __exit__(self, *exc):
        if hasattr(self, 'client'):
            self.client.close()
        self.close()


class _Folder:
    """-o DIR, all or nothing: parts go to a temporary folder beside DIR."""

    def __init__(self, path):
        self.path = path.rstrip('/') or path
        if os.path.islink(self.path):   # the folder it links to is what gets the parts
            self.path = os.path.realpath(self.path)
        if os.path.exists(self.path) and (not os.path.isdir(self.path) or os.listdir(self.path)):
            raise UsageError(f'-o {path}: with --engine dask, the output is a folder that '
                             'must not exist yet, or be empty')

    def __enter__(self):
        import tempfile
        parent, base = os.path.split(os.path.abspath(self.path))
        try:
            self.temp = tempfile.mkdtemp(prefix=f'.{base}.', suffix='.tmp', dir=parent)
        except OSError as error:
            raise UsageError(f'cannot write {self.path}: {error.strerror}') from None
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


def part(path, number, text, bindings, names, fmt, folder):
    """One file, as the single process reads it (the same reader, the same
    checks, the same messages naming the file and line), streamed through
    the batch into folder/part-NNNNN.EXT. Returns what Plan.stream returns:
    the first non-finite node and in how many rows (or None), and the rows."""
    from .batch import Plan, make_writer

    plan = Plan(_graph(text), bindings, names, _QUIET)
    ending = {'plain': 'tsv'}.get(fmt, fmt)
    target = os.path.join(folder, f'part-{number:05d}.{ending}')
    with _opened(path) as source:
        _checked(plan, source)
        try:
            file = open(target, 'wb')
        except OSError as error:
            raise UsageError(f'cannot write {target}: {error.strerror}') from None
        with file:
            return plan.stream(source, make_writer(fmt, source, plan, file), None, None, _QUIET)


class _opened:
    """A points file as a Source, its stream closed at the end."""

    def __init__(self, path):
        self.path, self.stream = path, None

    def __enter__(self):
        from .points import open_points
        if self.path.endswith(_PARQUET):
            return open_points(None, self.path, self.path)
        try:
            self.stream = open(self.path, 'rb')
        except OSError as error:
            raise UsageError(f'cannot read {self.path}: {error.strerror}') from None
        return open_points(self.stream, self.path, self.path)

    def __exit__(self, *exc):
        if self.stream is not None:
            self.stream.close()


def _checked(plan, source):
    """plan.check(source), its message naming the file."""
    try:
        plan.check(source)
    except UsageError as error:
        raise UsageError(f'{source.name}: {error}') from None


class _Quiet:
    """A warner that says nothing: the client reports what the parts found."""
    stream = io.StringIO()

    def __call__(self, message):
        pass


_QUIET = _Quiet()
