"""Drawing a graph as a textbook figure: (graph, values, grads) -> graphviz.Digraph.

Two steps, kept apart: `scene()` walks the tape once and decides what each
node and edge says (kind, text, value, gradient, block); `style()` turns that
plain data into DOT attributes and knows nothing about the tape. A step of
the backward pass (see steps.py) is the same scene styled with a `Frame`.

Nothing here does I/O. `Picture._repr_svg_` runs Graphviz's `dot` only when
Jupyter asks for the picture; the CLI writes files.

Node ids in the DOT text are `n0, n1, ...` from the tape, and every loop
runs in tape order, so the same input gives byte-identical DOT.
"""

import html
import itertools
import re
from typing import NamedTuple

import graphviz

from ..core.passes import pullback, receives_gradient
from ..core.primitives import PRIMITIVES

PASSES = ('structure', 'forward', 'backward')
RANKDIRS = ('LR', 'TB')
TEXT_LIMIT = 40   # longest source text on a node; elided in the middle past this
# Up to this layout_size(), gradients are labelled mid-edge (see style()); past
# LARGE, dot is told to spend less effort on the layout.
EDGE_LABELS = 150
LARGE = 1000

# Each colour has one meaning, shared by the picture, the legend and the README.
INK = '#1c1917'          # text and operation borders
FORWARD = '#2563eb'      # blue: the forward pass, its arrows and the values it computes
BACKWARD = '#0891b2'     # cyan: the backward pass, dashed arrows carrying gradients
BACKWARD_TEXT = '#0e7490'
KNOWN = '#dcfce7'        # green fill: the node's gradient ∂f/∂node is known
KNOWN_EDGE = '#16a34a'
KNOWN_TEXT = '#15803d'
JUST_DONE = '#86efac'    # bright green: the node a step has just finished
INPUT_FILL = '#eff6ff'   # inputs: ovals, light blue
CONST_FILL = '#f5f5f4'   # constants: small grey boxes
CONST_EDGE = '#a8a29e'
MUTED = '#78716c'        # secondary text: the source expression, labels
FONT = 'DejaVu Sans,Helvetica,Arial,sans-serif'


# ---- walking: what to draw ----

class Item(NamedTuple):
    """A node as drawn."""
    id: int
    kind: str            # 'input', 'const', 'op' or 'output'
    title: str           # the variable's name, the constant, or the op's symbol
    symbol: str          # how ∂f/∂… names it: 'x', 'a', '(x*y)'
    expr: str | None     # the source text an op computes: 'x*y', 'a = x*y'
    value: float | None  # None when drawing the structure only
    grad: float | None   # None unless the backward pass ran
    block: str | None    # block instance path, 'f#1/h#2'
    live: bool           # it gets a gradient: the output depends on it, and it on an input


class Link(NamedTuple):
    """An edge from an argument to the op that uses it."""
    src: int
    dst: int
    grad: float | None   # the gradient flowing back along it: dst's share of ∂f/∂src


class Scene(NamedTuple):
    items: list          # one Item per node, in tape order
    links: list          # one Link per argument, in tape order
    blocks: list         # block paths in order of first use, parents before children
    f: str               # what the output is called in ∂f/∂node


def output_symbol(graph):
    """The output's name in ∂f/∂x: its binding name, else the first free of f, F, out."""
    node = graph.nodes[graph.output]
    if node.name is not None and node.op != 'const':
        return node.name
    taken = {n.name for n in graph.nodes}
    candidates = itertools.chain(('f', 'F', 'out', 'output'), (f'f_{k}' for k in itertools.count(1)))
    return next(name for name in candidates if name not in taken)


_PLAIN = re.compile(r'[A-Za-z_][A-Za-z0-9_]*|[0-9.]+')
SYMBOL_LIMIT = 18


def node_symbol(graph, i, f, local=False):
    """How a caption names node i: f for the output, a name, or its text in parentheses.

    `local` names the output by its text too, for a local derivative ∂(x*y*z)/∂z.
    """
    node = graph.nodes[i]
    if i == graph.output:
        if not local:
            return f
    elif node.name is not None:
        return node.name
    text = graph.text(i, SYMBOL_LIMIT)
    return text if _PLAIN.fullmatch(text) else f'({text})'


