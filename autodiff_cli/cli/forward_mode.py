"""`adgrad grad --mode forward`: the same gradient by tangent propagation,
one forward pass per variable (autodiff_cli/derive/forward.py). With
--nodes, each pass's ∂node/∂x is listed: a table per variable."""

from .common import Exit, numerical, report_nonfinite
from .output import Format, Result, json_number, node_records, number, write


def run_forward(args, graph, inputs, names, env):
    from ..core.passes import forward
    from ..derive.forward import gradient

    values = forward(graph, inputs)
    report_nonfinite(graph, values, args.strict, env.warn)
    gradients, passes = gradient(graph, values, names)
    infinite = [n for n, g in gradients.items() if g - g != 0]
    if infinite:
        numerical(f'the gradient ∂f/∂{infinite[0]} is {gradients[infinite[0]]!r}',
                  args.strict, env.warn)
    result = Result(value=values[graph.output], inputs={n: inputs[n] for n in sorted(graph.inputs)},
                    gradients=gradients, title=graph.text(graph.output, 60))
    if not args.nodes:
        write(result, args.format, env)
        return Exit.OK
    from ..core.passes import receives_gradient
    reaches = receives_gradient(graph)
    # A tangent is shown wherever the node depends on the variable, even if
    # the node reaches no output; 0 where it does not but reaches one.
    records = {name: node_records(graph, values, [0.0 if t is None else t for t in passes[name]],
                                  shown=[t is not None or r for t, r in zip(passes[name], reaches)])
               for name in names}
    env.stdout.write(_passes_text(result, records, args.format, env))
    return Exit.OK


def _passes_text(result, records, fmt, env):
    """The result, then per pass one row per node: its value and ∂node/∂x."""
    return _PASSES[fmt](result, records, env)


def _passes_json(result, records, env):
    import json
    return json.dumps({'value': json_number(result.value),
                       'gradient': {k: json_number(v) for k, v in result.gradients.items()},
                       'passes': {name: [{'id': r.id, 'op': r.op, 'name': r.name,
                                          'expr': r.expr, 'value': json_number(r.value),
                                          'tangent': None if r.grad is None
                                          else json_number(r.grad)} for r in rows]
                                  for name, rows in records.items()}},
                      ensure_ascii=False) + '\n'


def _passes_table(result, records, env):
    from ..table.rich_tables import rich_text, table

    from .output import table_text
    d = env.partial
    shown = [table([('id', 'right', None), ('op', 'left', None), ('expression', 'left', None),
                    ('value', 'right', None), (f'{d}node/{d}{name}', 'right', None)],
                   [[str(r.id), r.op, r.expr, number(r.value),
                     '-' if r.grad is None else number(r.grad)] for r in rows],
                   title=f'forward pass {i} of {len(records)}: tangents {d}node/{d}{name}')
             for i, (name, rows) in enumerate(records.items(), 1)]
    return table_text(result, env) + rich_text(shown, env.stdout, colour=env.colour)


def _passes_delimited(delimiter, plain=False):
    """Delimited lines under a header; plain: no header, the result's own
    lines first, and each row's first field says what it holds ('pass')."""
    def text(result, records, env):
        lines = [] if plain else [delimiter.join(
            ['pass', 'id', 'op', 'name', 'value', 'tangent', 'expr'])]
        if plain:
            lines.append(f'value\t{number(result.value)}')
            lines += [f'd_{name}\t{number(g)}' for name, g in result.gradients.items()]
        for name, rows in records.items():
            for r in rows:
                cells = [name, str(r.id), r.op, r.name or '-', number(r.value),
                         '-' if r.grad is None else number(r.grad), r.expr]
                lines.append(delimiter.join((['pass'] if plain else []) + cells))
        return '\n'.join(lines) + '\n'
    return text


# (jsonl has no rows of its own here: tab-separated under a header, as tsv)
_PASSES = {Format.JSON: _passes_json, Format.TABLE: _passes_table,
           Format.CSV: _passes_delimited(','), Format.TSV: _passes_delimited('\t'),
           Format.JSONL: _passes_delimited('\t'), Format.PLAIN: _passes_delimited('\t', True)}
