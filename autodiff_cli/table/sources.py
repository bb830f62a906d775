"""Reading a batch of points, streamed in bounded chunks: CSV (or TSV) with a
header, JSON Lines, or Parquet.

A source yields `Chunk`s of at most CHUNK_ROWS rows, read from about 1 MiB of
input at a time, so memory stays bounded whatever the number of rows. A
CSV chunk keeps its rows' original text (echoed as it was when the output
is the same format) and turns only the variables' columns into numbers:
with pyarrow's C reader when it is installed and each line of the chunk is
one record (no quoted line breaks, no blank lines), else with float() per
cell. Any irregularity falls back to the csv module and per-cell checks,
which name the line to blame.

Rows are split only at CR, LF or CRLF, quoted fields may hold line breaks,
and a field may be of any length.
"""

import codecs
import csv
import io
import itertools
import json
import math
import re
import sys

from ..errors import AdgradError, first_line
from .formats import Format

CHUNK_ROWS = 65536
# A mebibyte of input at a time: a chunk's buffers then stay in the processor's
# cache and reuse memory, rather than fault in fresh pages (BENCHMARKS.md).
_READ_BYTES = 1 << 20
_ARROW_BYTES = 1 << 19  # a smaller file is read without importing pyarrow
_ARROW_BLOCK = 1 << 20  # pyarrow's unit of parsing (a chunk is about one)

# A key that a JSON object lacks: empty in CSV, left out again in JSON Lines.
ABSENT = type('Absent', (), {'__repr__': lambda self: 'ABSENT'})()

_NON_FINITE = {'inf': math.inf, '-inf': -math.inf, 'nan': math.nan}
_SURROGATE = re.compile(r'\\u[dD][89a-fA-F]')


def _pyarrow_csv():
    try:
        import pyarrow
        import pyarrow.csv
    except ImportError:
        return None
    # read_csv swaps a SIGINT handler of its own in and out around each block
    # and drops a Ctrl-C that lands in the swap: the batch would run on.
    # Python's handler (or the pipeline's) sees them all.
    pyarrow.enable_signal_handlers(False)
    return pyarrow.csv


