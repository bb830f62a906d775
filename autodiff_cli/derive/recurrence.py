"""The derivative of a program with loops, as a recurrence: forward-mode
tangents recorded beside the values, and a loop as one loop again.

The program is replayed on a recording Tape (record.py) node by node, each
node's tangents ∂node/∂v (one per variable v of --wrt) recorded with it by
forward.node_tangent, the rules' own JVPs. A loop node becomes one loop node
of the derivative's tape whose body, a tape of its own recorded the same
way, carries the loop's values and a tangent per carried value and
variable: iteration t's tangents read iteration t's old values, so N
iterations print as one body, never N copies. Nested loops recurse once
per level, as loops.py runs them.
"""

from ..core.graph import Graph, Node
from ..core.graph import CARRY, FREE, Loop
from ..errors import AdgradError
from .forward import node_tangent
from .simplify import Ref


class _Looped:
    """A recorded loop's parts: per output of the program's loop, its value
    and its tangents {v: Ref}."""

    def __init__(self, values, tangents):
        self.values, self.tangents = values, tangents


def record_loops(graph, tape, wrt, with_value=False):
    """∂output/∂v for each v of `wrt` of a program with loops, recorded on
    `tape` with its loops kept loops: the results of record.differentiate."""
    if graph.shapes is not None:
        raise AdgradError('diff does not print array programs with loops yet: grad computes '
                          'their gradients')
    given = {i: tape.input(node.name) for i, node in enumerate(graph.nodes) if node.op == 'input'}
    seeds = {graph.inputs[v]: {v: 1.0} for v in wrt}
    values, tangents = _replay(graph, tape, given, seeds, wrt)
    for name in graph.inputs:
        tape.input(name)
    out = tangents[graph.output] or {}
    results = [('value', values[graph.output])] if with_value else []
    return results + [(v, out.get(v, 0.0)) for v in wrt]


def _replay(graph, tape, given, seeds, directions):
    """(values, tangents) of every node of `graph` recorded on `tape`: given
    {input id: Ref or float}, seeds {input id: {v: tangent}}; a node's
    tangents are {v: Ref or float} without the v it does not depend on."""
    nodes = graph.nodes
    values, tangents = [None] * len(nodes), [None] * len(nodes)
    for i, node in enumerate(nodes):
        op, args = node.op, node.args
        if op == 'input':
            values[i], tangents[i] = given[i], seeds.get(i)
            continue
        if op == 'const':
            values[i] = float(node.value)
            continue
        if op == 'loop':
            values[i] = _loop(tape, node.value, [values[a] for a in args],
                              [tangents[a] for a in args], directions)
            continue
        if op == 'part':
            looped = values[args[0]]
            values[i], tangents[i] = looped.values[node.value], looped.tangents[node.value]
            continue
        value = getattr(tape, op)(*[values[a] for a in args])
        if node.name and isinstance(value, Ref) and tape.nodes[value].op != 'input':
            tape.names.setdefault(value, node.name.split('#')[0])
        values[i] = value
        given_tangents = [tangents[a] for a in args]
        if any(given_tangents):
            found = {}
            for v in directions:
                here = [t.get(v) if t else None for t in given_tangents]
                if any(t is not None for t in here):
                    t = node_tangent(graph, i, here, values, tape)
                    if t is not None:
                        found[v] = t
            tangents[i] = found or None
    return values, tangents


def _loop(tape, loop, args, arg_tangents, directions):
    """The loop recorded as one loop node of `tape`, followed by its parts: a
    _Looped. A carried value's tangent is carried from the iteration where it
    first depends on a variable: found by recording the body again until the
    set of carried tangents stops growing (at most once per pair)."""
    active = {(j, v) for j, (kind, _) in enumerate(loop.slots) if kind == CARRY
              for v in directions if (arg_tangents[j] or {}).get(v) is not None}
    while True:
        built = _Body(tape, loop, args, arg_tangents, active, directions)
        grown = active | built.tangent_carries()
        if grown == active:
            return built.emit()
        active = grown