def scene(graph, values=None, grads=None):
    """Walk the tape once: the Items, Links and blocks of the picture."""
    graph = displayable(graph)
    nodes = graph.nodes
    f = output_symbol(graph)
    live = receives_gradient(graph)
    items, links, blocks, seen = [], [], [], set()
    for i, node in enumerate(nodes):
        if node.op == 'input':
            kind, title, expr = 'input', node.name, None
        elif node.op == 'const':
            kind, title, expr = 'const', node.name or number(node.value), None
        else:
            row = PRIMITIVES[node.op]
            kind, title = 'op', row.symbol or node.op
            expr = graph.text(i, TEXT_LIMIT)
            if node.name is not None:
                expr = f'{node.name} = {expr}'
        if i == graph.output:
            kind = 'output'
            if expr is None:
                expr = f'{f} = {title}' if title != f else None
            elif node.name is None:
                expr = f'{f} = {expr}'
        items.append(Item(i, kind, title, node_symbol(graph, i, f), expr,
                          None if values is None else values[i],
                          None if grads is None else grads[i],
                          node.block, live[i]))
        flows = None
        if grads is not None and live[i] and node.args:
            flows = pullback(graph, i, grads[i], values)
        for position, a in enumerate(node.args):
            links.append(Link(a, i, None if flows is None or not live[a] else flows[position]))
        if node.block is not None and node.block not in seen:
            parts = node.block.split('/')
            for depth in range(1, len(parts) + 1):
                path = '/'.join(parts[:depth])
                if path not in seen:
                    seen.add(path)
                    blocks.append(path)
    return Scene(items, links, blocks, f)


def layout_size(scene):
    """About how many nodes dot will lay out: the nodes, plus one for every rank
    a long edge crosses. A value used far apart (a weight fed to every step of
    a long chain) makes edges that span many ranks, and dot's time grows with
    those, not with the nodes alone. Ranks are estimated as dot tends to place
    them: each node just before the first node that uses it."""
    items, links = scene.items, scene.links
    rank = [0] * len(items)
    for link in links:                       # tape order: args come first
        rank[link.dst] = max(rank[link.dst], rank[link.src] + 1)
    users = [[] for _ in items]
    for link in links:
        users[link.src].append(link.dst)
    for i in range(len(items) - 1, -1, -1):
        if users[i]:
            rank[i] = min(rank[u] for u in users[i]) - 1
    return len(items) + sum(max(0, rank[link.dst] - rank[link.src] - 1) for link in links)


def number(x):
    """A number as a figure shows it: 12, 0.5, 3.142, 1.5e+10, inf, nan."""
    if x != x or x in (float('inf'), float('-inf')):
        return repr(x)
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return format(x, '.4g')


# ---- styling: how it looks ----

class Frame(NamedTuple):
    """One step of the backward pass, for style(): which gradients are known so far."""
    done: frozenset      # ids whose gradient is final
    current: int         # the node this step finished
    caption: str         # the chain-rule product it used


# Characters XML 1.0 cannot carry (controls, lone surrogates, U+FFFE/U+FFFF):
# one in a label makes dot's SVG unreadable, so each becomes U+FFFD.
_NOT_XML = re.compile('[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]')


def printable(text):
    """Text any picture can carry: XML-invalid characters replaced by U+FFFD."""
    return _NOT_XML.sub('\ufffd', str(text))


def _esc(text):
    """Text for an HTML-like DOT label: escaped for XML, and every backslash
    doubled, since dot reads a backslash in a label as an escape."""
    return html.escape(printable(text), quote=True).replace('\\', '\\\\')


# A comment and a line continuation are not part of what a node computes.
_NOT_CODE = re.compile(r'#[^\r\n]*|\\(?=[ \t]*(?:\r\n|\r|\n))')


def displayable(graph):
    """The graph with its source cleaned for display, at the same length so that
    every span still points at its text: comments and line-continuation
    backslashes blanked, characters no picture can carry replaced."""
    source = graph.source
    if '#' in source or '\\' in source:
        source = _NOT_CODE.sub(lambda m: ' ' * len(m.group()), source)
    if _NOT_XML.search(source):
        source = printable(source)
    return graph if source is graph.source else graph._replace(source=source)


def _row(text, color=None, size=None, bold=False):
    """One line of an HTML-like label; the text is escaped here and nowhere else."""
    text = _esc(text)
    if bold:
        text = f'<B>{text}</B>'
    if color or size:
        font = (f' POINT-SIZE="{size}"' if size else '') + (f' COLOR="{color}"' if color else '')
        text = f'<FONT{font}>{text}</FONT>'
    return f'<TR><TD>{text}</TD></TR>'


