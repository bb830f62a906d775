"""Walking a graph for a picture: what each node and edge says, as plain data.

`scene()` walks the tape once and decides each node's kind, text, value,
gradient and block, and each edge's gradient; style.py turns a Scene into DOT
attributes, collapse.py and fold.py rewrite Scenes. No I/O, and nothing here
knows how a picture is styled.
"""

import itertools
import math
import re
from typing import NamedTuple

from ..core.passes import executed, pullback, receives_gradient
from ..core.primitives import PRIMITIVES
from .preview import as_scalar, is_array
from .text import displayable, enclosed, number, shortened

TEXT_LIMIT = 40   # longest source text on a node; elided in the middle past this


# ---- walking: what to draw ----

class Item(NamedTuple):
    """A node as drawn."""
    id: int
    kind: str            # 'input', 'const', 'op', 'output', or 'call' (collapse.py)
    title: str           # the variable's name, the constant, or the op's symbol
    symbol: str          # how ∂f/∂… names it: 'x', 'a', '(x*y)'
    expr: str | None     # the source text an op computes: 'x*y', 'a = x*y'
    value: float | None  # None when drawing the structure only
    grad: float | None   # None unless the backward pass ran
    block: str | None    # block instance path, 'f#1/h#2'
    live: bool           # it gets a gradient: the output depends on it, and it on an input
    notes: tuple = ()    # more lines: a call's local derivatives, why a gradient is blocked
    cancels: bool = False  # grad is rounding noise of terms that cancel: drawn as ≈0
    health: object = None  # a health.Health, for --color magnitude
    ran: bool = True     # False in an `if`'s branch not taken at this point
    shape: tuple | None = None   # an array's shape (preview.py shows it); None for a number
    store: object = None   # what backward does with its value (memory.py's Store), if drawn
    segment: int | None = None   # its checkpoint segment, if drawn
    tags: tuple = ()     # ids of the nodes it stands for that a diagnosis names: '#49'
    strip: tuple = ()    # a loop's line of its iterations (memory.py, loop_steps.py),
                         # drawn at every step, before its gradient too


class Link(NamedTuple):
    """An edge from an argument to the op that uses it."""
    src: int
    dst: int
    grad: float | None   # the gradient flowing back along it: dst's share of ∂f/∂src
    local: float | None = None   # ∂dst/∂src, so that grad = ∂f/∂dst · local


def merge_links(links, stands_for, merges=lambda link: True):
    """The links between the nodes drawn for their ends (stands_for(i), for
    a collapsed call or a folded chain): a link within one drawn node goes,
    and two between one pair become one (where merges(link) allows) whose
    gradient is their sum, a link with none adding nothing. A link keeps its
    local derivative only while both its ends are its own."""
    out, where = [], {}
    for link in links:
        src, dst = stands_for(link.src), stands_for(link.dst)
        if src == dst:
            continue
        k = where.get((src, dst))
        if k is not None and merges(link):
            old = out[k]
            grad = old.grad if link.grad is None else (
                link.grad if old.grad is None else old.grad + link.grad)
            out[k] = Link(src, dst, grad)
        else:
            where[src, dst] = len(out)
            own = src == link.src and dst == link.dst
            out.append(link._replace(src=src, dst=dst) if own else Link(src, dst, link.grad))
    return out


class Scene(NamedTuple):
    items: list          # one Item per node, in tape order
    links: list          # one Link per argument, in tape order
    blocks: list         # block paths in order of first use, parents before children
    f: str               # what the output is called in ∂f/∂node
    output: int | None = None   # the output's id
    segments: tuple = ()   # checkpoint segments' labels, when drawn (memory.py)
    memory: str | None = None   # what the memory marks add up to, for the legend


def output_symbol(graph):
    """The output's name in ∂f/∂x: its binding name, else the first of f, out, F
    that names neither a node nor a block (∂f/∂f(h(x)) would read as nonsense)."""
    node = graph.nodes[graph.output]
    if node.name is not None and node.op != 'const':
        return node.name
    taken = {n.name for n in graph.nodes}
    taken.update(call.partition('#')[0] for n in graph.nodes if n.block
                 for call in n.block.split('/'))
    candidates = itertools.chain(('f', 'out', 'output', 'F'), (f'f_{k}' for k in itertools.count(1)))
    return next(name for name in candidates if name not in taken)


_PLAIN = re.compile(r'[A-Za-z_][A-Za-z0-9_]*|[0-9.]+')
SYMBOL_LIMIT = 18


