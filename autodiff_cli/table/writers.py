"""Rows of a batch out, chunk by chunk: input cells followed by computed
columns, in CSV, TSV, JSON Lines, JSON, Parquet or a table; numbers in
shortest round-trip form. WRITERS is the one registry, by Format."""

import json
import re

from ..core.numbers import number
from .formats import Format, json_number as _json_number
from .sources import ABSENT


def _cell(x):
    """A value as CSV text: floats in shortest form, JSON's true/false/null as JSON writes them."""
    if isinstance(x, float):
        return number(x)
    if isinstance(x, str):
        return x
    return '' if x is None or x is ABSENT else json.dumps(x)


def _json_value(x):
    """A cell read from JSON Lines, as it was (but inf and nan as strings, and an
    integer past 64 bits, which orjson cannot write, as a float)."""
    if isinstance(x, int) and not isinstance(x, bool) and not -2**63 <= x < 2**64:
        x = float(x)
    return _json_number(x) if isinstance(x, float) else x


# A number as JSON spells one: no sign but '-', no leading zeros, spaces or underscores.
_JSON_NUMBER = re.compile(r'-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?')


def _json_cell(x):
    """A cell read from CSV or TSV as a JSON value: text spelled as a JSON
    number becomes that number (a float, as the computed columns are) where
    the float is that very number, as written; any other text stays as it
    was, so that an id ('007', '9007199254740993', 12345678901234567890),
    ' 2 ', '1_000', '1e-400' or 'inf' is not changed into something else."""
    if isinstance(x, str) and _JSON_NUMBER.fullmatch(x):
        value = float(x)
        if _same_decimal(x, value):   # (1e999 reads as inf, whose digits are not 1e999's)
            return _json_number(value)
    return x


def _same_decimal(text, value):
    """Whether the float's shortest digits are the number `text` writes
    ('0.1' is 0.1; '0.10000000000000000555' and '1e-400' are not). Decimal,
    not int(): an integer of 5,000 digits is too long for int() to read."""
    from decimal import Decimal
    return Decimal(repr(value)) == Decimal(text)


# ---- streamed rows: one writer per format, fed chunk by chunk ----

TABLE_ROWS = 20  # a batch's table shows its first and last rows, this many each


def _numbers_text(numbers, d, flat=False):
    """orjson's text of a (rows, columns) float64 block, [[a,b],[c,d]] (or,
    given its numbers flat, [a,b,c,d]), with `d` for the commas; and which
    rows it spells otherwise than repr: with a non-finite number, which
    orjson writes as null, or a magnitude below 1e-4, which it writes as
    0.00001 or 1e-7 where repr writes 1e-05 and 1e-07. Everywhere else both
    write the same shortest round-trip digits."""
    import numpy as np
    import orjson
    text = orjson.dumps(numbers.reshape(-1) if flat else numbers, option=orjson.OPT_SERIALIZE_NUMPY)
    if d != b',':
        text = text.replace(b',', d)
    magnitude = np.abs(numbers)
    odd = ~((magnitude < np.inf) & ((magnitude >= 1e-4) | (magnitude == 0)))
    return text, np.flatnonzero(odd.any(axis=1))


def _repr_row(values, delimiter):
    return delimiter.join(map(number, values)).encode()


def computed_lines(computed, delimiter):
    """Each row's computed numbers as bytes, `delimiter` first and LF last, in
    shortest round-trip form, spelled as repr spells them (as a single
    point's output is).

    orjson writes the whole block at once (in C) as [[a,b],[c,d]]; its
    brackets become the delimiters and line breaks. The rows orjson spells
    otherwise are written with repr.
    """
    import numpy as np
    if len(computed[0]) == 0:
        return []
    numbers = np.column_stack(computed)
    d = delimiter.encode()
    text, odd = _numbers_text(numbers, d)
    text = text[2:-2]
    lines = (d + text.replace(b']' + d + b'[', b'\n' + d) + b'\n').splitlines(keepends=True)
    for i in odd:
        lines[i] = d + _repr_row(numbers[i], delimiter) + b'\n'
    return lines


class NotOneLinePerRow(Exception):
    pass