def _label(item, f, show_value, show_grad, pending):
    """What it is, what it computes, its value, its gradient: one line each."""
    rows = [_row(item.title, bold=True)]
    if item.expr:
        rows.append(_row(item.expr, MUTED, 10))
    if show_value and not (item.kind == 'const' and item.title == number(item.value)):
        rows.append(_row(number(item.value), FORWARD))
    if show_grad:
        known = number(item.grad)
        if pending:
            # As wide as the number to come (U+2007 is a digit's width), so
            # nodes keep their size and place from one frame to the next.
            known = '?' + '\u2007' * (len(known) - 1)
        rows.append(_row(f'∂{f}/∂{item.symbol} = {known}', MUTED if pending else KNOWN_TEXT, 11))
    return ('<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">'
            + ''.join(rows) + '</TABLE>>')


_SHAPES = {
    'input': dict(shape='ellipse', style='filled', fillcolor=INPUT_FILL, color=FORWARD),
    'const': dict(shape='box', style='filled', fillcolor=CONST_FILL, color=CONST_EDGE,
                  fontsize='11'),
    'op': dict(shape='box', style='rounded,filled', fillcolor='white', color=INK),
    'output': dict(shape='box', style='rounded,filled', fillcolor='white', color=INK,
                   peripheries='2', penwidth='1.5'),
}


def _node_attrs(item, mode, frame):
    attrs = dict(_SHAPES[item.kind])
    # The fill says what is known; the shape and border still say what it is.
    if mode == 'backward' and item.live:
        if frame is None or item.id in frame.done:
            attrs['fillcolor'] = KNOWN
        if frame is not None and item.id == frame.current:
            attrs.update(fillcolor=JUST_DONE, penwidth='3')
    return attrs


def _legend(kinds, mode, frame):
    """One row of swatches for what this picture shows: every colour in it is explained."""
    cells = [(text, fill, edge) for kind, text, fill, edge in (
        ('input', 'input (oval)', INPUT_FILL, FORWARD),
        ('const', 'constant', CONST_FILL, CONST_EDGE),
        ('op', 'operation', 'white', INK),
        ('output', 'output (double border)', 'white', INK)) if kind in kinds]
    if mode == 'backward':
        cells.append(('gradient known', KNOWN, KNOWN_EDGE))
        if frame is not None:
            cells.append(('finished in this step', JUST_DONE, KNOWN_EDGE))
    swatches = ''.join(
        f'<TD BGCOLOR="{fill}" COLOR="{edge}" BORDER="1">&nbsp;{_esc(text)}&nbsp;</TD>'
        for text, fill, edge in cells)
    if mode != 'structure':
        swatches += f'<TD><FONT COLOR="{FORWARD}">──▶ forward: values</FONT></TD>'
    if mode == 'backward':
        swatches += f'<TD><FONT COLOR="{BACKWARD_TEXT}">◀╌╌ backward: gradients</FONT></TD>'
    return f'<TABLE BORDER="0" CELLSPACING="4" CELLPADDING="2"><TR>{swatches}</TR></TABLE>'


def block_labels(blocks):
    """{block path: 'block h'}, or 'block h, call 2' for a block called more than once."""
    calls = {}
    for path in blocks:
        name = path.rpartition('/')[2].partition('#')[0]
        calls[name] = calls.get(name, 0) + 1
    labels = {}
    for path in blocks:
        name, _, call = path.rpartition('/')[2].partition('#')
        labels[path] = f'block {name}' if calls[name] == 1 else f'block {name}, call {call}'
    return labels


def _clusters(blocks):
    """{block path: an empty cluster with its label}."""
    labels = block_labels(blocks)
    return {path: graphviz.Digraph(f'cluster_b{k}', graph_attr=dict(
                label=f'<{_esc(labels[path])}>', style='rounded,dashed', color=MUTED,
                fontcolor=MUTED, fontsize='11', labeljust='l', labelloc='b'))
            for k, path in enumerate(blocks)}


def _attach(dot, blocks, bodies):
    """Nest the clusters. graphviz copies a subgraph's text when it is attached,
    so children go in first: walk the blocks backwards (children come after
    their parents) and attach each one's children in order of first use."""
    children = {path: [] for path in blocks}
    roots = []
    for path in blocks:
        parent = path.rpartition('/')[0]
        (children[parent] if parent else roots).append(path)
    for path in reversed(blocks):
        for child in children[path]:
            bodies[path].subgraph(bodies[child])
    for path in roots:
        dot.subgraph(bodies[path])


