"""Styling a Scene: plain data about nodes and edges -> a graphviz.Digraph.

This module knows nothing about the tape. `style()` turns a Scene (see
render.py) into DOT attributes; a `Frame` draws one step of a pass, a `Look`
holds the options for slides (colour by gradient magnitude, the legend, font
scale, size, products on edges, rows or strips for long pictures).
"""

import math
from typing import NamedTuple

import graphviz

from .preview import grid, is_array, norm, shape_text, short, summary
from .text import esc, number

PASSES = ('structure', 'forward', 'backward')
RANKDIRS = ('LR', 'TB')
COLORS = ('plain', 'magnitude')
# Up to this layout size, gradients are labelled mid-edge (see style()); past
# LARGE, dot is told to spend less effort on the layout.
EDGE_LABELS = 150
LARGE = 1000
SLIDE_WIDTH = 13.3   # inches: 1920 px at the 144 dpi of a PNG, a 16:9 slide's width
SLIDE_HEIGHT = 7.5    # inches: 1080 px at 144 dpi
FONT_SIZE = 12   # every text on a picture, in points: legible on a projected slide

# Each colour has one meaning, shared by the picture, the legend and the README.
INK = '#1c1917'          # text and operation borders
FORWARD = '#2563eb'      # blue: the forward pass, its arrows and the values it computes
BACKWARD = '#0891b2'     # cyan: the backward pass, dashed arrows carrying gradients
KNOWN = '#dcfce7'        # green fill: the node's gradient ∂f/∂node is known
KNOWN_EDGE = '#16a34a'
KNOWN_TEXT = '#15803d'   # green: every gradient number, on nodes and on edges alike
BACKWARD_TEXT = KNOWN_TEXT
JUST_DONE = '#86efac'    # bright green: the node a step has just finished
INPUT_FILL = '#eff6ff'   # inputs: ovals, light blue
CONST_FILL = '#f5f5f4'   # constants: small grey boxes
CONST_EDGE = '#a8a29e'
MUTED = '#57534e'        # secondary text: the source expression; dark enough for a projector
KEPT = '#b45309'         # amber: a value the backward pass keeps (--memory, --checkpoint)
BANDS = ('#f5f5f4', '#eff6ff')   # checkpoint segments, alternately: stone and light blue
FONT = 'DejaVu Sans,Helvetica,Arial,sans-serif'

# --color magnitude: log10 |gradient| in bins, one colour per decade pair, on
# a scale from vanished (violet) through healthy (green) to exploded (orange).
SCALE = ((-math.inf, '#c4b5fd', '< 1e-6'), (-6, '#ddd6fe', '1e-6'), (-4, '#e0f2fe', '1e-4'),
         (-2, '#bbf7d0', '0.01'), (0, '#86efac', '1'), (2, '#fde68a', '100'),
         (4, '#fdba74', '1e4'), (6, '#fb923c', '> 1e6'))
NONFINITE = '#dc2626'    # red: an inf or nan gradient (border, text and arrow)
NONFINITE_FILL = '#fecaca'
BLOCKED = '#d6d3d1'      # grey: exactly zero, blocked by a relu, max, clamp or conditional
BLOCKED_TEXT = '#57534e'


class Frame(NamedTuple):
    """One step of a pass, for style(): which nodes are done so far."""
    done: frozenset      # ids whose gradient (or value, going forward) is final
    current: int         # the node this step finished
    caption: str         # what the step did
    forward: bool = False   # a step of the forward pass: values appear, no gradients
    lines: int = 1       # lines the caption takes, blank ones after it: a series' frames
                         # all as tall as its longest caption makes one
    again: frozenset = frozenset()     # nodes this step computes again (--checkpoint)
    dropped: frozenset = frozenset()   # nodes whose values are dropped, not yet again


class Look(NamedTuple):
    """How a picture is dressed, for slides as much as for screens."""
    color: str = 'plain'         # or 'magnitude'
    legend: bool = True
    font_scale: float = 1.0
    size: str | None = None      # Graphviz's size, 'W,H' in inches: scaled down to fit
    products: bool = False       # label gradient edges '4 · 3 = 12', not just '12'
    width: float | None = SLIDE_WIDTH   # wrap or fold a long picture this wide (inches)
    fold: bool = False           # fold into strips where rows cannot wrap (see strips());
                                 # the CLI tries it, measured, as dot can be slow on strips
    caption: bool = True         # a step's caption inside the picture (the page shows its own)
    ids: bool = False            # SVG ids for the interactive page: node-n3, grad-0, ...
    compact: bool = False        # fewer lines a node, one sum one node (fold.merge_sums):
                                 # tried, measured, where the picture does not fit a slide
    merged: bool = False         # compact, and each unnamed step drawn in its one use


def scale_color(magnitude):
    color = SCALE[0][1]
    for low, fill, _ in SCALE:
        if magnitude >= low:
            color = fill
    return color


def _row(text, color=None, size=None, bold=False):
    """One line of an HTML-like label; the text is escaped here and nowhere else."""
    text = esc(text)
    if bold:
        text = f'<B>{text}</B>'
    if color or size:
        font = (f' POINT-SIZE="{size}"' if size else '') + (f' COLOR="{color}"' if color else '')
        text = f'<FONT{font}>{text}</FONT>'
    return f'<TR><TD>{text}</TD></TR>'


def grad_text(item):
    """The gradient as a label shows it: rounding noise of cancelling terms is ≈0."""
    return '≈0' if item.cancels else number(item.grad)


def _pending(text):
    """'?' as wide as the number to come (U+2007 is a digit's width), so that
    nodes keep their size and place from one frame to the next."""
    return '?' + '\u2007' * (len(text) - 1)


def _table(rows):
    return ('<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">'
            + ''.join(rows) + '</TABLE>>')


def _matrix(cells, color, pending):
    """A small matrix in brackets, its entries right-aligned in columns."""
    last = len(cells) - 1
    rows = []
    for k, row in enumerate(cells):
        sides = 'T' if k == 0 else 'B' if k == last else ''
        shown = ''.join(f'<TD ALIGN="RIGHT" CELLPADDING="2"><FONT COLOR="{color}">'
                        f'{esc(_pending(v) if pending else v)}</FONT></TD>' for v in row)
        rows.append(f'<TR><TD SIDES="L{sides}" BORDER="1" COLOR="{color}" WIDTH="3"></TD>'
                    f'{shown}<TD SIDES="R{sides}" BORDER="1" COLOR="{color}" WIDTH="3"></TD></TR>')
    return ('<TR><TD><TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="0">'
            + ''.join(rows) + '</TABLE></TD></TR>')


