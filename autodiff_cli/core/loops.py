"""Loops: a `for` statement is one node of the tape, its body a graph of its own.

The loop node's arguments are what the body reads from outside: a carried
variable's value before the loop, a value it only reads, a stacked array
whose slices W[i] it takes (as the xs of JAX's scan). Forward runs the body
once per iteration (`run`); the `part` nodes that follow the loop node hold
the values its names have after the last iteration. Backward (`vjp`) runs
passes.sweep, the one backward loop, over the body once per iteration in
reverse, from what forward kept: every iteration's values, or only the
carried state every K iterations, each segment run again when its gradients
are due (checkpointing: `strides`), or Griewank's binomial schedule (revolve)
within the segments. Nothing recurses with the number of iterations; nested
loops recurse once per level (lowering allows a few).
"""

from collections import namedtuple
from functools import partial
from math import comb
from operator import getitem

from .graph import CARRY, FREE, SCAN, Loop  # (the data; this module runs it)


class LoopRun(float):
    """A loop node's value. It has no number of its own, so it reads as 0.0
    where every node's value is scanned (a sum for inf or nan, a table); it
    holds its outputs (`outputs`), the loop's arguments, and what backward
    needs: every iteration's values (`strides` empty) or the carried state
    at every strides[0]-th iteration (`kept`)."""

    def __new__(cls, outputs, kept, strides, args):
        run = float.__new__(cls, 0.0)
        run.outputs, run.kept, run.strides, run.args = outputs, kept, strides, args
        return run


# strides (checkpoint.py's plans), outermost first: () keeps every iteration's
# values; (K,) the state every K iterations, (starts,) at those iterations, each
# segment run again keeping every value; (starts, Revolve(s)) the state at the
# starts of revolve's first sweep, each segment then reversed by the binomial
# schedule, holding at most s states at once (and the one an iteration runs from).
Revolve = namedtuple('Revolve', 'snapshots')


def segment_starts(count, first):
    """Where the outermost segments of `count` iterations start: `first`, the
    first of a run's strides, is a stride K (a state every K iterations) or
    the starts themselves, from 0 (checkpoint.py's shrinking segments)."""
    return range(0, count, first) if isinstance(first, int) else first


def segment_spans(count, starts):
    """(start, stop) of each segment of `count` iterations that start at `starts`."""
    return list(zip(starts, list(starts[1:]) + [count]))


def binomial_reach(snapshots, repetitions):
    """β(s, t) = C(s + t, s): the most iterations that `snapshots` states
    reverse when none runs more than `repetitions` times again (Griewank);
    0 for t = −1, as math.comb gives it."""
    return comb(snapshots + repetitions, snapshots)


def repetitions(count, snapshots):
    """The least t with β(snapshots, t) ≥ count: how many times revolve runs
    its busiest iteration again."""
    t = 0
    while binomial_reach(snapshots, t) < count:
        t += 1
    return t


def revolve_split(count, snapshots):
    """Where revolve keeps its next state in a segment of `count` iterations
    (count ≥ 2, snapshots ≥ 1) that holds its start, so that the part before
    it is reversed with t − 1 repetitions and the rest with one state fewer
    and t: then the runs again are the fewest (Griewank and Walther,
    Algorithm 799)."""
    t = repetitions(count, snapshots)
    return min(max(1, binomial_reach(snapshots, t - 2), count - binomial_reach(snapshots - 1, t)),
               binomial_reach(snapshots, t - 1), count - 1)


def revolve_starts(count, snapshots):
    """The states revolve's first sweep keeps (forward's checkpoints): the
    start, then each split of what is left, with one state fewer each time,
    until one iteration is left."""
    starts, start = [0], 0
    while count - start > 1:
        start += revolve_split(count - start, snapshots - len(starts) + 1)
        starts.append(start)
    return tuple(starts)


def recomputed(count, strides):
    """Iterations backward runs again under `strides`: each once with one
    level of segments; under revolve, its optimum t·n − β(s + 1, t − 1)
    advances, less the first sweep's n − 1, which forward ran, plus the n
    runs that keep an iteration's values."""
    if not strides:
        return 0
    if len(strides) == 1:
        return count
    s = strides[-1].snapshots
    t = repetitions(count, s)
    advances = t * count - binomial_reach(s + 1, t - 1)
    return advances - (count - 1) + count


def index_at(loop, t):
    """The index's value at iteration t: first + t, or down from the last."""
    return loop.first + (loop.count - 1 - t if loop.reverse else t)


