"""What the backward pass keeps, and gradient checkpointing: keep less, run again.

Plain, forward keeps every node's value (and every iteration's, in a loop)
for backward. Checkpointed, it keeps only the values that cross from one
segment to a later one, and backward runs each segment's forward again just
before its gradients flow, then drops it. Segments follow the program:
- a loop's iterations: its carried state is kept at the start of each
  segment, and a segment is run again keeping every value, its checkpoint
  dropped after it (or, when `auto` must go lower than one level can,
  reversed by Griewank's binomial schedule, revolve: strides);
- the tape's block calls (a run of nodes of one top-level call is a unit);
  a tape with fewer than two calls has a unit per node. A segment is K units.
Policies: `sqrt` (in a loop, segments that shorten toward the end, about
√(2n) values held: shrinking_starts; on the tape, K = ⌈√n⌉ units),
`every:K`, and `auto`, the fewest runs again whose estimated peak fits
`limit` bytes. Gradients are the plain pass's bit for bit: the same
operations on the same values, in the same order.
"""

import math
from collections import namedtuple

from ..errors import AdgradError
from . import loops
from .passes import forward, sweep, taken
from .saved import is_placeholder, leads_for, placeholder, saved, unread

Policy = namedtuple('Policy', 'kind every limit')   # kind: 'none', 'sqrt', 'every', 'auto'

PLAIN = Policy('none', 0, None)
FLOAT_BYTES = 32      # a float object (24) and its place in a list (8)
ARRAY_BYTES = 120     # an ndarray's header and its place in a list, past its data
LIST_BYTES = 56
MAX_REPETITIONS = 16  # of revolve: no iteration runs again more often, so auto costs
                      # at most about 17 forward passes, and past that holds more


def policy(text, limit=None):
    """A Policy from `sqrt`, `every:K` (K a whole number ≥ 1) or `auto` (which
    needs `limit`, in bytes); AdgradError for anything else."""
    if text in (None, 'none'):
        return PLAIN
    if text == 'sqrt':
        return Policy('sqrt', 0, limit)
    if text == 'auto':
        if limit is None:
            raise AdgradError('--checkpoint auto needs --memory-limit, such as 200MB')
        return Policy('auto', 0, limit)
    if text.startswith('every:'):
        k = text[len('every:'):]
        if k.isascii() and k.isdigit() and int(k) >= 1:
            return Policy('every', int(k), limit)
    raise AdgradError(f"unknown --checkpoint '{text}': sqrt, every:K (K a whole number "
                      "from 1) or auto")


def parse_bytes(text):
    """Bytes from a number and a unit: B, kB, MB, GB (powers of 1000), KiB, MiB,
    GiB (of 1024), or none; AdgradError otherwise."""
    units = {'': 1, 'b': 1, 'kb': 1e3, 'mb': 1e6, 'gb': 1e9, 'kib': 2 ** 10, 'mib': 2 ** 20,
             'gib': 2 ** 30}
    number = text.strip().lower().rstrip('bkmgi')
    unit = text.strip().lower()[len(number):]
    try:
        value = float(number) * units[unit]
    except (ValueError, KeyError):
        value = None
    if value is None or not math.isfinite(value) or value <= 0:
        raise AdgradError(f"a memory size such as 200MB or 1.5GB, not '{text}'")
    return int(value)


def readable(n):
    """Bytes as people read them, in powers of 1000: B, kB, MB or GB to one decimal."""
    for unit, scale in (('GB', 1e9), ('MB', 1e6), ('kB', 1e3)):
        if n >= scale:
            return f'{n / scale:.1f} {unit}'
    return f'{n} B'


def value_bytes(value):
    """The bytes a value holds, as Python holds it: a float's object, an
    array's data (none for a view of another's) and header."""
    if isinstance(value, loops.LoopRun) or value is None or is_placeholder(value):
        return 8   # its place in a list (a placeholder is shared)
    nbytes = getattr(value, 'nbytes', None)
    if nbytes is None or getattr(value, 'ndim', 1) == 0 and not hasattr(value, 'base'):
        return FLOAT_BYTES
    return ARRAY_BYTES + (nbytes if getattr(value, 'base', None) is None else 0)


def data_bytes(value):
    """The bytes of a value of its shape that is no view: its gradient's."""
    nbytes = getattr(value, 'nbytes', None)
    return FLOAT_BYTES if nbytes is None or getattr(value, 'ndim', 0) == 0 else \
        ARRAY_BYTES + nbytes


