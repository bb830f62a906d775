"""The batch options of eval and grad, and the allocator tuning of a batch's
command line: apart from batch.py so that building the parser on every run
imports nothing else."""

ENGINES = ('numpy', 'dask')


def add_options(parser):
    """-o, --engine and --scheduler (evaluate.add_arguments calls this)."""
    parser.add_argument('-o', '--output', metavar='FILE',
                        help="with --points: write the rows to FILE (its ending, .csv .tsv "
                             ".jsonl .json .parquet, gives the format), all or nothing")
    parser.add_argument('--engine', choices=ENGINES, default='numpy',
                        help='with --points: numpy (this process, streamed) or dask (each '
                             "file a task on a Dask cluster; pip install 'adgrad[dask]')")
    parser.add_argument('--scheduler', metavar='ADDRESS',
                        help='with --engine dask: the address of a running Dask scheduler '
                             '(default: a local cluster on this machine)')


_TUNED = []


def tune_allocator():
    """Ask glibc to keep freed blocks for reuse (a batch's command line only,
    never the library: it is process-wide). By default an array of 128 KiB
    or more is a mapping of its own, unmapped when freed, so the next block's
    arrays fault in fresh pages; with the thresholds raised they reuse the
    memory the last block freed. Only glibc has mallopt; elsewhere nothing
    changes."""
    if _TUNED:
        return
    _TUNED.append(True)
    import os
    try:
        if not (os.confstr('CS_GNU_LIBC_VERSION') or '').startswith('glibc'):
            return
        import ctypes
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError, ValueError):
        return
    mallopt(-3, 1 << 25)  # M_MMAP_THRESHOLD: a block under it comes from the heap
    mallopt(-1, 1 << 27)  # M_TRIM_THRESHOLD: freed heap kept up to it, not returned