def _array_rows(head, x, color, pending):
    """An array's value or gradient: `head` (∂f/∂W =, or nothing for a value)
    then every entry of a small array, else its min, max and norm."""
    cells = grid(x)
    if cells is not None and len(cells) == 1:   # a vector: one line, [a, b, c]
        inline = '[' + ', '.join(cells[0]) + ']'
        inline = f'[{inline}]' if x.ndim == 2 else inline
        return [_row(head + (_pending(inline) if pending else inline), color)]
    rows = [_row(head.rstrip(' ='), color)] if head else []
    if cells is None:
        text = summary(x)
        return rows + [_row(_pending(text) if pending else text, color)]
    return rows + [_matrix(cells, color, pending)]


def _label(item, f, show_value, show_grad, pending, look):
    """What it is, what it computes, its value, its gradient: one line each."""
    if look.compact and item.ran:
        return _compact_label(item, show_value, show_grad, pending, look)
    shape = '' if item.shape is None else f'  {shape_text(item.shape)}'
    rows = [_row(item.title + shape, bold=True)]
    if item.tags:   # the ids a diagnosis names it by, '(node 49)', after its title
        rows = [rows[0].replace('</B>', f'</B>  <FONT COLOR="{MUTED}">{_tag_text(item)}</FONT>')]
    if look.compact and item.expr and item.kind in ('op', 'output', 'call') \
            and not item.title.endswith('✎'):   # the expression shows the op
        rows = [_row(line, bold=True) for line in broken(item.expr + shape)]
    elif item.expr:
        rows.append(_row(item.expr, MUTED))
    if not item.ran:   # an if's branch not taken: it was never computed here
        rows.append(_row('not taken at this point', MUTED))
        return _table(rows)
    if is_array(item.value):
        if show_value and item.kind != 'const' or show_value and item.title[:1] != '[':
            rows += _array_rows('', item.value, MUTED if pending == 'value' else FORWARD,
                                pending == 'value')
    elif show_value and not (item.kind == 'const' and item.title == number(item.value)):
        value = number(item.value)
        if pending == 'value':   # as wide as the number to come, as for gradients below
            value = _pending(value)
        rows.append(_row(value, MUTED if pending == 'value' else FORWARD))
    if show_grad:
        color, flag, bold = _grad_look(item, pending, look)
        if is_array(item.grad):
            rows += _array_rows(f'∂{f}/∂{item.symbol}{flag} = ', item.grad, color,
                                bool(pending))
        else:
            known = grad_text(item)
            if pending:
                known = _pending(known)
            text = f'∂{f}/∂{item.symbol} ≈ 0' if item.cancels and not pending else \
                f'∂{f}/∂{item.symbol} = {known}'
            rows.append(_row(text + flag, color, bold=bold))
    return _table(rows + _reasons(item, show_grad, pending, look))


def _grad_look(item, pending, look):
    """(colour, flag, bold) of a gradient's text: by its health under --color magnitude."""
    health = item.health
    if look.color != 'magnitude' or health is None or pending:
        return (MUTED if pending else KNOWN_TEXT), '', False
    color = NONFINITE if health.state == 'nonfinite' else (
        BLOCKED_TEXT if health.state in ('blocked', 'zero') else INK)
    flag = f'  ({health.state})' if health.state in ('vanishing', 'exploding') else ''
    return color, flag, health.state == 'nonfinite'


def _reasons(item, show_grad, pending, look):
    """Why a gradient is blocked (--color magnitude), and a call's local derivatives."""
    rows, health = [], item.health
    if show_grad and look.color == 'magnitude' and health is not None and health.reason \
            and not pending and health.state != 'nonfinite':
        head, _, tail = health.reason.partition(': ')   # two short lines, not one long
        rows.extend(_row(part, BLOCKED_TEXT) for part in (head, tail) if part)
    if not pending and (show_grad or item.kind != 'call'):
        # A call's local derivatives belong to the backward pass: a picture
        # of the forward pass (the tutorial's figure 7) shows values alone.
        rows.extend(_row(_plain(note) if look.compact else note, INK) for note in item.notes)
    rows.extend(_row(_plain(line) if look.compact else line, INK) for line in item.strip)
    if item.store is not None:
        rows.append(_row(item.store.note, MUTED if item.store.kind == 'again' else KEPT,
                         bold=item.store.kind != 'again'))
    return rows


def _plain(note):
    """A call's note without its formula, for a compact label: ∂y/∂x = 4."""
    parts = note.split(' = ')
    return f'{parts[0]} = {parts[-1]}' if len(parts) > 2 else note


def _tag_text(item):
    return ' '.join(f'#{i}' for i in item.tags)


def _compact_label(item, show_value, show_grad, pending, look):
    """A compact label, as a record: what the node computes (its name, or its
    expression, which shows the op), then its value and its gradient side by
    side, `value │ gradient`, as the legend says; an input on one line. An
    array shows its shape, and for each number a vector's entries or a norm."""
    shape = '' if item.shape is None else f'  {shape_text(item.shape)}'
    if item.kind in ('op', 'output', 'call') and item.expr and not item.title.endswith('✎'):
        head = [_cell(line, INK, True) for line in broken(item.expr + shape)]
    else:
        inline = item.kind == 'input' and show_value and item.shape is None   # x = 2 │ 0.5
        head = [_cell(item.title + shape + (' =' if inline else ''), INK, True)]
    cells = []
    if show_value and not (item.kind == 'const' and (item.title == short(item.value)
                                                     or item.title[:1] == '[')):
        value = short(item.value)
        cells.append(_cell(_pending(value) if pending == 'value' else value,
                           MUTED if pending == 'value' else FORWARD))
    if show_grad:
        color, flag, bold = _grad_look(item, pending, look)
        known = short(item.grad) if is_array(item.grad) else grad_text(item)
        cells.append(_cell((_pending(known) if pending else known) + flag, color, bold,
                           bar=bool(cells)))
    one_line = item.kind == 'input' and item.shape is None and show_value
    lines = [head + cells] if one_line else [[cell] for cell in head] + ([cells] if cells else [])
    if item.tags:   # the ids a diagnosis names it by, '(node 49)', under its title
        lines.insert(1 if one_line else len(head), [_cell(_tag_text(item), MUTED)])
    rows = ['<TR><TD><TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1"><TR>'
            + ''.join(line) + '</TR></TABLE></TD></TR>' for line in lines]
    return _table(rows + _reasons(item, show_grad, pending, look))