def values_bytes(values):
    return sum(map(value_bytes, values)) + LIST_BYTES


def held_bytes(graph, values):
    """Each value's bytes on the tape: value_bytes, but an input counts the
    memory it views, which is no other value's (np.load's reshaped buffer),
    up to its own size (a column of a wider table: its share; a broadcast
    number: the number)."""
    return [input_bytes(v) if node.op == 'input' else value_bytes(v)
            for v, node in zip(values, graph.nodes)]


def input_bytes(value):
    """An input's bytes: see held_bytes."""
    base = getattr(value, 'base', None)
    if base is None or getattr(value, 'ndim', 0) == 0:
        return value_bytes(value)
    return ARRAY_BYTES + min(value.nbytes, getattr(base, 'nbytes', value.nbytes))


def plain_estimate(graph):
    """(values, bytes) a plain backward pass of a program of numbers keeps,
    without running it: every node's value and every iteration's."""
    values, lists = _kept(graph)
    return values, values * FLOAT_BYTES + lists * LIST_BYTES


def _kept(graph):
    values, lists = len(graph.nodes), 1
    for i in graph.loops:
        loop = graph.nodes[i].value
        inner_values, inner_lists = _kept(loop.body)
        values += loop.count * inner_values
        lists += loop.count * inner_lists
    return values, lists


# ---- a loop's strides ----

