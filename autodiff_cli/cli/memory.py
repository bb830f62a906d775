"""`grad --memory`, `--checkpoint` and `--memory-limit`: what the backward pass
keeps, and gradients that keep less and compute more (core/checkpoint.py)."""

from ..errors import AdgradError, UsageError
from .common import Exit, numerical


def policy_of(args):
    """The checkpoint Policy that the options ask for (plain without them)."""
    from ..core import checkpoint
    limit = getattr(args, 'memory_limit', None)
    text = getattr(args, 'checkpoint', None)
    if limit is not None and text not in (None, 'auto'):
        raise UsageError('--memory-limit goes with --checkpoint auto')
    if limit is not None and text is None:
        text = 'auto'
    try:
        return checkpoint.policy(text, None if limit is None else checkpoint.parse_bytes(limit))
    except AdgradError as error:   # of an option: bad usage, not bad input
        raise UsageError(error.message) from None


def run_point(args, graph, inputs, names, env, data=()):
    """grad at one point through checkpoint.gradients: the result, then the
    memory report with --memory."""
    from ..core import checkpoint
    from ..core.graph import is_array_program
    from ..core.numbers import plain
    from .output import Format, Result, write
    fmt = Format(args.format)
    if args.memory and fmt not in (Format.PLAIN, Format.TABLE, Format.JSON):
        raise UsageError(f'--memory writes plain, table or json, not {fmt.value}')
    if args.nodes:
        raise UsageError('--nodes shows every value, which --checkpoint and --memory do not '
                         'keep: leave one out')
    if getattr(args, 'explain', False):
        raise UsageError('--explain runs its own passes: leave out --memory and --checkpoint')
    pol = policy_of(args)
    limit = pol.limit
    arrays = is_array_program(graph, inputs)
    start = len(env.warn.messages)
    if arrays:
        from ..core import tensors
        pol, held = _budget(pol, inputs)
        run = checkpoint.array_gradients(graph, inputs, pol, names)
        value = run.values[graph.output]
        if getattr(value, 'ndim', 0):
            raise UsageError(f'grad needs a scalar output, and this one has shape '
                             f'{tensors.shown(value.shape)}: take sum(...) or mean(...) of it')
        finite = tensors.is_finite
    else:
        from ..core.primitives import NUMBERS
        pol, held = _budget(pol, inputs)
        run = checkpoint.gradients(graph, inputs, NUMBERS, pol)
        value = run.values[graph.output]

        def finite(x):
            return x - x == 0
    gradients = {name: run.grads[graph.inputs[name]] for name in names}
    memory = run.memory
    if held is not None and held + memory.peak > limit:
        env.warn(f'--memory-limit {size(limit)} is not met: the process held {size(held)} '
                 f'before the pass besides its inputs, and the pass peaks at '
                 f'{size(memory.peak)} with them (its gradients alone '
                 f'{size(memory.gradient_bytes)})')
    # The pass's values (a loop's checkpoints among them) have served: they
    # go before the output, which over arrays takes memory of its own.
    del run
    if not finite(value):
        numerical('the value is not finite', args.strict, env.warn)
    infinite = [n for n, g in gradients.items() if not finite(g)]
    if infinite:
        numerical(f'the gradient ∂f/∂{infinite[0]} is not finite', args.strict, env.warn)
    result = Result(value=plain(value),
                    inputs={n: plain(inputs[n]) for n in sorted(graph.inputs) if n not in data},
                    gradients={n: plain(g) for n, g in gradients.items()},
                    warnings=env.warn.messages[start:], title=graph.text(graph.output, 60))
    if fmt is Format.JSON:
        import json

        from .output import json_parts
        # spliced in, not parsed and written again: the text can be large
        tail = ', "memory": ' + json.dumps(as_json(memory)) if args.memory else ''
        for part in json_parts(result, tail):
            env.stdout.write(part)
        return Exit.OK
    write(result, fmt, env)   # checkpointing changes how, not what: grad's own output
    if args.memory:
        env.stdout.write(report_table(memory, env) if fmt is Format.TABLE else report_text(memory))
    return Exit.OK


def _budget(pol, inputs):
    """auto's policy with the pass's share of the limit (what the process does
    not hold already but the inputs, which the pass's peak counts), and what
    it held besides them; other policies as they are, None."""
    if pol.kind != 'auto':
        return pol, None
    from ..core.checkpoint import input_bytes
    held = max(0, _process_bytes() - sum(input_bytes(v) for v in inputs.values()))
    return pol._replace(limit=max(1, pol.limit - held)), held


def _process_bytes():
    """What this process holds now (Linux's /proc, else the peak so far):
    auto's limit is the whole process's, so the pass gets what is left."""
    try:
        with open('/proc/self/statm', encoding='ascii') as f:
            import os
            return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')
    except (OSError, ValueError, IndexError):
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def as_json(memory):
    return {'checkpoint': policy_name(memory.policy), 'values': memory.values,
            'bytes': memory.bytes, 'gradient_bytes': memory.gradient_bytes,
            'peak': memory.peak, 'recomputed': memory.recomputed,
            'held_most': [{'what': what, 'bytes': size} for what, size in memory.holders]}


def policy_name(pol):
    if pol.kind == 'every':
        return f'every:{pol.every}'
    return pol.kind


def _report(memory):
    """The report's fields: (what, exact text, as people read it or None)."""
    fields = [('checkpoint', policy_name(memory.policy), None),
              ('values kept', str(memory.values), None),
              ('bytes kept', str(memory.bytes), size(memory.bytes)),
              ('gradients', str(memory.gradient_bytes), size(memory.gradient_bytes)),
              ('peak', str(memory.peak), size(memory.peak)),
              ('computed again', str(memory.recomputed), None)]
    return fields + [(f'held by\t{what}', None, size(n)) for what, n in memory.holders]


def report_text(memory):
    """The memory report as lines of `memory` fields, tab-separated as plain output is."""
    return ''.join('\t'.join(['memory', what] + [t for t in (exact, readable) if t is not None])
                   + '\n' for what, exact, readable in _report(memory))


def report_table(memory, env):
    """The memory report as a table under grad's own, sizes as people read them."""
    from ..table.rich_tables import rich_text, table
    rows = [[what.replace('\t', ' '), readable or exact] for what, exact, readable in _report(memory)]
    return rich_text([table([('memory', 'left', 'bold'), ('', 'right', None)], rows, box=None,
                            padding=(0, 2))], env.stdout, colour=env.colour)


def size(n):
    from ..core.checkpoint import readable
    return readable(n)