def parts(graph, i):
    """The ids of loop node i's parts: they follow it on the tape."""
    return range(i + 1, i + 1 + len(graph.nodes[i].value.outputs))


# ---- forward ----

def run(loop, args, algebra, strides=(), inner=(), forward=None):
    """Run the loop over its arguments' values; a LoopRun. `strides` (see
    checkpoint.py) says what to keep: () keeps every iteration's values; a
    function of the first iteration's values and the state chooses them,
    and its `drops`, if it has one, which of an iteration's values backward
    never reads (saved.py): they go as soon as the iteration ends.
    `inner` is what forward() passes on to loops in the body; `forward`,
    passes.forward, runs a body with branches or loops."""
    step, after = stepper(loop, algebra, inner, forward)
    state = initial(loop, args)
    values = step(state, args, 0)
    drop = ()
    if callable(strides):
        drops = getattr(strides, 'drops', None)
        drop = drops(loop, values) if drops is not None else ()
        strides = strides(dropped(values, drop), state)
    marks = set(segment_starts(loop.count, strides[0])) if strides else None
    kept = {0: state} if marks else [values]
    if drop:
        step, after = stepper(loop, algebra, inner, forward, drop)
    rows = [[values[loop.outputs[k]]] for k in loop.stacked]
    state = after(values, state)
    for t in range(1, loop.count):
        if marks is not None and t in marks:
            kept[t] = state
        values = step(state, args, t)
        for k, stack in zip(loop.stacked, rows):
            stack.append(values[loop.outputs[k]])
        if marks is None:
            kept.append(dropped(values, drop))
        state = after(values, state)
    outputs = [values[o] for o in loop.outputs]
    for k, stack in zip(loop.stacked, rows):   # row i from the iteration whose index is i
        outputs[k] = algebra.stack(*(stack[::-1] if loop.reverse else stack))
    run_ = LoopRun(tuple(outputs), kept, tuple(strides), args)
    run_.inner, run_.forward, run_.drop = inner, forward, drop
    return run_


def dropped(values, drop):
    """values, those at the ids `drop` replaced by a placeholder (saved.py)."""
    if drop:
        from .saved import placeholder
        for i in drop:
            values[i] = placeholder(values[i])
    return values


def initial(loop, args):
    """The carried state before the first iteration: per argument, its value, or None."""
    return tuple(a if kind == CARRY else None for (kind, _), a in zip(loop.slots, args))


def stepper(loop, algebra, inner=(), forward=None, drop=()):
    """(step, after): step(state, args, t) gives the values of iteration t's
    body, those at the ids `drop` (which backward never reads) as placeholders
    or as they were; after(values, state) the state the next iteration starts from."""
    body = loop.body
    coerce = algebra.coerce
    slots = [(kind, sid, j) for j, (kind, sid) in enumerate(loop.slots)]
    index = loop.index
    at = partial(index_at, loop)
    carry = [(j, out) for j, out in enumerate(loop.carry) if out is not None]
    take = getattr(algebra, 'take_slice', None) or getitem   # W[i]: a recording algebra's own

    def after(values, state):
        state = list(state)
        for j, out in carry:
            state[j] = values[out]
        return tuple(state)

    if body.branches or body.loops:
        # An `if` taken at a point, a loop within: the general forward pass.
        names = {sid: body.nodes[sid].name for _, sid, _ in slots}
        index_name = body.nodes[index].name if index is not None else None

        def step(state, args, t):
            given = {names[sid]: state[j] if kind == CARRY else
                     take(args[j], at(t)) if kind == SCAN else args[j]
                     for kind, sid, j in slots}
            if index_name is not None:
                given[index_name] = float(at(t))
            return forward(body, given, algebra, inner)
        return step, after

    # A straight body: its nodes as a list of steps, run in order.
    functions = {node.op: getattr(algebra, node.op) for node in body.nodes if node.args}
    base = [None if node.args or node.op == 'input' else node.value for node in body.nodes]
    program = [(i, functions[node.op], node.args, len(node.args))
               for i, node in enumerate(body.nodes) if node.args]
    # Over arrays, a value backward never reads goes once its last reader has
    # run, so that an iteration never holds all its temporaries at once.
    frees = _last_reads(body, program, drop) if drop and getattr(algebra, 'shape', None) else {}
    if frees:
        from .saved import placeholder

    def step(state, args, t):
        values = base.copy()
        for kind, sid, j in slots:
            values[sid] = state[j] if kind == CARRY else (
                take(args[j], at(t)) if kind == SCAN else args[j])
        if index is not None:
            values[index] = coerce(float(at(t)))
        for i, f, a, n in program:
            if n == 1:
                values[i] = f(values[a[0]])
            elif n == 2:
                values[i] = f(values[a[0]], values[a[1]])
            else:
                values[i] = f(*[values[k] for k in a])
            if i in frees:
                for k in frees[i]:
                    values[k] = placeholder(values[k])
        return values
    return step, after