class Chunk:
    """Consecutive rows of a source: about 1 MiB of input, or CHUNK_ROWS rows."""

    def __init__(self, source, numbers, block=None, lines=None, rows=None, objects=None,
                 table=None):
        self.source = source
        self.numbers = numbers    # each row's line number (CSV, JSON Lines) or row number (Parquet)
        self.block = block        # CSV/TSV with no quotes: the rows' bytes, each line ending in LF
        self._lines = lines       # CSV/TSV: each row's bytes as they were, without its line break
        self._rows = rows         # CSV/TSV: the rows' fields, when already split
        self.objects = objects    # JSON Lines: one dict per row
        self.table = table        # Parquet: a pyarrow RecordBatch

    def __len__(self):
        return len(self.numbers)

    def error(self, i, message):
        return self.source.error(self.numbers[i], message)

    maybe_blank = False
    _widths_checked = False

    def drop_blank(self):
        """Leave out blank lines (only white space): they hold no row."""
        if not self.maybe_blank:
            return
        self.maybe_blank = False
        lines = self.block.split(b'\n')[:-1]
        if any(map(_blank, lines)):
            kept = [(n, x) for n, x in zip(self.numbers, lines) if not _blank(x)]
            self.numbers = [n for n, _ in kept]
            self.block = b''.join(x + b'\n' for _, x in kept)

    @property
    def lines(self):
        self.drop_blank()
        if self._lines is None and self.block is not None:
            self._lines = self.block.split(b'\n')
            self._lines.pop()
        return self._lines

    def rows(self):
        """Each row as a list of cells, one per header column."""
        if self.objects is not None:
            header = self.source.header
            return [[row.get(k, ABSENT) for k in header] for row in self.objects]
        if self.table is not None:
            return [list(r.values()) for r in self.table.to_pylist()]
        if self._rows is None:
            self.drop_blank()
            d = self.source.delimiter
            lines = self.block.decode().split('\n')[:-1]
            self._rows = list(csv.reader(lines, delimiter=d)) if b'"' in self.block else \
                [line.split(d) for line in lines]
        if not self._widths_checked:
            width = len(self.source.header)
            for i, row in enumerate(self._rows):
                if len(row) != width:
                    raise self.error(i, f'{len(row)} fields where the header has {width}')
            self._widths_checked = True
        return self._rows

    def columns(self, wanted, fills):
        """{variable: float64 array} for the variables in `wanted`.

        A cell left empty (a key a JSON object lacks, a Parquet null) takes
        its value from `fills`, and without one it is an error naming its line.
        """
        import numpy as np
        if not wanted:
            if self.block is not None or self._rows is not None:
                self.rows()  # still check every row's width
            return {}
        fast = self.source.fast_columns(self, wanted, fills)
        if fast is not None:
            self.maybe_blank = False  # every line had all its fields
            return fast
        out = {}
        try:
            for variable in wanted:
                cells = self.cells(variable)
                try:
                    out[variable] = self.source.quick(cells)
                except (TypeError, ValueError, OverflowError):
                    out[variable] = np.array([self.source.number(c, variable, fills, self, i)
                                              for i, c in enumerate(cells)], dtype=np.float64)
        except AdgradError:
            self._first_bad_cell(wanted, fills)   # the first bad row in the file is the one named
            raise
        return out

    def _first_bad_cell(self, wanted, fills):
        """Raise for the first bad cell of `wanted` in row order, up to the first
        row of the wrong width (whose error, raised first by rows(), stands)."""
        header, objects = self.source.header, self.objects is not None
        for i, row in enumerate(self.objects if objects else self._rows or ()):
            if not objects and len(row) != len(header):
                return
            for variable in wanted:
                cell = row.get(variable, ABSENT) if objects else row[header.index(variable)]
                self.source.number(cell, variable, fills, self, i)

    def cells(self, variable):
        """One column's cells; a key a JSON object lacks is ABSENT."""
        if self.objects is not None:
            return [row.get(variable, ABSENT) for row in self.objects]
        index = self.source.header.index(variable)
        if self.table is not None:
            return self.table.column(index).to_pylist()
        return [row[index] for row in self.rows()]


class Source:
    """A points file's kind, header and chunks; `name` is for messages."""

    unit = 'line'

    def __init__(self, name, kind, header):
        self.name, self.kind, self.header = name, kind, header
        self.delimiter = '\t' if kind == Format.TSV else ','

    def error(self, number, message):
        return AdgradError(f'{self.name}: {self.unit} {number}: {message}')

    def not_utf8(self, line, error, before=b''):
        """The error for bytes that are not UTF-8, `before` and the block's bytes
        before them read from the start of `line`. Lines end as the source
        ends them: CSV at CR, LF or CRLF, JSON Lines at LF only."""
        text = before + error.before
        breaks = text.count(b'\n')
        if self.kind != Format.JSONL:
            breaks += text.count(b'\r') - text.count(b'\r\n')
        return self.error(line + breaks, f'byte {error.offset} is not UTF-8 text')

    def fast_columns(self, chunk, wanted, fills):
        return None if chunk.table is None else _table_columns(self, chunk, wanted, fills)

    def arrow(self, chunk):
        """pyarrow.csv where pyarrow reads this source's text (it then writes the rows too)."""
        return None

    def close(self):
        """Let go of what the source opened itself (a Parquet file's reader)."""

    def read_again(self, first):
        """This source reads again the very bytes that `first` read (a second
        pass): what `first` learnt of their structure need not be found again."""

    def quick(self, cells):
        """Text cells as numbers, raising on anything but a number (float()'s rules)."""
        import numpy as np
        return np.fromiter(map(float, cells), np.float64, len(cells))

    def number(self, cell, variable, fills, chunk, i):
        if cell is None or cell is ABSENT or (isinstance(cell, str) and cell.strip() == ''):
            if variable in fills:
                return fills[variable]
            raise chunk.error(i, f"no value for '{variable}'")
        if isinstance(cell, str):
            try:
                return float(cell)
            except ValueError:
                pass
        elif isinstance(cell, (int, float)) and not isinstance(cell, bool):
            return float(cell)   # a Parquet number, beside a null that stopped the quick path
        raise chunk.error(i, f"'{variable}' is {cell!r}, not a number")


