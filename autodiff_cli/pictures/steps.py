"""The backward pass told one node at a time, and the page that steps through it.

`steps()` follows backward() exactly: nodes in reverse tape order, each one's
gradient final once all its consumers (later on the tape) have passed theirs
back. A Step records the chain-rule terms that summed to the gradient, with
each local partial taken from the op's own rule in the primitive table:
∂c/∂a = pullback(c, 1)[a's position]. Nothing is derived again here.

`index_html()` builds a page that shows the frames in order; it is plain
text with no I/O, and needs no server or network to run.
"""

import html
import json
import re
from typing import NamedTuple

from ..core.passes import pullback, receives_gradient
from .symbolic import local_symbol
from .text import enclosed
from .render import Picture
from .preview import as_scalar, short as preview_short, text as preview_text
from .scene import SYMBOL_LIMIT, array_flows, caller_texts, node_symbol, output_symbol, scene
from .fold import compacted, drawn_as
from .loop_steps import loop_steps
from .style import Frame, Look, block_labels, caption_lines, style
from .text import displayable, number

MAX_TERMS = 4   # a caption lists this many chain-rule terms, then says how many more


class Term(NamedTuple):
    consumer: int    # the node that used this one as an argument
    upstream: float  # ∂f/∂consumer, already final
    local: float     # ∂consumer/∂node, from the op's derivative rule
    formula: str | None = None   # the same as a formula, 'y' in ∂(x*y)/∂x = y


class Step(NamedTuple):
    node: int
    terms: tuple     # empty for the output, whose gradient is the seed 1
    grad: float      # ∂f/∂node as backward() computed it
    caption: str
    brief: str | None = None   # the caption without its formulas: a frame's, if too long
    strip: tuple = ()          # a loop's line of iterations during this step, and after it


def steps(graph, values, grads, strides=None):
    """One Step per node the output depends on, in the order its gradient
    becomes final; a loop's are its iterations', the last first (loop_steps).
    `strides(i)`: what loop node i keeps, as checkpoint.Plan's loops say."""
    graph = displayable(graph)
    nodes = graph.nodes
    f = output_symbol(graph)
    live = receives_gradient(graph)
    uses = [[] for _ in nodes]          # (consumer, argument position), in tape order
    for c in range(graph.output + 1):
        if live[c]:
            for position, a in enumerate(nodes[c].args):
                uses[a].append((c, position))
    partials = {}
    # A block's nodes are named by what the caller passed, not by the block's
    # parameters: ∂z/∂(1.5*x9 + 0.1), as the tutorial writes ∇_y z.
    texts = caller_texts(graph)

    def name(i):   # in a formula the output is named, if it has a name: (1 - o)*(o + 1)
        return nodes[i].name if nodes[i].name and nodes[i].op != 'const' \
            else node_symbol(graph, i, f, local=True, texts=texts)
    blocks = block_labels(dict.fromkeys(node.block for node in nodes if node.block))
    arrays = graph.shapes is not None
    result = []
    for i in range(graph.output, -1, -1):
        if not live[i]:
            continue
        if nodes[i].op == 'loop':
            told, partials[i] = loop_steps(graph, i, values, grads, f,
                                           strides(i) if strides else ())
            result.extend(Step(i, (), None, step.caption, strip=step.strip) for step in told)
            continue
        terms = []
        for c, position in uses[i]:
            if c not in partials:
                # Over arrays a step's part is what flows back along the edge
                # (a vector-Jacobian product), not a local derivative times a number.
                partials[c] = array_flows(graph, c, grads[c], values) if arrays \
                    else pullback(graph, c, 1.0, values)
            if nodes[c].op == 'loop':   # read by several of its slots (W and W[i]): one term
                if not terms or terms[-1].consumer != c:
                    shares = [g for a, g in zip(nodes[c].args, partials[c])
                              if a == i and g is not None]
                    terms.append(Term(c, grads[c], sum(shares[1:], shares[0]) if shares else 0.0))
                continue
            local = partials[c][position]
            terms.append(Term(c, grads[c], 0.0 if local is None else local,
                              None if arrays else local_symbol(graph, c, position, name)))
        caption = _array_caption(graph, f, i, terms, grads[i], texts) if arrays \
            else _caption(graph, f, i, terms, grads[i], texts)
        brief = caption if arrays else _caption(graph, f, i, terms, grads[i], texts, False)
        if nodes[i].block is not None:   # x^2 is in every call of h: say which
            caption += f'  [{blocks[nodes[i].block]}]'
            brief += f'  [{blocks[nodes[i].block]}]'
        result.append(Step(i, tuple(terms), grads[i], caption,
                           None if brief == caption else brief))
    return result