def _cell(text, color, bold=False, bar=False):
    """One cell of a compact label; `bar` draws the │ between value and gradient."""
    sides = f' SIDES="L" BORDER="1" COLOR="{MUTED}"' if bar else ''
    text = f'<B>{esc(text)}</B>' if bold else esc(text)
    return f'<TD{sides}><FONT COLOR="{color}">{text}</FONT></TD>'


_SHAPES = {
    'input': dict(shape='ellipse', style='filled', fillcolor=INPUT_FILL, color=FORWARD),
    'const': dict(shape='box', style='filled', fillcolor=CONST_FILL, color=CONST_EDGE),
    'op': dict(shape='box', style='rounded,filled', fillcolor='white', color=INK),
    'output': dict(shape='box', style='rounded,filled', fillcolor='white', color=INK,
                   peripheries='2', penwidth='1.5'),
    'call': dict(shape='box', style='dashed,filled', fillcolor='white', color=INK,
                 penwidth='1.5'),
}


def _node_attrs(item, mode, frame, look, output):
    attrs = dict(_SHAPES[item.kind])
    if look.compact and item.kind == 'input':   # an oval no larger than its one line needs
        attrs.update(margin='0,0', height='0')   # (dot's least height, 0.5 in, is two lines)
    if not item.ran:
        attrs.update(style='dashed,rounded', color=MUTED, fontcolor=MUTED, fillcolor='white')
        return attrs
    if item.id == output and item.kind == 'call':
        attrs['peripheries'] = '2'
    # The fill says what is known; the shape and border still say what it is.
    if mode == 'backward' and item.live and (frame is None or frame.forward is False):
        if look.color == 'magnitude' and item.health is not None and frame is None:
            state = item.health.state
            attrs['fillcolor'] = (NONFINITE_FILL if state == 'nonfinite' else
                                  BLOCKED if state in ('blocked', 'zero') else
                                  scale_color(item.health.magnitude))
            if state in ('vanishing', 'exploding', 'nonfinite'):
                attrs['penwidth'] = '3'
                attrs['color'] = NONFINITE if state == 'nonfinite' else INK
        elif frame is None or item.id in frame.done:
            attrs['fillcolor'] = KNOWN
        if frame is not None and item.id == frame.current:
            attrs.update(fillcolor=JUST_DONE, penwidth='3')
    if frame is not None and frame.forward and item.id == frame.current:
        attrs.update(fillcolor='#bfdbfe', penwidth='3', color=FORWARD)
    if item.store is not None and item.store.kind != 'again':   # kept: a thick amber border
        attrs.update(color=KEPT, penwidth='3.5', style=attrs['style'].replace('dashed,', ''))
    elif item.store is not None and not (frame is not None and item.id == frame.current):
        attrs['style'] = attrs['style'].replace('dashed,', '') + ',dashed'
        attrs['color'] = MUTED
    if frame is not None and frame.again and item.id in frame.again:
        attrs.update(fillcolor='#bfdbfe', penwidth='3', color=FORWARD, style='rounded,filled')
    return attrs


def _swatch(text, fill, edge):
    return (f'<TD BGCOLOR="{fill}" COLOR="{edge}" BORDER="1">'
            f'&nbsp;{esc(text)}&nbsp;</TD>')


OVAL = (36, 16)   # the legend's oval, in points: as tall as the boxes beside it


