"""A loop of an array program in its derivative's formula: one loop forward,
one loop backward, never N copies.

Forward is the program's loop recorded once (its body on a tape of its
own), which also stacks the state each iteration starts from: `xs[i] = x`.
Backward is a second loop over the same indices in reverse, as
checkpointing every iteration would run it: its body computes iteration
i's values again from xs[i] and the slices W[i], then sends the carried
cotangents back through them by the array rules, so that it carries d_x,
adds up the cotangent of a value every iteration reads, and stacks the
slices' own (`d_W[i] = ...`). Both are Loop nodes, so the printers write
them as loops, and `adgrad eval` reads the adgrad text back.

array_formula.py, whose tape this records on, passes in what it runs: its
`replay` of a graph onto a tape, and its `point`, the algebra of the rules.
"""

from ..core.graph import CARRY, FREE, SCAN, Graph, Loop, Node
from ..core.tensors import MAX_AXES
from ..errors import AdgradError
from .record import reachable
from .simplify import Ref


class Recorded:
    """A loop recorded on a formula's tape, as forward's LoopRun holds one:
    its parts (`outputs`), the stacked states per carried slot (`states`)
    and its arguments."""

    def __init__(self, outputs, states, args):
        self.outputs, self.states, self.args = outputs, states, args


def _replayed(tape, loop, args, replay):
    """One iteration of `loop` recorded on a tape of its own, its inputs the
    shapes of an iteration's slots (a slice W[i] of `args`' W) and index:
    (their shapes by name, that tape, the body's values there)."""
    declared = {}
    for (kind, sid), a in zip(loop.slots, args):
        shape = tape.shape(a)
        declared[loop.body.nodes[sid].name] = shape[1:] if kind == SCAN else shape
    if loop.index is not None:
        declared[loop.body.nodes[loop.index].name] = ()
    sub = type(tape)(declared, tape.exact)
    return declared, sub, replay(loop.body, sub)


def _emit(tape, loop, args, shapes, sub):
    """The loop node on `tape`, then a part per output: their Refs. `sub`,
    the body's tape, is kept for the printers (their shapes and statics)."""
    args = tuple(tape.ref(a) for a in args)
    if tape.nodes:
        tape.shape(Ref(len(tape.nodes) - 1))   # (shapes are known up to here)
    node = Ref(len(tape.nodes))
    tape.nodes.append(Node('loop', args, None, loop))
    tape.node_shapes.append(None)
    tape.loops.append(node)
    tape.bodies[node] = sub
    parts = []
    for k, (name, shape) in enumerate(zip(loop.names, shapes)):
        if len(shape) > MAX_AXES:
            raise AdgradError(f'diff would stack {name} with {len(shape)} axes; adgrad takes at '
                              f'most {MAX_AXES}')
        parts.append(Ref(len(tape.nodes)))
        tape.nodes.append(Node('part', (node,), name, k))
        tape.node_shapes.append(shape)
    return parts


def _graph(tape, output):
    # the program's names for what the body binds, as hints for printing
    nodes = [node._replace(name=tape.names[i]) if i in tape.names else node
             for i, node in enumerate(tape.nodes)]
    return Graph(nodes, output, dict(tape.inputs), {}, '', (), (), None, tuple(tape.loops))


def _slot_names(loop):
    return [loop.body.nodes[sid].name for _, sid in loop.slots]


def record(tape, loop, args, replay):
    """The program's loop node, with arguments `args` (Refs or numbers on
    `tape`), recorded as one loop that also stacks its carried states: a
    Recorded."""
    body, names = loop.body, _slot_names(loop)
    declared, sub, values = _replayed(tape, loop, args, replay)
    slots = tuple((kind, sub.inputs[name]) for (kind, _), name in zip(loop.slots, names))
    carry = tuple(None if c is None else sub.ref(values[c]) for c in loop.carry)
    outputs = [sub.ref(values[o]) for o in loop.outputs]
    shapes = [sub.shape(o) for o in outputs]
    stacked = set(loop.stacked)
    shapes = [(loop.count,) + s if k in stacked else s for k, s in enumerate(shapes)]
    part_names, states = list(loop.names), {}
    own = {outputs[k]: k for k in stacked}   # a state the program stacks itself (X[i] = x)
    for j, (kind, _) in enumerate(loop.slots):
        if kind == CARRY:   # xs[i] = x: the state iteration i starts from, for backward
            states[j] = own.get(slots[j][1], len(outputs))
            if states[j] == len(outputs):
                outputs.append(slots[j][1])
                part_names.append(names[j].rstrip("'") + 's')
                shapes.append((loop.count,) + declared[names[j]])
    index = sub.inputs[body.nodes[loop.index].name] if loop.index is not None else None
    recorded = Loop(_graph(sub, outputs[-1]), loop.first, loop.count, index, slots, carry,
                    tuple(outputs), tuple(part_names),
                    tuple(sorted(stacked)) + tuple(range(len(loop.outputs), len(outputs))),
                    loop.reverse)
    parts = _emit(tape, recorded, args, shapes, sub)
    return Recorded(parts[:len(loop.outputs)], {j: parts[k] for j, k in states.items()},
                    list(args))


