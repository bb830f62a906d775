"""Forward mode: tangents ∂node/∂x carried along the tape, one pass per input.

The tangent rules are not a second table: they come from the vector-Jacobian
products of core/primitives.py, by linearity. Every primitive maps numbers to
one number, so its Jacobian is a row (J_1, ..., J_m), and the VJP rule called
with the cotangent g gives (g*J_1, ..., g*J_m). The Jacobian-vector product
J_1*t_1 + ... + J_m*t_m is then the sum over arguments of the rule's j-th
cotangent called with g = t_j (multiplication of numbers commutes, so no
transposition is left to do). Calling the rule with the tangent itself as g,
rather than with g = 1 and multiplying after, is also what PyTorch's
forward-mode formulas do (derivatives.yaml writes most `result:` formulas as
the backward formula with the tangent for the gradient), so the edge
conventions agree: abs'(0) = 0, a max tie splits 0.5/0.5, and a nan tangent
reaches the exponent of a power where PyTorch's does. Four ops whose PyTorch
forward formula is not its backward one (min, max, clamp and atan2, at ties,
nans and the origin) carry that formula in their row's `jvp`.

An argument that does not depend on the seeded input has no tangent (None),
not a zero: it contributes nothing, as an undefined tangent does in PyTorch,
so x^2 at x < 0 stays finite instead of meeting 0 * log(x).

The algebra is the caller's: NUMBERS gives numbers, the recording algebra of
record.py gives the tangent's own graph.
"""

from ..core.array_rules import Deferred
from ..core.passes import pullback
from ..core.primitives import NUMBERS, PRIMITIVES

_JVPS = {name: row.jvp for name, row in PRIMITIVES.items() if row.jvp is not None}


def tangents(graph, values, seed, algebra=NUMBERS):
    """∂node/∂seed for every node (None where it does not depend on seed).

    `seed` is a variable's name, or {name: tangent} to push several
    directions at once (arrays of tangents, under an array algebra)."""
    nodes = graph.nodes
    result = [None] * len(nodes)
    for name, t in ({seed: 1.0} if isinstance(seed, str) else seed).items():
        result[graph.inputs[name]] = t
    settle = getattr(algebra, 'settle', None)   # arrays: a tangent in its node's shape
    looped = {}   # a loop node's id -> its outputs' tangents, which its parts take
    for i, node in enumerate(nodes):
        if not node.args:
            continue
        if node.op == 'part':
            outputs = looped.get(node.args[0])
            result[i] = None if outputs is None else outputs[node.value]
            continue
        given = [result[a] for a in node.args]
        if not any(t is not None for t in given):
            continue
        if node.op == 'loop':
            looped[i] = _through_loop(node.value, values[i], given, algebra)
            continue
        total = node_tangent(graph, i, given, values, algebra)
        result[i] = total if settle is None or total is None else settle(total, values[i])
    return result


def _through_loop(loop, run_, given, algebra):
    """The tangents of a loop's outputs, given its arguments' (None: none):
    each iteration's values computed again from the carried state, and its
    body's tangents by tangents(), a tangent carried beside each value."""
    from ..core import loops
    body, args = loop.body, run_.args
    step, after = loops.stepper(loop, algebra, run_.inner, run_.forward)
    state = loops.initial(loop, args)
    carried = [t if kind == loops.CARRY else None for (kind, _), t in zip(loop.slots, given)]
    found = [None] * len(body.nodes)
    rows = {k: [] for k in loop.stacked}   # X[i] = ...: (value, tangent) per iteration
    for t in range(loop.count):
        values = step(state, args, t)
        seed = {}
        for j, (kind, sid) in enumerate(loop.slots):
            here = carried[j] if kind == loops.CARRY else given[j]
            if kind == loops.SCAN and here is not None:
                here = algebra.index(here, (loops.index_at(loop, t),))
            if here is not None:
                seed[body.nodes[sid].name] = here
        found = tangents(body, values, seed, algebra)
        for k, stack in rows.items():
            o = loop.outputs[k]
            stack.append((values[o], found[o]))
        carried = [None if out is None else found[out] for out in loop.carry]
        state = after(values, state)
    result = [found[o] for o in loop.outputs]
    for k, stack in rows.items():
        if all(t is None for _, t in stack):
            continue
        if loop.reverse:
            stack.reverse()
        result[k] = algebra.stack(*[algebra.mul(0.0, v) if t is None else t for v, t in stack])
    return result


def node_tangent(graph, i, given, values, algebra=NUMBERS):
    """∂node i from its arguments' tangents `given` (None: none): its row's
    JVP where it has one, else the VJP rule by linearity."""
    node = graph.nodes[i]
    jvp = _JVPS.get(node.op)
    if jvp is not None:
        return jvp(algebra, given, values[i], *[values[a] for a in node.args])
    total = None
    for j, t in enumerate(given):
        if t is None:
            continue
        contribution = pullback(graph, i, t, values, algebra)[j]
        if type(contribution) is Deferred:   # (an array rule's, computed when asked)
            contribution = contribution.compute()
        if contribution is not None:
            total = contribution if total is None else algebra.add(total, contribution)
    return total


def gradient(graph, values, names, algebra=NUMBERS):
    """{name: ∂output/∂name} by one forward pass per name, and the tangents
    of every pass (for --nodes)."""
    passes = {name: tangents(graph, values, name, algebra) for name in names}
    return {name: 0.0 if t[graph.output] is None else t[graph.output]
            for name, t in passes.items()}, passes
