"""The Hessian by forward over reverse: the gradient is recorded once as a
graph (record.py), then every input's tangent is pushed through that graph
in one forward pass, with NumPy vectors of n tangents at once: row i of the
result is ∂(∂f/∂x_i)/∂x, for all x together.

The cost is one recording of the backward pass plus one pass over the
gradient's graph whose every operation works on n numbers: a small multiple
of n gradient evaluations, never n² graphs. The recording keeps only the
identities exact in IEEE arithmetic (simplify.py), so that inf and nan
travel as they do in PyTorch.
"""

from ..core.graph import Graph
from ..core.passes import forward
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


def hessian(graph, point, names=None, prepared=None):
    """The matrix [[∂²f/∂x_i∂x_j]] as lists of floats, rows and columns in
    the order of `names` (default: every variable). `prepared` is
    gradient_graph()'s result, to reuse over many points."""
    import numpy as np

    from ..core.batch import _arrays
    names = list(graph.inputs) if names is None else list(names)
    grad_graph, roots = prepared or gradient_graph(graph, names)
    values = forward(grad_graph, point)
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
