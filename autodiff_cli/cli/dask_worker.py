"""What adgrad's command line sets up in Dask's workers (the module that
BatchOptions.worker_setup names). A worker of a local cluster it starts loads
it as a preload: Ctrl-C at the terminal signals the whole process group, and
it is adgrad's to act on (it closes the cluster), not each worker's to die of
with a traceback. Every worker, a user's own cluster's too, gets its
allocator tuned as the single process's is for a batch (on_worker)."""

import signal


def dask_setup(worker):
    on_worker()
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:   # not the process's main thread: not ours to set
        pass


def on_worker():
    """Run on each worker through Client.run: the allocator only, since a
    user's worker's signals are its owner's."""
    from .batch import tune_allocator
    tune_allocator()