def check_header(name, header):
    header = [str(c).strip() for c in header]
    if not header or header == ['']:
        raise AdgradError(f'{name}: empty: the first line must name the columns')
    twice = [c for i, c in enumerate(header) if c in header[:i]]
    if twice:
        raise AdgradError(f"{name}: line 1: the column '{twice[0]}' appears twice")
    return header


# ---- text: blocks of whole lines ----

class _Blocks:
    """A binary stream as blocks of bytes that end at a line break (CR, LF
    or CRLF; only LF for JSON Lines), checked to be UTF-8."""

    def __init__(self, stream, name, breaks=b'\n\r'):
        self.stream, self.name, self.breaks = stream, name, breaks
        self.offset = 0       # bytes before the carry, for a decoding error's position
        self.eof = False
        self.at_least = 0     # bytes the next read takes at least: see CsvSource._records

    def __iter__(self):
        carry, first = b'', True
        while not self.eof:
            try:
                data = self.stream.read(max(_READ_BYTES, self.at_least))
            except OSError as error:
                raise AdgradError(f'cannot read {self.name}: {error.strerror or error}') from None
            if first and data.startswith(codecs.BOM_UTF8):  # a spreadsheet's byte-order mark
                data, self.offset = data[3:], 3
            first = False
            self.eof = not data
            buffer = carry + data
            if self.eof:
                carry, cut = b'', len(buffer)
            else:
                cut = buffer.rfind(b'\n') + 1
                if not cut and b'\r' in self.breaks:
                    cut = buffer.rfind(b'\r', 0, len(buffer) - 1) + 1  # a CR whose LF may follow
                carry = buffer[cut:]
            if cut:
                yield self._checked(buffer[:cut])
            self.offset += cut

    def _checked(self, block):
        if not block.isascii():
            try:
                block.decode()
            except UnicodeDecodeError as error:
                raise _NotUtf8(block[:error.start], self.offset + error.start) from None
        return block


class _NotUtf8(Exception):
    """Bytes that are not UTF-8: the block's bytes before them, and their place
    in the file. The reader, which knows the line the block starts on, says
    the line (Source.not_utf8)."""

    def __init__(self, before, offset):
        super().__init__(before, offset)
        self.before, self.offset = before, offset


class _MoreNeeded(Exception):
    """A quoted field runs past the end of the text read so far."""


_SPACE = b' \t\f\v'


def _maybe_blank(block):
    """Whether a block (LF line breaks, ending in LF) may hold a blank line:
    a few substring searches, in C, instead of a look at every line."""
    return (b'\n\n' in block or block[:1] in (b'\n', b' ', b'\t', b'\f', b'\v')
            or any(b'\n' + bytes([c]) in block for c in _SPACE))


def _line_breaks(block):
    """block.count(b'\\n'), at NumPy's speed: bytes.count steps through a
    block byte by byte."""
    import numpy as np
    return int(np.count_nonzero(np.frombuffer(block, np.uint8) == ord('\n')))


def _blank(line):
    return not line.strip(_SPACE + b'\r\n')


def _lines_are_records(block, delimiter):
    return b'"' not in block or _simple_quotes(block, delimiter)


