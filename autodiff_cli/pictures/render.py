"""Drawing a graph as a textbook figure: (graph, values, grads) -> graphviz.Digraph.

Two steps, kept apart: scene.py walks the tape and decides what each node and
edge says; style.py turns that plain data into DOT attributes and knows
nothing about the tape. collapse.py folds block calls into single nodes of a
scene, fold.py folds long chains, health.py adds the gradient diagnosis; a
step of a pass (steps.py) is a scene styled with a `Frame`.

Nothing here does I/O. `Picture._repr_svg_` runs Graphviz's `dot` only when
Jupyter asks for the picture; the CLI writes files. Node ids in the DOT text
are `n0, n1, ...` from the tape, so the same input gives byte-identical DOT.
"""

from ..errors import AdgradError
from .collapse import collapse as collapse_blocks
from .fold import compacted, fold
from .health import diagnose, named_nodes
from .scene import scene
from .style import RANKDIRS, Look, style


class Picture:
    """A drawn graph: `.digraph` and `.source` (DOT); Jupyter shows it through
    `_repr_svg_`, and `data(fmt)` is its bytes as `render -o` writes them.
    `warnings` holds what the command would have warned of while drawing it."""

    def __init__(self, digraph, warnings=()):
        self.digraph = digraph
        self.warnings = list(warnings)

    @property
    def source(self):
        return self.digraph.source

    def data(self, fmt='svg'):
        """The picture as 'svg', 'png' (at a slide's dpi), 'pdf' or 'dot' bytes,
        laid out by Graphviz's dot (AdgradError where it is missing)."""
        from .dot import PNG_DPI, run_dot
        if fmt not in ('svg', 'png', 'pdf', 'dot'):
            raise AdgradError(f"fmt must be 'svg', 'png', 'pdf' or 'dot', not {fmt!r}")
        digraph = self.digraph
        if fmt == 'png':
            digraph = digraph.copy()   # the picture itself stays as drawn
            digraph.attr(dpi=PNG_DPI)
        return run_dot(digraph, fmt)

    def _repr_svg_(self):
        """dot's SVG, or None where it cannot be drawn (no Graphviz): a repr
        that raised would show Jupyter's traceback, None its text repr."""
        try:
            return self.data('svg').decode('utf-8')
        except AdgradError:
            return None


def render(graph, values=None, grads=None, mode=None, rankdir='LR', frame=None,
           collapse=None, look=None):
    """The picture of a graph: structure only, forward values, or values and gradients.

    `mode` defaults to 'backward' when grads are given, 'forward' with values
    alone, 'structure' with neither. `collapse='blocks'` draws each block call
    as one node; `look` (a style.Look) dresses it: `Look(color='magnitude')`
    colours gradients by size, and so on.
    """
    if mode is None:
        mode = 'backward' if grads is not None else 'forward' if values is not None else 'structure'
    if mode != 'structure' and values is None:
        raise ValueError(f'the {mode} pass needs values')
    if mode == 'backward' and grads is None:
        raise ValueError('the backward pass needs gradients')
    if rankdir not in RANKDIRS:
        raise ValueError(f'rankdir must be one of {RANKDIRS}')
    return styled(drawing(graph, values, grads if mode == 'backward' else None, collapse, look),
                  mode, rankdir, frame, look)


def styled(drawn, mode, rankdir='LR', frame=None, look=None):
    """The picture of a scene from drawing(): one scene may be styled many ways
    (render's command line tries several layouts) without being drawn again."""
    look = look or Look()
    if look.compact:
        drawn = compacted(drawn, look.merged)
    return Picture(style(drawn, mode, rankdir, frame, look))


def drawing(graph, values=None, grads=None, collapse=None, look=None, folds=True, plan=None):
    """The scene to style: collapsed if asked, with gradient health if coloured
    by it, marked with what backward keeps if given a checkpoint.Plan
    (memory.py), and a long chain of identical steps folded (fold.py) unless
    its segments are drawn."""
    if collapse not in (None, 'blocks'):
        raise ValueError("collapse must be None or 'blocks'")
    if collapse == 'blocks':
        drawn = collapse_blocks(graph, values, grads)
    else:
        drawn = scene(graph, values, grads)
    if look is not None and look.color == 'magnitude' and grads is not None:
        health = diagnose(graph, values, grads)
        tags = _tags(graph, drawn, named_nodes(graph, grads, health))
        drawn = drawn._replace(items=[item._replace(health=health[item.id],
                                                    tags=tags.get(item.id, ()))
                                      for item in drawn.items])
    if plan is not None:
        from .memory import annotate
        drawn = annotate(drawn, graph, plan, collapse == 'blocks')
    if not folds or drawn.segments:
        return drawn
    return fold(drawn)


def _tags(graph, drawn, named):
    """{drawn id: the named ids it shows}: a node its own id, a collapsed call
    the ids of the named nodes inside it, so that '(node 49)' in a diagnosis
    can be found in the picture."""
    def call(i):   # the top-level block call a node belongs to
        return (graph.nodes[i].block or '').partition('/')[0]
    shown = {item.id for item in drawn.items}
    calls = {call(item.id): item.id for item in drawn.items if item.kind == 'call'}
    tags = {}
    for i in sorted(named):
        at = i if i in shown else calls.get(call(i)) if call(i) else None
        if at is not None:
            tags.setdefault(at, []).append(i)
    return {at: tuple(ids) for at, ids in tags.items()}