def _oval(text, fill, edge):
    """An oval swatch and its text. An HTML-like label has no ellipse (a
    rounded cell is a pill), so the oval is drawn a row of points at a time
    on a grid of 1-point cells: each row a border, the fill, a border, as
    wide as the ellipse is there."""
    width, height = OVAL
    def across(y):   # the ellipse's width at height y (-1 .. 1), in whole points
        return 2 * round(width / 2 * math.sqrt(max(0.0, 1 - y * y)))
    rows = []
    for k in range(height):
        y = (k + 0.5) / height * 2 - 1
        here = across(y)
        # The border is as thick as the step to the narrower neighbour row,
        # so the outline has no gaps where the ellipse turns flat.
        narrower = min(across(y - 2 / height), across(y + 2 / height))
        side = max(2, (here - narrower) // 2)   # 2 points: a line, not a dotted one
        pad = (width - here) // 2
        cells = [(pad, None)]
        if k in (0, 1, height - 2, height - 1) or 2 * side >= here:
            cells.append((here, edge))
        else:
            cells += [(side, edge), (here - 2 * side, fill), (side, edge)]
        cells.append((pad, None))
        rows.append('<TR>' + ''.join(
            f'<TD COLSPAN="{n}" FIXEDSIZE="TRUE" WIDTH="{n}" HEIGHT="1"'
            + (f' BGCOLOR="{color}"' if color else '') + '></TD>'
            for n, color in cells if n) + '</TR>')
    grid = "<TR>" + "<TD FIXEDSIZE=\"TRUE\" WIDTH=\"1\" HEIGHT=\"1\"></TD>" * width + "</TR>"
    # Fixed: a wider row under the legend's first would stretch every column
    # of that row, the oval's one-point columns too.
    shape = (f'<TABLE BORDER="0" CELLSPACING="0" CELLPADDING="0" FIXEDSIZE="TRUE" '
             f'WIDTH="{width}" HEIGHT="{height + 1}">' + grid + ''.join(rows) + '</TABLE>')
    return f'<TD>{shape}</TD><TD>{esc(text)}</TD>'


def _legend(kinds, f, mode, frame, look, stores=frozenset(), memory=None):
    """Rows of swatches for what this picture shows: every colour in it is explained
    (a compact picture's in fewer words, as it is narrow)."""
    brief = look.compact
    cells = []
    for kind, text, fill, edge in (('input', 'input', INPUT_FILL, FORWARD),
                                   ('const', 'constant', CONST_FILL, CONST_EDGE),
                                   ('op', 'operation', 'white', INK),
                                   ('call', 'block call' if brief else 'block call (dashed)',
                                    'white', INK),
                                   ('output', 'output' if brief else 'output (double border)',
                                    'white', INK)):
        if kind in kinds:
            cells.append(_oval(text, fill, edge) if kind == 'input' else
                         _swatch(text, fill, edge))
    if 'not taken' in kinds:   # dashed and grey, as the branch and its arrows are drawn
        cells.append(f'<TD BORDER="1" STYLE="dashed,rounded" COLOR="{MUTED}">'
                     f'<FONT COLOR="{MUTED}">&nbsp;not taken&nbsp;</FONT></TD>')
    scale = []
    if mode == 'backward' and look.color == 'magnitude' and frame is None:
        scale.append(f'<TD>|∂{esc(f)}/∂node| from:</TD>')
        scale.extend(_swatch(text, fill, INK) for _, fill, text in SCALE)
        scale.append(_swatch('inf / nan', NONFINITE_FILL, NONFINITE))
        scale.append(_swatch('0: blocked', BLOCKED, INK))
        scale.append('<TD>thick border: &lt; 1e-4 or &gt; 1e4</TD>')
    elif mode == 'backward' and (frame is None or not frame.forward):
        cells.append(_swatch('gradient known', KNOWN, KNOWN_EDGE))
        if frame is not None:
            cells.append(_swatch('finished in this step', JUST_DONE, KNOWN_EDGE))
    if frame is not None and frame.forward:
        cells.append(_swatch('computed in this step', '#bfdbfe', FORWARD))
    if frame is not None and frame.again:
        cells.append(_swatch('computed again now', '#bfdbfe', FORWARD))
    if 'kept' in stores or 'checkpoint' in stores:
        cells.append(f'<TD BGCOLOR="white" COLOR="{KEPT}" BORDER="3">&nbsp;'
                     f'<FONT COLOR="{KEPT}"><B>{"checkpoint" if "checkpoint" in stores else "kept"}'
                     f'</B></FONT>&nbsp;</TD>')
    if 'again' in stores:
        cells.append(f'<TD STYLE="dashed" COLOR="{MUTED}" BORDER="1">&nbsp;'
                     f'<FONT COLOR="{MUTED}">computed again</FONT>&nbsp;</TD>')
    if mode != 'structure':
        cells.append(f'<TD><FONT COLOR="{FORWARD}">──▶ {"" if brief else "forward: "}values'
                     '</FONT></TD>')
    if mode == 'backward' and (frame is None or not frame.forward):
        gradients = f'{"" if brief else "backward: "}gradients'
        if scale:   # its arrows in the scale's colours, darker (_edge_health), its numbers in ink
            glyph = ''.join(f'<FONT COLOR="{darker(scale_color(m))}">{c}</FONT>'
                            for c, m in (('◀', -7), ('╌', 0), ('╌', 5)))
            cells.append(f'<TD>{glyph} {gradients}, coloured by size</TD>')
        else:
            cells.append(f'<TD><FONT COLOR="{BACKWARD}">◀╌╌</FONT><FONT COLOR="{KNOWN_TEXT}"> '
                         f'{gradients}</FONT></TD>')
        if brief:   # what the two numbers on a compact node are
            cells.append(f'<TD><FONT COLOR="{FORWARD}">value</FONT> │ '
                         f'<FONT COLOR="{INK if scale else KNOWN_TEXT}">∂{esc(f)}/∂node</FONT></TD>')
    summary = [f'<TD><FONT COLOR="{KEPT}">{esc(memory)}</FONT></TD>'] if memory else []
    # A step's swatches fill a row: its arrows go beside the summary (a row
    # narrower than the one below would stretch the oval's cells).
    if stores and frame is not None:
        flows = [cell for cell in cells if cell.startswith('<TD><FONT')]
        cells = [cell for cell in cells if not cell.startswith('<TD><FONT')]
        summary = flows + summary
    return [f'<TABLE BORDER="0" CELLSPACING="4" CELLPADDING="2"><TR>{"".join(row)}</TR></TABLE>'
            for row in (cells, scale, summary) if row]


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


def _clusters(blocks, fontsize):
    """{block path: an empty cluster with its label}."""
    # In the bottom right corner, one word a line ('block', its name, 'call
    # k'): narrow enough that the arrow leaving the call (at the bottom, drawn
    # top to bottom; on the right, left to right) passes beside it.
    labels = {path: '<BR ALIGN="RIGHT"/>'.join(map(esc, text.replace(' ', ', ', 1).split(', ')))
              for path, text in block_labels(blocks).items()}
    return {path: graphviz.Digraph(f'cluster_b{k}', graph_attr=dict(
                label=f'<{labels[path]}>', style='rounded,dashed', color=MUTED,
                fontcolor=MUTED, fontsize=fontsize, labeljust='r', labelloc='b'))
            for k, path in enumerate(blocks)}


def _attach(dot, blocks, bodies, home=None):
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
        (dot if home is None else home(path)).subgraph(bodies[path])


def ranks(scene):
    """Each node's rank as dot tends to place it: after its arguments, then
    pulled up to just before the first node that uses it."""
    items, links = scene.items, scene.links
    place = {item.id: k for k, item in enumerate(items)}
    rank = [0] * len(items)
    for link in links:                       # tape order: args come first
        rank[place[link.dst]] = max(rank[place[link.dst]], rank[place[link.src]] + 1)
    users = [[] for _ in items]
    for link in links:
        users[place[link.src]].append(place[link.dst])
    for k in range(len(items) - 1, -1, -1):
        if users[k]:
            rank[k] = min(rank[u] for u in users[k]) - 1
    return rank, place


def layout_size(scene):
    """About how many nodes dot will lay out: the nodes, plus one for every rank
    a long edge crosses. A value used far apart (a weight fed to every step of
    a long chain) makes edges that span many ranks, and dot's time grows with
    those, not with the nodes alone."""
    rank, place = ranks(scene)
    return len(scene.items) + sum(max(0, rank[place[link.dst]] - rank[place[link.src]] - 1)
                                  for link in scene.links)


_CHAR = 0.5          # a character of DejaVu Sans, in ems, on average over labels
_ROW_GAP = 0.6       # inches between ranks on a row: ranksep plus an edge label
_NODESEP = 0.5       # inches between nodes of a row (dot's nodesep)
_ACROSS = 1.25       # what that gap takes with the labels of the flat edges in it
_GAP = 1.3           # inches between the columns of a strip: ranksep, a label mid-edge
_BARE_GAP = 0.9      # ... where the edges carry no label mid-edge
_COMPACT_GAP = 0.6   # ... in a compact picture: ranksep, and few labels
FEW_RANKS = 300      # strips() tries every cut in two of a picture of up to this many ranks


COMPACT_LINE = 24   # a compact label breaks a longer expression between its terms


def broken(text, limit=COMPACT_LINE):
    """Text on lines of about `limit` characters, broken before a ' + ', ' - '
    or ' = ' outside parentheses (else inside the outermost pair: -(a + b)),
    never inside a term."""
    cuts, depth = {0: [], 1: []}, 0
    for k, char in enumerate(text):
        depth += (char == '(') - (char == ')')
        # (a text cut short, 'for i in 0…b) }', may close more than it opens)
        if 0 <= depth <= 1 and k and text.startswith((' + ', ' - ', ' = '), k):
            cuts[depth].append(k + (3 if text[k + 1] == '=' else 1))   # '=' ends a line
    outside = any(text[k - 2] != '=' for k in cuts[0])   # a term outside parentheses
    points = sorted(cuts[0] + ([] if outside else cuts[1]))
    lines, start = [], 0
    for a, b in zip([0] + points, points + [len(text)]):
        # 'h = layer(W1, b1, x)' stays whole: a name alone on a line says little
        alone = text[start:a].endswith('= ') and len(text) - start <= 1.5 * limit
        if b - start > limit and a > start and not alone:
            lines.append(text[start:a].rstrip())
            start = a
    lines.append(text[start:])
    return lines


def label_width(item, points, compact=False):
    """About how wide dot will draw a node, in inches, from its longest line
    (`compact`: as a compact Look draws it)."""
    shape = '' if item.shape is None else '  ' + shape_text(item.shape)
    lines = [item.title + shape, *(broken((item.expr or '') + shape) if compact else
                                   [item.expr or '']),
             *(map(_plain, item.notes + item.strip) if compact else item.notes + item.strip)]
    flagged = item.health is not None and item.health.state in ('vanishing', 'exploding')
    if compact:
        lines.append(' │ '.join(short(x) for x in (item.value, item.grad) if x is not None)
                     + '  (vanishing)' * flagged)
        if item.kind == 'input' and item.shape is None:
            lines = [f'{item.title} = {lines.pop()}']
        # bold, tight margins, an oval hugging one line: as dot drew the samples
        width = max(map(len, lines)) * _CHAR * points / 72 + 0.2
        return width * 1.15 if item.kind == 'input' else width
    for head, x in (('', item.value), (f'∂f/∂{item.symbol} = ', item.grad)):
        if x is None:
            continue
        if is_array(x):
            cells = grid(x)
            lines.append(summary(x) if cells is None else
                         ('  '.join(max(cells, key=lambda r: len(''.join(r)))) + '  '))
            lines.append(head)
        else:
            lines.append(f'{head}{x:.4g}')
    if flagged:
        lines[-1] += '  (vanishing)'
    width = max(map(len, lines)) * _CHAR * points / 72 + 0.35
    return width * 1.35 if item.kind == 'input' else width   # an ellipse around the text


def chain(scene):
    """{constant: the op it hangs beside} where the scene is one chain, each
    node using the one before it (and constants used once); else None."""
    uses = {}
    for link in scene.links:
        uses.setdefault(link.src, []).append(link.dst)
    hangs = {item.id: uses[item.id][0] for item in scene.items
             if item.kind == 'const' and len(uses.get(item.id, ())) == 1}
    line = [item.id for item in scene.items if item.id not in hangs]
    steps = set(zip(line, line[1:]))
    if all((link.src, link.dst) in steps for link in scene.links if link.src not in hangs):
        return hangs
    return None


def rows(scene, width, points):
    """{node id: row} to wrap a picture wider than `width` inches onto rows, as
    a long line of text wraps, whole ranks at a time (a chain's rows about
    equally wide); None when it fits, when one rank alone is too wide, when it has block
    boxes (a box cannot be split across rows), or when it is no chain (a rank
    of more than two nodes besides constants: its edges would cross every row)."""
    if width is None or scene.blocks or not scene.items:
        return None
    width *= 0.95   # the estimate is rough: keep a margin
    rank, place = ranks(scene)
    hangs = chain(scene)
    for const, op in (hangs or {}).items():   # on its op's rank: drawn just after it
        rank[place[const]] = rank[place[op]]
    count = {}
    for item in scene.items:
        if item.kind != 'const':
            count[rank[place[item.id]]] = count.get(rank[place[item.id]], 0) + 1
    if max(count.values(), default=0) > 2:
        return None
    tallest = [0.0] * (max(rank) + 1)   # in LR, a rank is a column: its widest node
    across = [0.0] * (max(rank) + 1)    # in a row, a rank's nodes stand side by side
    for item in scene.items:
        r, w = rank[place[item.id]], label_width(item, points)
        tallest[r] = max(tallest[r], w)
        across[r] += w + (_ACROSS if across[r] else 0.0)
    if sum(tallest) + _ROW_GAP * (len(tallest) - 1) <= width or max(across) > width:
        return None
    row_of = _even_rows(across, width) if hangs is not None else _filled_rows(across, width)
    return {item.id: row_of[rank[place[item.id]]] for item in scene.items}


def _filled_rows(across, width):
    """The row of each rank: each row filled as far as it goes, as text wraps."""
    row_of, row, used = [], 0, 0.0
    for w in across:
        if used and used + _ACROSS + w > width:
            row, used = row + 1, 0.0
        used += (_ACROSS if used else 0.0) + w
        row_of.append(row)
    return row_of


def _even_rows(across, width):
    """The row of each rank: as few rows as fit `width`, as equally wide as
    can be (the least sum of squared widths), so that no last row holds a
    stray node or two."""
    best = [(0, 0.0, 0)]   # for the first k ranks: (rows, sum of squares, start of the last row)
    for end in range(1, len(across) + 1):
        options, used = [], -_ACROSS
        for start in range(end - 1, -1, -1):
            used += _ACROSS + across[start]
            if used > width and start < end - 1:   # (a rank alone is always a row)
                break
            rows_, squares, _ = best[start]
            options.append((rows_ + 1, squares + used * used, start))
        best.append(min(options))
    row_of, end = [], len(across)
    while end:
        start = best[end][2]
        row_of[:0] = [best[end][0] - 1] * (end - start)
        end = start
    return row_of


def segment_rows(scene):
    """{node id: row} for a picture of checkpoint segments: a segment a row,
    read left to right, the segments top to bottom, as the pass runs them."""
    return {item.id: item.segment for item in scene.items}


def strips(scene, width, points, gap=_GAP, compact=False):
    """{node id: strip} to fold a picture wider than `width` inches (drawn left
    to right) into strips stacked one under another, where rows() cannot wrap
    it because a rank is too wide for one row (the inputs of a network): each
    strip a run of whole ranks, read left to right, a rank a column, the
    strips about equally wide. None when it fits, when one rank alone is too
    wide, or when it has block boxes (a box cannot be split across strips)."""
    if width is None or scene.blocks or not scene.items:
        return None
    # Each node just before its first use, so that a value made early and used
    # late (1 - y in a loss) stands in the strip that uses it.
    rank, place = ranks(scene)
    columns = [0.0] * (max(rank) + 1)   # a rank is a column: as wide as its widest node
    for item in scene.items:
        r = rank[place[item.id]]
        columns[r] = max(columns[r], label_width(item, points, compact))
    total = sum(columns) + gap * (len(columns) - 1)
    # Whether it fits, as rows() judges it: fold only what clearly does not.
    if sum(columns) + _ROW_GAP * (len(columns) - 1) <= width or max(columns) > width:
        return None
    # The strips share dot's columns, so the picture is as wide as the sum,
    # over the columns of a strip, of the widest strip's column there. Fewest
    # strips that fit, each cut to about the same width.
    # Two strips: of the places to cut that fit, the one fewest edges cross
    # (else the narrowest); more strips: cut evenly.
    halves = [[0] * cut + [1] * (len(columns) - cut)   # (quadratic: a few hundred ranks at most)
              for cut in range(1, min(len(columns), FEW_RANKS))]
    spans = [(rank[place[link.src]], rank[place[link.dst]]) for link in scene.links]
    # (within a tenth: the estimate errs wide, and the caller measures what dot drew)
    strip_of = min(halves, key=lambda s: (
        _folded_width(columns, s, gap) > 1.1 * width, sum(s[a] != s[b] for a, b in spans),
        _folded_width(columns, s, gap)))
    for count in range(3, len(columns) + 2):
        if _folded_width(columns, strip_of, gap) <= width * (1.1 if count == 3 else 1):
            break
        strip_of = _fill(columns, gap, total / count)
    else:
        return None
    return {item.id: strip_of[rank[place[item.id]]] for item in scene.items}


def _depths(scene):
    """Each node's column in a folded picture: one after its furthest argument,
    so that the layers of a network stand in one column each (all neurons
    together); a node with no arguments stands just before its first use,
    in that use's strip."""
    items, links = scene.items, scene.links
    place = {item.id: k for k, item in enumerate(items)}
    rank = [0] * len(items)
    has_args = [False] * len(items)
    for link in links:                       # tape order: args come first
        k = place[link.dst]
        has_args[k] = True
        rank[k] = max(rank[k], rank[place[link.src]] + 1)
    first_use = {}
    for link in links:
        first_use.setdefault(place[link.src], rank[place[link.dst]])
    for k in range(len(items)):
        if not has_args[k] and k in first_use:
            rank[k] = max(0, first_use[k] - 1)
    return rank, place


def _fill(columns, gap, target):
    """The strip of each column: a strip ends where the next column would take
    it further past `target` than it now falls short."""
    strip_of, strip, used = [], 0, 0.0
    for w in columns:
        wider = used + gap + w
        if used and wider - target > target - used:
            strip, used = strip + 1, 0.0
        used += (gap if used else 0.0) + w
        strip_of.append(strip)
    return strip_of


def _folded_width(columns, strip_of, gap):
    widest = {}
    start = {}
    for k, strip in enumerate(strip_of):
        j = k - start.setdefault(strip, k)
        widest[j] = max(widest.get(j, 0.0), columns[k])
    return sum(widest.values()) + gap * (len(widest) - 1)


def style(scene, mode='backward', rankdir='LR', frame=None, look=Look()):
    """Turn a Scene into a graphviz.Digraph; `frame` draws one step of a pass."""
    if mode not in PASSES:
        raise ValueError(f'mode must be one of {PASSES}')
    if look.color not in COLORS:
        raise ValueError(f'color must be one of {COLORS}')
    show_value = mode != 'structure'
    size = layout_size(scene)
    small = size <= EDGE_LABELS
    points = FONT_SIZE * look.font_scale
    font = f'{points:g}'
    wrapped = rows(scene, look.width, points) if rankdir == 'LR' else None
    segmented = scene.segments and rankdir == 'LR' and look.width is not None and not look.fold
    if segmented:   # a checkpoint segment a row
        wrapped = segment_rows(scene)
    # A chain wraps as a line of text: its arrows from a row's end to the next
    # row's start, its constants after their ops (see _WRAP).
    hangs = chain(scene) if wrapped is not None and not segmented else None
    straight, hangs = hangs is not None, hangs or {}
    gap = _COMPACT_GAP if look.compact else _GAP if small else _BARE_GAP
    banded = strips(scene, look.width, points, gap, look.compact) \
        if wrapped is None and rankdir == 'LR' and look.fold else None
    graph_attr = dict(rankdir='TB' if wrapped else rankdir, fontname=FONT, fontsize=font,
                      nodesep=f'{_NODESEP if wrapped else 0.08 if look.compact else 0.35:g}',
                      ranksep='0.2' if look.compact or straight else
                      '0.35' if wrapped else '0.5' if small else '0.9',
                      labelloc='b',
                      labeljust='l', newrank='true')
    if look.size:
        graph_attr['size'] = look.size
    if size > LARGE:
        # Cap dot's network-simplex and crossing passes: a few more crossings
        # in a picture this size, and seconds instead of minutes.
        graph_attr.update(nslimit='2', nslimit1='2', mclimit='0.5')
    dot = graphviz.Digraph(
        'adgrad', graph_attr=graph_attr,
        node_attr=dict(fontname=FONT, fontsize=font, color=INK, fontcolor=INK,
                       margin='0.08,0.03' if look.compact else '0.12,0.06'),
        edge_attr=dict(fontname=FONT, fontsize=font, arrowsize='0.7'))

    # Nodes go into their block's cluster. A constant used once is ranked with
    # the op that uses it, so it hangs beside that op and the main line of
    # data reads x → [h] → [f] straight across, as in the tutorial's figures.
    bodies = _clusters(scene.blocks, font)
    bands = {k: graphviz.Digraph(f'cluster_s{k}', graph_attr=dict(
                 label=f'<{esc(text)}>', style='rounded,filled', fillcolor=BANDS[k % 2],
                 color=BANDS[k % 2], fontcolor=MUTED, fontsize=font, labeljust='l', margin='5',
                 labelloc='t'))
             for k, text in enumerate(scene.segments)}
    uses, arguments = {}, {}
    for link in scene.links:
        uses.setdefault(link.src, []).append(link.dst)
        arguments.setdefault(link.dst, []).append(link.src)
    kinds = {item.id: item for item in scene.items}
    beside = {}   # those constants, by the op they hang beside: their edges are flat
    for item in scene.items:
        for a in arguments.get(item.id, ()):
            const = kinds[a]
            if const.kind == 'const' and uses[a] == [item.id] and const.block == item.block \
                    and wrapped is None:
                beside[a] = item.id
        # In a compact network, a weight that scales a neuron's output (v1 in
        # v1*h1) hangs beside its product, as a textbook writes it on the edge.
        if look.compact and wrapped is None and item.kind == 'op' and any(
                kinds[a].kind == 'call' for a in arguments.get(item.id, ())):
            beside.update((a, item.id) for a in arguments[item.id]
                          if kinds[a].kind == 'input' and uses[a] == [item.id])
    if banded is not None:   # a folded picture: each strip its own cluster, no box
        banded.update({a: banded[op] for a, op in beside.items()})
        strip_bodies = {k: graphviz.Digraph(f'cluster_strip{k}', graph_attr=dict(
                            peripheries='0', margin='4'))
                        for k in sorted(set(banded.values()))}
    for item in scene.items:
        pending = None
        if frame is not None and item.id not in frame.done:
            pending = 'value' if frame.forward or item.id in frame.dropped else 'grad'
        show_grad = mode == 'backward' and item.live and not (frame is not None and frame.forward)
        target = bodies[item.block] if item.block is not None else \
            strip_bodies[banded[item.id]] if banded is not None else \
            bands[item.segment] if bands and item.segment is not None else dot
        attrs = _node_attrs(item, mode, frame, look, scene.output)
        if look.ids:
            attrs['id'] = f'node-n{item.id}'
        target.node(f'n{item.id}', _label(item, scene.f, show_value, show_grad, pending, look),
                    **attrs)
        for a in dict.fromkeys(arguments.get(item.id, ())):
            if beside.get(a) == item.id:
                with target.subgraph() as same:
                    same.attr(rank='same')
                    same.node(f'n{item.id}')
                    same.node(f'n{a}')
    tops = {item.block.partition('/')[0]: item.segment for item in scene.items
            if item.block is not None and item.segment is not None}
    _attach(dot, scene.blocks, bodies, lambda path: bands[tops[path]] if path in tops else dot)
    for k in sorted(bands):
        dot.subgraph(bands[k])
    if banded is None and wrapped is None:
        _calls_in_order(dot, scene)
    if banded is not None:
        _columns(strip_bodies, scene, banded, beside)
        for body in strip_bodies.values():
            dot.subgraph(body)
    if wrapped is not None:
        _rows(dot, scene, wrapped, hangs, straight)

    # Top to bottom, a forward arrow and the backward one along it would run
    # down the same line: a blank label gives the forward arrow a place of
    # its own in the middle rank, and ordering=out keeps it left of the
    # backward arrow's (drawn after it), so the two run side by side.
    apart = rankdir == 'TB' and small and mode == 'backward' and wrapped is None \
        and not (frame is not None and frame.forward)
    if apart:
        dot.attr(ordering='out')
    for link in scene.links:
        attrs = dict(color=FORWARD if show_value else INK)
        if apart and link.grad is not None and link.src not in beside:
            attrs['label'] = '\u2007'
        if not (kinds[link.src].ran and kinds[link.dst].ran):   # no value went along it
            attrs.update(color=MUTED, style='dashed')
        if wrapped is not None and wrapped[link.src] != wrapped[link.dst]:
            attrs.update(_WRAP if straight else dict(constraint='false'))   # rows stack by _rows()
        elif hangs.get(link.src) == link.dst:
            attrs['constraint'] = 'false'   # right of its op, pointing back at it
        if banded is not None and banded[link.src] != banded[link.dst]:
            attrs['constraint'] = 'false'   # each strip is ranked on its own
        dot.edge(f'n{link.src}', f'n{link.dst}', **attrs)
    if mode == 'backward' and not (frame is not None and frame.forward):
        flowing = 0
        for link in scene.links:
            if link.grad is None:
                continue
            flowing += 1
            # Drawn tail -> head with dir=back, so the layout is the forward one
            # and every frame of a step series keeps the same positions; edges
            # a frame has not reached yet are there, but invisible.
            attrs = dict(dir='back', style='dashed', color=BACKWARD, fontcolor=KNOWN_TEXT)
            ends = (f'n{link.src}', f'n{link.dst}')
            if straight and wrapped[link.src] != wrapped[link.dst]:
                attrs.update(_WRAP_BACK)
            across = banded is not None and banded[link.src] != banded[link.dst]
            if across:
                # From one strip to another, drawn head to tail and labelled
                # beside the line: dot (2.43) fails an assertion on two
                # unconstrained edges between clusters with the same ends,
                # and 'trouble in init_rank' on such an edge's mid label.
                attrs.update(constraint='false', dir='forward')
                ends = ends[::-1]
            if look.ids:
                attrs['id'] = f'grad-{flowing - 1}'
            if look.color == 'magnitude' and frame is None:
                attrs.update(_edge_health(link.grad))
            # A label sits mid-edge, clear of other lines, but dot lays it out
            # as one more node per edge, and past EDGE_LABELS that costs
            # seconds: larger graphs (and flat edges, whose label would sit on
            # the forward edge) get an xlabel, placed after the layout.
            mid = small and link.src not in beside and not across and not look.compact and (
                wrapped is None or wrapped[link.src] != wrapped[link.dst])
            text = '≈0' if kinds[link.dst].cancels else short(link.grad)
            if look.products and link.local is not None:
                upstream = kinds[link.dst]
                shown = grad_text(upstream) if upstream.cancels else _factor(upstream.grad)
                text = f'{shown} · {_factor(link.local)} = {text}'
            # A compact picture has gradients on its nodes alone: beside the
            # edges dot sets them where they fit, often over other arrows.
            # Wrapped onto rows, dot sets a label beside its edge, over the next
            # arrow along: a gradient that its source shows whole (used once)
            # is left to the node; the parts that sum at a node used more than
            # once stay.
            wraps = wrapped is not None and len(uses[link.src]) == 1 and not look.products
            if (not look.compact or look.products) and not wraps:   # compact: on the nodes
                attrs['label' if mid else 'xlabel'] = text
            if frame is not None and link.src not in frame.done:
                attrs['style'] = 'invis'
            elif frame is not None and link.src == frame.current:
                attrs.update(style='bold,dashed', penwidth='2.5', color=KNOWN_TEXT,
                             fontcolor=KNOWN_TEXT)
            dot.edge(*ends, **attrs)

    lines = []
    if frame is not None and look.caption:
        told = [esc(line) for line in caption_lines(frame.caption, look)]
        told += ['&#160;'] * (frame.lines - len(told))   # blank, as long as the series' longest
        lines.append(f'<TR><TD ALIGN="LEFT" BALIGN="LEFT"><FONT POINT-SIZE="{points + 2:g}">'
                     f'{"<BR/>".join(told)}</FONT></TD></TR>')
    if look.legend:
        lines.extend(f'<TR><TD ALIGN="LEFT">{row}</TD></TR>'
                     for row in _legend({i.kind if i.ran else 'not taken' for i in scene.items},
                                        scene.f, mode, frame, look,
                                        {i.store.kind for i in scene.items if i.store},
                                        scene.memory))
    if lines:
        dot.attr(label=f'<<TABLE BORDER="0" CELLPADDING="2">{"".join(lines)}</TABLE>>')
    return dot


def caption_lines(caption, look):
    """A step's caption on lines that fit a slide's width, broken between terms."""
    from .text import wrap_terms
    points = (FONT_SIZE * look.font_scale + 2) * _CAPTION_CHAR
    return wrap_terms(caption, max(40, int(SLIDE_WIDTH * 72 / points)))


_CAPTION_CHAR = 0.55  # a caption's character, in ems: a little wider than a label's, with its ∂ and ·


def _columns(bodies, scene, banded, beside):
    """Each strip's columns as strips() counted them, in order: a value made
    early and used late stands beside its use, not at the strip's start."""
    rank, place = ranks(scene)
    columns = {}
    for item in scene.items:
        if item.id not in beside:   # a constant hangs beside its op, on its rank
            columns.setdefault((banded[item.id], rank[place[item.id]]), []).append(item.id)
    for (strip, r), ids in sorted(columns.items()):
        with bodies[strip].subgraph() as same:
            same.attr(rank='same')
            for i in ids:
                same.node(f'n{i}')
        before = columns.get((strip, r - 1))
        if before:
            bodies[strip].edge(f'n{before[0]}', f'n{ids[0]}', style='invis', weight='0')


# An arrow from one row to the next leaves the bottom of the row's end and
# enters the top of the next row's start, as a line of text wraps, and the
# gradient's arrow runs beside it from the same bottom. Side by side, dot
# keeps the two apart only where they cross a rank between the rows (hence
# minlen=2 in _rows); from the nodes' sides they crossed each other.
_WRAP = dict(constraint='false', tailport='s', headport='n')
_WRAP_BACK = dict(constraint='false', tailport='s')


def _rows(dot, scene, wrapped, hangs, straight):
    """Each row on one rank, left to right, a constant just right of the op it
    hangs beside (between them, the chain's arrow would loop round it); rows
    stacked and aligned on the left by invisible edges between their first
    nodes, a rank apart where `straight` (a chain: see _WRAP)."""
    first = {}
    for row in sorted(set(wrapped.values())):
        with dot.subgraph() as same:
            same.attr(rank='same')
            for item in scene.items:
                if wrapped[item.id] == row:
                    same.node(f'n{item.id}')
                    if item.id not in hangs:
                        first.setdefault(row, item.id)
            for const, op in hangs.items():
                if wrapped[const] == row:
                    same.edge(f'n{op}', f'n{const}', style='invis')
    for row in sorted(first)[1:]:
        dot.edge(f'n{first[row - 1]}', f'n{first[row]}', style='invis', weight='10',
                 **(dict(minlen='2') if straight else {}))


def _calls_in_order(dot, scene):
    """Calls of one block that stand side by side, as the neurons of a layer
    do, in the order the program makes them: neuron 1, 2, 3, 4 (dot would
    order them to suit its crossing count, 3, 1, 2, 4). Where each call's
    result goes to one node outside any block, and those nodes share a rank,
    invisible flat edges hold them in call order, and the calls follow; in
    the collapsed view, the calls themselves."""
    rank, place = _depths(scene)
    block_of = {item.id: item.block for item in scene.items}
    calls, rows = {}, []
    for path in scene.blocks:
        if '/' not in path:
            calls.setdefault(path.partition('#')[0], []).append(path)
    for paths in calls.values():
        if len(paths) < 2:
            continue
        users = {path: set() for path in paths}
        for link in scene.links:
            inside = block_of[link.src]
            top = inside.partition('/')[0] if inside else None
            if top in users and block_of[link.dst] is None:
                users[top].add(link.dst)
        heads = [next(iter(users[p])) if len(users[p]) == 1 else None for p in paths]
        rows.append(heads)
    collapsed = {}   # the collapsed view: each call is one node
    for item in scene.items:
        if item.kind == 'call':
            collapsed.setdefault(item.title, []).append(item.id)
    rows.extend(collapsed.values())
    for heads in rows:
        if len(heads) < 2 or None in heads or len(set(heads)) < len(heads) \
                or len({rank[place[i]] for i in heads}) != 1:
            continue
        with dot.subgraph() as same:
            same.attr(rank='same')
            for a, b in zip(heads, heads[1:]):
                same.edge(f'n{a}', f'n{b}', style='invis')


def _edge_health(grad):
    if is_array(grad):   # an array's gradient, by its norm
        grad = norm(grad)
    if not math.isfinite(grad):
        return dict(color=NONFINITE, fontcolor=NONFINITE, penwidth='2')
    if grad == 0:
        return dict(color=BLOCKED, fontcolor=BLOCKED_TEXT)
    magnitude = math.log10(abs(grad))
    return dict(color=darker(scale_color(magnitude)), fontcolor=INK, penwidth='2')


def darker(color):
    """A line colour from a fill colour: the same hue at 60% brightness."""
    r, g, b = (int(color[k:k + 2], 16) for k in (1, 3, 5))
    return '#{:02x}{:02x}{:02x}'.format(*(int(v * 0.6) for v in (r, g, b)))


def _factor(x):
    """A number inside a product: negative ones in parentheses, 4 · (-2)."""
    text = number(x)
    return f'({text})' if text.startswith('-') else text
