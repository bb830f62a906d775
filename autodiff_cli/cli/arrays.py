"""`eval` and `grad` of an array program at one point: values and gradients
in their own shapes, through the writers every result takes."""

from ..core.numbers import plain
from ..errors import UsageError
from .common import Exit, numerical
from .output import Format, Result, node_records, write


def run_arrays(args, graph, inputs, names, env, data=()):
    """The result at the point `inputs`; the columns of --data (`data`) are
    not echoed as inputs."""
    from ..core import tensors
    from ..derive import jacobian
    if getattr(args, 'explain', False):
        raise UsageError('--explain takes programs of numbers only, so far')
    start = len(env.warn.messages)
    values = tensors.evaluate(graph, inputs)
    value = values[graph.output]
    if not tensors.is_finite(value):   # (an untaken side of an `if` may be, harmlessly)
        from .common import where
        bad = tensors.first_nonfinite(values)
        numerical(f'{where(graph, bad)} is not finite, the first non-finite value',
                  args.strict, env.warn)
    gradients = grads = None
    if names is not None and args.command == 'grad':
        if value.ndim:
            raise UsageError(f'grad needs a scalar output, and this one has shape '
                             f'{tensors.shown(value.shape)}: use adgrad jacobian, or take '
                             'sum(...) or mean(...) of it')
        if getattr(args, 'mode', 'reverse') == 'forward':   # a tangent pass per entry
            if args.nodes:
                raise UsageError('--nodes with --mode forward takes programs of numbers only')
            gradients = jacobian.jacobian(graph, values, names, 'forward')[0]
        else:
            grads = tensors.gradients(graph, values, wrt=None if args.nodes else names)
            gradients = {name: grads[graph.inputs[name]] for name in names}
        infinite = [n for n, g in gradients.items() if not tensors.is_finite(g)]
        if infinite:
            numerical(f'the gradient ∂f/∂{infinite[0]} is not finite', args.strict, env.warn)
    result = Result(value=plain(value),
                    inputs={n: plain(inputs[n]) for n in sorted(graph.inputs) if n not in data},
                    gradients=gradients and {n: plain(g) for n, g in gradients.items()},
                    warnings=env.warn.messages[start:], title=graph.text(graph.output, 60))
    fmt = Format(args.format)
    if args.nodes:
        write_nodes(result, node_records(graph, values, grads), fmt, env)
    elif fmt is Format.TABLE:
        env.stdout.write(grid_text(result, env))
    else:
        write(result, fmt, env)
    return Exit.OK


def grid_text(result, env):
    """The result on a terminal: a vector as a row of numbers, a matrix as
    its rows, right-aligned; a large array or a stack of matrices, summarised.
    Too wide for the terminal at full precision, numbers show 7 digits."""
    import shutil

    from ..core.numbers import number
    from ..table.rich_tables import rich_text, table
    d = env.partial
    shown = [('value', result.value)] + [(f'{d}f/{d}{name}', g)
                                         for name, g in (result.gradients or {}).items()]
    width = max([1] + [_columns(v) for _, v in shown])

    def rows(spell):
        made = []
        for label, value in shown:
            for k, cells in enumerate(_lines(value, spell)):
                made.append([label if k == 0 else ''] + cells + [''] * (width - len(cells)))
        return made

    full = rows(number)
    needed = max(len(row[0]) for row in full) + 2 + sum(
        max(len(row[k]) for row in full) + 2 for k in range(1, width + 1))
    cells = full if needed <= shutil.get_terminal_size().columns else rows(
        lambda x: number(x, 7))
    columns = [('', 'left', 'bold')] + [('', 'right', None)] * width
    from rich.text import Text
    heading = Text(f' f  {result.title}')
    return rich_text([heading, table(columns, cells, show_header=False, box=None,
                                     padding=(0, 1))], env.stdout, colour=env.colour)


def _columns(value):
    ndim = getattr(value, 'ndim', 0)
    return value.shape[-1] if ndim in (1, 2) and value.size <= SHOWN * SHOWN and \
        value.shape[-1] <= SHOWN else 1


def _lines(value, number):
    ndim = getattr(value, 'ndim', 0)
    if ndim == 0:
        return [[number(value)]]
    if ndim > 2 or (_columns(value) == 1 and value.shape[-1] != 1):   # a grid shows 2 axes
        return [[summary(value)]]
    if ndim == 1:
        return [[number(v) for v in value.tolist()]]
    return [[number(v) for v in row] for row in value.tolist()]