def number_text(computed, delimiter):
    """A chunk's computed numbers as arrow_echo writes them: the rows as one
    array, orjson's text of them all, flat ([a,b,c,d]), the rows it spells
    otherwise than repr, and where each row after the first begins (its
    first number's delimiter). orjson holds Python's lock while it writes:
    a writer in a thread has the main thread call this (see prepare)."""
    import numpy as np
    numbers = np.column_stack(computed)
    d = delimiter.encode()
    text, odd = _numbers_text(numbers, d, flat=True)
    cuts = np.flatnonzero(np.frombuffer(text, np.uint8) == d[0])[len(computed) - 1::len(computed)]
    return numbers, text, odd, cuts


def arrow_echo(block, computed, delimiter, file, numbers=None):
    """Rows out as each input line (`block`: LF-terminated lines, one per
    row) followed by its computed numbers: the same bytes as computed_lines
    beside chunk.lines, without a Python object per row. `numbers` is
    number_text(computed, delimiter), if made already."""
    # orjson writes the numbers flat, [a,b,c,d]; Arrow then joins two texts
    # row by row, in C. Row i > 0 is the input from the line break before it
    # ('\nline') and the numbers from the delimiter before its first (',c,d'):
    # both are slices of one buffer end to end, so no byte is copied to make
    # them, and the join of every row is the output from row 0's numbers on.
    import numpy as np
    import pyarrow as pa
    from pyarrow import _compute
    n = len(computed[0])
    d = delimiter.encode()
    numbers, text, odd, cuts = numbers or number_text(computed, delimiter)
    breaks = np.flatnonzero(np.frombuffer(block, np.uint8) == ord('\n'))
    if len(breaks) != n or len(cuts) != n - 1 or len(block) >= 1 << 31 or len(text) >= 1 << 31:
        raise NotOneLinePerRow
    cuts = np.append(cuts, len(text) - 1).astype(np.int32)  # the last row ends at the ]
    first = _repr_row(numbers[0], delimiter) if len(odd) and odd[0] == 0 else text[1:cuts[0]]
    file.write(block[:breaks[0]] + d + first)
    if n > 1:
        binary = pa.binary()
        lines = pa.Array.from_buffers(binary, n - 1, [None, pa.py_buffer(breaks.astype(np.int32)),
                                                      pa.py_buffer(block)])
        rows = pa.Array.from_buffers(binary, n - 1, [None, pa.py_buffer(cuts), pa.py_buffer(text)])
        odd = odd[odd > 0]
        if len(odd):
            mask = np.zeros(n - 1, bool)
            mask[odd - 1] = True
            fixed = binary_array([d + _repr_row(numbers[i], delimiter) for i in odd])
            rows = _compute.call_function('replace_with_mask', [rows, bool_array(mask), fixed])
        joined = _compute.call_function('binary_join_element_wise',
                                        [lines, rows, binary_array([b''])[0]])
        offsets = np.frombuffer(joined.buffers()[1], np.int32, n, joined.offset * 4)
        file.write(memoryview(joined.buffers()[2])[offsets[0]:offsets[-1]])
    file.write(b'\n')


# Arrow arrays made from their buffers: pa.array() looks for pandas, and
# importing it costs more than writing a million rows.

def binary_array(pieces, valid=None):
    """An Arrow binary array of byte strings; `valid` (bools) marks the
    non-null. OverflowError past 2 GiB, which its offsets cannot hold."""
    import numpy as np
    import pyarrow as pa
    offsets = np.zeros(len(pieces) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, pieces), np.int64, len(pieces)), out=offsets[1:])
    if offsets[-1] >= 1 << 31:
        raise OverflowError('more than 2 GiB of text in one array')
    return pa.Array.from_buffers(pa.binary(), len(pieces),
                                 [None if valid is None else _bits(valid),
                                  pa.py_buffer(offsets.astype(np.int32)),
                                  pa.py_buffer(b''.join(pieces))])


def bool_array(flags):
    import pyarrow as pa
    return pa.Array.from_buffers(pa.bool_(), len(flags), [None, _bits(flags)])


def float_array(column):
    import numpy as np
    import pyarrow as pa
    column = np.ascontiguousarray(column, np.float64)
    return pa.Array.from_buffers(pa.float64(), len(column), [None, pa.py_buffer(column)])


def _bits(flags):
    import numpy as np
    import pyarrow as pa
    return pa.py_buffer(np.packbits(np.asarray(flags, bool), bitorder='little'))


