"""The sum or the mean over every row of a batch's computed columns
(--points FILE --sum, --mean): a writer that keeps an exact running total
per column in place of the rows, and the one row it gives at the end.

Each chunk's column is split, in NumPy, into a few dozen floats whose sum
is exactly the column's (exact_terms), added to an ExactSum; the total is
the exact sum of every row, rounded once. It does not drift with the rows,
nor depend on the chunks, the order, or how Dask splits the files: a
partition returns its Totals.partial(), which the client merges exactly.
"""

import math

from .formats import Format
from .registry import WRITERS

SLICE = 1 << 16   # rows split at once: their bins' sums stay exact (exact_terms)
_HIGH = -(1 << 26)   # a float64's bits but the fraction's low 26


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


def exact_terms(column):
    """Floats (a few per binary exponent present) whose exact sum is the exact
    sum of `column`, finite float64 values, at most SLICE of them."""
    # Each x is split into its top 26 fraction bits and the rest, and each
    # part summed with the others of x's exponent: within one exponent, both
    # parts lie on one grid and their sums over SLICE rows fit in 43 bits, so
    # np.bincount's float sums make no rounding (subnormals too).
    import numpy as np
    bits = np.ascontiguousarray(column, np.float64).view(np.int64)
    exponent = (bits >> 52) & 0x7FF
    high = (bits & _HIGH).view(np.float64)
    terms = []
    for part in (high, column - high):
        sums = np.bincount(exponent, weights=part)
        terms += sums[sums != 0].tolist()
    return terms


class Totals:
    """A batch writer that writes nothing: it adds each chunk's computed
    columns (`width` of them) into an ExactSum each, and counts the rows."""

    def __init__(self, width):
        self.sums = [ExactSum() for _ in range(width)]
        self.rows = 0

    def write(self, chunk, computed):
        import numpy as np
        with np.errstate(all='ignore'):   # an inf is reported once, at the end
            for total, column in zip(self.sums, computed):
                for start in range(0, len(column), SLICE):
                    part = column[start:start + SLICE]
                    whole = float(np.add.reduce(part))
                    if whole - whole != 0:   # an inf or nan among them, added as IEEE adds
                        finite = np.isfinite(part)
                        if not finite.all():
                            total.add(float(np.add.reduce(part[~finite])))
                            part = part[finite]
                    for x in exact_terms(part):
                        total.add(x)
        self.rows += len(chunk)

    def close(self):
        pass

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
