"""A graph over a whole batch of points at once, with NumPy.

The forward and backward loops of evaluate.py run unchanged over an algebra
of arrays: each primitive's forward function is swapped for the array form
its table row names, and the derivative rules, written over the algebra,
follow.
Per-row Python overhead is thus paid once per node, not once per node per
row. NumPy is imported only on this path.
"""

from types import SimpleNamespace

from .branches import LiveRows
from .passes import backward, forward
from .primitives import PRIMITIVES

_BLOCK = 32768  # rows at a time: a float64 column of them is 256 KiB, cache-sized
# A block keeps every node's values and gradients: a graph of many nodes
# takes fewer rows at a time, so that they stay within this (1,802 nodes at
# 2 * 10^5 points: 2.5 s and 138 MB, where blocks of 32,768 rows took 3.6 s
# and 582 MB, most of the extra time faulting in fresh pages).
_BLOCK_BYTES = 32 << 20
_FEWEST_ROWS = 64


def _arrays():
    """The array algebra: each primitive's array form, as its table row names it."""
    import numpy as np

    from . import arrays
    forwards = {row.name: getattr(arrays, row.array, None) or getattr(np, row.array)
                for row in PRIMITIVES.values()}
    return np, SimpleNamespace(coerce=lambda v: np.asarray(v, dtype=np.float64),
                               branch_gate=LiveRows, **forwards)


def run_batch(graph, columns, rows, wrt=()):
    """Values, and gradients for the names in `wrt`, at `rows` points.

    `columns` maps each input name to an array of `rows` values, or to one
    number for every row. Returns (value, {name: gradient}, bad): float64
    arrays of length `rows`, and (node id, rows) for the first node whose
    value is not finite in some rows, and in how many, or None. Only rows
    whose value or gradients are not finite are searched and counted: a
    non-finite intermediate that the output masks (exp(-inf) = 0) goes
    unreported. Where every node's value is finite in those rows, the id is
    len(graph.nodes) + k for the first gradient, wrt[k], that is not.

    The rows go through in blocks that fit in the processor's cache: every
    intermediate array is then reused memory, hot in cache, instead of fresh
    pages for each of the graph's nodes.
    """
    np, arrays = _arrays()
    # An array each, not rows of one matrix: over 32 MiB, an array is a fresh
    # mapping whose every page faults in (7 x 10^6 results: 10 ms of 40).
    value = np.empty(rows)
    gradient = {name: np.empty(rows) for name in wrt}
    first_bad, bad_rows = None, 0
    step = max(_FEWEST_ROWS, min(_BLOCK, _BLOCK_BYTES // (16 * len(graph.nodes))))
    with np.errstate(all='ignore'):  # IEEE results, as in the scalar path
        for start in range(0, rows, step):
            stop = min(start + step, rows)
            block = {name: column[start:stop] if np.ndim(column) else column
                     for name, column in columns.items()}
            values = forward(graph, block, arrays)
            produced = [values[graph.output]]
            value[start:stop] = produced[0]
            if wrt:
                grads = backward(graph, values, algebra=arrays)
                for name in wrt:
                    produced.append(grads[graph.inputs[name]])
                    gradient[name][start:stop] = produced[-1]
            # Per-node checks cost as much as a fifth of the run: look for the
            # first non-finite node only in blocks whose results are not all
            # finite. A sum says so, in one pass without a temporary (a sum
            # that overflows only costs a search that finds nothing), over
            # the block's own arrays while they are still in cache: over the
            # copies it took 2.5 times as long.
            total = sum(np.add.reduce(np.ravel(result)) for result in produced)
            if total - total == 0:
                continue
            # Among those rows only, so that what is found does not depend
            # on which rows share a block (its size depends on the graph's).
            hit = np.zeros(stop - start, dtype=bool)
            for result in produced:
                hit |= ~np.isfinite(result)
            if not hit.any():   # the sum overflowed; every row is finite
                continue
            # The nodes' values first; where every one is finite in those
            # rows (sqrt(x) at 0, whose gradient is inf), the gradients.
            suspects = values + produced[1:]
            bad = next((i for i, v in enumerate(suspects)
                        if not np.isfinite(v[hit] if np.ndim(v) else v).all()), None)
            if bad is not None and (first_bad is None or bad <= first_bad):
                count = int(np.broadcast_to(~np.isfinite(suspects[bad]), (stop - start,))[hit].sum())
                bad_rows = count + (bad_rows if bad == first_bad else 0)
                first_bad = bad
    return value, gradient, None if first_bad is None else (first_bad, bad_rows)
