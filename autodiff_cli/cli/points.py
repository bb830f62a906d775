"""Reading a batch of points: CSV (or TSV) with a header, or JSON Lines.

The whole file is read and checked before anything is computed or written,
so a bad row stops the run with nothing on stdout. A clean CSV file takes a
fast path (NumPy's C reader on the variable columns, and its lines echoed
as they are); any irregularity falls back to the csv module, row by row,
which finds the line to blame.
"""

import csv
import json
import math
import operator
import re

from ..errors import AdgradError

# A key that a JSON object lacks: empty in CSV, left out again in JSON Lines.
ABSENT = type('Absent', (), {'__repr__': lambda self: 'ABSENT'})()

_NON_FINITE = {'inf': math.inf, '-inf': -math.inf, 'nan': math.nan}


_BLANK_LINE = re.compile(r'\n[ \t\f\v\r]*\n')


class Points:
    def __init__(self, name, kind, header, lines=None, numbers=None, objects=None):
        self.name = name          # for messages: the path, or <stdin>
        self.kind = kind          # 'csv', 'tsv' or 'jsonl'
        self.header = header      # column names
        self.lines = lines        # CSV/TSV: the data lines as they were (blank lines dropped)
        self._numbers = numbers   # each row's line number in the file, or None: row i is line i + 2
        self.objects = objects    # JSON Lines: one dict per row
        self._rows = None

    @property
    def numbers(self):
        return self._numbers or range(2, len(self) + 2)

    @property
    def delimiter(self):
        return '\t' if self.kind == 'tsv' else ','

    def __len__(self):
        return len(self.objects if self.kind == 'jsonl' else self.lines)

    def rows(self):
        """Each row as a list of cells, one per header column."""
        if self.kind == 'jsonl':
            return [[row.get(k, ABSENT) for k in self.header] for row in self.objects]
        if self._rows is None:
            self._rows = list(csv.reader(self.lines, delimiter=self.delimiter))
            width = len(self.header)
            for row, number in zip(self._rows, self.numbers):
                if len(row) != width:
                    raise self.error(number, f'{len(row)} fields where the header has {width}')
        return self._rows

    def error(self, line, message):
        return AdgradError(f'{self.name}: line {line}: {message}')


def read_points(text, name):
    lines = text.splitlines()
    if name.endswith(('.jsonl', '.ndjson', '.json')) or text.lstrip().startswith('{'):
        return _read_jsonl(lines, name)
    first = lines[0] if lines else ''
    kind = 'tsv' if name.endswith('.tsv') or ('\t' in first and ',' not in first) else 'csv'
    header = next(csv.reader(lines[:1], delimiter='\t' if kind == 'tsv' else ','), None)
    if not header:
        raise AdgradError(f'{name}: empty: the first line must name the columns')
    header = [c.strip() for c in header]
    twice = [c for i, c in enumerate(header) if c in header[:i]]
    if twice:
        raise AdgradError(f"{name}: line 1: the column '{twice[0]}' appears twice")
    if not _BLANK_LINE.search(text) and lines[-1].strip():
        return Points(name, kind, header, lines[1:])  # the common case: no loop in Python
    numbered = [(n, line) for n, line in enumerate(lines[1:], 2) if line.strip()]
    return Points(name, kind, header, [line for _, line in numbered], [n for n, _ in numbered])


def _read_jsonl(lines, name):
    objects = []
    for number, line in enumerate(lines, 1):
        if line.strip():
            try:
                row = json.loads(line)
            except ValueError as error:
                raise AdgradError(f'{name}: line {number}: not JSON ({error.msg})') from None
            if not isinstance(row, dict):
                raise AdgradError(f'{name}: line {number}: expected a JSON object')
            objects.append(row)
    header = list(dict.fromkeys(key for row in objects for key in row))
    return Points(name, 'jsonl', header, objects=objects,
                  numbers=[n for n, line in enumerate(lines, 1) if line.strip()])


def columns(points, names, fills):
    """{variable: float64 array} for the variables the points provide.

    A variable missing from the header (or from every JSON object) is left
    out: the caller fills it from bindings and defaults. A cell left empty
    (or a key a JSON object lacks) takes its value from `fills` too, and
    without one it is an error naming its line.
    """
    wanted = [n for n in names if n in points.header]
    if points.kind != 'jsonl' and wanted:
        fast = _fast_columns(points, wanted)
        if fast is not None:
            return fast
    rows = points.rows()
    out = {}
    for variable in wanted:
        index = points.header.index(variable)
        out[variable] = [_number(row[index], variable, fills, points, number)
                         for row, number in zip(rows, points.numbers)]
    import numpy as np
    return {k: np.array(v, dtype=np.float64) for k, v in out.items()}


def _fast_columns(points, wanted):
    """NumPy's C reader, when the file is plain: no quotes, every row as wide as the header."""
    import numpy as np
    counts = set(map(operator.methodcaller('count', points.delimiter), points.lines))
    if counts != {len(points.header) - 1} or any('"' in line for line in points.lines):
        return None
    indices = [points.header.index(v) for v in wanted]
    try:
        table = np.loadtxt(points.lines, delimiter=points.delimiter, usecols=indices,
                           dtype=np.float64, ndmin=2, comments=None)
    except ValueError:
        return None
    return {v: np.ascontiguousarray(table[:, i]) for i, v in enumerate(wanted)}


def _number(cell, variable, fills, points, line):
    if isinstance(cell, (int, float)) and not isinstance(cell, bool):
        try:
            return float(cell)
        except OverflowError:  # a JSON integer past float64's range
            raise points.error(line, f"'{variable}' is {cell}, too large for a float64") from None
    if cell is None or cell is ABSENT or (isinstance(cell, str) and cell.strip() == ''):
        if variable in fills:
            return fills[variable]
        raise points.error(line, f"no value for '{variable}'")
    if isinstance(cell, str):
        if points.kind == 'jsonl' and cell in _NON_FINITE:
            return _NON_FINITE[cell]  # as adgrad's own JSON writes them
        if points.kind != 'jsonl':
            try:
                return float(cell)
            except ValueError:
                pass
    raise points.error(line, f"'{variable}' is {cell!r}, not a number")
