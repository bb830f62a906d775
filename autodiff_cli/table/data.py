"""A data set, read whole: each column a program's variable names, as a vector
of every row's value (`--data FILE`). Columns named x[0], x[1], … x[K-1]
bind x as a matrix of a row per data row, K wide (pixels, one-hot labels).

The reader is the points' own (sources.py): CSV, TSV, JSON Lines or Parquet,
or standard input, with the same errors. Memory is 8 bytes per row per column
used, held at once, unlike `--points`, which streams.
"""

import re
import sys

from ..errors import UsageError
from .formats import Format
from .input import Input


def read_data(path, names, stdin=None):
    """{name: float64 vector, or matrix for x[k] columns} for each of `names`
    that the data set at `path` ('-' for standard input) has; a UsageError
    if it has none."""
    import numpy as np
    parts, rows, header = _parts(path, names, stdin)
    if rows == 0:   # before the columns: with no row, none is read
        raise UsageError(f'{path} has no rows')
    if not parts:
        shown = ', '.join(repr(c) for c in header[:8]) + (', ...' if len(header) > 8 else '')
        raise UsageError(f'none of the columns of {path} is a variable of the program '
                         f'(theirs: {shown or "none"})')
    columns = {column: np.concatenate(parts.pop(column)) for column in list(parts)}
    _give_back_reader_memory()   # the source, its chunks and their parts are gone
    return _grouped(columns, names, path)


def _parts(path, names, stdin):
    """({column: its chunks' values}, rows, header) of the data set at `path`."""
    parts = {}
    with Input(path, stdin) as source_input:
        source = source_input.points()
        rows = 0
        for chunk in source.chunks():
            if source.kind == Format.JSONL and not source.header:
                keys = dict.fromkeys(k for row in chunk.objects for k in row)
            else:
                keys = source.header
            for column in keys:
                if column not in parts and _variable(column, names) is not None:
                    if rows:   # a key JSON Lines gives first after some rows
                        raise chunk.error(0, f"'{column}' first appears here; every row of "
                                             '--data must give it')
                    parts[column] = []
            for column, values in chunk.columns(list(parts), {}).items():
                parts[column].append(values)
            rows += len(chunk)
        return parts, rows, list(source.header or parts)


def _give_back_reader_memory():
    """pyarrow's allocator keeps what its reader freed, for reuse (for Parquet,
    several times the data read); a data set is read once, so that goes back
    to the system before the pass, whose peak would sit on top of it."""
    arrow = sys.modules.get('pyarrow')
    if arrow is not None:
        arrow.default_memory_pool().release_unused()


_INDEX = re.compile(r'(?:0|[1-9][0-9]*)\]')   # ASCII digits: int() would take others


def _variable(column, names):
    """The variable a column binds: its own name, or x for x[3]; else None."""
    if column in names:
        return column
    name, bracket, rest = column.partition('[')
    if bracket and name in names:
        if not _INDEX.fullmatch(rest):
            raise UsageError(f"a column named '{column}': the entries of '{name}' are named "
                             f'{name}[0], {name}[1], … (no sign, no leading zero)')
        return name
    return None


def _grouped(columns, names, path):
    """The columns by variable: x[0] … x[K-1] stacked as a matrix, K wide."""
    import numpy as np
    result, entries = {}, {}
    for column, values in columns.items():
        name = _variable(column, names)
        if name == column:
            result[name] = values
        else:
            entries.setdefault(name, {})[int(column[len(name) + 1:-1])] = values
    for name, by_index in entries.items():
        if name in result:
            raise UsageError(f"{path} has both a column '{name}' and columns '{name}[k]'")
        missing = next((k for k in range(len(by_index)) if k not in by_index), None)
        if missing is not None:
            raise UsageError(f"{path} has columns {name}[0] to {name}[{max(by_index)}] but no "
                             f"'{name}[{missing}]'")
        result[name] = np.stack([by_index[k] for k in range(len(by_index))], axis=1)
    return result
