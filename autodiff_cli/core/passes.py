"""Forward and reverse passes over a graph's tape.

Both are single loops over the tape; results are lists indexed by node id.
Both run over an algebra: NUMBERS computes with floats, and an algebra of
arrays (batch.py) runs the same loops over a whole batch of points at once.
"""

import math

from ..errors import AdgradError, NumericalError
from ..errors import did_you_mean
from .branches import executed, forward_taking_branches, taken
from .primitives import (COMPARISON, CUSTOM, LOGICAL, NUMBERS, PRIMITIVES, SELECT, STOP,
                         names_of)
from .saved import placeholder


def forward(graph, inputs, algebra=NUMBERS, strides=()):
    """Values of every node, given {variable name: value} for every input.

    An algebra that `takes_branches` (NUMBERS: a single point) runs only the
    branch each `if` takes (its other nodes keep 0.0; executed() says which
    ran), so that branch's inf or nan never exists. Over arrays both run, and
    backward() keeps each row to its own branch. A loop keeps what `strides`
    says (loops.run; checkpoint.py chooses them).
    """
    require_inputs(graph, inputs)
    values = [0.0] * len(graph.nodes)
    functions = {name: getattr(algebra, name) for name in PRIMITIVES}
    if graph.loops:
        forward_looping(graph, inputs, values, algebra, functions, strides)
        return values
    if graph.branches and getattr(algebra, 'takes_branches', False):
        forward_taking_branches(graph, inputs, values, functions)
        return values
    for i, node in enumerate(graph.nodes):
        op, args = node.op, node.args
        if op == 'input':
            values[i] = algebra.coerce(inputs[node.name])
        elif not args:   # a constant, or an array op's static argument
            values[i] = node.value
        elif len(args) == 1:
            values[i] = functions[op](values[args[0]])
        elif len(args) == 2:
            values[i] = functions[op](values[args[0]], values[args[1]])
        else:
            values[i] = functions[op](*[values[j] for j in args])
    return values


def forward_looping(graph, inputs, values, algebra, functions, strides=()):
    """forward() of a graph with loops: each loop node runs its body
    (loops.run), and each of its parts takes one of its outputs."""
    from . import loops   # here, not at the top: a program without loops never needs it
    nodes = graph.nodes
    takes = graph.branches and getattr(algebra, 'takes_branches', False)
    if takes:   # inputs and constants first, as forward_taking_branches sets them
        for i, node in enumerate(nodes):
            if node.op == 'input':
                values[i] = algebra.coerce(inputs[node.name])
            elif node.op == 'const':
                values[i] = node.value
    per_loop = strides if callable(strides) else (lambda loop: strides)
    for i in (taken(graph, values) if takes else range(len(nodes))):
        node = nodes[i]
        op, args = node.op, node.args
        if op == 'input':
            values[i] = algebra.coerce(inputs[node.name])
        elif op == 'loop':   # (before `not args`: a body may read nothing from outside)
            values[i] = loops.run(node.value, [values[a] for a in args], algebra,
                                  per_loop(node.value), strides, forward)
        elif not args:
            values[i] = node.value
        elif op == 'part':
            values[i] = values[args[0]].outputs[node.value]
        else:
            values[i] = functions[op](*[values[a] for a in args])


def require_inputs(graph, inputs):
    """An error pointing at the first variable that `inputs` gives no value."""
    missing = [name for name in graph.inputs if name not in inputs]
    if missing:
        name = missing[0]
        node = graph.nodes[graph.inputs[name]]
        index = ' (a loop index exists only inside its loop)' if name in _indices(graph) else ''
        raise AdgradError(f"no value for '{name}'{index}: give it as {name}=VALUE",
                          graph.source, node.span[0] if node.span else None)


def _indices(graph):
    """The names of the loops' indices, nested loops' too."""
    names, bodies = set(), [graph]
    while bodies:
        body = bodies.pop()
        for i in body.loops:
            loop = body.nodes[i].value
            if loop.index is not None:
                names.add(loop.body.nodes[loop.index].name)
            bodies.append(loop.body)
    return names


RULES = {name: row.vjp for name, row in PRIMITIVES.items()}