def backward(tape, loop, recorded, cotangents, replay, point, wanted=None):
    """The cotangents of the loop node's arguments, given its parts' (None
    where none arrives), recorded on `tape` as one loop in reverse: (the
    cotangents, all rows exact). `wanted`: per argument, whether its
    cotangent can reach a gradient (None: all); the others' are not made."""
    from ..core.passes import sweep
    if wanted is None:
        wanted = [True] * len(loop.slots)
    body, names, count = loop.body, _slot_names(loop), loop.count
    for j, (kind, _) in enumerate(loop.slots):
        shape = tape.shape(recorded.args[j])
        if kind == SCAN and (loop.first != 0 or shape[0] != count):
            raise AdgradError(f'diff prints a loop over all the slices of {names[j]} only, '
                              f'0..{shape[0]}: grad computes the gradient of this one')
    declared, sub, values = _replayed(tape, loop, recorded.args, replay)   # (computed again)
    index_name = body.nodes[loop.index].name if loop.index is not None else None

    def new_input(name, shape):
        while name in sub.declared:
            name += "'"
        sub.declared[name] = shape
        return sub.input(name)

    # The reverse loop's slots: (kind, input, argument, next value or None).
    # The state from xs[i], a slice from W[i], a value read as it is:
    slots = [(SCAN if kind != FREE else FREE, sub.inputs[name],
              recorded.states[j] if kind == CARRY else recorded.args[j], None)
             for j, ((kind, _), name) in enumerate(zip(loop.slots, names))]
    seeds, carried, spent = {}, {}, set()
    for j, ((kind, _), name) in enumerate(zip(loop.slots, names)):
        if kind == CARRY:   # its cotangent, carried from the last iteration down
            g = new_input('d_' + name.rstrip("'"), declared[name])
            start = cotangents[loop.outputs.index(loop.carry[j])]
            carried[j] = len(slots)
            slots.append([CARRY, g, tape.fit(0.0, declared[name]) if start is None else start,
                          None])
            seeds[loop.carry[j]] = g
    carried_out = {loop.carry[j] for j, (kind, _) in enumerate(loop.slots) if kind == CARRY}
    for k, o in enumerate(loop.outputs):
        if cotangents[k] is not None and k not in loop.stacked and o not in carried_out:
            # a name the last iteration leaves (not read by the next): its
            # cotangent reaches that iteration only, then is spent
            shape = sub.shape(values[o])
            g = new_input('d_' + loop.names[k], shape)
            spent.add(len(slots))   # (its next value, 0, carries no result)
            slots.append((CARRY, g, cotangents[k], sub.ref(sub.fit(0.0, shape))))
            seeds[o] = g if o not in seeds else sub.add(seeds[o], g)
    for k in loop.stacked:
        if cotangents[k] is not None:   # X[i] = ...: row i of its cotangent
            o = loop.outputs[k]
            row = new_input(f'd_{loop.names[k]}', sub.shape(values[o]))
            slots.append((SCAN, row, cotangents[k], None))
            seeds[o] = row if o not in seeds else sub.add(seeds[o], row)
    if not seeds:
        return [None] * len(loop.slots), [True] * len(loop.slots)
    rules = point(sub)
    grads = [None] * len(body.nodes)
    for o, g in seeds.items():
        grads[o] = g
    sweep(body, values, grads, rules, rules.meeting(body, values, grads, rules), max(seeds))

    def cotangent(j):
        g = grads[loop.slots[j][1]]
        return sub.ref(sub.fit(0.0 if g is None else g, declared[names[j]]))

    outputs, part_names, shapes, stacked, given = [], [], [], [], {}

    def output(j, ref, name, shape):
        given[j] = len(outputs)
        outputs.append(ref)
        part_names.append(name)
        shapes.append(shape)

    passed = {}
    for j, at in carried.items():
        slots[at][3] = cotangent(j)
        if slots[at][3] == slots[at][1]:   # s = s: its cotangent passes through unchanged
            slots[at] = [FREE, slots[at][1], slots[at][2], None]
            passed[j] = slots[at][2]
            continue
        if wanted[j]:   # (one that is not is still carried, if another reads it)
            output(j, slots[at][3], sub.nodes[slots[at][1]].name, declared[names[j]])
    for j, ((kind, sid), name) in enumerate(zip(loop.slots, names)):
        if not wanted[j]:
            continue
        if kind == FREE and grads[sid] is not None:   # read every iteration: its shares add up
            total = new_input('d_' + name.rstrip("'"), declared[name])
            slots.append((CARRY, total, tape.fit(0.0, declared[name]),
                          sub.ref(sub.add(total, cotangent(j)))))
            output(j, slots[-1][3], sub.nodes[total].name, declared[name])
        elif kind == SCAN:   # d_W[i] = ...: each slice's cotangent, stacked
            stacked.append(len(outputs))
            output(j, cotangent(j), 'd_' + name.split('[')[0], (count,) + declared[name])
    if not outputs:   # what reaches the loop depends on none of its arguments
        return [passed.get(j) for j in range(len(loop.slots))], [True] * len(loop.slots)
    # A slot goes unless it carries a result (d_x, d_A) or what is computed
    # reads it: so the state of an s whose cotangent is d_s alone goes, and
    # the d_z of a z that reads no argument.
    results = set(outputs)
    kept = {k for k, s in enumerate(slots) if s[0] == CARRY and s[3] in results
            and k not in spent}
    while True:
        read = set(reachable(sub.nodes, outputs + [slots[k][3] for k in kept
                                                   if slots[k][3] is not None]))
        more = {k for k, s in enumerate(slots) if s[1] in read} - kept
        if not more:
            break
        kept |= more
    slots = [slots[k] for k in sorted(kept)]
    index = sub.inputs[index_name] if index_name is not None else None
    reverse = Loop(_graph(sub, outputs[-1]), loop.first, count, index,
                   tuple((s[0], s[1]) for s in slots), tuple(s[3] for s in slots),
                   tuple(outputs), tuple(part_names), tuple(stacked), not loop.reverse)
    parts = _emit(tape, reverse, [s[2] for s in slots], shapes, sub)
    result = [parts[given[j]] if j in given else passed.get(j) for j in range(len(loop.slots))]
    return result, [True] * len(result)
