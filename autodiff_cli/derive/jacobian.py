"""Forward mode and Jacobians of array programs, over the array algebra of
core/tensors.py: the tangent loop is forward.py's, and a Jacobian is a pass
per output entry (reverse) or per input entry (forward), whichever is fewer."""

from ..core import tensors
from .forward import tangents as forward_tangents


def tangents(graph, values, directions):
    """∂node/∂t for every node along {input name: tangent in its shape} (None
    where a node does not depend on them), by forward mode."""
    k = tensors.algebra()
    with k.np.errstate(all='ignore'):
        return forward_tangents(graph, values, directions, k)


def jacobian(graph, values, names, mode=None):
    """({name: ∂output/∂name, of shape output's + name's}, mode): by reverse
    mode, a pass per output entry, or forward mode, a pass per input entry,
    whichever is fewer (`mode` 'forward' or 'reverse' to choose)."""
    np = tensors.algebra().np
    out = np.asarray(values[graph.output])
    sizes = {name: np.size(values[graph.inputs[name]]) for name in names}
    if mode is None:
        mode = 'forward' if sum(sizes.values()) < out.size else 'reverse'
    result = {}
    if mode == 'reverse':
        rows = {name: [] for name in names}
        for k in range(out.size):
            seed = np.zeros(out.size)
            seed[k] = 1.0
            grads = tensors.gradients(graph, values, seed.reshape(out.shape), names)
            for name in names:
                rows[name].append(np.asarray(grads[graph.inputs[name]], dtype=np.float64))
        for name in names:
            shape = np.shape(values[graph.inputs[name]])
            result[name] = np.array(rows[name]).reshape(out.shape + shape)
        return result, mode
    for name in names:
        shape = np.shape(values[graph.inputs[name]])
        columns = []
        for k in range(sizes[name]):
            direction = np.zeros(sizes[name])
            direction[k] = 1.0
            t = tangents(graph, values, {name: direction.reshape(shape)})[graph.output]
            columns.append(np.broadcast_to(0.0 if t is None else t, out.shape))
        # entries in the output's order, then the input's
        stacked = np.array(columns).reshape(shape + out.shape)
        result[name] = np.moveaxis(stacked, tuple(range(len(shape))),
                                   tuple(range(out.ndim, out.ndim + len(shape))))
    return result, mode