def _text(write_rows_to):
    """What a csv.writer writes, as UTF-8 bytes."""
    import io
    buffer = io.StringIO()
    write_rows_to(buffer)
    return buffer.getvalue().encode('utf-8', 'surrogateescape')


class TextRows:
    """CSV, TSV (and plain, which is TSV) rows, as bytes into a binary file.
    When `echo` is set the input rows' own bytes, already in this format,
    are copied as they are."""

    may_lag = True  # batch.py may run it in a thread of its own

    def __init__(self, fmt, source, outputs, file):
        import csv
        self.csv = csv
        self.delimiter, echoed = _DELIMITED[fmt]
        self.file, self.echo = file, source.kind == echoed
        file.write(_text(lambda f: self._writer(f).writerow(source.header + outputs)))

    def _writer(self, f):
        return self.csv.writer(f, delimiter=self.delimiter, lineterminator='\n')

    def _echoes(self, chunk):
        return self.echo and chunk.block is not None and len(chunk) and chunk.source.arrow(chunk)

    def prepare(self, chunk, computed):
        """The share of write() that holds Python's lock, for the thread that
        computed the chunk to do while the writer's thread writes the last one."""
        if self._echoes(chunk):
            chunk.drop_blank()
            return number_text(computed, self.delimiter)
        return None

    def write(self, chunk, computed, prepared=None):
        d = self.delimiter
        if self._echoes(chunk):
            chunk.drop_blank()
            try:
                return arrow_echo(chunk.block, computed, d, self.file, prepared)
            except NotOneLinePerRow:  # checked before any byte is written
                pass
        lines = computed_lines(computed, d)
        if self.echo and chunk.lines is not None:
            parts = [None] * (2 * len(lines))
            parts[0::2] = chunk.lines
            parts[1::2] = lines
            self.file.write(b''.join(parts))
        else:
            rows = ([*map(_cell, cells), *text.decode()[1:-1].split(d)]
                    for cells, text in zip(chunk.rows(), lines))
            self.file.write(_text(lambda f: self._writer(f).writerows(rows)))

    def close(self):
        pass


# Delimited text: each format's delimiter, and the points' format whose rows it echoes.
_DELIMITED = {Format.CSV: (',', Format.CSV), Format.TSV: ('\t', Format.TSV),
              Format.PLAIN: ('\t', Format.TSV)}


class JsonRows:
    """JSON Lines: one object per row."""

    opening, closing, between = b'', b'', b'\n'
    may_lag = True  # pipeline.py may run it in a thread of its own

    def __init__(self, fmt, source, outputs, file):
        import orjson
        self.header, self.outputs, self.file = source.header, outputs, file
        self.as_json = _json_cell if source.kind in _DELIMITED else _json_value
        self.first = True
        # Each key as orjson writes it, with what comes before it in an object.
        self.keys = [b'{' * (i == 0) + b',' * (i > 0) + orjson.dumps(k) + b':'
                     for i, k in enumerate(source.header + outputs)]
        file.write(self.opening)

    def prepare(self, chunk, computed):
        """What the chunk's own thread does first: leave out its blank lines,
        so that a writer in a thread of its own changes nothing of it."""
        chunk.drop_blank()

    def write(self, chunk, computed, prepared=None):
        if not len(chunk):
            return
        body = self._columns(chunk, computed, prepared)
        if body is None:
            body = self._rows(chunk, computed)
        self.file.write(self.joined(body))

    def _rows(self, chunk, computed):
        """The objects row by row: any chunk, at Python's speed."""
        import orjson
        numbers = [column.tolist() for column in computed]
        if chunk.objects is not None:  # JSON Lines in: each object's own keys, in its order
            inputs = [{k: _json_value(v) for k, v in row.items()} for row in chunk.objects]
        else:
            inputs = [{k: self.as_json(v) for k, v in zip(self.header, cells) if v is not ABSENT}
                      for cells in chunk.rows()]
        objects = []
        for i, row in enumerate(inputs):
            row.update(zip(self.outputs, (_json_number(n[i]) for n in numbers)))
            objects.append(orjson.dumps(row))
        return self.between.join(objects) + self.between

    def _columns(self, chunk, computed, prepared):
        """The chunk's objects at once (json_columns.py), or None: row by row."""
        return None

    def joined(self, body):
        return body

    def close(self):
        self.file.write(self.closing)


