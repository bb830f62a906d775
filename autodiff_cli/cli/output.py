"""Turning results into text: plain lines, JSON, or a rich table.

A result is a dict: {'value': float} plus, when asked for, 'gradient'
({name: float}, sorted by name) and 'nodes' (a list of per-node dicts).
Numbers print in shortest round-trip form, so float(text) == value.
"""

import json
import math

from .points import ABSENT

FORMATS = ('table', 'plain', 'json', 'jsonl', 'csv', 'tsv')
_CHUNK = 65536  # rows formatted at a time: bounds memory, paces the progress bar


def number(x):
    return repr(float(x))


def _json_number(x):
    return x if math.isfinite(x) else number(x)


def node_records(graph, values, grads=None, text_limit=120):
    """One dict per node; 'grad' is None for nodes no gradient reaches
    (constants, and what the output does not depend on), as in PyTorch."""
    from ..core.passes import receives_gradient
    shown = receives_gradient(graph) if grads is not None else None
    records = []
    for i, node in enumerate(graph.nodes):
        records.append({
            'id': i,
            'op': node.op,
            'name': node.name,
            'args': list(node.args),
            'expr': graph.text(i, text_limit),
            'block': node.block,
            'value': values[i],
            'grad': grads[i] if grads is not None and shown[i] else None,
        })
    return records


def to_json(result):
    out = {'value': _json_number(result['value'])}
    if 'gradient' in result:
        out['gradient'] = {k: _json_number(v) for k, v in result['gradient'].items()}
    if 'nodes' in result:
        out['nodes'] = [dict(r, value=_json_number(r['value']),
                             grad=None if r['grad'] is None else _json_number(r['grad']))
                        for r in result['nodes']]
    return json.dumps(out, allow_nan=False, ensure_ascii=False)


def to_plain(result):
    """Tab-separated lines whose first field says what the line holds."""
    if 'gradient' not in result and 'nodes' not in result:
        return number(result['value'])
    lines = [f"value\t{number(result['value'])}"]
    lines += [f'd_{name}\t{number(g)}' for name, g in result.get('gradient', {}).items()]
    for r in result.get('nodes', ()):
        grad = '-' if r['grad'] is None else number(r['grad'])
        lines.append('\t'.join(['node', str(r['id']), r['op'], r['name'] or '-', r['block'] or '-',
                                number(r['value']), grad, r['expr']]))
    return '\n'.join(lines)


def print_table(result, title, file):
    # rich costs ~40 ms to import: only pay it when a terminal will see a table.
    from rich.console import Console
    from rich.table import Table

    console = Console(file=file)
    summary = Table(show_header=False, box=None, padding=(0, 2))
    summary.add_column(style='bold')
    summary.add_column(justify='right')
    summary.add_row('f', title)
    summary.add_row('value', number(result['value']))
    for name, g in result.get('gradient', {}).items():
        summary.add_row(f'∂f/∂{name}', number(g))
    console.print(summary)
    if 'nodes' in result:
        table = Table(title='nodes in tape order')
        for column in ('id', 'op', 'name', 'block', 'expression', 'value'):
            table.add_column(column, justify='right' if column in ('id', 'value') else 'left')
        has_grad = 'gradient' in result
        if has_grad:
            table.add_column('∂f/∂node', justify='right')
        for r in result['nodes']:
            row = [str(r['id']), r['op'], r['name'] or '', r['block'] or '', r['expr'],
                   number(r['value'])]
            grad = '-' if r['grad'] is None else number(r['grad'])
            table.add_row(*row, *([grad] if has_grad else []))
        console.print(table)


def write(result, fmt, file, title=''):
    """One point's result. Row formats (csv, tsv, jsonl) give it as a
    one-row batch: its input values, the value, and a d_NAME per gradient;
    with --nodes, one row per node instead."""
    if fmt == 'table':
        print_table(result, title, file)
    elif fmt == 'json':
        print(to_json(result), file=file)
    elif fmt == 'plain':
        print(to_plain(result), file=file)
    elif 'nodes' in result:
        keys = ['id', 'op', 'name', 'block', 'expr', 'value', 'grad']
        write_rows(fmt, keys, [[r[k] for k in keys] for r in result['nodes']], [], file,
                   cells_are_text=False)
    else:
        header = list(result['inputs']) + ['value'] + [f'd_{n}' for n in result.get('gradient', {})]
        row = list(result['inputs'].values()) + [result['value']]
        write_rows(fmt, header, [row + list(result.get('gradient', {}).values())], [], file,
                   cells_are_text=False)


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
