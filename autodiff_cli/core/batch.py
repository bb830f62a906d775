"""A graph over a whole batch of points at once, with NumPy.

The forward and backward loops of evaluate.py run unchanged over an algebra
of arrays: each primitive's forward function is swapped for the array form
its table row names, and the derivative rules, written over the algebra,
follow.
Per-row Python overhead is thus paid once per node, not once per node per
row. NumPy is imported only on this path.
"""

from types import SimpleNamespace

from .branches import LiveRows, for_branches
from .passes import backward, forward
from .primitives import PRIMITIVES

_BLOCK = 32768  # rows at a time: a float64 column of them is 256 KiB, cache-sized
# A block keeps every node's values and gradients: a graph of many nodes
# takes fewer rows at a time, so that they stay within this, reused memory
# rather than fresh pages to fault in.
_BLOCK_BYTES = 32 << 20
_FEWEST_ROWS = 64


def _arrays():
    """The array algebra: each primitive's array form, as its table row names it."""
    import numpy as np

    from . import arrays
    forwards = {row.name: getattr(arrays, row.array, None) or getattr(np, row.array)
                for row in PRIMITIVES.values()}
    return np, SimpleNamespace(coerce=lambda v: np.asarray(v, dtype=np.float64),
                               meeting=for_branches(LiveRows), live_rows=True, **forwards)


def run_batch(graph, columns, rows, wrt=(), out=None, checkpoint=None):
    """Values, and gradients for the names in `wrt`, at `rows` points, in
    cache-sized blocks of rows. `columns`: each input's array of `rows` values,
    or one number for all. Returns (value, {name: gradient}, bad): bad is
    (node id, rows) for the first node not finite in a row whose results are
    not (id len(graph.nodes) + k for gradient wrt[k]), or None. `out`, of
    shape (1 + len(wrt), rows), takes value and gradients as its rows, so
    a caller that runs again reuses its memory. `checkpoint`, a Policy of
    checkpoint.py, keeps less for backward and computes more.
    """
    np, arrays = _arrays()
    checkpointed = checkpoint is not None and checkpoint.kind != 'none'
    if out is not None:
        value, gradient = out[0], dict(zip(wrt, out[1:]))
    else:
        # An array each, not rows of one matrix: over 32 MiB, an array is a
        # fresh mapping whose every page faults in.
        value = np.empty(rows)
        gradient = {name: np.empty(rows) for name in wrt}
    first_bad, bad_rows = None, 0
    # (a loop keeps its body's values at every iteration, plain)
    kept = len(graph.nodes) + sum(graph.nodes[i].value.count * len(graph.nodes[i].value.body.nodes)
                                  for i in graph.loops)
    step = max(_FEWEST_ROWS, min(_BLOCK, _BLOCK_BYTES // (16 * kept)))
    with np.errstate(all='ignore'):  # IEEE results, as in the scalar path
        for start in range(0, rows, step):
            stop = min(start + step, rows)
            block = {name: column[start:stop] if np.ndim(column) else column
                     for name, column in columns.items()}
            if checkpointed:
                from .checkpoint import gradients
                values, grads = gradients(graph, block, arrays, checkpoint,
                                          backward_pass=bool(wrt))[:2]
                values = [0.0 if v is None else v for v in values]   # (dropped)
            else:
                values = forward(graph, block, arrays)
            produced = [values[graph.output]]
            value[start:stop] = produced[0]
            if wrt:
                if not checkpointed:
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
            # (Checkpoints dropped values: they are all computed again.)
            if checkpointed:
                values = forward(graph, block, arrays)
            suspects = values + produced[1:]
            bad = next((i for i, v in enumerate(suspects)
                        if not np.isfinite(v[hit] if np.ndim(v) else v).all()), None)
            if bad is not None and (first_bad is None or bad <= first_bad):
                count = int(np.broadcast_to(~np.isfinite(suspects[bad]), (stop - start,))[hit].sum())
                bad_rows = count + (bad_rows if bad == first_bad else 0)
                first_bad = bad
    return value, gradient, None if first_bad is None else (first_bad, bad_rows)
