"""What a command computes on each chunk of points: its result columns.

A computation has `outputs` (the names of the columns it adds), a call that
takes a chunk's columns ({variable: float64 array}, the command line's
values filled in) and its number of rows, and returns (columns, bad), and
report(bad, count, strict, warn) for what `bad` gathered over the chunks;
and may have `fixed`, inputs that no column may give.
"""

from ..errors import AdgradError, RowError, UsageError, numerical
from .bindings import input_values, where  # noqa: F401 - the computations' own too


def merge_bad(so_far, chunk_bad):
    """The first non-finite node over chunks: the lowest node id, with the rows
    where it is not finite summed over the chunks where it is the first."""
    if chunk_bad is None:
        return so_far
    if so_far is None or chunk_bad[0] < so_far[0]:
        return chunk_bad
    if chunk_bad[0] == so_far[0]:
        return (so_far[0], so_far[1] + chunk_bad[1])
    return so_far


class Values:
    """eval and grad: the value, then ∂f/∂name for each of `names`, on the
    array algebra; `bad` is the first non-finite node and its rows."""

    fixed = ()   # inputs that no column may give (ArrayRows' arrays)

    def __init__(self, graph, names, checkpoint=None):
        self.graph, self.names, self.checkpoint = graph, list(names), checkpoint
        self.outputs = ['value'] + [f'd_{n}' for n in self.names]

    def __call__(self, columns, rows):
        from ..core.batch import run_batch
        value, gradient, bad = run_batch(self.graph, columns, rows, self.names,
                                         checkpoint=self.checkpoint)
        return [value, *gradient.values()], bad

    def report(self, bad, count, strict, warn):
        if bad is None:
            return
        node, rows_hit = bad
        past = node - len(self.graph.nodes)   # a gradient's, past the tape (see run_batch)
        if past >= 0:
            numerical(f'the gradient ∂f/∂{self.names[past]} is not finite in {rows_hit} of '
                      f'{count} rows', strict, warn)
        else:
            numerical(f'{where(self.graph, node)} is not finite in {rows_hit} of {count} rows, '
                      'the first node where that happens', strict, warn)


def values_for(graph, bindings, names, checkpoint=None):
    """eval's and grad's computation: Values, or ArrayRows for an array program;
    `checkpoint`, a Policy of core/checkpoint.py, keeps less for backward."""
    from ..core.graph import is_array_program
    if is_array_program(graph, bindings):
        return ArrayRows(graph, bindings, names, checkpoint)
    return Values(graph, names, checkpoint)


