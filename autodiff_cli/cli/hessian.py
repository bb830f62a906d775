"""`adgrad hessian`: the matrix of second derivatives at a point, or one
flattened row per point of a points file."""

import argparse

from ..errors import UsageError
from .common import Exit, input_values, load, read_text
from .diff import variables
from .evaluate import add_input
from .output import Format, json_number, number

FORMATS = (Format.TABLE, Format.PLAIN, Format.JSON, Format.JSONL, Format.CSV, Format.TSV)

EXAMPLES = """examples:
  adgrad hessian 'x^3*y + sin(x*y)' x=0.7 y=-1.3
  adgrad hessian -f samples/logistic.ad --wrt w1,w2,b --json
  adgrad hessian 'x*y^2' --points points.csv          # one row per point: d2_x_x, d2_x_y, ...

Rows and columns follow --wrt (default: every variable, sorted by name)."""


def add_arguments(parser, command):
    parser.usage = 'adgrad hessian [options] (EXPR | -f FILE) [NAME=VALUE ...]'
    parser.epilog = EXAMPLES
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    add_input(parser)
    parser.add_argument('--wrt', metavar='X,Y', help='rows and columns for these variables')
    parser.add_argument('--format', type=Format.parse, choices=FORMATS, default=None,
                        help='table on a terminal, plain (tab-separated) otherwise; json, jsonl, '
                             'csv, tsv (with --points: the points file\'s format by default)')
    parser.add_argument('--json', dest='format', action='store_const', const=Format.JSON,
                        help='same as --format json')
    parser.add_argument('--points', metavar='FILE',
                        help='a Hessian at every row of FILE (CSV, TSV or JSON Lines whose '
                             "names are the variables; '-' is standard input), one row each")


def _float(value):
    try:
        return float(value)
    except (ValueError, TypeError):
        return None    # a label: not a variable


_JSON_NON_FINITE = {'inf': float('inf'), '-inf': float('-inf'), 'nan': float('nan')}


def _json_float(value):
    """A JSON number, or inf/-inf/nan spelled as adgrad's own JSON writes them;
    None for anything else (true is no number, "1" is a label)."""
    if isinstance(value, str):
        return _JSON_NON_FINITE.get(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)   # OverflowError past float64's range: the caller says where


def _json_object(line, where):
    """One JSON Lines object, every failure a one-line UsageError naming the line."""
    import json

    def no_constant(name):
        raise ValueError(f'{name} is not JSON')
    try:
        row = json.loads(line, parse_constant=no_constant)
        json.dumps([row], ensure_ascii=False).encode('utf-8')   # no lone surrogate; one level
        # more than the row has, as the output's list of rows will
    except RecursionError:
        raise UsageError(f'{where}: not JSON that adgrad reads (nested too deeply)') from None
    except UnicodeEncodeError:
        raise UsageError(f'{where}: not JSON text (a lone surrogate is no character)') from None
    except ValueError as error:   # bad JSON, NaN/Infinity, an integer of over 4,300 digits
        why = 'an integer of too many digits' if 'digits' in str(error) else \
            str(error).splitlines()[0][:200]
        raise UsageError(f'{where}: not JSON that adgrad reads ({why})') from None
    if not isinstance(row, dict):
        raise UsageError(f'{where}: not a JSON object')
    numbers = {}
    for key, value in row.items():
        try:
            number_ = _json_float(value)
        except OverflowError:
            raise UsageError(f"{where}: '{key[:60]}' is too large for a float64") from None
        if number_ is not None:
            numbers[key] = number_
    return row, numbers


def read_points(path, stdin):
    """(kind, rows) from CSV, TSV or JSON Lines, read whole: kind is Format.CSV,
    TSV or JSONL, and each row is (cells, numbers): its columns as they were
    (text, or JSON values) and {name: float} for those that are numbers."""
    import csv
    import io
    import sys
    text = read_text(path, stdin)
    name = '<stdin>' if path == '-' else path
    if path.endswith('.jsonl') or text.lstrip().startswith('{'):
        # Lines end at \n alone: JSON text may hold a raw U+2028 or NEL in a string.
        return Format.JSONL, [_json_object(line, f'{name}, line {number_}')
                              for number_, line in enumerate(text.split('\n'), 1) if line.strip()]
    delimiter = '\t' if path.endswith('.tsv') or '\t' in text.split('\n', 1)[0] else ','
    # Quoting honoured, rows split only at CR, LF or CRLF, fields of any length.
    csv.field_size_limit(sys.maxsize if sys.maxsize < 2 ** 63 else 2 ** 63 - 1)
    reader = csv.reader(io.StringIO(text, newline=''), delimiter=delimiter)
    try:
        records = [(reader.line_num, r) for r in reader if r]
    except csv.Error as error:
        raise UsageError(f'{name}, line {reader.line_num}: {error}') from None
    if not records:
        raise UsageError(f'{name} has no header')
    header, rows = records[0][1], []
    for number_, record in records[1:]:
        if len(record) != len(header):
            raise UsageError(f'{name}, line {number_}: {len(record)} fields, the header has '
                             f'{len(header)}')
        cells = dict(zip(header, record))
        rows.append((cells, {column: _float(cell) for column, cell in cells.items()
                             if _float(cell) is not None}))
    return (Format.CSV if delimiter == ',' else Format.TSV), rows


