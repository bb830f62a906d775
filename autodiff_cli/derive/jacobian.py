"""Forward mode and Jacobians of array programs, over the array algebra of
core/tensors.py: the tangent loop is forward.py's, and a Jacobian is a pass
per output entry (reverse) or per input entry (forward), whichever is fewer."""

from ..core import tensors
from ..errors import UsageError
from .forward import tangents as forward_tangents

# A pass costs the whole program: past this many, a Jacobian takes minutes.
MOST_PASSES = 4096
MOST_ENTRIES = 1 << 24   # of a Jacobian: 128 MiB of float64


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
    _refuse_too_large(mode, sum(sizes.values()), out.size)
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


def _refuse_too_large(mode, inputs, outputs):
    passes = inputs if mode == 'forward' else outputs
    if inputs * outputs > MOST_ENTRIES:
        raise UsageError(f'the Jacobian would have {outputs} × {inputs} = {outputs * inputs} '
                         f'entries (at most {MOST_ENTRIES}): take a part of the output, or '
                         'sum(...) of it')
    if passes > MOST_PASSES:
        hint = ('reverse mode, the default, takes one pass for a scalar output, and --tangent '
                'one pass along a direction' if mode == 'forward' else
                'take a part of the output, or sum(...) of it')
        raise UsageError(f'{mode} mode would take {passes} passes, one per entry of the '
                         f"{'inputs' if mode == 'forward' else 'output'} (at most "
                         f'{MOST_PASSES}): {hint}')
