"""The batch options of eval and grad, and the step from them to the rows
pipeline (table/). Building the parser on every run imports nothing else."""

ENGINES = ('numpy', 'dask')


def add_options(parser):
    """-o, --sum, --mean, --engine and --scheduler (evaluate.add_arguments calls this)."""
    reduce = parser.add_mutually_exclusive_group()
    reduce.add_argument('--sum', dest='reduce', action='store_const', const='sum',
                        help='with --points: one row, the sum over every row of the value '
                             'and of each gradient, and the number of rows; read once, in '
                             'bounded memory')
    reduce.add_argument('--mean', dest='reduce', action='store_const', const='mean',
                        help='with --points: as --sum, divided by the number of rows')
    parser.add_argument('-o', '--output', metavar='FILE',
                        help="with --points: write the rows to FILE (its ending, .csv .tsv "
                             ".jsonl .json .parquet, gives the format), all or nothing")
    parser.add_argument('--engine', choices=ENGINES, default='numpy',
                        help='with --points: numpy (this process, streamed) or dask (each '
                             "file a task on a Dask cluster; adgrad's dask extra)")
    parser.add_argument('--scheduler', metavar='ADDRESS',
                        help='with --engine dask: the address of a running Dask scheduler '
                             '(default: a local cluster on this machine)')


_TUNED = []


def tune_allocator():
    """Ask glibc to keep freed blocks for reuse (a batch's command line only,
    never the library: it is process-wide). By default an array of 128 KiB
    or more is a mapping of its own, unmapped when freed, so the next block's
    arrays fault in fresh pages; with the thresholds raised they reuse the
    memory the last block freed. Only glibc has mallopt."""
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


def options(args, format_given=True):
    """The typed options of a command line with --points; its process's
    allocator is tuned for the batch on the way (tune_allocator)."""
    tune_allocator()
    from ..table.options import BatchOptions
    return BatchOptions(points=args.points, format=args.format if format_given else None,
                        output=getattr(args, 'output', None),
                        strict=getattr(args, 'strict', False),
                        reduce=getattr(args, 'reduce', None),
                        engine=getattr(args, 'engine', 'numpy'),
                        scheduler=getattr(args, 'scheduler', None),
                        worker_setup='autodiff_cli.cli.dask_worker')


def run_points(args, graph, bindings, names, env):
    """eval and grad with --points: the value and gradient at every row."""
    from ..errors import UsageError
    from ..table.computations import values_for
    if args.points is None:
        raise UsageError('-o/--output and --engine go with --points')
    if args.nodes:
        raise UsageError('--nodes shows one point; it does not go with --points')
    batch = options(args, args.format_given)
    from .common import memory_wanted
    from .memory import policy_of
    checkpoint = policy_of(args) if memory_wanted(args) else None
    if checkpoint is not None and (args.memory or checkpoint.kind == 'auto'):
        if args.memory:
            raise UsageError('--memory reports one point: leave out --points')
        asked = '--memory-limit' if args.memory_limit else '--checkpoint auto'
        raise UsageError(f'{asked} measures the process at one point: leave out --points, or '
                         'give --checkpoint sqrt or every:K')
    if batch.engine == 'dask':
        if checkpoint is not None:
            raise UsageError('--checkpoint goes with --engine numpy')
        from ..table.dask_engine import run_dask
        return run_dask(batch, graph, bindings, names, env.warn, env.stdout)
    if batch.scheduler:
        raise UsageError('--scheduler goes with --engine dask')
    from ..table import pipeline
    run = pipeline.run_totals if batch.reduce else pipeline.run
    run(batch, graph, bindings, values_for(graph, bindings, names, checkpoint), env.stdout,
        env.warn, env.stdin)
