"""JSON and JSON Lines rows a column at a time, in C: the bytes that
writers.JsonRows writes row by row, for the chunks Arrow can take (a CSV or
TSV block that pyarrow reads, a Parquet batch of numbers and text). Each
input column is spelt as _json_cell or _json_value would spell its cells,
each computed column by orjson in one call, and Arrow joins keys and values
row by row.
"""

from ..core.numbers import number
from .writers import (
    _JSON_NUMBER,
    JsonArrayRows,
    JsonRows,
    _json_cell,
    binary_array,
    bool_array,
)


class _Columns:
    """The column path, shared by JSON Lines and JSON: the input cells are
    spelt in the chunk's own thread (prepare), while the writer's thread
    spells and joins the chunk before it (Arrow lets go of Python's lock)."""

    def prepare(self, chunk, computed):
        chunk.drop_blank()
        return [input_texts(chunk)]

    def _columns(self, chunk, computed, prepared):
        columns = input_texts(chunk) if prepared is None else prepared[0]
        return None if columns is None else objects(self, chunk, computed, columns)


class JsonLines(_Columns, JsonRows):
    pass


class JsonArray(_Columns, JsonArrayRows):
    pass


def input_texts(chunk):
    """Each input column's cells as JSON text, for a CSV or TSV block that
    pyarrow reads or a Parquet batch of numbers and text without nulls;
    None where it cannot (the rows are then written one by one)."""
    if chunk.table is not None:
        return _table_json(chunk.table)
    if chunk.block is None or not len(chunk) or chunk.source.arrow(chunk) is None:
        return None
    chunk.drop_blank()
    if chunk.block.startswith(b'\xef\xbb\xbf'):
        return None
    cells = _text_columns(chunk)
    if cells is None:
        return None
    # Every column end to end, as one array: each step of Arrow's is then
    # one call for all of them.
    n = len(chunk)
    texts = _json_cells(cells)
    return [texts.slice(i * n, n) for i in range(len(cells))]


def objects(rows, chunk, computed, columns):
    """The chunk's objects, from its input columns' JSON text (input_texts)."""
    import numpy as np
    import pyarrow as pa
    n = len(chunk)
    columns = list(columns)
    from pyarrow import _compute
    numbers = _json_floats(np.concatenate(computed)) if computed else None
    columns += [numbers.slice(i * n, n) for i in range(len(computed))]
    pieces = []
    for key, column in zip(rows.keys, columns):
        pieces += [pa.scalar(key, pa.binary()), column]
    pieces.append(pa.scalar(b'}' + rows.between, pa.binary()))
    joined = _compute.call_function('binary_join_element_wise',
                                    [*pieces, pa.scalar(b'', pa.binary())])
    return _data(joined)


def _table_json(table):
    """A Parquet batch's columns as _json_value writes their cells: floats
    and integers as numbers (inf and nan as strings), text as strings; None
    for a null, or a column of any other type."""
    import numpy as np
    import pyarrow as pa
    from pyarrow import _compute as _c
    out = []
    for column in table.columns:
        kind = column.type
        if column.null_count:
            return None
        if pa.types.is_float64(kind) or pa.types.is_int64(kind):
            floating = pa.types.is_float64(kind)
            values = np.frombuffer(column.buffers()[1], np.float64 if floating else np.int64,
                                   len(column), column.offset)
            out.append(_json_floats(values) if floating else _number_texts(values))
        elif pa.types.is_string(kind):
            text = _c.call_function('cast', [column], _c.CastOptions(pa.binary()))
            out.append(_json_strings(text))
        else:
            return None
    return out


def _json_strings(column):
    """Text as JSON strings, as orjson writes them."""
    import numpy as np
    import orjson
    from pyarrow import _compute as _c
    call = _c.call_function
    escaped = call('replace_substring', [call('replace_substring', [column],
                                              _c.ReplaceSubstringOptions('\\', '\\\\'))],
                   _c.ReplaceSubstringOptions('"', '\\"'))
    out = _joined(_bytes(b'"'), escaped, _bytes(b'"'))
    odd = np.flatnonzero(_flags(call('match_substring_regex', [column],
                                     _c.MatchSubstringOptions(_CONTROL))))
    if len(odd):
        mask = np.zeros(len(column), bool)
        mask[odd] = True
        cells = call('take', [column, _int_array(odd)]).to_pylist()
        out = call('replace_with_mask', [out, bool_array(mask),
                                         binary_array([orjson.dumps(c.decode()) for c in cells])])
    return out


