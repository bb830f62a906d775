"""The typed options of a batch: what the pipeline takes from a command line."""

from dataclasses import dataclass

from .formats import Format


@dataclass(frozen=True)
class BatchOptions:
    """points: a file, '-' for standard input, or (dask) a glob or folder;
    format: the rows out (None: by -o's ending, else the points' own);
    output: -o FILE or DIR, or None for stdout; strict: a non-finite row is
    an error; reduce: None (a row out per row in), 'sum' or 'mean'; engine ('numpy' or 'dask') and scheduler: where the rows
    are computed; worker_setup: the module each worker of a local Dask
    cluster preloads, and whose on_worker() runs on a scheduler's workers
    (the command line's own, cli/dask_worker.py)."""

    points: str
    format: Format | None = None
    output: str | None = None
    strict: bool = False
    reduce: str | None = None
    engine: str = 'numpy'
    scheduler: str | None = None
    worker_setup: str | None = None
