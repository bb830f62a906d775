"""--engine dask: the same vectorised batch over each partition of a Dask
dataframe, on a local cluster or an existing one (--scheduler ADDRESS).

The graph travels to the workers as data: the program's text, lowered again
on each worker (once per process), with the bindings as numbers. No code
built from the user's input is ever pickled. Each partition writes its own
file, part-NNNNN.EXT, into a temporary folder beside -o DIR, which becomes
DIR only when every partition has succeeded.
"""

import glob
import os

from ..errors import UsageError
from .common import Exit

_PARQUET = ('.parquet', '.pq')
_TEXT = ('.csv', '.tsv')
_GRAPHS = {}  # program text -> Graph, per worker process


def run_dask(args, graph, bindings, names, warn):
    output = getattr(args, 'output', None)
    if output in (None, '-'):
        raise UsageError('--engine dask writes one file per partition: give -o DIR')
    files = input_files(args.points)
    kind = 'parquet' if files[0].endswith(_PARQUET) else \
        'tsv' if files[0].endswith('.tsv') else 'csv'
    fmt = str(args.format) if args.format_given else kind
    if fmt not in ('csv', 'tsv', 'jsonl', 'parquet'):
        raise UsageError(f'--engine dask writes csv, tsv, jsonl or parquet files, not {fmt}')
    try:
        import dask.dataframe as dd
        import pandas as pd
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise UsageError("--engine dask needs Dask: pip install 'adgrad[dask]'") from None
    header = _header(files[0], kind)
    from .batch import Plan
    plan = Plan(graph, bindings, names, warn)
    plan.check(_Header(kind, header))
    frame = (dd.read_parquet(files) if kind == 'parquet' else
             dd.read_csv(files, sep='\t' if kind == 'tsv' else ',', dtype=str, blocksize=None,
                         keep_default_na=False, na_filter=False, skip_blank_lines=True))
    folder = _Folder(output)
    meta = pd.DataFrame({'rows': pd.Series([], dtype='int64'),
                         'node': pd.Series([], dtype='int64'),
                         'bad': pd.Series([], dtype='int64')})
    with folder, _client(args, Client, LocalCluster):
        counts = frame.map_partitions(
            partition, graph.source, dict(bindings), list(names), kind, fmt, folder.temp,
            meta=meta, align_dataframes=False).compute()
        folder.commit()
    from .batch import merge_bad
    bad = None
    for node, rows in zip(counts['node'], counts['bad']):
        if node >= 0:
            bad = merge_bad(bad, (int(node), int(rows)))
    plan.report(None if bad is None else (*bad, int(counts['rows'].sum())), args.strict, warn)
    return Exit.OK


def input_files(pattern):
    """The files a glob or a folder names, in order: all CSV/TSV or all Parquet."""
    if os.path.isdir(pattern):
        found = sorted(os.path.join(pattern, n) for n in os.listdir(pattern)
                       if n.endswith(_PARQUET + _TEXT) and not n.startswith(('.', '_')))
    else:
        found = sorted(glob.glob(pattern))
    if not found:
        raise UsageError(f"--points '{pattern}' matches no file")
    kinds = {f.endswith(_PARQUET) for f in found}
    if len(kinds) > 1 or not all(f.endswith(_PARQUET + _TEXT) for f in found):
        raise UsageError(f"--points '{pattern}': every file must be .csv, .tsv or every one "
                         '.parquet')
    return found


def _header(path, kind):
    from .points import open_points
    if kind == 'parquet':
        return open_points(None, path, path).header
    with open(path, 'rb') as stream:
        return open_points(stream, path, path).header


class _Header:
    def __init__(self, kind, header):
        self.kind, self.header = kind, header


class _client:
    """A client of --scheduler ADDRESS, or of a local cluster on this machine's cores."""

    def __init__(self, args, client, local):
        self.args, self.make_client, self.make_local = args, client, local
        self.cluster = None

    def __enter__(self):
        address = getattr(self.args, 'scheduler', None)
        try:
            if address is None:
                self.cluster = self.make_local(n_workers=os.cpu_count() or 1, threads_per_worker=1,
                                               dashboard_address=None)
                address = self.cluster
            self.client = self.make_client(address, timeout='20s')
        except (OSError, TimeoutError) as error:
            self.close()
            raise UsageError(f'cannot reach the Dask scheduler at {address}: {error}') from None
        return self.client

    def close(self):
        if self.cluster is not None:
            self.cluster.close()

    def __exit__(self, *exc):
        if hasattr(self, 'client'):
            self.client.close()
        self.close()


class _Folder:
    """-o DIR, all or nothing: parts go to a temporary folder beside DIR."""

    def __init__(self, path):
        self.path = path.rstrip('/') or path
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
        os.chmod(self.temp, 0o777 & ~_umask())
        os.replace(self.temp, self.path)
        self.temp = None

    def __exit__(self, *exc):
        if self.temp is not None:
            import shutil
            shutil.rmtree(self.temp, ignore_errors=True)


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


# ---- on the workers ----

def _graph(text):
    graph = _GRAPHS.get(text)
    if graph is None:
        from ..language.lower import lower
        graph = _GRAPHS[text] = lower(text)
    return graph


def partition(frame, text, bindings, names, kind, fmt, folder, partition_info=None):
    """One partition: its rows through the batch, written to folder/part-NNNNN.EXT.
    Returns one row: how many rows, and the first non-finite node (or -1) and
    in how many rows."""
    import pandas as pd
    import pyarrow as pa

    from .batch import Plan, make_writer
    from .points import Chunk, Source

    number = partition_info['number'] if partition_info else 0
    graph = _graph(text)
    plan = Plan(graph, bindings, names, _quiet)
    source = Source(f'partition {number}', kind, [str(c) for c in frame.columns])
    source.unit = 'row'
    batch = pa.RecordBatch.from_pandas(frame, preserve_index=False)
    chunk = Chunk(source, range(1, len(frame) + 1), table=batch)
    result = plan.chunk_values(chunk) if len(frame) else None
    ending = {'plain': 'tsv'}.get(fmt, fmt)
    path = os.path.join(folder, f'part-{number:05d}.{ending}')
    with open(path, 'wb') as file:
        writer = make_writer(fmt, source, plan, file)
        if result is not None:
            value, gradient, _ = result
            writer.write(chunk, [value, *gradient.values()])
        writer.close()
    bad = result[2] if result is not None else None
    return pd.DataFrame({'rows': [len(frame)], 'node': [bad[0] if bad else -1],
                         'bad': [bad[1] if bad else 0]})


def _quiet(message):
    pass