def _data(array):
    """A binary array's bytes, end to end."""
    import numpy as np
    offsets = np.frombuffer(array.buffers()[1], np.int32, len(array) + 1, array.offset)
    return memoryview(array.buffers()[2])[offsets[0]:offsets[-1]].tobytes()


def _text_columns(chunk):
    """Every column of a plain CSV or TSV block as Arrow text, as the csv
    module reads its cells; None where pyarrow reads it otherwise."""
    import pyarrow as pa
    arrow = chunk.source.arrow(chunk)
    header = chunk.source.header
    names = [f'c{i}' for i in range(len(header))]
    try:
        # In this thread, as sources.fast_columns reads: pooled tasks that
        # outlive a failed read could release the chunk's buffer at exit.
        table = arrow.read_csv(
            pa.py_buffer(chunk.block),
            read_options=arrow.ReadOptions(column_names=names, block_size=1 << 20,
                                           use_threads=False),
            parse_options=arrow.ParseOptions(delimiter=chunk.source.delimiter,
                                             quote_char='"' if b'"' in chunk.block else False,
                                             double_quote=True, escape_char=False,
                                             newlines_in_values=False, ignore_empty_lines=False),
            convert_options=arrow.ConvertOptions(column_types={c: pa.binary() for c in names},
                                                 null_values=[], strings_can_be_null=False,
                                                 quoted_strings_can_be_null=False))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if table.num_rows != len(chunk):
        return None
    return [table.column(i).combine_chunks() for i in range(len(names))]


_JSON_NUMBER_RE2 = '^' + _JSON_NUMBER.pattern + '$'
_CONTROL = r'[\x00-\x1f]'   # what JSON escapes in a string, besides " and \\


def _json_cells(columns):
    """_json_cell's value of each text cell, as orjson writes it, for the
    columns end to end: a number where the text is the float's own digits
    (give or take trailing zeros), else a string; the few cells in between
    (1e-400, '-0', a control character) one by one."""
    import numpy as np
    import pyarrow as pa
    from pyarrow import _compute as _c
    call = _c.call_function
    floats, numbers = [], []
    for column in columns:
        try:   # a column of numbers, the common case, without a regular expression
            values = call('cast', [column], _c.CastOptions(pa.float64()))
            number = np.ones(len(column), bool)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            number = _flags(call('match_substring_regex', [column],
                                 _c.MatchSubstringOptions(_JSON_NUMBER_RE2)))
            values = call('cast', [call('if_else', [bool_array(number), column, _bytes(b'0')])],
                          _c.CastOptions(pa.float64()))
        floats.append(np.frombuffer(values.buffers()[1], np.float64, len(values), values.offset))
        numbers.append(number)
    column = pa.concat_arrays(columns)
    floats, number = np.concatenate(floats), np.concatenate(numbers)
    spelt = _float_texts(floats)
    exact = _flags(call('equal', [column, spelt])) & np.isfinite(floats) & number
    rest = np.flatnonzero(~exact)
    if len(rest):   # an integer, '2', is the number 2.0: no regular expression for it
        indices = _int_array(rest)
        whole = _flags(call('equal', [_joined(call('take', [column, indices]), _bytes(b'.0')),
                                      call('take', [spelt, indices])])) & np.isfinite(floats[rest])
        rest = rest[~whole]
    if not len(rest):
        return spelt
    indices = _int_array(rest)
    mask = np.zeros(len(column), bool)
    mask[rest] = True
    return call('replace_with_mask', [spelt, bool_array(mask),
                                      _json_rest(call('take', [column, indices]),
                                                 floats[rest], call('take', [spelt, indices]))])


