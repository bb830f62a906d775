"""The sum or the mean over every row of a batch's computed columns
(--points FILE --sum, --mean): a writer that keeps a running total per
column in place of the rows, and the one row it gives at the end.

Each column is summed in blocks of BLOCK rows counted from the file's first
row, by NumPy's pairwise sum, and the blocks' sums are added exactly
(ExactSum), so the total neither drifts with the number of rows nor
depends on where the reader cut its chunks. A Dask partition returns its
Totals.partial(), which the client merges exactly.
"""

import math

from .formats import Format
from .registry import WRITERS

BLOCK = 4096


class ExactSum:
    """A sum of floats held exactly, as non-overlapping partials (Shewchuk's
    algorithm, math.fsum's own), as few floats as the exponents span. An inf
    or nan term is added apart, as IEEE adds it, and wins; a sum past
    float64's range is ±inf. total() is the exact sum correctly rounded."""

    __slots__ = ('partials', 'special')

    def __init__(self, partials=(), special=None):
        self.partials, self.special = list(partials), special

    def add(self, x):
        if x - x != 0:   # inf or nan
            self.special = x if self.special is None else self.special + x
            return
        partials, i = self.partials, 0
        for y in partials:
            if abs(x) < abs(y):
                x, y = y, x
            high = x + y
            if high - high != 0:   # past float64's range
                self.add(high)
                return
            low = y - (high - x)
            if low:
                partials[i] = low
                i += 1
            x = high
        partials[i:] = [x]

    def merge(self, partials, special):
        """Add another ExactSum, given as its (partials, special)."""
        for x in partials:
            self.add(x)
        if special is not None:
            self.add(special)

    def total(self):
        if self.special is not None:
            return self.special
        try:
            return math.fsum(self.partials)
        except OverflowError:   # the exact sum rounds past float64's largest
            return math.copysign(math.inf, self.partials[-1])


class Totals:
    """A batch writer that writes nothing: it adds each chunk's computed
    columns (`width` of them) into an ExactSum each, BLOCK rows at a time,
    and counts the rows. close() adds the last, partial block."""

    def __init__(self, width):
        self.sums = [ExactSum() for _ in range(width)]
        self.carry = [None] * width   # the rows of a block not yet whole
        self.rows = 0

    def write(self, chunk, computed):
        import numpy as np
        with np.errstate(all='ignore'):   # an inf in a block's sum is reported once, at the end
            for k, column in enumerate(computed):
                self._add(k, column)
        self.rows += len(chunk)

    def _add(self, k, column):
        import numpy as np
        total, carry = self.sums[k], self.carry[k]
        if carry is not None:   # the block the last chunk began, completed first
            need = BLOCK - len(carry)
            carry, column = np.concatenate([carry, column[:need]]), column[need:]
            if len(carry) < BLOCK:
                self.carry[k] = carry
                return
            total.add(float(np.sum(carry)))
        whole = len(column) - len(column) % BLOCK
        # A row of the reshaped array per block, summed pairwise: the bits np.sum
        # gives that block alone, so a block carried across chunks sums alike.
        for x in column[:whole].reshape(-1, BLOCK).sum(axis=1).tolist():
            total.add(x)
        self.carry[k] = column[whole:].copy() if whole < len(column) else None

    def close(self):
        import numpy as np
        with np.errstate(all='ignore'):
            for k, carry in enumerate(self.carry):
                if carry is not None:
                    self.sums[k].add(float(np.sum(carry)))
        self.carry = [None] * len(self.carry)

    def partial(self):
        """(rows, [(partials, special) per column]): plain data, for merge()."""
        return self.rows, [(list(s.partials), s.special) for s in self.sums]

    def merge(self, partial):
        rows, sums = partial
        self.rows += rows
        for total, (partials, special) in zip(self.sums, sums):
            total.merge(partials, special)

    def result(self, how):
        """Each column's sum, or (how 'mean') its sum over the rows."""
        sums = [s.total() for s in self.sums]
        if how != 'mean':
            return sums
        return [x / self.rows if self.rows else math.nan for x in sums]


def check_totals(totals, how, names, found_bad, strict, warn):
    """A word (an error under --strict) where a total is not finite though
    every row was (found_bad None): no rows to average, or a sum past float64."""
    from ..errors import numerical
    if found_bad is not None:   # the rows' own report has said why
        return
    values = totals.result(how)
    if how == 'mean' and not totals.rows:
        numerical('the points have no rows: their mean is nan', strict, warn)
        return
    for name, value, total in zip(names, values, totals.sums):
        if value - value != 0:
            numerical(f'the sum of {name} over {totals.rows} rows overflows float64: '
                      f'{total.total()!r}', strict, warn)
            return


def write_row(fmt, names, rows, values, file):
    """One row, `rows` (the count) then a column per name, as the format's
    batch writer writes rows: a header, then the row. JSON is that one
    object, as JSON Lines writes it; a table is one row of a rich table."""
    import numpy as np

    from .sources import Chunk, Source
    fmt = Format.JSONL if fmt == Format.JSON else fmt
    source = Source('totals', Format.JSONL, ['rows'])
    chunk = Chunk(source, [1], objects=[{'rows': rows}])
    if fmt == Format.PARQUET:   # the count as an integer column, not text
        import pyarrow as pa
        chunk = Chunk(source, [1], table=pa.RecordBatch.from_pydict({'rows': [rows]}))
    writer = WRITERS[fmt].make(fmt, source, list(names), file)
    writer.write(chunk, [np.array([v], np.float64) for v in values])
    writer.close()