def _last_reads(body, program, drop):
    """{node id: the dropped values it is the last reader of}."""
    last = {}
    for i, _, a, _ in program:
        for k in a:
            last[k] = i
    frees = {}
    for k in drop:
        if k in last:
            frees.setdefault(last[k], []).append(k)
    return frees


# ---- backward ----

def reversed_values(loop, run_, algebra):
    """(t, values of iteration t) for t from the last down to 0: kept, or run
    again from the nearest kept state. A checkpoint is given back once its
    segment is run again, so that early segments can be the longer
    (checkpoint.py): a run's backward runs once. Under revolve, a segment
    is split where revolve_split says, its start held while the rest is
    reversed with one state fewer."""
    if not run_.strides:
        for t in range(loop.count - 1, -1, -1):
            yield t, run_.kept[t]
        return
    drop = getattr(run_, 'drop', ())
    step, after = stepper(loop, algebra, run_.inner, run_.forward, drop)
    args, strides, count = run_.args, run_.strides, loop.count
    snapshots = strides[-1].snapshots if isinstance(strides[-1], Revolve) else None
    # (start, stop, its start's state, or None for a checkpoint, taken from
    # run_.kept when its turn comes; the states revolve may hold in it, or None)
    pending = [(start, stop, None, None if snapshots is None else snapshots - j)
               for j, (start, stop) in enumerate(segment_spans(count, sorted(run_.kept)))]
    while pending:
        start, stop, state, free = pending.pop()
        if state is None:
            state = run_.kept.pop(start)
        if free is not None and stop - start > 1:
            middle = start + revolve_split(stop - start, free)
            pending.append((start, middle, state, free))
            pending.append((middle, stop, _advance(step, after, state, args, start, middle),
                            free - 1))
            continue
        segment = []   # run it again, keeping every value
        for t in range(start, stop):
            values = step(state, args, t)
            state = after(values, state)
            segment.append(dropped(values, drop))
        state = values = None   # (the segment holds them, and lets each go in turn)
        for t in range(stop - 1, start - 1, -1):
            yield t, segment.pop()


def _advance(step, after, state, args, start, stop):
    """The state at iteration `stop`, run from `state` at `start`, keeping nothing."""
    for t in range(start, stop):
        state = after(step(state, args, t), state)
    return state


