"""Local derivatives as formulas, for captions: ∂(x*y)/∂x = y.

The formula is not derived here: the op alone, its arguments stood in for by
placeholders p0, p1, ..., is differentiated by derive.record (the derivative
rules of the primitive table, run over the recording algebra) and printed by
derive.printers in adgrad's own syntax. The placeholders are then replaced by
how the caption names each argument. A formula that needs helper bindings
or a condition (max's tie rule, relu's step) is left to the number alone.
"""

import functools
import re

from ..core.graph import Graph, Node
from ..errors import AdgradError

LIMIT = 30   # longest formula a caption shows
_PLACEHOLDER = re.compile(r'\bp(\d+)\b|\bt1\b')


@functools.lru_cache(maxsize=512)
def _formula(op, constants, position):
    """The printed ∂op/∂(argument at `position`) over placeholders, or None.
    `constants` holds each argument's value where it is a constant, else None."""
    from ..derive.printers import ADGRAD, adgrad_number, lay_out
    from ..derive.record import differentiate
    nodes, inputs = [], {}
    for k, value in enumerate(constants):
        if value is None:
            inputs[f'p{k}'] = k
            nodes.append(Node('input', name=f'p{k}'))
        else:
            nodes.append(Node('const', value=value))
    if f'p{position}' not in inputs:
        return None
    nodes.append(Node(op, tuple(range(len(constants)))))
    tiny = Graph(nodes, len(constants), inputs, {}, '')
    printed = lay_out(differentiate(tiny, wrt=[f'p{position}']), ADGRAD, adgrad_number)
    text = printed.results[0][2]
    bound = dict(printed.bindings)
    # The only binding worth keeping is the op's own value (tanh's t1 = tanh(p0)):
    # the caption names it by the consumer's symbol.
    itself = f'{op}(' + ', '.join(f'p{k}' for k in range(len(constants))) + ')'
    if any(value != itself or name != 't1' for name, value in bound.items()):
        return None
    if 'if(' in text:
        return None
    return text


def local_symbol(graph, consumer, position, name):
    """∂consumer/∂(its argument at `position`) as a formula in the caption's
    names, or None where only the number says it. `name(i)` names node i."""
    node = graph.nodes[consumer]
    constants = tuple(graph.nodes[a].value if graph.nodes[a].op == 'const' else None
                      for a in node.args)
    try:
        text = _formula(node.op, constants, position)
    except AdgradError:   # an op the printer has no template for: the number says it
        return None
    if text is None:
        return None
    symbols = [name(a) for a in node.args]
    itself = name(consumer)
    text = _PLACEHOLDER.sub(lambda m: itself if m.group(1) is None else symbols[int(m.group(1))],
                            text)
    if len(text) > LIMIT or _is_number(text):
        return None
    return text


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True