def node_symbol(graph, i, f, local=False, texts=None):
    """How a caption names node i: f for the output, a name, or its text in parentheses.

    `local` names the output by its text too, for a local derivative ∂(x*y*z)/∂z.
    `texts` (from caller_texts) gives a block's nodes with its parameters
    replaced by the arguments the caller passed: 1.5*x9, not 1.5*a.
    """
    node = graph.nodes[i]
    if i == graph.output:
        if not local:
            return f
    elif node.name is not None:
        return node.name
    text = texts.get(i) if texts else None
    if text:   # as the caller wrote it: a call f(2*y) is one term already
        return wrap(_elide(text, SYMBOL_LIMIT))
    text = graph.text(i, SYMBOL_LIMIT)
    return text if _PLAIN.fullmatch(text) else f'({text})'


_CALL = re.compile(r'[A-Za-z_][A-Za-z0-9_]*\(')


def wrap(text):
    """Text as one term of a formula: in parentheses unless it is a name, a
    number, a call f(…) or already parenthesized."""
    if _PLAIN.fullmatch(text) or enclosed(text):
        return text
    call = _CALL.match(text)
    if call and enclosed(text[call.end() - 1:]):
        return text
    return f'({text})'


def _shown(graph, i):
    """Node i's text as a node shows it: at most TEXT_LIMIT characters or so,
    shortened between whole terms (read from a longer stretch of it)."""
    return shortened(graph.text(i, 4 * TEXT_LIMIT), TEXT_LIMIT)