class _Body:
    """One recording of a loop's body with its tangents, on a tape of its own."""

    def __init__(self, tape, loop, args, arg_tangents, active, directions):
        self.outer, self.loop, self.directions = tape, loop, directions
        body = loop.body
        self.tape = type(tape)(tape.simplify, tape.exact)
        self.slots, self.args, self.carried = [], [], []   # the derivative loop's
        self.taken = set()
        given, seeds = {}, {}
        index = None
        if loop.index is not None:
            index = given[loop.index] = self.slot(None, body.nodes[loop.index].name, None)
        self.index = index
        for j, (kind, sid) in enumerate(loop.slots):
            if kind != CARRY and kind != FREE:
                raise AdgradError('diff does not print loops over slices W[i] yet: grad '
                                  'computes their gradients')
            name = body.nodes[sid].name.rstrip("'")
            a, ts = args[j], arg_tangents[j] or {}
            if kind == FREE and not isinstance(a, Ref):
                given[sid] = a                       # a number: written into the body
            else:
                given[sid] = self.slot(kind, name, a, (j, None) if kind == CARRY else None)
            here = {}
            for v in directions:
                t = ts.get(v)
                if kind == FREE and t is not None:
                    here[v] = self.slot(FREE, _tangent_name(name, v), t) if isinstance(t, Ref) \
                        else t
                elif kind == CARRY and (j, v) in active:
                    here[v] = self.slot(CARRY, _tangent_name(name, v),
                                        0.0 if t is None else t, (j, v))
            if here:
                seeds[sid] = here
        self.values, self.tangents = _replay(body, self.tape, given, seeds, directions)

    def slot(self, kind, name, outer, carried=None):
        """A new input of the body, standing for `outer` (kind None: the index)."""
        wanted, n = name, 1
        while wanted in self.taken:
            n += 1
            wanted = f'{name}#{n}'
        self.taken.add(wanted)
        ref = self.tape.input(wanted)
        if kind is not None:
            self.slots.append((kind, ref))
            self.args.append(outer)
            self.carried.append(carried)
        return ref

    def tangent_carries(self):
        """The (carried slot, variable) pairs whose next value has a tangent."""
        found = set()
        for j, out in enumerate(self.loop.carry):
            if out is not None:
                found |= {(j, v) for v in (self.tangents[out] or {})}
        return found

    def emit(self):
        """The loop node and its parts on the outer tape: a _Looped."""
        loop, tape, outer = self.loop, self.tape, self.outer
        carry = []
        for which in self.carried:
            if which is None:
                carry.append(None)
                continue
            j, v = which
            out = loop.carry[j]
            value = self.values[out] if v is None else (self.tangents[out] or {}).get(v, 0.0)
            carry.append(tape.ref(value))
        outputs, names, shape = [], [], []
        for k, o in enumerate(loop.outputs):
            name = loop.names[k]
            outputs.append(tape.ref(self.values[o]))
            names.append(name)
            found = {}
            for v, t in (self.tangents[o] or {}).items():
                found[v] = len(outputs)
                outputs.append(tape.ref(t))
                names.append(_tangent_name(name, v))
            shape.append((len(outputs) - len(found) - 1, found))
        # the program's names for what the body binds, as hints for printing
        nodes = [node._replace(name=tape.names[i]) if i in tape.names else node
                 for i, node in enumerate(tape.nodes)]
        body = Graph(nodes, outputs[-1], dict(tape.inputs), {}, '', (), (), None,
                     tuple(tape.loops))
        value = Loop(body, loop.first, loop.count, self.index, tuple(self.slots), tuple(carry),
                     tuple(outputs), tuple(names), reverse=loop.reverse)
        args = tuple(outer.ref(a) for a in self.args)
        node = Ref(len(outer.nodes))
        outer.nodes.append(Node('loop', args, None, value))
        outer.loops.append(node)
        parts = []
        for k, name in enumerate(names):
            parts.append(Ref(len(outer.nodes)))
            outer.nodes.append(Node('part', (node,), name, k))
        return _Looped([parts[k] for k, _ in shape],
                       [{v: parts[p] for v, p in found.items()} or None for _, found in shape])


def _tangent_name(name, v):
    return f'd{name}_d{v}'
