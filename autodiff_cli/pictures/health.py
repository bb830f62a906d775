"""Gradient health: which gradients vanish, explode, are not finite, or are
blocked, and why. The tutorial's "Debugging" section, as data.

`diagnose()` classifies every node from the values and gradients backward()
computed (it recomputes nothing but the local derivatives of the nodes that
blocked a gradient, through pullback()); `--color magnitude` draws it, and
`explain()` says it in lines of text for `adgrad grad --explain`. No I/O.

Thresholds are relative to the output's own gradient, which is 1: below
VANISHING a gradient has all but vanished, above EXPLODING it has exploded.
"""

import math
import re
from typing import NamedTuple

from ..core.passes import pullback, receives_gradient
from ..core.primitives import PRIMITIVES
from .preview import is_array, norm

VANISHING = 1e-4
EXPLODING = 1e4

# Ops that pass no gradient to an argument at some points, and what that means.
GATES = {name: row.blocks for name, row in PRIMITIVES.items() if row.blocks}


class Health(NamedTuple):
    state: str           # 'ok', 'vanishing', 'exploding', 'nonfinite', 'blocked', 'zero', or
                         # 'none' (no gradient reaches it: a constant, or unused)
    magnitude: float | None   # log10 |gradient|, None unless finite and nonzero
    reason: str | None   # why it is blocked or zero: names the node where the chain broke
    blocker: int | None  # that node's id


def _text(graph, i):
    """A node as the diagnosis names it: its name, else its (short) source text."""
    return graph.nodes[i].name or graph.text(i, 20) or graph.label(i)


def _symbol(graph, i):
    text = _text(graph, i)
    return text if re.fullmatch(r'[A-Za-z_][A-Za-z0-9_]*|[0-9.]+', text) else f'({text})'



def diagnose(graph, values, grads):
    """One Health per node, in tape order."""
    nodes = graph.nodes
    live = receives_gradient(graph)
    result = [None] * len(nodes)
    blocked_by = [None] * len(nodes)   # (blocker id, reason) for a zero gradient
    users = [[] for _ in nodes]
    for c in range(graph.output + 1):
        if live[c]:
            for position, a in enumerate(nodes[c].args):
                users[a].append((c, position))
    for i in range(len(nodes) - 1, -1, -1):
        g = grads[i]
        if nodes[i].op == 'loop':   # it has none of its own: it shows its last part's (scene.py)
            g = grads[i + len(nodes[i].value.outputs)]
        if not live[i] or g is None:
            result[i] = Health('none', None, None, None)
            continue
        if is_array(g):   # an array's gradient by its norm; why it is 0 needs numbers
            g = norm(g)
            if g == 0:
                result[i] = Health('zero', None, 'zero: every entry is 0', None)
                continue
        if not math.isfinite(g):
            result[i] = Health('nonfinite', None, f'the gradient is {g!r}', None)
            continue
        if g == 0:
            blocker, reason = _why_zero(graph, i, users[i], values, grads, blocked_by)
            blocked_by[i] = (blocker, reason)
            gated = blocker is not None and nodes[blocker].op in GATES
            result[i] = Health('blocked' if gated else 'zero', None, reason, blocker)
            continue
        size = abs(g)
        state = 'vanishing' if size < VANISHING else 'exploding' if size > EXPLODING else 'ok'
        result[i] = Health(state, math.log10(size), None, None)
    return result


def _why_zero(graph, i, uses, values, grads, blocked_by):
    """(node, reason) where the gradient of node i became zero: a gate that
    passes it nothing here comes first, then a consumer whose own gradient
    is zero (the reason travels back from there), then a factor of zero."""
    locals_ = [(c, _local(graph, c, position, values)) for c, position in uses]
    for c, local in locals_:
        if _zero(local) and graph.nodes[c].op in GATES:
            return c, f'blocked by {_text(graph, c)} (node {c}): {GATES[graph.nodes[c].op]}'
    for c, _ in locals_:
        if _zero(grads[c]) and blocked_by[c] is not None and blocked_by[c][0] is not None:
            return blocked_by[c]
    for c, local in locals_:
        if graph.nodes[c].op != 'loop' and _zero(local):
            return c, f'zero: ∂{_symbol(graph, c)}/∂{_symbol(graph, i)} = 0 (node {c})'
    # A loop is the reason where its term is the only one: beside another,
    # a zero sum is their cancelling.
    loops = [c for c, _ in locals_ if graph.nodes[c].op == 'loop']
    others = [c for c, _ in locals_ if graph.nodes[c].op != 'loop' and not _zero(grads[c])]
    if len(loops) == 1 and not others:
        c, count = loops[0], graph.nodes[loops[0]].value.count
        return c, (f'zero: it comes back 0 from the {count:,} iteration{"s" * (count != 1)} '
                   f'of the loop on line {graph.line(c)} (node {c})')
    return None, 'zero: the terms that reach it cancel exactly'