def _simple_quotes(block, delimiter):
    """Whether every quoted field in a block (LF line breaks) lies within one
    line, opening at the start of a field and closing at its end, any quote
    inside it doubled (`"say ""hi"", twice"`): then each line is one record,
    and the csv module and pyarrow read it alike. In NumPy: two passes over
    the block's bytes, then work over its quotes only.

    Quotes pair up in order, (1st, 2nd), (3rd, 4th), ...: a doubled quote
    inside a field closes one pair and opens the next at the very next byte."""
    import numpy as np
    data = np.frombuffer(block, np.uint8)
    quotes = np.flatnonzero(data == ord('"'))
    if len(quotes) % 2:
        return False
    if not len(quotes):
        return True
    # From each quote to the next, whether a line break lies between: from
    # an opening quote to its closing one, none may.
    if np.logical_or.reduceat(data == ord('\n'), quotes)[0::2].any():
        return False
    opens, closes = quotes[0::2], quotes[1::2]
    doubled = closes[:-1] + 1 == opens[1:]
    edge, last = ord(delimiter), len(data) - 1
    before = data[np.maximum(opens - 1, 0)]
    opened = (opens == 0) | (before == edge) | (before == ord('\n'))
    opened[1:] |= doubled
    after = data[np.minimum(closes + 1, last)]
    closed = (closes == last) | (after == edge) | (after == ord('\n'))
    closed[:-1] |= doubled
    return bool(opened.all() and closed.all())


def _never_closed(record, delimiter):
    """Whether the record (the last of a file) ends inside a quoted field,
    which the csv module takes to the end of the file without a word."""
    if '"' not in record:
        return False
    try:
        for _ in csv.reader(io.StringIO(record, newline=''), delimiter=delimiter, strict=True):
            pass
    except csv.Error as error:
        return 'unexpected end of data' in str(error)
    return False