class ArrayRows(Values):
    """eval and grad of an array program at each row, one row at a time: the
    rows give numbers, and the command line's arrays (W=@w.csv) stay fixed.
    An array result is flattened row-major into columns: value[0], d_W[0,1]."""

    def __init__(self, graph, bindings, names, checkpoint=None):
        import numpy as np

        from ..core import tensors
        from ..derive.array_record import entry_labels
        super().__init__(graph, names, checkpoint)
        fixed = {**graph.defaults, **{k: v for k, v in bindings.items() if k in graph.inputs}}
        # Copied: an array unpickled on a Dask worker may be unaligned, and
        # NumPy's matmul of one takes a loop of its own that rounds otherwise.
        self.arrays = {name: np.array(v, dtype=np.float64) for name, v in fixed.items()
                       if tensors.shape_of(v)}
        self.fixed = sorted(self.arrays)
        for name in graph.inputs:
            declared = (graph.shapes or {}).get(name)
            if declared and name not in fixed:
                raise UsageError(f"no value for '{name}': it is declared {tensors.shown(declared)}"
                                 ', an array, which stays fixed while rows vary; bind it on '
                                 f'the command line ({name}=@FILE)')
        # shapes are the same at every row: a row gives each other input a number
        point = {name: tensors.algebra().coerce(fixed.get(name, 0.0)) for name in graph.inputs}
        shapes = tensors.shapes(tensors.bind_sizes(graph, point), point)
        self.output_shape = shapes[graph.output]
        if self.names and self.output_shape:
            raise UsageError(f'grad needs a scalar output, and this one has shape '
                             f'{tensors.shown(self.output_shape)} at every row: take sum(...) '
                             'or mean(...) of it')
        self.outputs = entry_labels('value', shapes[graph.output]) + [
            label for name in self.names
            for label in entry_labels(f'd_{name}', shapes[graph.inputs[name]])]

    def __call__(self, columns, rows):
        import numpy as np

        from ..core import tensors
        for name in self.arrays:
            if np.shape(columns[name]) != np.shape(self.arrays[name]):
                raise UsageError(f"'{name}' is an array: it stays fixed while rows vary, so bind "
                                 f'it on the command line ({name}=@FILE), not as a column')
        result = np.empty((rows, len(self.outputs)))
        bad = None
        for r, point in enumerate(_points(self.graph, columns, rows, self.arrays)):
            try:
                result[r], first = self._row(point)
            except AdgradError as error:   # a singular matrix, say: at this row of the file
                raise RowError(r, error) from None
            if first is not None:
                bad = merge_bad(bad, (first, 1))
        return list(result.T), bad

    def _row(self, point):
        """One row's entries, and its first non-finite node or None."""
        import numpy as np

        from ..core import tensors
        checkpointed = self.checkpoint is not None and self.checkpoint.kind != 'none'
        if checkpointed:
            from ..core.checkpoint import array_gradients
            run = array_gradients(self.graph, point, self.checkpoint, self.names,
                                  backward_pass=bool(self.names))
            values, grads = run.values, run.grads
        else:
            values = tensors.evaluate(self.graph, point)
            grads = tensors.gradients(self.graph, values, wrt=self.names) if self.names else None
        entries = [np.ravel(values[self.graph.output])]
        first = None
        if not tensors.is_finite(entries[0]):   # (checkpoints dropped values: all again)
            first = tensors.first_nonfinite(tensors.evaluate(self.graph, point) if checkpointed
                                            else values)
        if self.names:
            for k, name in enumerate(self.names):
                entries.append(np.ravel(grads[self.graph.inputs[name]]))
                if first is None and not tensors.is_finite(entries[-1]):
                    first = len(self.graph.nodes) + k
        return np.concatenate(entries), first


def _points(graph, columns, rows, fixed=()):
    """Each row's inputs as a dict of floats, as one point's passes take them."""
    import numpy as np
    lists = {name: column.tolist() if isinstance(column, np.ndarray) else [float(column)] * rows
             for name, column in columns.items() if name in graph.inputs and name not in fixed}
    points = [dict(zip(lists, values)) for values in zip(*lists.values())] if lists else \
        [{} for _ in range(rows)]
    for name, value in dict(fixed).items():   # the same array in every row
        for point in points:
            point[name] = value
    return points


class HessianEntries:
    """hessian: ∂²f/∂a∂b for every pair of `names`, row-major, one point at a time."""

    def __init__(self, graph, names):
        from ..derive.hessian import prepare
        self.graph, self.names = graph, list(names)
        self.prepared = prepare(graph, self.names)
        self.outputs = [f'd2_{a}_{b}' for a in self.names for b in self.names]

    def __call__(self, columns, rows):
        import numpy as np

        from ..derive.hessian import hessian
        entries = np.empty((rows, len(self.outputs)), np.float64)
        for i, point in enumerate(_points(self.graph, columns, rows)):
            matrix = hessian(self.graph, point, self.names, self.prepared)
            entries[i] = [v for line in matrix for v in line]
        hit = rows - int(np.isfinite(entries).all(axis=1).sum())
        return list(entries.T), (0, hit) if hit else None

    def report(self, bad, count, strict, warn):
        if bad is not None:   # (0, the rows with an entry that is not finite)
            numerical(f'the Hessian is not finite in {bad[1]} of {count} rows', strict, warn)


class CheckVerdicts:
    """check: reverse mode against finite differences at each row, as
    (point number, CheckRow) pairs, points numbered from 1 over the chunks."""

    outputs = ()   # its rows are its own, not the points' with columns added

    def __init__(self, graph, names, order):
        self.graph, self.names, self.order = graph, list(names), order
        self.done = 0

    def __call__(self, columns, rows):
        from ..derive.check import check_gradient, check_hessian
        verdicts = []
        for point in _points(self.graph, columns, rows):
            self.done += 1
            found = check_gradient(self.graph, point, self.names)
            if self.order == 2:
                found += check_hessian(self.graph, point, self.names)
            verdicts += [(self.done, row) for row in found]
        return verdicts, None

    def report(self, bad, count, strict, warn):
        pass