class JsonArrayRows(JsonRows):
    """JSON: one array of row objects."""

    opening, closing, between = b'[', b'\n]\n', b',\n'

    def joined(self, body):
        text = (b'\n' if self.first else b',\n') + body[:-len(self.between)]
        self.first = False
        return text


class TableRows:
    """A rich table of the first and the last TABLE_ROWS rows: a terminal
    cannot show a million, and memory stays bounded. Every cell is plain
    text to rich (never markup). Unlike the other writers, it writes text
    to a text stream (the terminal)."""

    def __init__(self, fmt, source, outputs, file):
        from collections import deque
        self.header, self.file = source.header + outputs, file
        self.head, self.tail, self.count = [], deque(maxlen=TABLE_ROWS), 0

    def write(self, chunk, computed):
        # Only the rows that can still show are formatted: those that fill the
        # head, and the chunk's last TABLE_ROWS (any row between would leave
        # the tail before the end).
        rows, n = chunk.rows(), len(chunk)
        head = min(max(TABLE_ROWS - len(self.head), 0), n)
        tail = max(head, n - TABLE_ROWS)
        self.add([[*map(_cell, rows[i]), *(number(column[i]) for column in computed)]
                  for i in [*range(head), *range(tail, n)]])
        self.count += tail - head

    def add(self, rows):
        for row in rows:
            self.count += 1
            if len(self.head) < TABLE_ROWS:
                self.head.append(row)
            else:
                self.tail.append(row)

    def close(self):
        from .rich_tables import rich_text, table
        rows = list(self.head)
        hidden = self.count - len(self.head) - len(self.tail)
        if hidden:
            rows.append(['…'] * len(self.header))
        rows += self.tail
        caption = f'{hidden:,} more rows not shown (all: --format csv)' if hidden else None
        shown = table([(name, 'right', None) for name in self.header], rows, caption=caption)
        self.file.write(rich_text([shown], self.file))


class ParquetRows:
    """Parquet: input columns as they were (text, from CSV or JSON Lines),
    then the computed float64 columns."""

    def __init__(self, fmt, source, outputs, path):
        self.header, self.outputs, self.path, self.writer = source.header, outputs, path, None

    def write(self, chunk, computed):
        if chunk.table is not None:
            return self._write(list(chunk.table.columns), computed)
        import pyarrow as pa
        rows = chunk.rows()
        spans = [(0, len(rows))]
        while spans:   # in order; a span with more of a column's text than Arrow holds is halved
            start, stop = spans.pop()
            columns = list(zip(*rows[start:stop])) if stop > start else [()] * len(self.header)
            try:
                texts = [binary_array([b'' if c is ABSENT or c is None else _cell(c).encode()
                                       for c in column],
                                      [c is not ABSENT and c is not None for c in column]
                                      ).cast(pa.string()) for column in columns]
            except OverflowError:
                if stop - start == 1:
                    raise chunk.error(start, 'a cell of more than 2 GiB cannot go into '
                                             'Parquet') from None
                middle = (start + stop) // 2
                spans += [(middle, stop), (start, middle)]
                continue
            self._write(texts, [column[start:stop] for column in computed])

    def _write(self, arrays, computed):
        import pyarrow as pa
        import pyarrow.parquet as pq
        arrays = arrays + [float_array(column) for column in computed]
        batch = pa.RecordBatch.from_arrays(arrays, names=self.header + self.outputs)
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.path, batch.schema)
        self.writer.write_batch(batch)

    def abandon(self):
        """After an error, with the file to be removed: the writer closed now,
        quietly, not when it is freed (which would report a write to a closed file)."""
        writer, self.writer = self.writer, None
        if writer is not None:
            try:
                writer.close()
            except Exception:   # noqa: BLE001 - the error that came first is the one said
                pass

    def close(self):
        import pyarrow as pa
        import pyarrow.parquet as pq
        if self.writer is None:  # no rows: still a valid file with the columns
            schema = pa.schema([(n, pa.string()) for n in self.header] +
                               [(n, pa.float64()) for n in self.outputs])
            self.writer = pq.ParquetWriter(self.path, schema)
        self.writer.close()