SHOWN = 12   # entries of an array a table or a node's line shows in full


def summary(value):
    """An array as a person reads it in a table: in full if small, else its
    shape, its first and last entries."""
    from ..core.numbers import number
    from ..core.tensors import shown
    if getattr(value, 'size', 1) <= SHOWN:
        return number(value)
    flat = value.ravel()
    ends = ', '.join(map(number, flat[:3].tolist())) + ', …, ' + ', '.join(
        map(number, flat[-3:].tolist()))
    return f'{shown(value.shape)} [{ends}]'


def write_nodes(result, records, fmt, env):
    """The result, then every node with its shape, value and gradient (a
    static argument, an axis or an index, is its op's, not a node shown)."""
    from ..core.tensors import shape_of, shown
    from ..table.formats import json_number
    rows = [r for r in records if r.op != 'static']
    if fmt is Format.JSON:
        import json
        out = {'value': json_number(result.value)}
        if result.gradients is not None:
            out['gradient'] = {k: json_number(v) for k, v in result.gradients.items()}
        out['nodes'] = [{'id': r.id, 'op': r.op, 'name': r.name, 'args': r.args, 'expr': r.expr,
                         'block': r.block, 'shape': list(shape_of(r.value)),
                         'value': json_number(r.value),
                         'grad': None if r.grad is None else json_number(r.grad)} for r in rows]
        env.stdout.write(json.dumps(out, allow_nan=False, ensure_ascii=False) + '\n')
        return
    has_grad = result.gradients is not None
    if fmt is Format.TABLE:
        from ..table.rich_tables import rich_text, table
        write(result, fmt, env)
        d = env.partial
        columns = ([('id', 'right', None), ('op', 'left', None), ('name', 'left', None),
                    ('shape', 'left', None), ('expression', 'left', None), ('value', 'left', None)]
                   + ([(f'{d}f/{d}node', 'left', None)] if has_grad else []))
        cells = [[str(r.id), r.op, r.name or '', shown(shape_of(r.value)), r.expr,
                  summary(r.value)] + (['-' if r.grad is None else summary(r.grad)] if has_grad
                                       else []) for r in rows]
        env.stdout.write(rich_text([table(columns, cells, title='nodes in tape order')],
                                   env.stdout, colour=env.colour))
        return
    write(result, Format.PLAIN, env)
    for r in rows:
        grad = '-' if r.grad is None else summary(r.grad)
        env.stdout.write(f'node\t{r.id}\t{r.op}\t{r.name or "-"}\t{r.block or "-"}\t'
                         f'{shown(shape_of(r.value))}\t{summary(r.value)}\t{grad}\t{r.expr}\n')


def run_tangent(args, graph, inputs, env):
    """grad --mode forward --tangent: the value and the Jacobian-vector product
    along the given direction, by one forward pass."""
    from ..core import tensors
    from ..core.passes import check_names
    from ..derive import jacobian
    from ..table.formats import json_number
    from .common import parse_bindings
    directions = parse_bindings(args.tangent, graph)
    check_names(graph, list(directions))
    values = tensors.evaluate(graph, inputs)
    k = tensors.algebra()
    directions = {n: k.coerce(t) for n, t in directions.items()}
    for name, t in directions.items():
        shape = tensors.shape_of(values[graph.inputs[name]])
        if t.shape != shape:
            raise UsageError(f"the tangent of '{name}' has shape {tensors.shown(t.shape)}, but "
                             f"'{name}' has {tensors.shown(shape)}")
    out = values[graph.output]
    t = jacobian.tangents(graph, values, directions)[graph.output]
    jvp = plain(k.np.broadcast_to(0.0 if t is None else t, k.np.shape(out)).copy())
    if not tensors.is_finite(jvp):
        numerical('the Jacobian-vector product is not finite', args.strict, env.warn)
    value = plain(out)
    fmt = Format(args.format)
    if fmt is Format.JSON:
        import json
        env.stdout.write(json.dumps({'value': json_number(value), 'jvp': json_number(jvp),
                                     'tangent': {n: json_number(plain(v))
                                                 for n, v in directions.items()}},
                                    allow_nan=False, ensure_ascii=False) + '\n')
    else:
        from ..core.numbers import number
        env.stdout.write(f'value\t{number(value)}\njvp\t{number(jvp)}\n')
    return Exit.OK
