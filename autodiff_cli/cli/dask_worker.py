"""Loaded by each worker of a local cluster that adgrad's command line starts
(Dask's worker preload, named by BatchOptions.worker_setup): Ctrl-C at the terminal signals the whole process group, and it is
adgrad's to act on (it closes the cluster), not each worker's to die of with
a traceback. Its allocator is tuned as the single process's is for a batch."""

import signal


def dask_setup(worker):
    from .batch import tune_allocator
    tune_allocator()
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:   # not the process's main thread: not ours to set
        pass
