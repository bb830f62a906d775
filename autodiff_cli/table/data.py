"""A data set, read whole: each column a program's variable names, as a vector
of every row's value (`--data FILE`).

The reader is the points' own (sources.py): CSV, TSV, JSON Lines or Parquet,
or standard input, with the same errors. Memory is 8 bytes per row per column
used, held at once, unlike `--points`, which streams.
"""

from ..errors import UsageError
from .input import Input
from .formats import Format


def read_data(path, names, stdin=None):
    """{name: float64 vector} for each of `names` that is a column of the data
    set at `path` ('-' for standard input); a UsageError if none is."""
    import numpy as np
    parts = {}
    with Input(path, stdin) as source_input:
        source = source_input.points()
        rows = 0
        for chunk in source.chunks():
            if source.kind == Format.JSONL and not source.header:
                keys = dict.fromkeys(k for row in chunk.objects for k in row)
                wanted = [n for n in names if n in keys or n in parts]
            else:
                wanted = [n for n in names if n in source.header]
            for name in wanted:
                if name not in parts:
                    if rows:   # a key JSON Lines gives first after some rows
                        raise chunk.error(0, f"'{name}' first appears here; every row of "
                                             '--data must give it')
                    parts[name] = []
            columns = chunk.columns(list(parts), {})
            for name, column in columns.items():
                parts[name].append(column)
            rows += len(chunk)
        header = list(source.header or parts)
    if not parts:
        shown = ', '.join(repr(c) for c in header[:8]) + (', ...' if len(header) > 8 else '')
        raise UsageError(f'none of the columns of {path} is a variable of the program '
                         f'(theirs: {shown or "none"})')
    if rows == 0:
        raise UsageError(f'{path} has no rows')
    return {name: np.concatenate(column) for name, column in parts.items()}