def pullback(graph, i, g, values, algebra=NUMBERS):
    """What each argument of node i receives when `g` arrives at it: one
    cotangent per argument, None for "no gradient" (see primitives.py).

    The one way to call a derivative rule: backward(), the steps of a picture
    and the derivative transformations all come through here, so a rule's
    conventions hold everywhere at once.
    """
    node = graph.nodes[i]
    rule = getattr(algebra, 'rules', RULES)[node.op]
    return rule(algebra, g, values[i], *[values[a] for a in node.args])


def backward(graph, values, output=None, algebra=NUMBERS, seed=1.0, hooks=None):
    """∂output/∂node for every node, by the chain rule in reverse tape order;
    `seed` is the output's own cotangent (of its shape, for an array).

    Accumulation goes through the algebra, so a recording one builds the
    gradient's graph with this loop. A node passes gradients on only once one
    has reached it, as in PyTorch (an unused binding's inf cannot make 0 * inf).
    An algebra's `meeting` says how cotangents meet (by branch, branches.py;
    summed back from a broadcast, tensors.py), and may hold some back (`due`).
    """
    output = graph.output if output is None else output
    grads = [None] * len(graph.nodes)
    grads[output] = seed
    meeting = getattr(algebra, 'meeting', None)
    meet = meeting(graph, values, grads, algebra) if meeting is not None else None
    sweep(graph, values, grads, algebra, meet, output, hooks)
    if meet is not None:
        return meet.result()
    return [0.0 if g is None else g for g in grads]


def sweep(graph, values, grads, algebra, meet, top, hooks=None, free=False, release=False,
          spend=False):
    """backward()'s loop, from node `top` down to the tape's first, over
    `grads` as seeded. `hooks` {tape position: f(position)} runs f before
    that node (checkpoint.py's segments run again there); a loop node's
    gradients go through its body (loops.vjp). `free`: a node's gradient
    goes once passed on (but inputs' and parts', which are read after).
    `release`: a loop's output values go once their readers have run;
    `spend`: each value once its rule has; both for a caller that owns
    `values` and sweeps them once (not a Jacobian's, swept again)."""
    # (No later rule reads a spent value: a rule reads its node's value and
    # its arguments', which come before it on the tape.)
    nodes = graph.nodes
    due = getattr(meet, 'due', None)
    if graph.loops:
        hooks = dict(hooks or {})
        for i in graph.loops:
            hooks[i] = _through_loop(graph, values, grads, algebra, meet, hooks.get(i), free,
                                     release)
    rules, k, add = getattr(algebra, 'rules', RULES), algebra, algebra.add
    # pullback(), inlined and unrolled by arity: this is every gradient's hot path.
    for i in range(top, -1, -1):
        if due and i in due:
            meet.release(i)
        if hooks and i in hooks:
            g = None   # (the node before's cotangent, which would be held through the hook)
            if hooks[i](i):
                continue
        g, args = grads[i], nodes[i].args
        if g is None or not args:
            continue
        if meet is not None:
            meet(i, args, rules[nodes[i].op](k, g, values[i], *[values[a] for a in args]))
        elif len(args) == 1:
            a = args[0]
            da = rules[nodes[i].op](k, g, values[i], values[a])[0]
            if da is not None:
                grads[a] = da if grads[a] is None else add(grads[a], da)
        elif len(args) == 2:
            a, b = args
            da, db = rules[nodes[i].op](k, g, values[i], values[a], values[b])
            if da is not None:
                grads[a] = da if grads[a] is None else add(grads[a], da)
            if db is not None:
                grads[b] = db if grads[b] is None else add(grads[b], db)
        else:
            for a, da in zip(args, pullback(graph, i, g, values, algebra)):
                if da is not None:
                    grads[a] = da if grads[a] is None else add(grads[a], da)
        if free and nodes[i].op != 'part':
            grads[i] = None
        if spend:
            values[i] = placeholder(values[i])