class CsvSource(Source):
    def __init__(self, name, kind, stream):
        # (name and kind before the header is read: a bad byte there is an error naming them)
        self.name, self.kind = name, kind
        self.delimiter = '\t' if kind == Format.TSV else ','
        self.blocks = _Blocks(stream, name)
        self.pending, self.line = b'', 1
        # (first line, length) -> line breaks, of each block whose lines are
        # its records: checking the quotes is a fifth of a pass over wide rows.
        self.plain = {}
        self.records = self._records()
        first = next(self.records, None)
        if first is None:
            raise AdgradError(f'{name}: empty: the first line must name the columns')
        fields, raw, line = first
        if fields is None:  # a plain block: its first line is the header
            head, _, rest = raw.partition(b'\n')
            fields = next(csv.reader([head.decode()], delimiter=self.delimiter), [''])
            if rest:
                self.records = itertools.chain([(None, rest, (line[0] + 1, line[1]))],
                                               self.records)
        super().__init__(name, kind, check_header(name, fields))
        self._arrow = False  # not imported yet

    def read_again(self, first):
        # The blocks are cut alike in both passes (the same reads of the same
        # bytes), so a block is known by its first line and length.
        self.plain = first.plain

    def _records(self):
        try:
            yield from self._unchecked_records()
        except _NotUtf8 as error:
            raise self.not_utf8(self.line, error, self.pending) from None

    def _unchecked_records(self):
        """(fields, raw bytes, line number) per record, honouring quotes; or
        (None, block, (its first line number, the next's)) for a block whose lines are its
        records (no quotes, or only quoted fields each within one line),
        with line breaks made LF."""
        for block in self.blocks:
            block = self.pending + block
            self.pending = b''
            raw = block
            if b'\r' in block:
                block = block.replace(b'\r\n', b'\n').replace(b'\r', b'\n')
            if not block.endswith(b'\n'):
                block += b'\n'
            place = (self.line, len(block))
            breaks = self.plain.get(place)
            if breaks is None:
                if not _lines_are_records(block, self.delimiter):
                    yield from self._quoted(raw, final=self.blocks.eof)
                    # A record still open is read again from its start with the
                    # next block: that block is as long as it, so a field of any
                    # length is read again only as often as its length doubles.
                    self.blocks.at_least = len(self.pending)
                    continue
                breaks = self.plain[place] = _line_breaks(block)
            line = self.line
            self.line += breaks
            yield None, block, (line, self.line)
        if self.pending:
            block, self.pending = self.pending, b''
            yield from self._quoted(block, final=True)

    def _quoted(self, block, final):
        consumed, ended = [], []

        def feed():
            for physical in io.StringIO(block.decode(), newline=''):
                consumed.append(physical)
                yield physical
            if not final:
                raise _MoreNeeded
            ended.append(True)   # the reader met the end of the file inside a record

        reader = csv.reader(feed(), delimiter=self.delimiter)
        try:
            for fields in reader:
                raw = ''.join(consumed)
                line, count = self.line, len(consumed)
                consumed.clear()
                self.line += count
                if ended and _never_closed(raw, self.delimiter):
                    raise self.error(line, 'a quoted field opens here and is never closed '
                                           '(the rest of the file would be its text)')
                raw = raw[:-2] if raw.endswith('\r\n') else \
                    raw[:-1] if raw.endswith(('\r', '\n')) else raw
                yield fields, raw.encode(), line
        except _MoreNeeded:
            self.pending = ''.join(consumed).encode()
        except csv.Error as error:
            raise self.error(self.line, f'not CSV ({error})') from None

    def chunks(self):
        """Chunks of rows; blank lines are skipped."""
        lines, numbers, rows = [], [], []
        for fields, raw, line in self.records:
            if fields is None:  # a block whose lines are its records
                if rows:
                    yield Chunk(self, numbers, lines=lines, rows=rows)
                    lines, numbers, rows = [], [], []
                yield self._plain(raw, line)
                continue
            if _blank(raw):
                continue
            lines.append(raw)
            numbers.append(line)
            rows.append(fields)
            if len(lines) == CHUNK_ROWS:
                yield Chunk(self, numbers, lines=lines, rows=rows)
                lines, numbers, rows = [], [], []
        if lines:
            yield Chunk(self, numbers, lines=lines, rows=rows)

    def _plain(self, block, lines):
        chunk = Chunk(self, range(*lines), block=block)
        # With two or more columns a blank line is checked for only where it
        # matters (see fast_columns): the search is a pass over the block.
        chunk.maybe_blank = len(self.header) > 1 or _maybe_blank(block)
        return chunk

    def arrow(self, chunk):
        if self._arrow is False:
            if len(chunk.block) < _ARROW_BYTES:
                return None  # float() is quicker than importing pyarrow
            self._arrow = _pyarrow_csv()
        return self._arrow

    def fast_columns(self, chunk, wanted, fills):
        """pyarrow's C reader over a block whose lines are its records; None when it cannot
        say exactly (the slow path then names the row to blame)."""
        if chunk.block is None or not len(chunk) or self.arrow(chunk) is None:
            return None
        if chunk.block.startswith(codecs.BOM_UTF8):
            return None  # pyarrow would drop it as a file's byte-order mark: it is the cell's
        if len(self.header) == 1:
            chunk.drop_blank()  # a blank line would read as an empty cell
        import numpy as np
        import pyarrow as pa
        arrow = self._arrow
        names = [f'c{i}' for i in range(len(self.header))]
        picked = {v: names[self.header.index(v)] for v in wanted}
        try:
            # In this thread: pooled tasks that outlive a failed read would
            # release the chunk's Python buffer later, maybe at exit, and
            # taking the GIL as the interpreter ends aborts the process.
            table = arrow.read_csv(
                pa.py_buffer(chunk.block),
                read_options=arrow.ReadOptions(column_names=names, block_size=_ARROW_BLOCK,
                                               use_threads=False),
                parse_options=arrow.ParseOptions(delimiter=self.delimiter,
                                                 quote_char='"' if b'"' in chunk.block else False,
                                                 double_quote=True, escape_char=False,
                                                 newlines_in_values=False,
                                                 ignore_empty_lines=False),
                convert_options=arrow.ConvertOptions(
                    include_columns=list(picked.values()),
                    column_types={c: pa.float64() for c in picked.values()},
                    null_values=[''], strings_can_be_null=False,
                    quoted_strings_can_be_null=False))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        if table.num_rows != len(chunk):
            return None
        out = {}
        for variable, column in picked.items():
            data = table.column(column)
            if data.null_count:
                if variable not in fills:
                    return None
                if chunk.maybe_blank and _maybe_blank(chunk.block):
                    # pyarrow reads a blank line as a row of empty cells, which
                    # the fill would take for a row: without them, read again.
                    chunk.drop_blank()
                    return self.fast_columns(chunk, wanted, fills)
                data = data.fill_null(fills[variable])
            # Straight from Arrow's buffers: to_numpy() would import pandas.
            out[variable] = np.concatenate([
                np.frombuffer(part.buffers()[1], np.float64, len(part), part.offset * 8)
                for part in data.chunks]) if data.num_chunks != 1 else \
                np.frombuffer(data.chunks[0].buffers()[1], np.float64, len(data),
                              data.chunks[0].offset * 8)
        return out


