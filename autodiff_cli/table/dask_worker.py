"""Loaded by each worker of a local cluster that adgrad starts (Dask's worker
preload): Ctrl-C at the terminal signals the whole process group, and it is
adgrad's to act on (it closes the cluster), not each worker's to die of with
a traceback."""

import signal


def dask_setup(worker):
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:   # not the process's main thread: not ours to set
        pass
