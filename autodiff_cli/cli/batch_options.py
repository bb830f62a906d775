"""The batch options of eval and grad, apart from batch.py so that building
the parser on every run imports nothing else."""

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