# ---- JSON Lines ----

class JsonlSource(Source):
    def __init__(self, name, stream, header=None):
        super().__init__(name, Format.JSONL, header or [])
        self.blocks = _Blocks(stream, name, breaks=b'\n')

    def chunks(self):
        import orjson
        objects, numbers, line = [], [], 1
        blocks = iter(self.blocks)
        while True:
            try:
                block = next(blocks, None)
            except _NotUtf8 as error:
                raise self.not_utf8(line, error) from None
            if block is None:
                break
            for text in block.decode().split('\n'):
                number, line = line, line + 1
                if text.strip():
                    objects.append(self._object(text, number, orjson))
                    numbers.append(number)
                    if len(objects) == CHUNK_ROWS:
                        yield Chunk(self, numbers, objects=objects)
                        objects, numbers = [], []
            line -= 1  # the block ended with a line break: no line after it yet
        if objects:
            yield Chunk(self, numbers, objects=objects)

    def _object(self, text, number, orjson):
        try:
            row = orjson.loads(text)  # the common case, in C
        except orjson.JSONDecodeError:
            row = self._slow(text, number)
        if not isinstance(row, dict):
            raise self.error(number, 'expected a JSON object')
        if '\\u' in text and _SURROGATE.search(text):
            try:
                json.dumps(row, ensure_ascii=False).encode('utf-8')
            except UnicodeEncodeError:
                raise self.error(number, 'not JSON text (a lone surrogate \\ud800-\\udfff '
                                         'is no character)') from None
        return row

    def _slow(self, text, number):
        """The standard library's reading, for what orjson refuses (integers past
        64 bits), with every failure as one line naming the line."""
        def no_constant(name):
            raise ValueError(f'{name} is not JSON: write the string "{name.lower()[:3]}"'
                             if name != '-Infinity' else
                             '-Infinity is not JSON: write the string "-inf"')
        try:
            return json.loads(text, parse_constant=no_constant)
        except json.JSONDecodeError as error:
            raise self.error(number, f'not JSON ({error.msg})') from None
        except RecursionError:
            raise self.error(number, 'not JSON that adgrad reads (nested too deeply)') from None
        except ValueError as error:  # an integer of over 4,300 digits, or NaN/Infinity
            message = 'an integer of too many digits' if 'digits' in str(error) else str(error)
            raise self.error(number, f'not JSON that adgrad reads ({message})') from None

    def quick(self, cells):
        """JSON numbers (not true or false, nor text) as float64, else a TypeError."""
        import numpy as np
        if not all(type(c) is float or type(c) is int for c in cells):
            raise TypeError
        return np.array(cells, dtype=np.float64)

    def number(self, cell, variable, fills, chunk, i):
        if isinstance(cell, (int, float)) and not isinstance(cell, bool):
            try:
                return float(cell)
            except OverflowError:  # a JSON integer past float64's range
                raise chunk.error(i, f"'{variable}' is {_digits(cell)}, too large for a "
                                     'float64') from None
        if isinstance(cell, str) and cell in _NON_FINITE:
            return _NON_FINITE[cell]  # as adgrad's own JSON writes them
        if cell is None or cell is ABSENT:
            return super().number(cell, variable, fills, chunk, i)
        shown = _shorten(json.dumps(cell, ensure_ascii=False))
        raise chunk.error(i, f"'{variable}' is {shown}, not a number")


def _digits(n):
    text = str(n) if n.bit_length() < 10000 else f'an integer of about {int(n.bit_length() * 0.30103)} digits'
    return _shorten(text)


