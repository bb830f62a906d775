"""A loop's backward pass told one iteration at a time, for the steps of a picture.

loops.vjp runs the body backward once per iteration, the last first, and
tells each iteration's cotangents (`each`); a step says what came back
through it. With checkpoints (`strides`), a step before each segment says
that its values are computed again from the state kept at its start, as
loops.reversed_values does. Each step's `strip` is the loop's line of
iterations during the step and after it. A loop of more than STRIP iterations
is told in at most GROUPS steps, a run of iterations or segments each.
"""

from typing import NamedTuple

from ..core import loops
from ..core.graph import CARRY, FREE
from .memory import STRIP
from .preview import as_scalar, is_array, short
from .text import number

GROUPS = 10
KEPT, DROPPED, AGAIN, NOW, DONE = '■', '□', '▣', '◆', '✓'


class Told(NamedTuple):
    """A step of a loop's backward pass, as steps.Step takes it."""
    caption: str
    within: bool   # before the loop's last step
    strip: tuple   # the loop's line of iterations during the step, and after it


def loop_steps(graph, i, values, grads, f, strides=()):
    """(Told for each step of loop node i's backward pass, what it passes
    back to each argument): the same cotangents backward() gives them."""
    node = graph.nodes[i]
    loop, run = node.value, values[i]
    count, body = loop.count, loop.body
    spans = loops.segment_spans(count, loops.segment_starts(count, strides[0])) if strides \
        else [(t, t + 1) for t in range(count)]
    groups = _groups(spans, count)
    # what each step says came back: every iteration's, or a run's first
    said = range(count) if count <= STRIP else {start for start, _, _ in groups}
    cotangents = [grads[p] for p in loops.parts(graph, i)]
    told = {}

    def each(t, slots):
        if t in said:
            told[t] = slots
    given, _ = loops.vjp(loop, run, list(cotangents), _algebra(graph), _sweep(), each=each)
    names = [body.nodes[sid].name for _, sid in loop.slots]
    # what reaches each carried value after the last iteration: its part's cotangent
    after = [None] * len(loop.slots)
    for k, o in enumerate(loop.outputs):
        for j, out in enumerate(loop.carry):
            if out == o:
                after[j] = cotangents[k]
    starts = {start for start, _ in spans}
    state = [KEPT if not strides or t in starts else DROPPED for t in range(count)]
    result = []
    for start, stop, segments in reversed(groups):
        if strides:
            for t in range(start, stop):
                state[t] = AGAIN
            line = _strip(state, spans, strides)
            result.append(Told(_again(loop, start, stop, segments), True, (line, line)))
        # up to STRIP iterations, a step each; past it, a step for the whole run
        runs = [(t, t) for t in range(stop - 1, start - 1, -1)] if count <= STRIP \
            else [(start, stop - 1)]
        for low, high in runs:
            before = told.get(low, [None] * len(loop.slots))
            shown = list(state)
            shown[low:high + 1] = [NOW] * (high + 1 - low)
            state[low:high + 1] = [DONE] * (high + 1 - low)
            result.append(Told(_caption(loop, f, names, after, before, low, high), low > 0,
                               (_strip(shown, spans, strides), _strip(state, spans, strides))))
            after = [before[j] if kind == CARRY else None
                     for j, (kind, _) in enumerate(loop.slots)]
    return result, given


def _algebra(graph):
    if graph.shapes is not None:
        from ..core import tensors
        return tensors.algebra()
    from ..core.primitives import NUMBERS
    return NUMBERS


def _sweep():
    from ..core.passes import sweep
    return sweep


def _groups(spans, count):
    """(start, stop, segments) of each step's run of iterations: a segment,
    up to STRIP iterations; past it, runs of whole segments."""
    if count <= STRIP:
        return [(start, stop, 1) for start, stop in spans]
    per = -(-len(spans) // GROUPS)
    return [(spans[k][0], spans[min(k + per, len(spans)) - 1][1], min(per, len(spans) - k))
            for k in range(0, len(spans), per)]


def _index(loop, t):
    if loop.index is None:
        return ''
    return f' ({loop.body.nodes[loop.index].name}={loop.first + t:,})'   # never broken on a slide


def _again(loop, start, stop, segments):
    if stop - start == 1:
        return (f'Iteration {start + 1:,} of {loop.count:,}{_index(loop, start)} is computed '
                f'again from the state kept at its start, before its gradients flow')
    if segments > 1:
        return (f'Iterations {start + 1:,} to {stop:,} of {loop.count:,}, {segments:,} segments, '
                f'are computed again, each from the state kept at its start, before its '
                f'gradients flow')
    return (f'Iterations {start + 1:,} to {stop:,} of {loop.count:,} are computed again from '
            f'the state kept at the start of iteration {start + 1:,}{_index(loop, start)}, '
            f'before their gradients flow')


def _caption(loop, f, names, after, before, low, high):
    """What iterations low..high passed back: each carried value's cotangent
    after them and before them, each other slot's share from them."""
    if low == high:
        head = f'Iteration {low + 1:,} of {loop.count:,}{_index(loop, low)}, backward'
    else:
        head = f'Iterations {high + 1:,} down to {low + 1:,} of {loop.count:,}, backward'
    said, them = [], 'it' if low == high else 'them'
    for j, (kind, _) in enumerate(loop.slots):
        name = names[j].rstrip("'")
        if kind == CARRY:
            if after[j] is not None or before[j] is not None:
                said.append(f'∂{f}/∂{name} is {_shown(after[j])} after {them}, '
                            f'{_shown(before[j])} before')
        elif low == high and before[j] is not None:
            verb = '+=' if kind == FREE else '='   # a free value's share adds up
            said.append(f'∂{f}/∂{name} {verb} {_shown(before[j])}')
    if not said:
        return f'{head}: no gradient reaches {them}'
    return f'{head}: ' + '; '.join(said)


def _shown(x):
    if x is None:
        return '0'
    return short(as_scalar(x)) if is_array(x) else number(x)


def _strip(state, spans, strides):
    """The line a loop shows: its iterations' marks, segments apart; past
    STRIP iterations, how many are done."""
    count = len(state)
    legend = f'({KEPT} state kept, {DROPPED} dropped, {AGAIN} computed again, ' \
        if strides else f'({KEPT} values kept, '
    legend += f'{NOW} now, {DONE} done)'
    if count <= STRIP:
        cells = ' '.join(''.join(state[start:stop]) for start, stop in spans)
        return f'backward: {cells}   {legend}'
    done, now, again = state.count(DONE), state.count(NOW), state.count(AGAIN)
    return (f'backward: {done:,} of {count:,} iterations done' + (f', {now:,} now' if now else '')
            + (f', {again:,} computed again' if again else ''))
