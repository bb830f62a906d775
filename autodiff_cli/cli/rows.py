"""Rows out: input cells followed by computed columns, in CSV, TSV, JSON Lines,
JSON or a table; numbers in shortest round-trip form."""

import json
import math

from .points import ABSENT

_CHUNK = 65536  # rows formatted at a time: bounds memory, paces the progress bar


def number(x):
    return repr(float(x))


def _json_number(x):
    return x if math.isfinite(x) else number(x)


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


def _json_cell(x):
    """A cell read from CSV or TSV as a JSON value: text that is a number becomes one."""
    try:
        return _json_number(float(x))
    except (TypeError, ValueError):
        return x


def _shortest(column):
    """Shortest round-trip texts of a float64 array, as str.

    orjson writes floats with Ryu, several times faster than repr() on full
    17-digit values (the bulk of a batch's output); it writes 0.00001 where
    repr writes 1e-05, the same number. It writes no inf or nan: those are
    patched in with repr.
    """
    import numpy as np
    import orjson
    texts = orjson.dumps(column, option=orjson.OPT_SERIALIZE_NUMPY)[1:-1].decode().split(',')
    for i in np.flatnonzero(~np.isfinite(column)):
        texts[i] = repr(float(column[i]))
    return texts


def write_rows(fmt, header, rows, computed, file, advance=None, echo=None, cells_are_text=True):
    """Rows of input cells followed by computed columns, in a row format.

    `rows` holds lists of cells, one per header name before the computed
    ones, and `computed` one float64 array per computed column. `echo`, the
    rows' original CSV/TSV lines in this very format, is copied as it is
    rather than parsed and quoted again.
    """
    import csv
    count = len(rows) if echo is None else len(echo)
    delimiter = ',' if fmt == 'csv' else '\t'
    if fmt == 'table':
        return _rows_table(header, rows, computed, file)
    if fmt in ('csv', 'tsv', 'plain'):
        writer = csv.writer(file, delimiter=delimiter, lineterminator='\n')
        writer.writerow(header)
    elif fmt == 'json':
        file.write('[')
    for start in range(0, count, _CHUNK):
        stop = min(start + _CHUNK, count)
        if fmt in ('csv', 'tsv', 'plain'):
            texts = [_shortest(column[start:stop]) for column in computed]
        if fmt in ('csv', 'tsv', 'plain') and echo is not None:
            file.write('\n'.join(map(delimiter.join, zip(echo[start:stop], *texts))) + '\n')
        elif fmt in ('csv', 'tsv', 'plain'):
            writer.writerows([*map(_cell, rows[i]), *(t[i - start] for t in texts)]
                             for i in range(start, stop))
        else:
            import orjson
            numbers = [column[start:stop].tolist() for column in computed]
            as_json = _json_cell if cells_are_text else _json_value
            objects = [orjson.dumps({k: v for k, v in zip(header, [
                *map(as_json, rows[i]), *(_json_number(n[i - start]) for n in numbers)])
                if v is not ABSENT}).decode() for i in range(start, stop)]
            if fmt == 'jsonl':
                file.write('\n'.join(objects) + '\n')
            else:
                file.write((',\n' if start else '\n') + ',\n'.join(objects))
        if advance:
            advance(stop - start)
    if fmt == 'json':
        file.write('\n]\n')


def _rows_table(header, rows, computed, file):
    from rich.console import Console
    from rich.table import Table
    table = Table()
    for i, name in enumerate(header):
        table.add_column(name, justify='right')
    for i, cells in enumerate(rows):
        table.add_row(*[_cell(c) for c in cells], *[number(col[i]) for col in computed])
    Console(file=file).print(table)
