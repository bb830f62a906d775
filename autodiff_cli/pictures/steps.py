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
from typing import NamedTuple

from ..core.passes import pullback, receives_gradient
from .render import (Frame, Picture, block_labels, displayable, node_symbol, number,
                     output_symbol, scene, style)

MAX_TERMS = 4   # a caption lists this many chain-rule terms, then says how many more


class Term(NamedTuple):
    consumer: int    # the node that used this one as an argument
    upstream: float  # ∂f/∂consumer, already final
    local: float     # ∂consumer/∂node, from the op's derivative rule


class Step(NamedTuple):
    node: int
    terms: tuple     # empty for the output, whose gradient is the seed 1
    grad: float      # ∂f/∂node as backward() computed it
    caption: str


def steps(graph, values, grads):
    """One Step per node the output depends on, in the order its gradient becomes final."""
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
    blocks = block_labels(dict.fromkeys(node.block for node in nodes if node.block))
    result = []
    for i in range(graph.output, -1, -1):
        if not live[i]:
            continue
        terms = []
        for c, position in uses[i]:
            if c not in partials:
                partials[c] = pullback(graph, c, 1.0, values)
            local = partials[c][position]
            terms.append(Term(c, grads[c], 0.0 if local is None else local))
        caption = _caption(graph, f, i, terms, grads[i])
        if nodes[i].block is not None:   # x^2 is in every call of h: say which
            caption += f'  [{blocks[nodes[i].block]}]'
        result.append(Step(i, tuple(terms), grads[i], caption))
    return result


def _caption(graph, f, i, terms, grad):
    """∂f/∂x = ∂f/∂(x*y) · ∂(x*y)/∂x = 4 · 3 = 12, with one product per use of x."""
    me = node_symbol(graph, i, f)
    if not terms:
        return f'∂{f}/∂{me} = 1 (the backward pass starts at the output)'
    # The output's own local derivative is named by its text, so that
    # ∂f/∂z = ∂f/∂f · ∂(x*y*z)/∂z and not ∂f/∂f · ∂f/∂z.
    shown, more = terms[:MAX_TERMS], len(terms) - MAX_TERMS
    symbols = ' + '.join(
        f'∂{f}/∂{node_symbol(graph, t.consumer, f)} · '
        f'∂{node_symbol(graph, t.consumer, f, local=True)}/∂{me}' for t in shown)
    products = ' + '.join(f'{_factor(t.upstream)} · {_factor(t.local)}' for t in shown)
    if more > 0:
        symbols += f' + … ({more} more)'
        products += ' + …'
    return f'∂{f}/∂{me} = {symbols} = {products} = {number(grad)}'


def _factor(x):
    """A number inside a sum of products: negative ones in parentheses, 4 · (-2)."""
    text = number(x)
    return f'({text})' if text.startswith('-') else text


def frames(step_list):
    """The Frame for style() at each step: the gradients known so far, and the newest."""
    done = set()
    result = []
    for k, step in enumerate(step_list, 1):
        done.add(step.node)
        result.append(Frame(frozenset(done), step.node,
                            f'Step {k} of {len(step_list)}: {step.caption}'))
    return result


def step_pictures(graph, values, grads, rankdir='LR'):
    """[(Step, Picture)]: the backward pass as a series of pictures, one per step."""
    step_list = steps(graph, values, grads)
    drawn = scene(graph, values, grads)
    return [(step, Picture(style(drawn, 'backward', rankdir, frame)))
            for step, frame in zip(step_list, frames(step_list))]


def frame_name(k, count):
    """step-001.svg ...: zero-padded so that the files sort in step order."""
    return f'step-{k + 1:0{max(3, len(str(count)))}d}.svg'


def index_html(title, files, captions):
    """A page that steps through the frames with buttons and the arrow keys.

    Every frame is an <img> on the page, shown one at a time, so the page
    works from file:// (no fetch, no server) and lists every file it uses.
    """
    esc = html.escape
    images = '\n'.join(
        f'  <img src="{esc(name)}" alt="{esc(caption)}"{"" if k == 0 else " hidden"}>'
        for k, (name, caption) in enumerate(zip(files, captions)))
    items = '\n'.join(f'  <li><a href="{esc(name)}" data-step="{k}">{esc(caption)}</a></li>'
                      for k, (name, caption) in enumerate(zip(files, captions)))
    return _PAGE.format(title=esc(title), count=len(files), images=images, items=items,
                        first=esc(captions[0]) if captions else '',
                        captions=script_json(captions))


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
<title>Backward pass: {title}</title>
<style>
  body {{ font-family: system-ui, sans-serif; margin: 1.5rem; color: #1c1917; }}
  h1 {{ font-size: 1.2rem; font-weight: 600; }}
  code {{ font-size: 1rem; }}
  nav {{ display: flex; gap: .5rem; align-items: center; margin: .75rem 0; }}
  button {{ font-size: 1rem; padding: .3rem .8rem; }}
  #caption {{ font-size: 1.15rem; color: #15803d; min-height: 1.6em; }}
  #frames {{ overflow: auto; }}
  #frames img {{ display: block; max-width: 100%; height: auto; cursor: zoom-in; }}
  #frames.zoomed img {{ max-width: none; cursor: zoom-out; }}
  #frames img[hidden] {{ display: none; }}
  details {{ margin-top: 1rem; color: #57534e; }}
</style>
</head>
<body>
<h1>Backward pass of <code>{title}</code>, one gradient at a time</h1>
<nav>
  <button id="first" title="first step (Home)">« first</button>
  <button id="prev" title="previous step (←)">◀ previous</button>
  <span id="counter">step 1 of {count}</span>
  <button id="next" title="next step (→)">next ▶</button>
  <button id="last" title="last step (End)">last »</button>
  <button id="zoom" title="fit the page, or full size (Z; or click the picture)">full size</button>
</nav>
<p id="caption">{first}</p>
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
  var images = document.querySelectorAll('#frames img');
  var current = 0;
  function show(k) {{
    current = Math.max(0, Math.min(images.length - 1, k));
    for (var j = 0; j < images.length; j++) images[j].hidden = j !== current;
    document.getElementById('caption').textContent = captions[current];
    document.getElementById('counter').textContent =
      'step ' + (current + 1) + ' of ' + images.length;
    document.getElementById('prev').disabled = current === 0;
    document.getElementById('first').disabled = current === 0;
    document.getElementById('next').disabled = current === images.length - 1;
    document.getElementById('last').disabled = current === images.length - 1;
    try {{ history.replaceState(null, '', '#' + (current + 1)); }} catch (e) {{}}
  }}
  document.getElementById('first').onclick = function () {{ show(0); }};
  document.getElementById('prev').onclick = function () {{ show(current - 1); }};
  document.getElementById('next').onclick = function () {{ show(current + 1); }};
  document.getElementById('last').onclick = function () {{ show(images.length - 1); }};
  function zoom() {{
    var frames = document.getElementById('frames');
    frames.classList.toggle('zoomed');
    document.getElementById('zoom').textContent =
      frames.classList.contains('zoomed') ? 'fit the page' : 'full size';
  }}
  document.getElementById('zoom').onclick = zoom;
  document.getElementById('frames').onclick = zoom;
  document.addEventListener('keydown', function (e) {{
    if (e.key === 'ArrowRight' || e.key === 'ArrowDown' || e.key === ' ') show(current + 1);
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