def vjp(loop, run_, cotangents, algebra, sweep, live=None, wanted=None, each=None):
    """(cotangents, rows) of the loop node's arguments, given its parts'
    (None where none arrives; the list is emptied once they seed the last
    iteration), by sweeping the body once per iteration in reverse. Over a
    batch whose rows take branches (`algebra.live_rows`), a cotangent is
    exact in its rows (True: all), as in branches.LiveRows; `live` gives the
    parts'. `wanted`: per argument, whether an array program needs its
    gradient (tensors.Unbroadcast). `each(t, slots)` is told what iteration
    t passed back to each slot (a picture's steps)."""
    own = getattr(algebra, 'loop_vjp', None)
    if own is not None:   # a formula's (derive/array_loops.py): recorded as one loop
        return own(loop, run_, cotangents, wanted)
    body, slots, count = loop.body, loop.slots, loop.count
    add = algebra.add
    carried, carried_rows = [None] * len(slots), [True] * len(slots)
    sums, sums_rows = [None] * len(slots), [True] * len(slots)
    meeting = getattr(algebra, 'meeting', None)
    track = getattr(algebra, 'live_rows', False)
    body_algebra = algebra
    if wanted is not None:
        names = {body.nodes[sid].name for (kind, sid), w in zip(slots, wanted)
                 if w or kind == CARRY}
        body_algebra = wanting(algebra, frozenset(names))
    # A recording algebra gathers W's cotangent from its slices' at the end,
    # as one node, rather than a W-sized one per iteration.
    gather, pieces = getattr(algebra, 'gather_slices', None), {}
    # Values run again for this pass (checkpointed) go as backward passes
    # them, over arrays: a layer's worth less at the peak.
    spend = bool(run_.strides) and getattr(algebra, 'shape', None) is not None
    # X[i] = ...: each iteration's row of X's cotangent seeds its value there.
    take = getattr(algebra, 'take_slice', None) or getitem
    stacked = [(loop.outputs[k], cotangents[k], True if live is None else live[k])
               for k in loop.stacked if cotangents[k] is not None]
    last = {k: (o, g, True if live is None else live[k])
            for k, (o, g) in enumerate(zip(loop.outputs, cotangents)) if k not in loop.stacked}
    cotangents.clear()
    for t, values in reversed_values(loop, run_, algebra):
        grads = [None] * len(body.nodes)
        rows = [False] * len(body.nodes)
        if t == count - 1:
            seeds = list(last.values())
            last = None
        else:
            seeds = [(loop.carry[j], carried[j], carried_rows[j]) for j in range(len(slots))
                     if loop.carry[j] is not None]
        if stacked:
            row = index_at(loop, t) - loop.first
            seeds += [(o, take(g, row), r) for o, g, r in stacked]
        top = -1
        for o, g, r in seeds:
            if g is None or r is False:
                continue
            if grads[o] is None:
                grads[o], rows[o] = g, r
            else:
                grads[o], rows[o] = _merge(algebra, grads[o], rows[o], g, r)
            top = max(top, o)
        if top < 0:   # (a stacked X's cotangent seeds every iteration, if any)
            break   # nothing reaches this iteration, so nothing reaches an earlier one
        # The seeds are in grads now, which let each go once it is passed on.
        seeds = g = None
        carried = [None] * len(slots)
        track_here = track and (body.branches or any(r is not True and r is not False
                                                     for r in rows))
        if track_here:
            meet = _live_rows(body, values, grads, algebra, rows)
        else:
            meet = meeting(body, values, grads, body_algebra) if meeting is not None else None
        # (an iteration's gradients but its slots' are read no more once passed on)
        sweep(body, values, grads, body_algebra, meet, top, free=True, spend=spend)
        if each is not None:
            each(t, [grads[sid] for _, sid in slots])
        for j, (kind, sid) in enumerate(slots):
            g = grads[sid]
            r = meet.live[sid] if track_here else (g is not None)
            if kind == CARRY:
                carried[j], carried_rows[j] = (g, r) if g is not None and r is not False \
                    else (None, True)
            elif g is None or r is False:
                continue
            elif kind == FREE:
                if sums[j] is None:
                    sums[j], sums_rows[j] = g, r
                else:
                    sums[j], sums_rows[j] = _merge(algebra, sums[j], sums_rows[j], g, r)
            elif gather is not None:
                pieces.setdefault(j, {})[index_at(loop, t)] = g
            else:
                if sums[j] is None:
                    sums[j] = algebra.np.zeros(algebra.shape(run_.args[j]))
                sums[j][index_at(loop, t)] += g
        # (this iteration's values and cotangents go before the next is run again)
        values = grads = meet = g = None
    for j, slices in pieces.items():
        sums[j] = gather(slices, run_.args[j])
    kinds = [kind for kind, _ in slots]
    return ([carried[j] if kind == CARRY else sums[j] for j, kind in enumerate(kinds)],
            [carried_rows[j] if kind == CARRY else sums_rows[j] for j, kind in enumerate(kinds)])


def wanting(algebra, names):
    """`algebra` with only the inputs `names` wanted (tensors.Unbroadcast): a
    copy, as a namespace or, for an algebra that is an object, its own."""
    own = getattr(algebra, 'wanting', None)
    if own is not None:
        return own(names)
    from types import SimpleNamespace
    return SimpleNamespace(**{**vars(algebra), 'wanted': names})


def _live_rows(body, values, grads, algebra, rows):
    from .branches import LiveRows
    meet = LiveRows(body, values, grads, algebra)
    meet.live = rows
    return meet


def _union(rows, more):
    if rows is True or more is True:
        return True
    both = rows | more
    return True if both.all() else both


def _merge(algebra, before, rows_before, more, rows_more):
    """Two cotangents of one value, each exact in its rows: summed where both
    are, as branches.LiveRows sums them (the others' rows left out, not zeroed)."""
    if rows_before is rows_more or rows_before is True and rows_more is True:
        return algebra.add(before, more), rows_before
    where = algebra.where
    if rows_before is not True:
        before = where(rows_before, before, -0.0)
    if rows_more is not True:
        more = where(rows_more, more, -0.0)
    return algebra.add(before, more), _union(rows_before, rows_more)


# ---- sizes, for the memory report and checkpointing ----

def iteration_count(graph):
    """Iterations of every loop of a graph, nested ones multiplied out."""
    total = 0
    for i in graph.loops:
        loop = graph.nodes[i].value
        total += loop.count * (1 + iteration_count(loop.body))
    return total