def _shorten(text, limit=60):
    return text if len(text) <= limit else text[:limit - 1] + '…'


# ---- Parquet ----

class ParquetSource(Source):
    unit = 'row'

    def __init__(self, name, path):
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise AdgradError(f"{name}: reading Parquet needs pyarrow, adgrad's "
                              "parquet extra: pip install pyarrow") from None
        try:
            self.file = pq.ParquetFile(path)
        except Exception as error:  # pyarrow's errors: not a Parquet file, truncated...
            raise AdgradError(f'cannot read {name}: {first_line(error)}') from None
        super().__init__(name, Format.PARQUET, check_header(name, self.file.schema_arrow.names))

    def chunks(self):
        row = 1
        self.batches = self.file.iter_batches(batch_size=CHUNK_ROWS)
        try:
            for batch in self.batches:
                yield Chunk(self, range(row, row + batch.num_rows), table=batch)
                row += batch.num_rows
        except OSError as error:
            raise AdgradError(f'cannot read {self.name}: {first_line(error)}') from None

    def close(self):
        """The batch reader, then the file: now, in this thread, not whenever
        an error's traceback lets go of them."""
        batches, self.batches = getattr(self, 'batches', None), None
        if batches is not None:
            batches.close()
        self.file.close()


def _table_columns(source, chunk, wanted, fills):
    """Columns of a pyarrow batch (a Parquet file's): numbers cast
    to float64, text read by Arrow's own parser; None when a cell needs a
    closer look (the per-cell path then names it)."""
    import numpy as np
    import pyarrow as pa
    out = {}
    for variable in wanted:
        data = chunk.table.column(source.header.index(variable))
        kind = data.type
        if not (pa.types.is_floating(kind) or pa.types.is_integer(kind)
                or pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            return None
        if kind != pa.float64():   # (pyarrow.compute is imported only to cast: it is large)
            import pyarrow.compute as pc
            try:
                data = pc.cast(data, pa.float64(), safe=False)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                return None
        if data.null_count:
            if variable not in fills:
                return None
            data = data.fill_null(fills[variable])
        out[variable] = np.frombuffer(data.buffers()[1], np.float64, len(data), data.offset * 8)
    return out


# ---- opening ----

def open_points(stream, name, path=None):
    """A Source over a binary stream (or a Parquet file at `path`): the kind
    is told by the name's ending, else by the first character ('{' for
    JSON Lines) or the header (a tab and no comma for TSV)."""
    csv.field_size_limit(sys.maxsize if sys.maxsize < 2 ** 63 else 2 ** 63 - 1)
    if name.endswith(('.parquet', '.pq')):
        return ParquetSource(name, path)
    if name.endswith(('.jsonl', '.ndjson', '.json')):
        return JsonlSource(name, stream)
    head, stream = _head(stream)
    if head.startswith(b'PAR1'):   # Parquet's magic number: a file read by its ending only
        raise AdgradError(f'{name} is Parquet, which adgrad reads from a file whose name ends '
                          'in .parquet' + (' (not from standard input)' if path is None else ''))
    if head.lstrip(b'\xef\xbb\xbf \t\r\n').startswith(b'{'):
        return JsonlSource(name, stream)
    first = re.split(rb'\r\n|\r|\n', head, maxsplit=1)[0]
    kind = Format.TSV if name.endswith('.tsv') or (b'\t' in first and b',' not in first) else \
        Format.CSV
    return CsvSource(name, kind, stream)


def _head(stream):
    """The first bytes, up to a line break, and a stream that reads them again."""
    read = getattr(stream, 'read1', stream.read)
    head = b''
    while not (b'\n' in head or b'\r' in head) and len(head) < 1 << 20:
        more = read(65536)
        if not more:
            break
        head += more
    return head, _Prefixed(head, stream)


class _Prefixed:
    def __init__(self, head, stream):
        self.head, self.stream = head, stream

    def read(self, n):
        if self.head:
            head, self.head = self.head, b''
            return head
        return self.stream.read(n)