def point_inputs(graph, bindings, rows, path):
    """Each row's inputs: the row's numbers over the bindings over the defaults."""
    for i, (_, row) in enumerate(rows):
        inputs = dict(graph.defaults)
        inputs.update({k: v for k, v in bindings.items() if k in graph.inputs})
        inputs.update({k: v for k, v in row.items() if k in graph.inputs})
        missing = [n for n in graph.inputs if n not in inputs]
        if missing:
            raise UsageError(f"row {i + 1} of {path} has no value for '{missing[0]}'")
        yield inputs


def run(args, env):
    from ..core.passes import require_inputs
    from ..derive.hessian import gradient_graph, hessian

    fmt = args.format or (Format.TABLE if env.stdout_isatty else Format.PLAIN)
    graph, bindings = load(args, env)
    names = variables(graph, args.wrt, 'differentiate')
    prepared = gradient_graph(graph, names)
    if args.points is None:
        inputs = input_values(graph, bindings, env.warn)
        require_inputs(graph, inputs)   # pointing into the program, not the gradient's graph
        matrix = hessian(graph, inputs, names, prepared)
        env.stdout.write(_matrix_text(matrix, names, fmt, env))
        return Exit.OK
    kind, rows = read_points(args.points, env.stdin)
    if args.format is None:      # CSV in gives CSV out, as batches do
        fmt = kind
    elif fmt == Format.PLAIN:
        fmt = Format.TSV
    columns = [f'd2_{a}_{b}' for a in names for b in names]
    header = list(dict.fromkeys(key for cells, _ in rows for key in cells))
    clash = [c for c in columns if c in header]
    if clash:
        where = '<stdin>' if args.points == '-' else args.points
        raise UsageError(f"{where} has a column '{clash[0]}', which the output adds; rename it")
    results = []
    for (cells, _), inputs in zip(rows, list(point_inputs(graph, bindings, rows, args.points))):
        matrix = hessian(graph, inputs, names, prepared)
        results.append((cells, [v for line in matrix for v in line]))
    env.stdout.write(_rows_text(results, header, columns, fmt, kind, env))
    return Exit.OK


def _matrix_text(matrix, names, fmt, env):
    if fmt in (Format.JSON, Format.JSONL):   # one object, on one line either way
        import json
        return json.dumps({'variables': names,
                           'hessian': [[json_number(v) for v in row] for row in matrix]},
                          ensure_ascii=False) + '\n'
    if fmt == Format.TABLE:
        from .output import rich_text, table
        columns = [('', 'left', 'bold')] + [(n, 'right', None) for n in names]
        rows = [[n] + [number(v) for v in row] for n, row in zip(names, matrix)]
        d = env.partial
        return rich_text([table(columns, rows, title=f'{d}²f/{d}row {d}column')], env.stdout,
                         colour=env.colour)
    delimiter = ',' if fmt == Format.CSV else '\t'
    lines = [delimiter.join([''] + names)]
    lines += [delimiter.join([n] + [number(v) for v in row]) for n, row in zip(names, matrix)]
    return '\n'.join(lines) + '\n'


def _rows_text(results, header, columns, fmt, kind, env):
    """Each point's row: its own columns as they were, then the Hessian's;
    the cells written as grad --points writes them (rows.py)."""
    import json

    from .rows import _cell, _json_cell, _json_value
    if fmt == Format.TABLE:
        from .output import rich_text, table
        rows = [[_cell(cells.get(h)) for h in header] + [number(v) for v in values]
                for cells, values in results]
        return rich_text([table([(h, 'right', None) for h in header + columns], rows)],
                         env.stdout, colour=env.colour)
    if fmt in (Format.JSON, Format.JSONL):
        as_json = _json_value if kind == Format.JSONL else _json_cell   # CSV's "1" -> 1.0
        objects = [{**{k: as_json(v) for k, v in cells.items()},
                    **dict(zip(columns, map(json_number, values)))} for cells, values in results]
        if fmt == Format.JSON:
            return json.dumps(objects, ensure_ascii=False) + '\n'
        return ''.join(json.dumps(o, ensure_ascii=False) + '\n' for o in objects)
    import csv
    import io
    text = io.StringIO()
    writer = csv.writer(text, delimiter=',' if fmt == Format.CSV else '\t', lineterminator='\n')
    writer.writerow(header + columns)
    writer.writerows([_cell(cells.get(h)) for h in header] + [number(v) for v in values]
                     for cells, values in results)
    return text.getvalue()
