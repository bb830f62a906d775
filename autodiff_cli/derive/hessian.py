"""The Hessian: the gradient is recorded once as a graph (record.py), then
differentiated again, one row per input.

Two schemes, on the same recorded graph:
- reverse over reverse (the default): one backward pass over the gradient's
  graph per row, from ∂f/∂x_i. This is what torch.autograd.functional.hessian
  does, so inf and nan meet the same rules in the same order and the edge
  conventions agree with PyTorch's (atan2's masked origin included). A pass
  visits only the part of the graph that ∂f/∂x_i depends on: a chained
  function with a banded Hessian costs little more than one gradient.
- forward over reverse (`mode='forward'`): every input's tangent pushed
  through the gradient's graph in one pass, with NumPy vectors of n tangents.
  Fewer Python steps on a dense Hessian, but a tangent that is 0 in one
  direction still meets an infinite local derivative of another (0 * inf),
  so at edge points it can give nan where PyTorch gives a number, and the
  other way round.

Either costs one recording of the backward pass plus a small multiple of n
gradient evaluations, never n² graphs. The recording keeps only the
identities exact in IEEE arithmetic (simplify.py).

A program with loops is recorded in forward mode instead, its loops kept
loops (recurrence.py): the recurrence of each ∂f/∂x_i differentiated again,
forward over forward, as `diff --order 2` prints it: n first derivatives,
each carrying up to n tangents of its own, evaluated in one pass.
"""

from ..core.graph import Graph
from ..core.passes import backward, forward
from .forward import tangents
from .record import Ref, Tape, gradient, replay


def gradient_graph(graph, names):
    """(graph of the recorded gradient, the node of ∂f/∂name per name, or a
    constant), compacted to the nodes the gradient needs."""
    tape = Tape(exact=True)
    values = replay(graph, tape)
    grads = gradient(graph, tape, values)
    roots = [grads[n] for n in names]
    nodes, keep = tape.nodes, bytearray(len(tape.nodes))
    stack = [r for r in roots if isinstance(r, Ref)] + list(tape.inputs.values())
    while stack:
        i = stack.pop()
        if not keep[i]:
            keep[i] = 1
            stack.extend(nodes[i].args)
    new_id, compact = {}, []
    for i, node in enumerate(nodes):
        if keep[i]:
            new_id[i] = len(compact)
            compact.append(node._replace(args=tuple(new_id[a] for a in node.args)))
    inputs = {name: new_id[i] for name, i in tape.inputs.items()}
    roots = [new_id[r] if isinstance(r, Ref) else r for r in roots]
    return Graph(compact, 0, inputs, graph.defaults, graph.source), roots


def prepare(graph, names):
    """What hessian() reuses over many points: the gradient's graph; for a
    program with loops, the graph of its second derivatives, each loop kept
    a loop (record.second_derivatives: forward mode over forward mode, as
    `diff --order 2` prints them) and their nodes."""
    if not graph.loops:
        return gradient_graph(graph, names)
    from .record import second_derivatives
    derivative = second_derivatives(graph, names, exact=True)
    return derivative.graph(0), [r for _, r in derivative.results]


def hessian(graph, point, names=None, prepared=None, mode='reverse'):
    """The matrix [[∂²f/∂x_i∂x_j]] as lists of floats, rows and columns in
    the order of `names` (default: every variable). `prepared` is
    prepare()'s result, to reuse over many points."""
    names = list(graph.inputs) if names is None else list(names)
    if not names:
        return []
    if graph.loops:
        return _of_loops(*(prepared or prepare(graph, names)), point, len(names))
    grad_graph, roots = prepared or gradient_graph(graph, names)
    values = forward(grad_graph, point)
    if mode == 'forward':
        return _forward_over_reverse(grad_graph, roots, values, names)
    rows, columns = [], [grad_graph.inputs[n] for n in names]
    for root in roots:
        if isinstance(root, float):
            rows.append([0.0] * len(names))           # a constant gradient
            continue
        second = backward(grad_graph, values, output=root)
        rows.append([second[c] for c in columns])
    return rows


def _forward_over_reverse(grad_graph, roots, values, names):
    import numpy as np

    from ..core.batch import _arrays
    _, arrays = _arrays()
    n = len(names)
    seeds = {name: np.eye(n)[j] for j, name in enumerate(names)}
    with np.errstate(all='ignore'):
        t = tangents(grad_graph, values, seeds, arrays)
    rows = []
    for root in roots:
        row = None if isinstance(root, float) else t[root]   # a constant gradient: zeros
        rows.append([0.0] * n if row is None else [float(v) for v in np.broadcast_to(row, (n,))])
    return rows


def _of_loops(second_graph, entries, point, n):
    """The matrix from the second derivatives' graph at `point`: its entries
    a, b for b from a on, in order (row by row), mirrored below."""
    values = forward(second_graph, point)
    found = iter([float(values[r]) if isinstance(r, Ref) else r for r in entries])
    rows = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(i, n):
            rows[i][j] = rows[j][i] = next(found)
    return rows
