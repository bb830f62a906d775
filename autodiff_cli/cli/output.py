"""Turning results into text: plain lines, JSON, or a rich table.

A result is a dict: {'value': float} plus, when asked for, 'gradient'
({name: float}, sorted by name) and 'nodes' (a list of per-node dicts).
Numbers print in shortest round-trip form, so float(text) == value.
"""

import json

from .rows import _json_number, number, write_rows

FORMATS = ('table', 'plain', 'json', 'jsonl', 'csv', 'tsv')


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


