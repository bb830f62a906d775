"""Forward and reverse passes over a graph's tape.

Both are single loops over the tape; results are lists indexed by node id.
Both run over an algebra: NUMBERS computes with floats, and an algebra of
arrays (batch.py) runs the same loops over a whole batch of points at once.
"""

import math

from ..errors import AdgradError, NumericalError
from ..errors import did_you_mean
from .primitives import NUMBERS, PRIMITIVES


def forward(graph, inputs, algebra=NUMBERS):
    """Values of every node, given {variable name: value} for every input."""
    missing = [name for name in graph.inputs if name not in inputs]
    if missing:
        node = graph.nodes[graph.inputs[missing[0]]]
        raise AdgradError(f"no value for '{missing[0]}': give it as {missing[0]}=VALUE",
                          graph.source, node.span[0] if node.span else None)
    values = [0.0] * len(graph.nodes)
    functions = {name: getattr(algebra, name) for name in PRIMITIVES}
    for i, node in enumerate(graph.nodes):
        op, args = node.op, node.args
        if op == 'input':
            values[i] = algebra.coerce(inputs[node.name])
        elif op == 'const':
            values[i] = node.value
        elif len(args) == 1:
            values[i] = functions[op](values[args[0]])
        elif len(args) == 2:
            values[i] = functions[op](values[args[0]], values[args[1]])
        else:
            values[i] = functions[op](*[values[j] for j in args])
    return values


RULES = {name: row.vjp for name, row in PRIMITIVES.items()}


def pullback(graph, i, g, values, algebra=NUMBERS):
    """What each argument of node i receives when `g` arrives at it: one
    cotangent per argument, None for "no gradient" (see primitives.py).

    The one way to call a derivative rule: backward(), the steps of a picture
    and the derivative transformations all come through here, so a rule's
    conventions hold everywhere at once.
    """
    node = graph.nodes[i]
    return RULES[node.op](algebra, g, values[i], *[values[a] for a in node.args])


def backward(graph, values, output=None, algebra=NUMBERS):
    """∂output/∂node for every node, by the chain rule in reverse tape order.

    Accumulation goes through the algebra too, so an algebra that records
    instead of computing turns this very loop into a builder of gradient
    graphs (tests/test_higher_order.py differentiates twice that way).

    A node passes gradients on only once one has reached it, as in PyTorch:
    a binding the output never uses, whose local derivative is inf, must not
    turn an input's gradient into nan through 0 * inf. Such nodes get 0, and
    so does an argument whose every rule said None (a comparison's).
    """
    output = graph.output if output is None else output
    nodes = graph.nodes
    grads = [None] * len(nodes)
    grads[output] = 1.0
    rules, k, add = RULES, algebra, algebra.add
    # pullback(), inlined and unrolled by arity: this loop is the hot path of
    # every gradient, and the general call costs 4x on a big sum.
    for i in range(output, -1, -1):
        g, args = grads[i], nodes[i].args
        if g is None or not args:
            continue
        if len(args) == 1:
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
    return [0.0 if g is None else g for g in grads]


def receives_gradient(graph):
    """Which nodes have a gradient worth showing: as in PyTorch, those the
    output depends on and that depend on some input.

    backward() gives constants numbers too, as the chain rule runs through
    them (∂f/∂2 in x^2); PyTorch computes none for them, and a learner gains
    nothing from ∂loss/∂2 = nan, so tables and pictures leave them out.
    """
    nodes = graph.nodes
    varies = [False] * len(nodes)
    for i, node in enumerate(nodes):
        varies[i] = node.op == 'input' or any(varies[a] for a in node.args)
    reached = [False] * len(nodes)
    reached[graph.output] = True
    for i in range(graph.output, -1, -1):
        if reached[i]:
            for a in nodes[i].args:
                reached[a] = True
    return [v and r for v, r in zip(varies, reached)]


def first_nonfinite(values):
    """Id of the first node whose value is inf or nan, or None."""
    for i, value in enumerate(values):
        if not math.isfinite(value):
            return i
    return None


def check_names(graph, names):
    """Raise for a name that is not an input of the graph."""
    for name in names:
        if name not in graph.inputs:
            hint = did_you_mean(name, graph.inputs)
            raise AdgradError(f"'{name}' is not a variable of the expression{hint}")


__all__ = ['forward', 'backward', 'pullback', 'first_nonfinite', 'check_names', 'NumericalError']