def _caption(graph, f, i, terms, grad, texts=None, formulas=True):
    """∂f/∂x = ∂f/∂(x*y) · ∂(x*y)/∂x = 4 · 3 = 12, with one product per use of x,
    and the local derivatives as formulas too, unless `formulas` is False."""
    me = node_symbol(graph, i, f, texts=texts)
    if not terms:
        return f'∂{f}/∂{me} = 1 (the backward pass starts at the output)'
    # The output's own local derivative is named by its text, so that
    # ∂f/∂z = ∂f/∂f · ∂(x*y*z)/∂z and not ∂f/∂f · ∂f/∂z.
    shown, more = terms[:MAX_TERMS], len(terms) - MAX_TERMS
    symbols = _symbols(graph, f, me, shown, texts)
    products = ' + '.join(_product(graph, t, _factor(t.local)) for t in shown)
    # The local derivatives as formulas where they say more than a number:
    # ∂f/∂x = ∂f/∂(x*y) · ∂(x*y)/∂x = 4 · y = 4 · 3 = 12.
    shown_formulas, formulas = formulas, ''
    if shown_formulas and any(t.formula for t in shown):
        formulas = ' + '.join(
            _product(graph, t, _wrap(t.formula) if t.formula else _factor(t.local))
            for t in shown)
    if more > 0:
        symbols += f' + … ({more} more)'
        products += ' + …'
        formulas += ' + …' if formulas else ''
    middle = f' = {formulas}' if formulas else ''
    if len(terms) == 1 and graph.nodes[terms[0].consumer].op == 'loop':   # a loop's alone
        return f'∂{f}/∂{me} = {symbols} = {number(grad)}'
    return f'∂{f}/∂{me} = {symbols}{middle} = {products} = {number(grad)}'


def _symbols(graph, f, me, terms, texts):
    """The chain rule's terms as symbols: ∂f/∂(x*y) · ∂(x*y)/∂x + ...; a
    loop's term is what its iterations passed back (loop_steps)."""
    return ' + '.join(
        _loop_term(graph, t.consumer) if graph.nodes[t.consumer].op == 'loop' else
        f'∂{f}/∂{node_symbol(graph, t.consumer, f, texts=texts)} · '
        f'∂{node_symbol(graph, t.consumer, f, local=True, texts=texts)}/∂{me}' for t in terms)


def _loop_term(graph, c):
    """A loop's term, named by its line where the program has several."""
    if len(graph.loops) == 1 or graph.nodes[c].span is None:
        return 'what the loop passes back'
    return f'what the loop on line {graph.line(c)} passes back'


def _product(graph, term, local):
    """One term of a sum of products: upstream · local, or a loop's alone."""
    if graph.nodes[term.consumer].op == 'loop':
        return local
    return f'{_factor(term.upstream)} · {local}'