def _json_rest(column, floats, spelt):
    """_json_cells for the cells that are not a float's own spelling."""
    import numpy as np
    import orjson
    from pyarrow import _compute as _c
    call = _c.call_function
    number = _flags(call('match_substring_regex', [column],
                         _c.MatchSubstringOptions(_JSON_NUMBER_RE2)))
    # '2.50' is the number 2.5 as written, '2.000' is 2.0.
    short = call('replace_substring_regex', [column],
                 _c.ReplaceSubstringOptions(r'^(-?[0-9]+\.[0-9]*?)0+$', r'\1'))
    exact = _flags(call('or', [call('equal', [short, spelt]),
                               call('equal', [_joined(short, _bytes(b'0')), spelt])]))
    exact &= number & np.isfinite(floats)
    # Text of a number in repr's own spelling (1e-05, where orjson writes 0.00001).
    maybe = np.flatnonzero(number & ~exact & np.isfinite(floats))
    if len(maybe):
        texts = call('take', [column, _int_array(maybe)]).to_pylist()
        exact[maybe[np.array([repr(f).encode() == t for f, t in zip(floats[maybe].tolist(), texts)],
                             bool)]] = True
    plain = ~number & ~_flags(call('match_substring_regex', [column],
                                   _c.MatchSubstringOptions(_CONTROL)))
    escaped = call('replace_substring', [call('replace_substring', [column],
                                              _c.ReplaceSubstringOptions('\\', '\\\\'))],
                   _c.ReplaceSubstringOptions('"', '\\"'))
    out = call('if_else', [bool_array(exact), spelt, _joined(_bytes(b'"'), escaped, _bytes(b'"'))])
    odd = np.flatnonzero(~(exact | plain))
    if len(odd):
        mask = np.zeros(len(column), bool)
        mask[odd] = True
        cells = call('take', [column, _int_array(odd)]).to_pylist()
        texts = [orjson.dumps(_json_cell(cell.decode())) for cell in cells]
        out = call('replace_with_mask', [out, bool_array(mask), binary_array(texts)])
    return out


def _bytes(data):
    import pyarrow as pa
    return pa.scalar(data, pa.binary())


def _joined(*parts):
    """Arrow's join of binary arrays (or scalars) element by element."""
    from pyarrow import _compute
    return _compute.call_function('binary_join_element_wise', [*parts, _bytes(b'')])


def _int_array(indices):
    import numpy as np
    import pyarrow as pa
    indices = np.ascontiguousarray(indices, np.int64)
    return pa.Array.from_buffers(pa.int64(), len(indices), [None, pa.py_buffer(indices)])


def _flags(array):
    """A boolean Arrow array (no nulls) as NumPy bools, from its bits."""
    import numpy as np
    bits = np.unpackbits(np.frombuffer(array.buffers()[1], np.uint8), bitorder='little')
    return bits[array.offset:array.offset + len(array)].astype(bool)


def _float_texts(floats):
    """Each float as orjson writes a Python float: null where not finite."""
    import numpy as np
    return _number_texts(np.ascontiguousarray(floats, np.float64))


def _number_texts(values):
    """Each of a NumPy array's numbers as orjson writes it, as an Arrow array."""
    import numpy as np
    import orjson
    import pyarrow as pa
    n = len(values)
    text = orjson.dumps(np.ascontiguousarray(values), option=orjson.OPT_SERIALIZE_NUMPY)
    offsets = np.empty(n + 1, np.int32)
    offsets[0] = 0
    # the k-th comma ends the k-th number, less the k commas before it and the '['
    offsets[1:n] = np.flatnonzero(np.frombuffer(text, np.uint8) == ord(',')) - np.arange(1, n)
    offsets[n] = len(text) - 1 - n
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets),
                                                  pa.py_buffer(text[1:-1].replace(b',', b''))])


def _json_floats(column):
    """A computed column as _json_number writes it: inf, -inf and nan as strings."""
    import numpy as np
    spelt = _float_texts(column)
    odd = np.flatnonzero(~np.isfinite(column))
    if not len(odd):
        return spelt
    from pyarrow import _compute
    mask = np.zeros(len(column), bool)
    mask[odd] = True
    fixed = binary_array([b'"' + number(float(column[i])).encode() + b'"' for i in odd])
    return _compute.call_function('replace_with_mask', [spelt, bool_array(mask), fixed])