def loop_strides(loop, pol, iteration, state, budget=None):
    """The strides a loop keeps its state at, outermost first (() keeps every
    iteration's values), given the bytes of one iteration's values and of
    its carried state; `budget` bounds auto's estimated peak."""
    n = loop.count
    if pol.kind == 'none' or n == 1:
        return ()
    if pol.kind == 'sqrt':
        return (shrinking_starts(n, iteration, state),)
    if pol.kind == 'every':
        return (min(pol.every, n),)
    if budget is None or n * iteration <= budget:
        return ()
    one = (shrinking_starts(n, iteration, state),)
    if loop_peak(n, one, iteration, state) <= budget:
        return one
    # Revolve with the most states that fit (the fewest runs again), but
    # never past MAX_REPETITIONS: then the fewest states that stay within.
    fits = max(1, int((budget - iteration) // max(state, 1)) - 1)
    snapshots = min(fits, n - 1)
    while loops.repetitions(n, snapshots) > MAX_REPETITIONS:
        snapshots += 1
    return (loops.revolve_starts(n, snapshots), loops.Revolve(snapshots))


def shrinking_starts(n, iteration, state):
    """Where one level of segments starts, each run again once: segments
    that shorten toward the end, so that when backward reaches segment j,
    the j checkpoints still held and the segment's values weigh about the
    same whatever j (Griewank's optimum for one repetition: for states as
    large as an iteration, segments of m, m-1, ..., 1 with m(m+1)/2 >= n, about
    √(2n) values held, where even segments of √n hold 2√n)."""
    iteration, state = max(iteration, 1), max(state, 1)

    def starts_within(peak):   # each segment as long as `peak` allows; None: n not reached
        starts, t = [], 0
        while t < n:
            length = int((peak - len(starts) * state) // iteration)
            if length < 1:
                return None
            starts.append(t)
            t += length
        return starts
    high = math.sqrt(2 * n * state * iteration)   # the continuous optimum, short by rounding
    while starts_within(high) is None:
        high += iteration
    low = iteration - 1   # (not even one iteration fits)
    for _ in range(48):   # the least peak that reaches n, to within a byte or so
        middle = (low + high) / 2
        low, high = (low, middle) if starts_within(middle) is not None else (middle, high)
    return tuple(starts_within(high))


def loop_peak(n, strides, iteration, state):
    """The bytes a loop holds at most for backward: every iteration's values
    with no strides; with one level, while backward is in segment j, the j
    checkpoints before it and that segment's values; under revolve, its
    states and one iteration's values, with the state it runs from."""
    if not strides:
        return n * iteration
    if len(strides) > 1:
        return (min(strides[-1].snapshots, n - 1) + 1) * state + iteration
    starts = loops.segment_starts(n, strides[0])
    spans = [(j, stop - start) for j, (start, stop) in enumerate(loops.segment_spans(n, starts))]
    if isinstance(starts, range):   # even: the last segment, or the last full one, holds most
        spans = spans[-2:]
    return max(j * state + span * iteration for j, span in spans)


# ---- the tape's segments ----

def units(graph):
    """Where the tape's units start: each top-level block call's run of nodes
    (a call's own nodes are contiguous), or each node without two calls."""
    calls = [None if not isinstance(node.block, str) else node.block.split('/', 1)[0]
             for node in graph.nodes]
    if len(set(c for c in calls if c is not None)) < 2:
        return list(range(len(graph.nodes)))
    return [i for i in range(len(graph.nodes)) if i == 0 or calls[i] != calls[i - 1]]


def tape_cuts(graph, pol, sizes=None, budget=None):
    """The starts of the tape's segments, in order (from 0); [0] is one segment,
    as is a tape with loops (whose iterations are cut instead). `auto` cuts
    as `sqrt` does when the nodes' `sizes` add up past `budget`."""
    starts = units(graph)
    n = len(starts)
    if pol.kind == 'none' or n < 2 or graph.loops:   # a loop's iterations are the segments
        return [0]
    if pol.kind == 'auto' and (budget is None or sum(sizes or ()) <= budget):
        return [0]
    return starts[::pol.every if pol.kind == 'every' else math.ceil(math.sqrt(n))]


def _node_bytes(graph, inputs, algebra):
    """Each node's bytes as forward would make them, known before it runs:
    a batch's nodes each a column of its rows, an array program's by shape."""
    if getattr(algebra, 'live_rows', False):
        rows = max([getattr(v, 'size', 1) for v in inputs.values()], default=1)
        return [ARRAY_BYTES + 8 * rows] * len(graph.nodes)
    if getattr(algebra, 'shape', None) is None:
        return [FLOAT_BYTES] * len(graph.nodes)
    from .tensors import shapes
    return [ARRAY_BYTES + 8 * math.prod(shape) if shape else FLOAT_BYTES
            for shape in shapes(graph, inputs)]


def _beside_loops(graph, inputs, algebra):
    """The bytes a pass holds outside its loops, known before it runs: the
    inputs' and every top-level value's, as if all were kept (their sizes by
    shape), so that auto's choice for a loop errs toward meeting the limit."""
    sizes = _node_bytes(graph, inputs, algebra)
    return sum(input_bytes(inputs[node.name]) if node.op == 'input' else size
               for node, size in zip(graph.nodes, sizes) if node.op != 'loop' and
               (node.args or node.op == 'input'))


def keep_set(graph, cuts):
    """Which nodes' values backward needs from outside their own segment:
    inputs, constants, loops and their parts, what a later segment reads, and
    the output. The rest of a segment is run again when its turn comes."""
    segment = _segment_of(len(graph.nodes), cuts)
    keep = [node.op in ('input', 'const', 'static', 'loop', 'part') or not node.args
            for node in graph.nodes]
    keep[graph.output] = True
    for i, node in enumerate(graph.nodes):
        for a in node.args:
            if segment[a] != segment[i]:
                keep[a] = True
    return keep


def _segment_of(count, cuts):
    segment, s = [0] * count, 0
    bounds = list(cuts[1:]) + [count]
    for i in range(count):
        while i >= bounds[s]:
            s += 1
        segment[i] = s
    return segment


# ---- a checkpointed pass ----

Run = namedtuple('Run', 'values grads memory')
# Memory: the values forward keeps for backward (count, bytes), the bytes of
# the gradients, the estimated peak of the pass, its largest holders as
# (what, bytes), and how many values backward computes again.
Memory = namedtuple('Memory', 'values bytes gradient_bytes peak holders recomputed policy')


def gradients(graph, inputs, algebra, pol=PLAIN, seed=1.0, backward_pass=True):
    """Values of every node and gradients of the inputs (of `algebra.wanted`'s
    names, where it says; None for the other nodes) as a Run, keeping what
    `pol` says, and the Memory the pass held. Values the checkpointed
    forward dropped hold None (a placeholder of their shape over arrays)."""
    from .passes import require_inputs
    require_inputs(graph, inputs)
    budget = None
    if pol.kind == 'auto':   # what is left of the limit past the gradients, held to the end
        wanted = getattr(algebra, 'wanted', None)
        budget = pol.limit - sum(data_bytes(inputs[name]) for name in graph.inputs
                                 if wanted is None or name in wanted)
        if graph.loops:   # and past what the report counts beside the loops' (loop_peak)
            budget -= _beside_loops(graph, inputs, algebra)
    loop_info = {}

    def strides_of(loop):
        def choose(values, state):
            iteration, held = _iteration_bytes(loop, values), _state_bytes(state)
            # (past the gradients in flight, and what the loops before it keep,
            # held while its backward runs)
            left = None if budget is None else budget - 2 * held - sum(
                _stored(*info) for info in loop_info.values())
            return loop_info.setdefault(id(loop), (loop, iteration, held, loop_strides(
                loop, pol, iteration, held, left)))[3]
        choose.drops = drops
        return choose
    unreads = {}

    def drops(loop, values):
        if id(loop) not in unreads:
            unreads[id(loop)] = unread(loop, values, algebra)
        return unreads[id(loop)]
    cuts = tape_cuts(graph, pol, _node_bytes(graph, inputs, algebra) if pol.kind == 'auto'
                     and not graph.loops else None, budget)
    if len(cuts) == 1:
        values = forward(graph, inputs, algebra, strides_of)
        ran = None
        keep = saved(graph, values, algebra)
        _drop(values, keep, 0, len(values))
    else:
        values, ran, reads = _forward_dropping(graph, inputs, algebra, cuts, strides_of)
        keep = keep_set(graph, cuts)
    grads = None
    segments = []
    sizes = held_bytes(graph, values)   # (backward lets a loop's outputs go)
    if backward_pass:
        grads = [None] * len(graph.nodes)
        grads[graph.output] = seed
        meeting = getattr(algebra, 'meeting', None)
        meet = meeting(graph, values, grads, algebra) if meeting is not None else None
        hooks = None if ran is None else _refills(graph, values, algebra, cuts, ran, reads,
                                                  segments)
        # From the end of the output's segment, whose hook runs it again first
        # (nodes past the output get no gradient).
        top = graph.output if ran is None else min(
            [stop for stop in list(cuts[1:]) + [len(graph.nodes)] if stop > graph.output]) - 1
        # an inner node's gradient goes once passed on: only the inputs' are asked for
        sweep(graph, values, grads, algebra, meet, top, hooks, free=True, release=True)
        grads = meet.result() if meet is not None else [0.0 if g is None else g for g in grads]
        wanted = getattr(algebra, 'wanted', None)
        held = {i for name, i in graph.inputs.items() if wanted is None or name in wanted}
        grads = [g if i in held else None for i, g in enumerate(grads)]
    memory = _memory(graph, values, sizes, grads, loop_info, keep, segments, pol, unreads)
    return Run(values, grads, memory)


def _iteration_bytes(loop, values):
    """What an iteration keeps, given its values (those backward never reads
    dropped already): its list, its place in the run's, and what it alone
    holds: the values it computes, its index and its slices W[i]. Constants
    are the body's, shared; a carried or read value is held by the state or
    the loop's arguments. An inner loop holds what its run keeps."""
    fresh = {sid for kind, sid in loop.slots if kind == loops.SCAN} | {loop.index}
    total = LIST_BYTES + 8 * len(values) + 8
    for i, (value, node) in enumerate(zip(values, loop.body.nodes)):
        if node.args or i in fresh:
            total += value_bytes(value) - 8   # (its place in the list is counted)
        if isinstance(value, loops.LoopRun):
            total += _run_bytes(node.value, value)
    return total


def _run_bytes(loop, run_):
    """What a loop's run keeps for backward: every iteration's values, or its
    checkpoints."""
    if not run_.strides:
        return sum(_iteration_bytes(loop, values) for values in run_.kept)
    return sum(_state_bytes(state) for state in run_.kept.values())


def _state_bytes(state):
    """A carried state's bytes as a later iteration holds it: its own, not
    those of the input (perhaps a view) it starts as."""
    return sum(data_bytes(v) for v in state if v is not None)


def array_gradients(graph, inputs, pol=PLAIN, wrt=None, backward_pass=True):
    """gradients() of an array program over the tensor algebra: its inputs as
    float64 arrays, their shapes checked first, IEEE results (inf, nan) kept;
    gradients of `wrt`'s names only, or of every input."""
    from types import SimpleNamespace

    from . import tensors
    k = tensors.algebra()
    if wrt is not None:
        k = SimpleNamespace(**{**vars(k), 'wanted': frozenset(wrt)})
    inputs = {name: k.coerce(v) for name, v in inputs.items()}
    graph = tensors.bind_sizes(graph, inputs)   # the n of eye(n): the same node ids
    tensors.shapes(graph, inputs)
    with k.np.errstate(all='ignore'):
        return gradients(graph, inputs, k, pol, backward_pass=backward_pass)


def _compute(graph, i, values, inputs, algebra, functions):
    node = graph.nodes[i]
    if node.op == 'input':
        values[i] = algebra.coerce(inputs[node.name])
    elif not node.args:
        values[i] = node.value
    elif node.op == 'part':
        values[i] = values[node.args[0]].outputs[node.value]
    else:
        values[i] = functions[node.op](*[values[a] for a in node.args])


def _forward_dropping(graph, inputs, algebra, cuts, strides_of):
    """Forward, keeping only keep_set's values past each segment's end: the
    values (dropped ones as placeholder), which nodes ran, and which values
    backward reads (saved.saved, asked of each segment before it is dropped)."""
    from .primitives import PRIMITIVES
    functions = {name: getattr(algebra, name) for name in PRIMITIVES}
    nodes = graph.nodes
    keep = keep_set(graph, cuts)
    values = [0.0] * len(nodes)
    ran = bytearray(len(nodes))
    takes = graph.branches and getattr(algebra, 'takes_branches', False)
    if takes:   # as forward_taking_branches: inputs and constants first
        for i, node in enumerate(nodes):
            if node.op == 'input' or node.op == 'const':
                _compute(graph, i, values, inputs, algebra, functions)
    ends = list(cuts[1:]) + [len(nodes)]
    s, start = 0, 0
    reads = None
    leads = leads_for(graph, algebra)   # once: saved() is asked segment by segment
    for i in (taken(graph, values) if takes else range(len(nodes))):
        while i >= ends[s]:
            # which values the segment's rules read, asked before they go
            reads = saved(graph, values, algebra, range(start, ends[s]), reads, leads)
            _drop(values, keep, start, ends[s])
            start, s = ends[s], s + 1
        node = nodes[i]
        if node.op == 'loop':
            values[i] = loops.run(node.value, [values[a] for a in node.args], algebra,
                                  strides_of(node.value), strides_of, forward)
        else:
            _compute(graph, i, values, inputs, algebra, functions)
        ran[i] = 1
    for i in range(len(nodes)):   # nodes a point skipped ran as far as executed() says
        if not ran[i] and nodes[i].op == 'input':
            ran[i] = 1
    reads = saved(graph, values, algebra, range(start, len(nodes)), reads, leads)
    return values, ran, reads


def _drop(values, keep, start, stop):
    for j in range(start, stop):
        if not keep[j]:
            values[j] = placeholder(values[j])


def _refills(graph, values, algebra, cuts, ran, reads, log):
    """backward's hooks: at each segment's last node, drop the segment above
    (its gradients have flowed) and run this one's forward again."""
    from .primitives import PRIMITIVES
    functions = {name: getattr(algebra, name) for name in PRIMITIVES}
    keep = keep_set(graph, cuts)
    reads = [k or r for k, r in zip(keep, reads)]
    ends = list(cuts[1:]) + [len(graph.nodes)]
    hooks, above = {}, {}
    for s, (start, stop) in enumerate(zip(cuts, ends)):
        def refill(i, start=start, stop=stop, s=s):
            if s + 1 < len(cuts):
                _drop(values, keep, cuts[s + 1], ends[s + 1])
            count = 0
            for j in range(start, stop):
                if ran[j] and not keep[j]:
                    _compute(graph, j, values, {}, algebra, functions)
                    count += 1
            # what no rule reads has served the segment's forward: it goes
            _drop(values, reads, start, stop)
            log.append((s, count, values_bytes(values[start:stop])))
        hooks[stop - 1] = refill
    return hooks


def _memory(graph, values, sizes, grads, loop_info, keep, segments, pol, unreads):
    """The Memory of a pass: what forward kept (`keep`, of `sizes` bytes, and
    of each loop's iterations all but `unreads`), and the peak estimated from
    the kept values, the largest segment run again and the gradients."""
    holders = {}
    count, kept = 0, 0
    def strides(j):
        info = loop_info.get(id(graph.nodes[j].value))
        return None if info is None else info[3]
    for i, size in enumerate(sizes):
        if not keep[i] or in_last_iteration(graph, i, strides):
            continue
        count += 1
        kept += size
        if graph.nodes[i].op not in ('const', 'static', 'loop'):   # the program's own, or none
            label = _holder(graph, i)
            holders[label] = holders.get(label, 0) + size
    transient, again = 0, 0
    for loop, iteration, state, strides in loop_info.values():
        n = loop.count
        held = loop_peak(n, strides, iteration, state)
        stored = _stored(loop, iteration, state, strides)
        each = _computed(loop) - len(unreads.get(id(loop), ()))   # what an iteration keeps
        count += n * each if not strides else len(loops.segment_starts(n, strides[0]))
        kept += stored
        label = _loop_label(graph, loop)
        holders[label] = holders.get(label, 0) + stored
        transient = max(transient, held - stored)
        again += loops.recomputed(n, strides) * _computed(loop)
    if segments:
        transient = max(transient, max(size for _, _, size in segments))
        again += sum(c for _, c, _ in segments)
    gradient_bytes = 0 if grads is None else values_bytes(g for g in grads if g is not None)
    # in flight: a gradient arriving at a value, and the one it passes on
    largest = max([data_bytes(v) for v, node in zip(values, graph.nodes) if node.op != 'input'] +
                  [state for _, _, state, _ in loop_info.values()], default=0)
    in_flight = 0 if grads is None else 2 * largest
    top = sorted(holders.items(), key=lambda item: (-item[1], item[0]))[:5]
    return Memory(count, kept, gradient_bytes, kept + transient + gradient_bytes + in_flight,
                  tuple(top), again, pol)


def in_last_iteration(graph, i, strides):
    """Whether node i is a part of a loop that keeps every iteration's values
    (`strides(loop node id)`: its strides, () for every iteration): its value
    is then the last iteration's, counted with the loop's."""
    node = graph.nodes[i]
    return node.op == 'part' and strides(node.args[0]) == ()


def _stored(loop, iteration, state, strides):
    """The bytes a loop keeps from forward to its backward: every iteration's
    values, or its outermost checkpoints."""
    if not strides:
        return loop.count * iteration
    return len(loops.segment_starts(loop.count, strides[0])) * state


def _computed(loop):
    """The values an iteration computes: its body's nodes but its inputs."""
    return sum(node.op != 'input' for node in loop.body.nodes)


def _holder(graph, i):
    node = graph.nodes[i]
    if isinstance(node.block, str):
        return f"block {node.block.split('/', 1)[0]}"
    if node.op == 'input':
        return f'input {node.name}'
    text = graph.text(i, 30) or graph.label(i)
    return text


def _loop_label(graph, loop):
    for i in graph.loops:
        if graph.nodes[i].value is loop:
            index = loop.body.nodes[loop.index].name
            span = f'{loop.first}..{loop.first + loop.count}'
            return (f'loop for {index} in {f"reversed({span})" if loop.reverse else span} '
                    f'(line {graph.line(i)})')
    return 'a nested loop'




# ---- what a picture marks ----

# kept: per node, whether backward holds its value (plain: what a rule reads;
# checkpointed: the checkpoints); again: per node, whether backward computes
# it again; segment: per node, its segment's number (0 without cuts); bytes:
# per node, its value's; loops: {loop node id: LoopPlan}.
Plan = namedtuple('Plan', 'kept again segment bytes loops policy')
# strides: where the carried state is kept (() every iteration's values);
# kept, computed: the values an iteration keeps (plain) and computes;
# iteration: an iteration's kept bytes, state: the carried state's.
LoopPlan = namedtuple('LoopPlan', 'count strides kept computed iteration state')


def plan(graph, values, algebra, pol=PLAIN):
    """What `render --memory` and `--checkpoint` draw, from a plain pass's
    values: which nodes backward keeps, which it computes again, the tape's
    segments and each loop's checkpoints, as gradients() would hold them."""
    cuts = tape_cuts(graph, pol) if pol.kind in ('sqrt', 'every') else [0]
    reads = saved(graph, values, algebra)
    keep = keep_set(graph, cuts) if len(cuts) > 1 else reads
    again = [not k and bool(node.args) for k, node in zip(keep, graph.nodes)] \
        if len(cuts) > 1 else [False] * len(keep)
    loop_plans = {}
    for i in graph.loops:
        loop, run_ = graph.nodes[i].value, values[i]
        first = list(run_.kept[0]) if not run_.strides else None
        if first is None:
            continue
        drop = unread(loop, first, algebra)
        iteration = _iteration_bytes(loop, loops.dropped(first, drop))
        state = _state_bytes(loops.initial(loop, run_.args))
        loop_plans[i] = LoopPlan(loop.count, loop_strides(loop, pol, iteration, state),
                                 _computed(loop) - len(drop), _computed(loop), iteration, state)
    return Plan(keep, again, _segment_of(len(graph.nodes), cuts),
                held_bytes(graph, values), loop_plans, pol)