def _array_caption(graph, f, i, terms, grad, texts=None):
    """∂f/∂h = ∂f/∂(V @ h) · ∂(V @ h)/∂h = [preview]: over arrays each term
    is what flowed back along one use, shown as a preview, and their sum."""
    me = node_symbol(graph, i, f, texts=texts)
    if not terms:
        return f'∂{f}/∂{me} = 1 (the backward pass starts at the output)'
    shown, more = terms[:MAX_TERMS], len(terms) - MAX_TERMS
    symbols = _symbols(graph, f, me, shown, texts)
    parts = ' + '.join(preview_short(t.local) for t in shown)
    if more > 0:
        symbols += f' + … ({more} more)'
        parts += ' + …'
    total = preview_short(as_scalar(grad))
    return f'∂{f}/∂{me} = {symbols} = ' + (f'{parts} = {total}' if len(terms) > 1 else total)


def _wrap(formula):
    """A formula inside a product: in parentheses unless it is one name or call."""
    simple = re.fullmatch(r'[\w.]+|[\w]+\([^()]*\)', formula) or enclosed(formula)
    return formula if simple else f'({formula})'


def _factor(x):
    """A number inside a sum of products: negative ones in parentheses, 4 · (-2)."""
    text = number(x)
    return f'({text})' if text.startswith('-') else text


def forward_steps(graph, values):
    """The forward pass one node at a time (the tutorial's figure 1): a Step per
    input and operation in tape order, each caption the value it computed."""
    graph = displayable(graph)
    nodes = graph.nodes
    result = []
    for i, node in enumerate(nodes):
        if node.op in ('const', 'static'):
            continue
        me = graph.text(i, SYMBOL_LIMIT) if node.name is None or node.op == 'input' else node.name
        if node.op == 'input':
            caption = f'{node.name} = {preview_text(values[i])} (an input)'
        else:
            shown = graph.text(i, SYMBOL_LIMIT)
            args = ', '.join(f'{node_symbol(graph, a, "")} = {preview_text(values[a])}'
                             for a in dict.fromkeys(node.args) if nodes[a].op not in ('const', 'static'))
            caption = (f'{me} = {shown} = {preview_text(values[i])}' if me != shown
                       else f'{shown} = {preview_text(values[i])}')
            if args:
                caption += f'  (with {args})'
        result.append(Step(i, (), values[i], caption))
    return result


def frames(step_list, forward=False, look=None):
    """The Frame for style() at each step: the nodes done so far, and the newest.
    A caption longer than LONGEST lines of a slide (`look`'s) leaves out its
    formulas, where it has them."""
    done = set()
    result = []
    for k, step in enumerate(step_list, 1):
        done.add(step.node)
        caption = f'Step {k} of {len(step_list)}: {step.caption}'
        if look is not None and step.brief and len(caption_lines(caption, look)) > LONGEST:
            caption = f'Step {k} of {len(step_list)}: {step.brief}'
        result.append(Frame(frozenset(done), step.node, caption, forward))
    return result


LONGEST = 3   # lines of a caption on a slide


def step_pictures(graph, values, grads, rankdir='LR', look=None, forward=False, fit=None,
                  plan=None):
    """[(Step, Picture)]: a pass as a series of pictures, one per step. `fit`
    (dot.fitted with its options) chooses one way of drawing, from the last
    frame, for them all: each frame keeps the positions of the one before.
    `plan` (checkpoint.Plan) draws checkpointing: a segment's values are
    dropped until a step computes them again, just before its gradients."""
    if plan is not None and not forward:
        return _checkpoint_pictures(graph, values, grads, rankdir, look, fit, plan)
    look = look or Look()
    if forward:
        step_list = forward_steps(graph, values)
        drawn = scene(graph, values)
        constants = frozenset(i for i, node in enumerate(graph.nodes) if node.op == 'const')
        marks = [frame._replace(done=frame.done | constants)
                 for frame in frames(step_list, forward=True)]
        mode = 'forward'
    else:
        step_list = steps(graph, values, grads)
        drawn = scene(graph, values, grads)
        marks = frames(step_list, look=look)
        mode = 'backward'
    if look.caption and marks:   # every frame as tall as the one with the longest caption
        most = max(len(caption_lines(frame.caption, look)) for frame in marks)
        marks = [frame._replace(lines=most) for frame in marks]
    scenes = progressed(drawn, step_list)
    if fit is not None and marks:
        def draw(direction, dressed):
            picture = Picture(_styled(scenes[-1], mode, direction, marks[-1], dressed))
            picture.how = (direction, dressed)
            # the first frame measured too: its labels differ most from the others'
            picture.also = [_styled(scenes[0], mode, direction, marks[0], dressed)]
            return picture
        rankdir, look = fit(draw).how
    return [(step, Picture(_styled(shown, mode, rankdir, frame, look)))
            for step, frame, shown in zip(step_list, marks, scenes)]


