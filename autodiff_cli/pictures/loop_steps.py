"""A loop's backward pass told one iteration at a time, for the steps of a picture.

loops.vjp runs the body backward once per iteration, the last first, and
tells each iteration's cotangents (`each`); a step says what came back
through it. With checkpoints (`strides`), a step before each segment says
that its values are computed again from the state kept at its start, as
loops.reversed_values does. Each step's `strip` is the loop's line of
iterations during the step and after it. A loop of more than STRIP iterations
is told in at most GROUPS steps, a run of iterations or segments each.
"""

from bisect import bisect_right
from typing import NamedTuple

from ..core import loops
from ..core.graph import CARRY, FREE, is_array_program
from ..core.passes import sweep
from ..core.primitives import NUMBERS
from .memory import STRIP
from .preview import as_scalar, is_array, short
from .text import number

GROUPS = 10
KEPT, DROPPED, AGAIN, NOW, DONE = '■', '□', '▣', '◆', '✓'


class Told(NamedTuple):
    """A step of a loop's backward pass, as steps.Step takes it."""
    caption: str
    strip: tuple   # the loop's line of iterations during the step, and after it


def loop_steps(graph, i, values, grads, f, strides=()):
    """(Told for each step of loop node i's backward pass, what it passes
    back to each argument): the same cotangents backward() gives them."""
    loop = graph.nodes[i].value
    count = loop.count
    spans = loops.segment_spans(count, loops.segment_starts(count, strides[0])) if strides \
        else [(t, t + 1) for t in range(count)]
    groups = _groups(spans, count)
    # each step's run of iterations, and what it says came back: the slots'
    # cotangents at the run's first iteration, the free values' shares summed
    runs = [(t, t) for t in range(count)] if count <= STRIP else \
        [(start, stop - 1) for start, stop, _ in groups]
    firsts = [low for low, _ in runs]

    def run_of(t):
        return bisect_right(firsts, t) - 1
    told, shares = {}, [[None] * len(loop.slots) for _ in runs]

    def each(t, slots):
        k = run_of(t)
        if t == firsts[k]:
            told[k] = slots
        for j, (kind, _) in enumerate(loop.slots):
            if kind == FREE and slots[j] is not None:
                shares[k][j] = slots[j] if shares[k][j] is None else shares[k][j] + slots[j]
    cotangents = [grads[p] for p in loops.parts(graph, i)]
    given, _ = loops.vjp(loop, values[i], list(cotangents), _algebra(graph), sweep, each=each)
    carried = [(j, loop.body.nodes[sid].name) for j, (kind, sid) in enumerate(loop.slots)
               if kind == CARRY]
    # what reaches the last iteration: each of the loop's results' cotangent
    # (a stacked X's reaches every iteration: its row, X[i])
    after = [(name, g) for k, (name, g) in enumerate(zip(loop.names, cotangents))
             if k not in loop.stacked]
    stacks = [(loop.names[k], cotangents[k]) for k in loop.stacked
              if not _nothing(cotangents[k])]
    starts = {start for start, _ in spans}
    state = [KEPT if not strides or t in starts else DROPPED for t in range(count)]
    result = []
    for start, stop, segments in reversed(groups):
        if strides:
            state[start:stop] = [AGAIN] * (stop - start)
            line = _strip(state, spans, strides)
            result.append(Told(_again(loop, start, stop, segments), (line, line)))
        for k in reversed(range(run_of(start), run_of(stop - 1) + 1)):
            low, high = runs[k]
            before = told.get(k, [None] * len(loop.slots))
            shown = list(state)
            shown[low:high + 1] = [NOW] * (high + 1 - low)
            state[low:high + 1] = [DONE] * (high + 1 - low)
            at = loops.index_at(loop, low)
            said = _said(loop, f, after, [(name, before[j]) for j, name in carried],
                         [(j, before[j] if low == high else shares[k][j])
                          for j in range(len(loop.slots))], low, high,
                         [(f'{name}[{at:,}]', g[at - loop.first]) for name, g in stacks]
                         if low == high else [])
            result.append(Told(said, (_strip(shown, spans, strides),
                                      _strip(state, spans, strides))))
            after = [(name, before[j]) for j, name in carried]
    return result, given


def _algebra(graph):
    if is_array_program(graph):   # (NumPy only on the path that needs it)
        from ..core import tensors
        return tensors.algebra()
    return NUMBERS


def _groups(spans, count):
    """(start, stop, segments) of each step's run of iterations: a segment,
    up to STRIP iterations; past it, GROUPS runs of whole segments."""
    if count <= STRIP:
        return [(start, stop, 1) for start, stop in spans]
    n = min(GROUPS, len(spans))
    bounds = [k * len(spans) // n for k in range(n + 1)]
    return [(spans[a][0], spans[b - 1][1], b - a) for a, b in zip(bounds, bounds[1:])]


def _index(loop, t):
    if loop.index is None:
        return ''
    return f' ({loop.body.nodes[loop.index].name}={loops.index_at(loop, t):,})'   # never broken on a slide


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


def _said(loop, f, after, before, shares, low, high, rows=()):
    """What iterations low..high passed back: the cotangents of what they
    compute (`after`: (name, cotangent); `rows`, a stacked X's row) and of
    the carried values they start from (`before`); each free value's share,
    each slice's."""
    if low == high:
        head = f'Iteration {low + 1:,} of {loop.count:,}{_index(loop, low)}, backward'
    else:
        head = f'Iterations {high + 1:,} down to {low + 1:,} of {loop.count:,}, backward'
    them = 'it' if low == high else 'them'
    came = {name: g for name, g in before if not _nothing(g)}
    said = [f'∂{f}/∂{name} is {_shown(g)}' for name, g in rows]
    for name, g in after:
        if _nothing(g):
            continue
        text = f'∂{f}/∂{name} is {_shown(g)} after {them}'
        if name in came:
            text += f', {_shown(came.pop(name))} before'
        said.append(text)
    said += [f'∂{f}/∂{name} is {_shown(g)} before {them}' for name, g in came.items()]
    body = loop.body
    for j, g in shares:
        kind, sid = loop.slots[j]
        if kind == CARRY or g is None or kind != FREE and low != high:
            continue
        name = body.nodes[sid].name
        if kind == FREE:   # read, not carried: its shares add up
            said.append(f'∂{f}/∂{name} += {_shown(g)}')
        else:              # W[i]: the slice this iteration took
            said.append(f'∂{f}/∂{name.partition("[")[0]}[{loops.index_at(loop, low):,}] is {_shown(g)}')
    if not said:
        return f'{head}: no gradient reaches {them}'
    return f'{head}: ' + '; '.join(said)


def _nothing(g):
    """No cotangent, or a number 0: a value the output does not use."""
    return g is None or not is_array(g) and g == 0


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