def _zero(x):
    """No gradient, or one that is 0 (an array's: every entry)."""
    return x is None or (norm(x) == 0 if is_array(x) else x == 0)


def _local(graph, c, position, values):
    """∂c/∂(its argument at `position`) at `values`; None for a loop, whose
    derivative is its body's iterations, not one rule (a part hands the
    loop its gradient as it is)."""
    op = graph.nodes[c].op
    if op in ('loop', 'part'):
        return None if op == 'loop' else 1.0
    return pullback(graph, c, 1.0, values)[position]


def first_nonfinite_gradient(health):
    """Id of the last node on the tape (the first the backward pass reaches)
    whose gradient is not finite, or None."""
    for i in range(len(health) - 1, -1, -1):
        if health[i].state == 'nonfinite':
            return i
    return None


def explain_point(graph, inputs):
    """explain() at one point: the passes run here, for `adgrad grad --explain`."""
    from ..core.passes import backward, forward
    values = forward(graph, inputs)
    return explain(graph, values, backward(graph, values))


def explain(graph, values, grads, health=None):
    """The diagnosis as lines of text: for each input, where along the path
    from the output its gradient shrinks or grows most; the nodes that block
    gradients; the first non-finite gradient."""
    health = health or diagnose(graph, values, grads)
    lines = []
    bad = first_nonfinite_gradient(health)
    if bad is not None:
        lines.append(f'first non-finite gradient: at {_text(graph, bad)} (node {bad}), '
                     f'{grads[bad]!r}; the backward pass reaches it first')
    for name, i in graph.inputs.items():
        h = health[i]
        if h.state == 'none':
            lines.append(f'{name}: the output does not depend on it')
            continue
        if h.state in ('blocked', 'zero'):
            lines.append(f'{name}: gradient 0, {h.reason}')
            continue
        if h.state == 'nonfinite':
            lines.append(f'{name}: gradient {grads[i]!r}')
            continue
        where, before, factor = _steepest(graph, i, grads)
        text = f'{name}: gradient {grads[i]:.4g}'
        if h.state in ('vanishing', 'exploding'):
            text += f' ({h.state}: |gradient| {"<" if h.state == "vanishing" else ">"} '
            text += f'{VANISHING if h.state == "vanishing" else EXPLODING:g})'
        if where is not None:
            # Both ends of the step: a block's layer is several steps, and the
            # picture's ∂x10/∂x9 is their product, not this one's factor.
            text += (f'; the largest change on its way back from the output is the step from '
                     f'{_text(graph, where)} (node {where}) back to {_text(graph, before)} '
                     f'(node {before}), which multiplies it by {factor:.3g}')
        lines.append(text)
    blockers = {}
    for i, h in enumerate(health):
        if h.state == 'blocked' and h.blocker is not None:
            blockers.setdefault(h.blocker, []).append(i)
    for b, ids in sorted(blockers.items()):
        lines.append(f'{_text(graph, b)} (node {b}) blocks the gradient of '
                     f'{len(ids)} node{"s" if len(ids) != 1 else ""}: '
                     f'{GATES.get(graph.nodes[b].op, "its local derivative is 0")}')
    if not lines:
        lines.append('no inputs')
    return lines


def named_nodes(graph, grads, health):
    """The ids of the nodes explain() and the reasons of `health` name as
    '(node N)': a picture shows these ids on those nodes (style.py, #N)."""
    named = {h.blocker for h in health if h.blocker is not None}
    bad = first_nonfinite_gradient(health)
    if bad is not None:
        named.add(bad)
    if any(is_array(g) for g in grads):   # the steps along arrays are explain()'s to skip
        return named
    for i in graph.inputs.values():
        if health[i].state in ('ok', 'vanishing', 'exploding'):
            named.update(k for k in _steepest(graph, i, grads)[:2] if k is not None)
    return named


def _steepest(graph, i, grads):
    """Along the path by which most of node i's gradient arrives (at each node,
    the consumer with the largest |gradient|), the step where |∂f/∂node|
    changes by the largest factor: (that consumer, the node it passes the
    gradient back to, ratio node/consumer); (None, None, 1.0) if no step does."""
    consumers = [[] for _ in graph.nodes]
    for c in range(graph.output + 1):
        for a in graph.nodes[c].args:
            consumers[a].append(c)
    best, before, ratio, node = None, None, 1.0, i
    for _ in range(len(graph.nodes)):
        after = [c for c in consumers[node] if grads[c] is not None and math.isfinite(grads[c])
                 and grads[c] != 0]
        if not after or node == graph.output:
            break
        c = max(after, key=lambda k: abs(grads[k]))
        g_here, g_next = abs(grads[node]), abs(grads[c])
        if g_here and math.isfinite(g_here):
            r = g_here / g_next
            if abs(math.log10(r)) > abs(math.log10(ratio)):
                best, before, ratio = c, node, r
        node = c
    return best, before, ratio