def progressed(drawn, step_list):
    """The scene each step is drawn on: a loop's line of iterations (memory.py's
    strip, if it has one) as its step draws it, or as the latest left it."""
    result = []
    for step in step_list:
        if step.strip:
            now, later = ([item._replace(strip=(line,)) if item.id == step.node else item
                           for item in drawn.items] for line in step.strip)
            result.append(drawn._replace(items=now))
            drawn = drawn._replace(items=later)
        else:
            result.append(drawn)
    return result


def _styled(drawn, mode, rankdir, frame, look):
    """A frame as `look` draws it: a compact look draws each sum, or each
    unnamed step, as part of its use (fold.compacted, as render.styled), and a
    step of a node so drawn is shown on the node that draws it."""
    if look.compact:
        frame = frame._replace(current=drawn_as(drawn, look.merged).get(frame.current,
                                                                        frame.current))
        drawn = compacted(drawn, look.merged)
    return style(drawn, mode, rankdir, frame, look)


def frame_name(k, count, fmt='svg'):
    """step-001.svg ...: zero-padded so that the files sort in step order."""
    return f'step-{k + 1:0{max(3, len(str(count)))}d}.{fmt}'


def index_html(title, files, captions, focus=None, baked=False, forward=False):
    """A page that steps through the frames with buttons and the arrow keys.

    Every frame is an <img>, shown one at a time, so the page works from
    file:// and lists every file it uses. `focus`: per frame, where its
    highlighted node is (fractions of width and height), scrolled to when the
    frame is larger than the window. `baked`: the frames carry their captions
    (PNG, PDF), so the page's own caption is for screen readers only.
    """
    esc = html.escape
    images = '\n'.join(
        f'  <img src="{esc(name)}" alt="{esc(caption)}"{"" if k == 0 else " hidden"}>'
        for k, (name, caption) in enumerate(zip(files, captions)))
    items = '\n'.join(f'  <li><a href="{esc(name)}" data-step="{k}">{esc(caption)}</a></li>'
                      for k, (name, caption) in enumerate(zip(files, captions)))
    what = 'Forward pass' if forward else 'Backward pass'
    how = 'one value at a time' if forward else 'one gradient at a time'
    return _PAGE.format(title=esc(title), count=len(files), images=images, items=items,
                        what=what, how=how, first=esc(captions[0]) if captions else '',
                        caption_class=' class="sr-only"' if baked else '',
                        captions=script_json(captions),
                        focus=script_json(focus or [None] * len(files)))