def _through_loop(graph, values, grads, algebra, meet, before=None, free=False,
                  release=False):
    """The hook of a loop node: its parts' cotangents through its body to its
    arguments (loops.vjp), met as any node's are; then the node is done.
    `free`: the parts' cotangents are handed to loops.vjp, which lets them
    go; `release`: their values go too (see sweep)."""
    from . import loops

    def hook(i):
        if before is not None:
            before(i)
        node = graph.nodes[i]
        part_ids = loops.parts(graph, i)
        cotangents = [grads[p] for p in part_ids]
        if all(g is None for g in cotangents):
            return True
        if free:   # every reader of a part has run: its cotangent goes
            for p in part_ids:
                grads[p] = None
        if release:   # and its value, where this pass owns them
            for p in part_ids:
                if p != graph.output:
                    values[p] = placeholder(values[p])
            values[i].outputs = ()
        live = getattr(meet, 'live', None)
        rows = [live[p] for p in part_ids] if getattr(algebra, 'live_rows', False) and \
            live is not None else None
        needed = getattr(meet, 'needed', None)
        wanted = [needed[a] for a in node.args] if needed is not None else None
        given, given_rows = loops.vjp(node.value, values[i], cotangents, algebra, sweep, rows,
                                      wanted)
        if getattr(algebra, 'live_rows', False):
            if meet is not None:
                for a, da, r in zip(node.args, given, given_rows):
                    if da is not None:
                        meet.give(a, da, r)
                return True
            # no meeting outside the loop: a gradient's other rows are no gradient, 0
            given = [da if r is True or da is None else algebra.where(r, da, 0.0)
                     for da, r in zip(given, given_rows)]
        if meet is not None:
            meet(i, node.args, given)
            return True
        add = algebra.add
        for a, da in zip(node.args, given):
            if da is not None:
                grads[a] = da if grads[a] is None else add(grads[a], da)
        return True
    return hook


def receives_gradient(graph):
    """Which nodes have a gradient worth showing: as in PyTorch, those the
    output depends on and that depend on some input.

    backward() gives constants numbers too, as the chain rule runs through
    them (∂f/∂2 in x^2); PyTorch computes none for them, and a learner gains
    nothing from ∂loss/∂2 = nan, so tables and pictures leave them out.
    """
    nodes = graph.nodes
    held = {graph.inputs[name] for name in graph.held}   # data: as fixed as a constant
    varies = [False] * len(nodes)
    for i, node in enumerate(nodes):
        args = node.args
        if len(args) == 1:     # unrolled by arity: any() costs a generator per node
            varies[i] = varies[args[0]]
        elif len(args) == 2:
            varies[i] = varies[args[0]] or varies[args[1]]
        else:
            varies[i] = node.op == 'input' and i not in held or any(varies[a] for a in args)
    reached = [False] * len(nodes)
    reached[graph.output] = True
    for i in range(graph.output, -1, -1):
        if reached[i]:
            for a in _gradient_args(nodes[i]):
                reached[a] = True
    return [v and r for v, r in zip(varies, reached)]


# The arguments a gradient can reach through, for ops whose rule answers
# None for some: no comparison's, not a choice's condition, and of a block
# with a declared derivative only its arguments, not its body or partials.
_NO_GRADIENT = frozenset(names_of(COMPARISON, LOGICAL, STOP))
_CHOICES = frozenset(names_of(SELECT))
_CUSTOM = frozenset(names_of(CUSTOM))


def _gradient_args(node):
    op, args = node.op, node.args
    if op in _NO_GRADIENT:
        return ()
    if op in _CHOICES:
        return args[1:]
    if op in _CUSTOM:
        return args[len(args) // 2 + 1:]
    return args


def first_nonfinite(values):
    """Id of the first node whose value is inf or nan, or None."""
    total = sum(values)   # in C, a fifth of the loop's time: finite, the loop is not needed
    if total - total == 0:
        return None
    for i, value in enumerate(values):
        if not math.isfinite(value):
            return i
    return None


def check_names(graph, names):
    """Raise for a name that is not an input of the graph."""
    for name in names:
        if name not in graph.inputs:
            hint = did_you_mean(name, graph.inputs) or (
                f"; its variables are {', '.join(graph.inputs)}" if graph.inputs
                else '; it has no variables')
            raise AdgradError(f"'{name}' is not a variable of the expression{hint}")


__all__ = ['forward', 'backward', 'pullback', 'executed', 'first_nonfinite', 'check_names', 'NumericalError']