def _elide(text, limit):
    return text if len(text) <= limit else text[:limit // 2] + '…' + text[-(limit - limit // 2 - 1):]


_UNIT = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')
CALLER_SPAN = 400   # longer texts keep the block's own names (building them would cost)


def caller_texts(graph):
    """{node id: its source text with the block's parameters replaced by what
    the caller passed} for every node made by a block call. Spans say which
    arguments a node's text contains; the names left in the text between them
    are, in order, its other arguments: the parameters, the globals, and calls
    of other blocks. Where that does not add up, the node keeps its own text."""
    from ..core.primitives import FUNCTIONS
    from .calls import call_sites
    nodes, source = graph.nodes, graph.source
    sites = call_sites(graph)
    texts = {}
    for i, node in enumerate(nodes):
        if node.block is None or node.span is None or node.op in ('input', 'const'):
            continue
        start, end = node.span
        if end - start > CALLER_SPAN:
            continue
        inner, outer = [], []
        for a in node.args:
            span = nodes[a].span
            if span is not None and start <= span[0] and span[1] <= end and nodes[a].block:
                inner.append(a)
            else:
                outer.append(a)
        inner.sort(key=lambda a: nodes[a].span[0])
        pieces, at, units = [], start, []
        for a in inner + [None]:
            stop = end if a is None else nodes[a].span[0]
            gap = source[at:stop]
            k = 0
            for match in _UNIT.finditer(gap):
                if match.start() < k:
                    continue
                rest = gap[match.end():].lstrip()
                if rest.startswith('(') and match.group() in FUNCTIONS:
                    continue                              # the node's own function
                pieces.append(gap[k:match.start()])
                k = match.end()
                if rest.startswith('('):                   # a block's call: one argument
                    depth, j = 0, gap.index('(', match.end())
                    for j in range(j, len(gap)):
                        depth += (gap[j] == '(') - (gap[j] == ')')
                        if depth == 0:
                            break
                    k = j + 1
                pieces.append(len(units))
                units.append(match.group())
            pieces.append(gap[k:])
            if a is not None:
                pieces.append(texts.get(a) or graph.text(a))
                at = nodes[a].span[1]
        if len(units) != len(outer):
            continue
        text = ''.join(p if isinstance(p, str) else _caller_symbol(graph, outer[p], texts)
                       for p in pieces)
        texts[i] = ' '.join(text.split())
    # A call's result is the call as written: ∂z/∂f(2*y), as the tutorial's ∇_y z.
    for i, instance in results(graph).items():
        site = sites.get(instance)
        if site is not None and nodes[i].name is None:
            texts[i] = f"{instance.partition('#')[0]}({' '.join(site.arguments.split())})"
    return texts


def results(graph):
    """{node id: its top-level block instance} for each node that is a call's
    result: made by the call, and used outside it or the output."""
    nodes = graph.nodes
    top = [None if node.block is None else node.block.partition('/')[0] for node in nodes]
    found = {}
    for c, node in enumerate(nodes):
        for a in node.args:
            if top[a] is not None and top[c] != top[a]:
                found[a] = top[a]
    if top[graph.output] is not None:
        found[graph.output] = top[graph.output]
    return found


def _caller_symbol(graph, a, texts):
    node = graph.nodes[a]
    if node.name is not None:
        return node.name
    return wrap(texts.get(a) or graph.text(a, SYMBOL_LIMIT))


def scene(graph, values=None, grads=None):
    """Walk the tape once: the Items, Links and blocks of the picture. In an
    array program each Item holds its arrays, and an op's static argument
    (an axis, an index) is part of its text, not a node of its own."""
    graph = displayable(graph)
    nodes = graph.nodes
    f = output_symbol(graph)
    live = receives_gradient(graph)
    held = {graph.inputs[name] for name in graph.held}   # --data's columns
    ran = executed(graph, values) if values is not None else [True] * len(nodes)
    live = [a and b for a, b in zip(live, ran)]
    arrays = graph.shapes is not None or values is not None and any(map(is_array, values))
    flowing = array_flows if arrays else pullback
    items, links, blocks, seen = [], [], [], set()
    for i, node in enumerate(nodes):
        if node.op == 'static':
            continue
        if node.op == 'input':
            kind, title, expr = 'input', node.name, None
        elif node.op == 'const':
            title = node.name or (_shown(graph, i) if is_array(node.value)
                                  else number(node.value))
            kind, expr = 'const', None
        else:
            row = PRIMITIVES[node.op]
            kind, title = 'op', row.symbol or node.op
            if node.op == 'custom':   # a block whose derivative the program declared
                block = (node.block or '').rpartition('/')[2].partition('#')[0]
                title = f'{block}: derivative given ✎'
            elif node.op == 'loop':   # one node however many iterations: its body runs them
                title = f'loop × {node.value.count:,}'
            expr = _shown(graph, i)
            if node.name is not None:
                expr = f'{node.name} = {expr}'
        if i == graph.output:
            kind = 'output'
            if expr is None:
                expr = f'{f} = {title}' if title != f else None
            elif node.name is None:
                expr = f'{f} = {expr}'
        # A loop has no number of its own: it shows its last part's.
        shown = i if node.op != 'loop' else i + len(node.value.outputs)
        value = None if values is None else as_scalar(values[shown])
        items.append(Item(i, kind, title, node_symbol(graph, i, f), expr, value,
                          None if grads is None else as_scalar(grads[shown]),
                          node.block, live[i], ran=ran[i],
                          shape=value.shape if is_array(value) else None,
                          # why a data column has no gradient: grad prints none for it
                          notes=('data: no gradient',) if i in held else ()))
        flows = partials = None
        if grads is not None and live[i] and node.args and node.op != 'loop':
            flows = flowing(graph, i, grads[i], values)
            # ∂node/∂argument is a number only where both are numbers
            partials = [None] * len(node.args) if arrays else pullback(graph, i, 1.0, values)
        for position, a in enumerate(node.args):
            if nodes[a].op == 'static':
                continue
            if flows is None or not live[a]:
                links.append(Link(a, i, None))
            else:
                links.append(Link(a, i, as_scalar(flows[position]), partials[position]))
        if node.block is not None and node.block not in seen:
            parts = node.block.split('/')
            for depth in range(1, len(parts) + 1):
                path = '/'.join(parts[:depth])
                if path not in seen:
                    seen.add(path)
                    blocks.append(path)
    if grads is not None:
        items = _mark_cancelling(items, links)
    return Scene(items, links, blocks, f, graph.output)


def array_flows(graph, i, g, values):
    """pullback() over arrays: what each argument of node i receives, summed
    back to the argument's own shape where the op broadcast it."""
    from ..core.array_rules import Deferred
    from ..core.tensors import algebra
    k = algebra()
    with k.np.errstate(all='ignore'):
        flows = []
        for a, da in zip(graph.nodes[i].args, pullback(graph, i, g, values, k)):
            if type(da) is Deferred:
                da = da.compute()
            shape = k.shape(values[a])
            if da is not None and k.shape(da) != shape:
                da = k.sum_to(da, shape)
            flows.append(da)
    return flows


EPSILON = 2.0 ** -52


def _mark_cancelling(items, links):
    """Flag gradients that are only the rounding left when their terms cancel:
    a sum of n terms is off by at most about n·ε·Σ|term|, so anything smaller
    is indistinguishable from 0 (softmax.ad's ∂loss/∂m = -1.1e-16, exactly 0
    by hand). Only the label changes; the number stays as computed."""
    size = items[-1].id + 1 if items else 0   # ids, not places: static arguments are not items
    total = [0.0] * size
    count = [0] * size
    for link in links:
        if link.grad is not None and not is_array(link.grad) and math.isfinite(link.grad):
            total[link.src] += abs(link.grad)
            count[link.src] += 1
    return [item._replace(cancels=True)
            if not is_array(item.grad) and item.grad and count[item.id] > 1
            and math.isfinite(item.grad)
            and abs(item.grad) <= count[item.id] * EPSILON * total[item.id] else item
            for item in items]


# ---- the result object ----