def script_json(data):
    """JSON to put inside a <script> element. `<` `>` `&` are written as
    \\u escapes, so no text (`</script>`, `<!--`, `<script`) can end the
    element or switch the HTML parser into its script-escape states."""
    text = json.dumps(data, ensure_ascii=False)
    for char in '<>&\u2028\u2029':
        text = text.replace(char, f'\\u{ord(char):04x}')
    return text


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{what}: {title}</title>
<style>
  body {{ font-family: system-ui, sans-serif; margin: 1.5rem; color: #1c1917; }}
  h1 {{ font-size: 1.2rem; font-weight: 600; }}
  code {{ font-size: 1rem; }}
  nav {{ display: flex; gap: .5rem; align-items: center; margin: .75rem 0; }}
  button {{ font-size: 1rem; padding: .3rem .8rem; }}
  #caption {{ font-size: 1.15rem; color: #15803d; min-height: 1.6em; }}
  .sr-only {{ position: absolute; width: 1px; height: 1px; overflow: hidden;
              clip: rect(0 0 0 0); white-space: nowrap; }}
  #frames {{ overflow: auto; max-height: 85vh; }}
  #frames img {{ display: block; height: auto; cursor: zoom-in; }}
  #frames.zoomed img {{ max-width: none; cursor: zoom-out; }}
  #frames img[hidden] {{ display: none; }}
  details {{ margin-top: 1rem; color: #57534e; }}
</style>
</head>
<body>
<h1>{what} of <code>{title}</code>, {how}</h1>
<nav>
  <button id="first" title="first step (Home)">« first</button>
  <button id="prev" title="previous step (←)">◀ previous</button>
  <span id="counter" aria-live="polite">step 1 of {count}</span>
  <button id="next" title="next step (→)">next ▶</button>
  <button id="last" title="last step (End)">last »</button>
  <button id="zoom" title="fit the page, or full size (Z; or click the picture)">full size</button>
</nav>
<p id="caption"{caption_class} aria-live="polite">{first}</p>
<div id="frames">
{images}
</div>
<details>
<summary>All steps (← → Home End to move, Z to zoom)</summary>
<ol>
{items}
</ol>
</details>
<script>
(function () {{
  var captions = {captions};
  var focus = {focus};
  // Fit mode shrinks a frame to the window, but never below this share of
  // its own size: past that its text is too small to read, so it scrolls.
  var LEAST = 0.6;
  var images = document.querySelectorAll('#frames img');
  var frames = document.getElementById('frames');
  var current = 0;
  function fit(img) {{
    var natural = img.naturalWidth;
    if (!natural) return;
    var zoomed = frames.classList.contains('zoomed');
    var room = frames.clientWidth || natural;
    var fitted = Math.min(natural, Math.max(room, natural * LEAST));
    img.style.width = (zoomed ? natural : fitted) + 'px';
  }}
  function centre() {{
    // Scroll so that the node this step highlights is in view.
    var img = images[current], at = focus[current];
    if (!img || !at || !img.width) return;
    frames.scrollLeft = at[0] * img.width - frames.clientWidth / 2;
    frames.scrollTop = at[1] * img.height - frames.clientHeight / 2;
  }}
  function show(k) {{
    current = Math.max(0, Math.min(images.length - 1, k));
    for (var j = 0; j < images.length; j++) images[j].hidden = j !== current;
    fit(images[current]);
    document.getElementById('caption').textContent = captions[current];
    document.getElementById('counter').textContent =
      'step ' + (current + 1) + ' of ' + images.length;
    document.getElementById('prev').disabled = current === 0;
    document.getElementById('first').disabled = current === 0;
    document.getElementById('next').disabled = current === images.length - 1;
    document.getElementById('last').disabled = current === images.length - 1;
    centre();
    try {{ history.replaceState(null, '', '#' + (current + 1)); }} catch (e) {{}}
  }}
  for (var j = 0; j < images.length; j++) {{
    images[j].addEventListener('load', function (e) {{
      fit(e.target);
      if (e.target === images[current]) centre();
    }});
  }}
  window.addEventListener('resize', function () {{ fit(images[current]); centre(); }});
  document.getElementById('first').onclick = function () {{ show(0); }};
  document.getElementById('prev').onclick = function () {{ show(current - 1); }};
  document.getElementById('next').onclick = function () {{ show(current + 1); }};
  document.getElementById('last').onclick = function () {{ show(images.length - 1); }};
  function zoom() {{
    frames.classList.toggle('zoomed');
    document.getElementById('zoom').textContent =
      frames.classList.contains('zoomed') ? 'fit the page' : 'full size';
    fit(images[current]);
    centre();
  }}
  document.getElementById('zoom').onclick = zoom;
  frames.onclick = zoom;
  document.addEventListener('keydown', function (e) {{
    // Alt+← is the browser's Back, Ctrl+End the page's end: keys with a
    // modifier, and keys typed into a control, are left alone.
    if (e.altKey || e.ctrlKey || e.metaKey || e.shiftKey || e.isComposing) return;
    var tag = (e.target && e.target.tagName) || '';
    if (/^(INPUT|TEXTAREA|SELECT)$/.test(tag) || (e.target && e.target.isContentEditable)) return;
    if (e.key === 'ArrowRight' || e.key === 'ArrowDown') show(current + 1);
    else if (e.key === ' ' && tag !== 'BUTTON' && tag !== 'A') show(current + 1);
    else if (e.key === 'ArrowLeft' || e.key === 'ArrowUp') show(current - 1);
    else if (e.key === 'Home') show(0);
    else if (e.key === 'End') show(images.length - 1);
    else if (e.key === 'z' || e.key === 'Z') zoom();
    else return;
    e.preventDefault();
  }});
  document.querySelectorAll('a[data-step]').forEach(function (a) {{
    a.onclick = function (e) {{ e.preventDefault(); show(+a.dataset.step); }};
  }});
  show((parseInt(location.hash.slice(1), 10) || 1) - 1);
}})();
</script>
</body>
</html>
"""


def checkpoint_steps(graph, values, grads, plan, drawn):
    """(Step list, Frame list) of a checkpointed backward pass: before the
    first gradient of each segment (the last segment first), a step that
    computes its dropped values again from its checkpoints."""
    step_list = steps(graph, values, grads,
                      lambda i: plan.loops[i].strides if i in plan.loops else ())
    segment = {item.id: item.segment for item in drawn.items}
    again = {}
    for item in drawn.items:
        if item.store is not None and item.store.kind == 'again':
            again.setdefault(item.segment, set()).add(item.id)
    labels = drawn.segments
    out, marks, done, dropped, current = [], [], set(), set().union(*again.values()), None
    for step in step_list:
        k = segment.get(step.node)
        if k is not None and k != current and k in again:
            current = k
            dropped -= again[k]
            sources = labels[k].partition(' from ')[2].replace(' (its gradients flow first)', '')
            caption = (f'Segment {k + 1} is computed again from {sources}, '
                       f'{len(again[k])} value{"s" * (len(again[k]) != 1)}, before its '
                       f'gradients flow')
            first = min(again[k])
            out.append(Step(first, (), None, caption))
            marks.append((frozenset(again[k]), caption, frozenset(dropped)))
        elif k is not None:
            current = k
        out.append(step)
        marks.append((None, step.caption, frozenset(dropped)))
    frames_ = []
    for n, (step, (redo, caption, gone)) in enumerate(zip(out, marks), 1):
        if redo is None:
            done.add(step.node)
        frames_.append(Frame(frozenset(done), step.node if redo is None else -1,
                             f'Step {n} of {len(out)}: {caption}', False,
                             again=redo or frozenset(), dropped=gone))
    return out, frames_


def _checkpoint_pictures(graph, values, grads, rankdir, look, fit, plan):
    from .render import drawing
    drawn = drawing(graph, values, grads, plan=plan, folds=False)
    step_list, marks = checkpoint_steps(graph, values, grads, plan, drawn)
    look = look or Look()
    if look.caption and marks:   # every frame as tall as the one with the longest caption
        most = max(len(caption_lines(frame.caption, look)) for frame in marks)
        marks = [frame._replace(lines=most) for frame in marks]
    scenes = progressed(drawn, step_list)
    if fit is not None and marks:
        def draw(direction, dressed):
            picture = Picture(style(scenes[-1], 'backward', direction, marks[-1], dressed))
            picture.how = (direction, dressed)
            return picture
        rankdir, look = fit(draw).how
    return [(step, Picture(style(shown, 'backward', rankdir, frame, look)))
            for step, frame, shown in zip(step_list, marks, scenes)]