def style(scene, mode='backward', rankdir='LR', frame=None):
    """Turn a Scene into a graphviz.Digraph; `frame` draws one step of the backward pass."""
    if mode not in PASSES:
        raise ValueError(f'mode must be one of {PASSES}')
    show_value = mode != 'structure'
    size = layout_size(scene)
    small = size <= EDGE_LABELS
    graph_attr = dict(rankdir=rankdir, fontname=FONT, fontsize='12', nodesep='0.35',
                      ranksep='0.5' if small else '0.9', labelloc='b', labeljust='l',
                      newrank='true')
    if size > LARGE:
        # Cap dot's network-simplex and crossing passes: a few more crossings
        # in a picture this size, and seconds instead of minutes.
        graph_attr.update(nslimit='2', nslimit1='2', mclimit='0.5')
    dot = graphviz.Digraph(
        'adgrad', graph_attr=graph_attr,
        node_attr=dict(fontname=FONT, fontsize='12', color=INK, fontcolor=INK,
                       margin='0.12,0.06'),
        edge_attr=dict(fontname=FONT, fontsize='11', arrowsize='0.7'))

    # Nodes go into their block's cluster. A constant used once is ranked with
    # the op that uses it, so it hangs beside that op and the main line of
    # data reads x → [h] → [f] straight across, as in the tutorial's figures.
    bodies = _clusters(scene.blocks)
    uses = [[] for _ in scene.items]
    arguments = [[] for _ in scene.items]
    for link in scene.links:
        uses[link.src].append(link.dst)
        arguments[link.dst].append(link.src)
    beside = set()   # those constants: their edges are flat, within one rank
    for item in scene.items:
        pending = frame is not None and item.id not in frame.done
        show_grad = mode == 'backward' and item.live
        target = bodies[item.block] if item.block is not None else dot
        target.node(f'n{item.id}', _label(item, scene.f, show_value, show_grad, pending),
                    **_node_attrs(item, mode, frame))
        for a in dict.fromkeys(arguments[item.id]):
            const = scene.items[a]
            if const.kind == 'const' and uses[a] == [item.id] and const.block == item.block:
                beside.add(a)
                with target.subgraph() as same:
                    same.attr(rank='same')
                    same.node(f'n{item.id}')
                    same.node(f'n{a}')
    _attach(dot, scene.blocks, bodies)

    for link in scene.links:
        dot.edge(f'n{link.src}', f'n{link.dst}', color=FORWARD if show_value else INK)
    if mode == 'backward':
        for link in scene.links:
            if link.grad is None:
                continue
            # Drawn tail -> head with dir=back, so the layout is the forward one
            # and every frame of a step series keeps the same positions; edges
            # a frame has not reached yet are there, but invisible.
            attrs = dict(dir='back', style='dashed', color=BACKWARD, fontcolor=BACKWARD_TEXT)
            # A label sits mid-edge, clear of other lines, but dot lays it out
            # as one more node per edge, and past EDGE_LABELS that costs
            # seconds: larger graphs (and flat edges, whose label would sit on
            # the forward edge) get an xlabel, placed after the layout.
            mid = small and link.src not in beside
            attrs['label' if mid else 'xlabel'] = number(link.grad)
            if frame is not None and link.src not in frame.done:
                attrs['style'] = 'invis'
            elif frame is not None and link.src == frame.current:
                attrs.update(style='bold,dashed', penwidth='2.5', color=KNOWN_TEXT,
                             fontcolor=KNOWN_TEXT)
            dot.edge(f'n{link.src}', f'n{link.dst}', **attrs)

    rows = [] if frame is None else [
        f'<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="14">{_esc(frame.caption)}</FONT></TD></TR>']
    rows.append(f'<TR><TD ALIGN="LEFT">{_legend({i.kind for i in scene.items}, mode, frame)}'
                '</TD></TR>')
    dot.attr(label=f'<<TABLE BORDER="0" CELLPADDING="2">{"".join(rows)}</TABLE>>')
    return dot


# ---- the result object ----

class Picture:
    """A drawn graph: `.digraph` and `.source` (DOT); Jupyter shows it through `_repr_svg_`."""

    def __init__(self, digraph):
        self.digraph = digraph

    @property
    def source(self):
        return self.digraph.source

    def _repr_svg_(self):
        return self.digraph.pipe(format='svg', encoding='utf-8')


def render(graph, values=None, grads=None, mode=None, rankdir='LR', frame=None):
    """The picture of a graph: structure only, forward values, or values and gradients.

    `mode` defaults to 'backward' when grads are given, 'forward' with values
    alone, 'structure' with neither.
    """
    if mode is None:
        mode = 'backward' if grads is not None else 'forward' if values is not None else 'structure'
    if mode != 'structure' and values is None:
        raise ValueError(f'the {mode} pass needs values')
    if mode == 'backward' and grads is None:
        raise ValueError('the backward pass needs gradients')
    if rankdir not in RANKDIRS:
        raise ValueError(f'rankdir must be one of {RANKDIRS}')
    return Picture(style(scene(graph, values, grads if mode == 'backward' else None),
                         mode, rankdir, frame))
