"""The interactive page: one self-contained HTML file with the graph and a
slider and a number box per input; moving one recomputes every value and
gradient on the page. No network, no server, no eval.

The page computes with JavaScript that is generated here, from the graph
alone. The backward pass is recorded as a graph of its own (derive.record:
the derivative rules run over an algebra that records), so the page needs
only a forward evaluator: straight-line code, one statement per node of the
recorded tape, each made from a fixed template for its op (the table JS
below) and integer indices. No text the user typed is ever put into code:
names and labels travel as JSON data, escaped for a script element, and are
written into the page with textContent. Where JavaScript's Math differs from
the C functions adgrad uses (pow(1, nan) is 1 in C), a helper mirrors C.

`interactive_page()` returns the page as bytes; `layout` is the caller's
function that turns a graphviz.Digraph into SVG bytes (the CLI runs dot).
"""

import html
import math
import re

from ..core.passes import backward, forward, pullback, receives_gradient
from ..core.primitives import PRIMITIVES
from ..errors import UsageError
from .health import EXPLODING, VANISHING
from .render import drawing
from .scene import EPSILON
from .steps import script_json
from .style import (BLOCKED, BLOCKED_TEXT, INK, NONFINITE, NONFINITE_FILL, SCALE, Look, darker,
                    style)
from .preview import grid, is_array
from .text import number

# Rows whose JavaScript is a helper of their own, called as ad_NAME.
_ROW_HELPERS = {name: row.js for name, row in PRIMITIVES.items()
                if row.js and row.js.startswith('function ')}


def _javascript(row):
    """A row's JavaScript expression over a, b, c."""
    if row.name in _ROW_HELPERS:
        return f"ad_{row.name}({', '.join('abc'[:row.arity])})"
    return row.js


# op -> JavaScript expression over a, b, c, from the table's rows. The
# page's own helpers (pow, copysign, ...), C's conventions where Math's
# differ, are in _HELPERS, after the rows' helpers.
JS = {name: _javascript(row) for name, row in PRIMITIVES.items() if row.js}
_HELPERS = """
  function pow(a, b) {   // C's pow: pow(1, nan) = 1, pow(-1, +-inf) = 1
    if (a === 1 || b === 0) return 1;
    if (a === -1 && (b === Infinity || b === -Infinity)) return 1;
    return Math.pow(a, b);
  }
  function sign(a) { return a > 0 ? 1 : (a < 0 ? -1 : 0); }
  function maximum(a, b) { return (a !== a || b !== b) ? NaN : (a >= b ? a : b); }
  function minimum(a, b) { return (a !== a || b !== b) ? NaN : (a <= b ? a : b); }
  function copysign(m, s) { m = Math.abs(m); return (s < 0 || Object.is(s, -0)) ? -m : m; }
  function integral(r, a) { return isFinite(a) ? copysign(r, a) : a; }
  function roundEven(a) {
    var r = Math.round(a);
    if (Math.abs(a - Math.trunc(a)) === 0.5 && r % 2 !== 0) r -= 1;
    return r;
  }
  function sinc(a) {
    if (a === 0) return 1;
    var p = Math.PI * a;
    return Math.sin(p) / p;
  }
""" + ''.join(f'  {helper}\n' for helper in _ROW_HELPERS.values())

def _constant(value):
    """A tape constant as JSON data: a number, or the word for inf and nan."""
    if math.isfinite(value):
        return value
    return 'nan' if value != value else ('inf' if value > 0 else '-inf')


def program(graph):
    """(code, constants, refs) for the page: the straight-line JavaScript that
    fills t[] from the inputs x[], and where each thing shown lives in t[]."""
    from ..derive.record import Ref, Tape, replay

    tape = Tape(simplify=True, exact=True)
    values = replay(graph, tape)
    grads = backward(graph, values, algebra=tape)
    live = receives_gradient(graph)
    flows = {}
    for i, node in enumerate(graph.nodes):
        if live[i] and node.args and grads[i] is not None:
            flows[i] = pullback(graph, i, grads[i], values, algebra=tape)
    constants, lines = [], []
    inputs = {name: k for k, name in enumerate(graph.inputs)}

    def slot(x):
        """Where a recorded value lives: a tape index, or ('c', k) for a constant."""
        if isinstance(x, Ref):
            return int(x)
        constants.append(_constant(float(x)))
        return -len(constants)            # constants are -1, -2, ... into c[]

    for k, node in enumerate(tape.nodes):
        if node.op == 'input':
            lines.append(f't[{k}] = x[{inputs[node.name]}];')
        elif node.op == 'const':
            constants.append(_constant(node.value))
            lines.append(f't[{k}] = c[{len(constants) - 1}];')
        else:
            template = JS.get(node.op)
            if template is None:
                raise UsageError(f"the interactive page cannot compute '{node.op}' yet; "
                                 'draw a picture instead (--format svg)')
            args = dict(zip('abc', (f't[{int(a)}]' for a in node.args)))
            code = re.sub(r'\b[abc]\b', lambda m: args[m.group()], template)
            lines.append(f't[{k}] = {code};')
    refs = {
        'values': [slot(v) for v in values],
        'grads': [None if g is None or not live[i] else slot(g) for i, g in enumerate(grads)],
        'flows': [], 'output': slot(values[graph.output]),
    }
    for i in sorted(flows):
        for a, flow in zip(graph.nodes[i].args, flows[i]):
            if flow is not None and live[a]:
                refs['flows'].append(slot(flow))
    return '\n    '.join(lines), constants, refs, len(tape.nodes)


# The page computes an array program entry by entry (unroll.entries): past
# these, the page would be megabytes of code, and slow to move.
MOST_NUMBERS = 5000    # entries of every array of the program, as --unroll counts them
MOST_STEPS = 20000     # nodes of the program entry by entry


def array_program(graph, point, drawn):
    """program() of an array program written entry by entry, and where each
    array the picture shows lives in t[]: {shape, slots}, a number's one slot.
    An edge's gradient is that of its use's copies; an input's, its entries'."""
    import numpy as np
    from .unroll import entries
    numbers, at, ids, uses = entries(graph, point, MOST_NUMBERS)
    if len(numbers.nodes) > MOST_STEPS:
        raise UsageError(f'the interactive page computes an array program entry by entry, '
                         f'in at most {MOST_STEPS} steps, and this one takes '
                         f'{len(numbers.nodes)}: draw a picture instead (--format svg)')
    code, constants, scalar, size = program(numbers)
    constants.append(0.0)                 # an entry no gradient reaches
    zero = -len(constants)

    def where(found, which):
        slots = [scalar[which][e] for e in found.ravel().tolist()]
        if which == 'grads' and all(s is None for s in slots):
            slots = [zero] * len(slots)
        slots = [zero if s is None else s for s in slots]
        return slots[0] if found.ndim == 0 else {'shape': list(found.shape), 'slots': slots}

    places = []                           # each edge's (node, argument position), as scene()'s
    for i, node in enumerate(graph.nodes):
        places += [(i, p) for p, a in enumerate(node.args) if graph.nodes[a].op != 'static']
    refs = {
        'values': [where(ids[item.id], 'values') for item in drawn.items],
        'grads': [where(ids[item.id], 'grads') if item.live else None for item in drawn.items],
        'flows': [where(uses[place], 'grads') for place, link in zip(places, drawn.links)
                  if link.grad is not None],
        'output': where(ids[graph.output], 'values'),
    }
    names = list(numbers.inputs)
    inputs = {'names': names, 'start': [_constant(at[n]) for n in names],
              'sliders': [names.index(n) for n, i in graph.inputs.items()
                          if np.ndim(point[n]) == 0],
              'grads': [where(ids[i], 'grads') for i in graph.inputs.values()]}
    return code, constants, refs, size, inputs


def _slider(name, value, k):
    """A range and a number box for input k; the name is escaped, the id is generated."""
    span = max(1.0, abs(value)) * 2 if math.isfinite(value) else 1.0
    low, high = (value - span, value + span) if math.isfinite(value) else (-1.0, 1.0)
    step = (high - low) / 400
    shown = repr(value) if math.isfinite(value) else '0'
    label = html.escape(name)
    return (f'<div class="input"><label for="n{k}"><code>{label}</code></label>'
            f'<input type="range" id="r{k}" min="{low!r}" max="{high!r}" step="{step!r}" '
            f'value="{shown}" aria-label="{label}">'
            f'<input type="number" id="n{k}" step="any" value="{shown}"></div>')


def interactive_page(graph, point, look=None, rankdir='LR', layout=None):
    """The page as bytes. `point` is {variable: value} (every input has one);
    an array program has a slider for each input that is a number."""
    from ..core.graph import is_array_program
    if graph.loops:   # the page computes node by node in JavaScript, and a loop is a graph
        raise UsageError('the interactive page does not take loops yet: render it to a '
                         'picture (-o FILE.svg or .png)')
    look = (look or Look())._replace(ids=True)
    arrays = is_array_program(graph, point)
    if arrays:
        from ..core import tensors
        values = tensors.evaluate(graph, point)
        if tensors.shape_of(values[graph.output]):
            raise UsageError('the interactive page shows the gradient of one number: take '
                             'sum(...) or mean(...) of the output')
        grads = tensors.gradients(graph, values)
    else:
        values = forward(graph, point)
        grads = backward(graph, values)
    drawn = drawing(graph, values, grads, look=look, folds=False)   # a node per tape entry
    if arrays:
        code, constants, refs, size, inputs = array_program(graph, point, drawn)
    else:
        code, constants, refs, size = program(graph)
        inputs = {'names': list(graph.inputs), 'sliders': list(range(len(graph.inputs))),
                  'start': [_constant(float(point[n])) for n in graph.inputs],
                  'grads': [refs['grads'][i] for i in graph.inputs.values()]}
    # Laid out once the code is made: what the page cannot compute costs no dot.
    svg = layout(style(drawn, 'backward', rankdir, None, look)).decode('utf-8')
    svg = svg[svg.index('<svg'):]              # no XML prolog inside HTML
    rows = _label_rows(drawn, look)
    place = {item.id: k for k, item in enumerate(drawn.items)}   # static arguments are no items
    names = [inputs['names'][k] for k in inputs['sliders']]
    data = {
        'names': names, 'sliders': inputs['sliders'], 'start': inputs['start'],
        'constants': constants, 'refs': refs, 'rows': rows, 'f': drawn.f,
        'ids': [item.id for item in drawn.items],
        'symbols': [item.symbol for item in drawn.items],
        'flowEdges': [k for k, link in enumerate(l for l in drawn.links if l.grad is not None)],
        'output': refs['output'],
        'exactNames': list(graph.inputs), 'inputGrads': inputs['grads'],
        # Each flowing edge's ends, to tell rounding noise from a gradient
        # (render._mark_cancelling, again at each point): shown as ≈0.
        'flowEnds': [[place[link.src], place[link.dst]] for link in drawn.links
                     if link.grad is not None],
        'epsilon': EPSILON,
        'magnitude': look.color == 'magnitude',
        'colors': _colors(),
    }
    sliders = '\n'.join(_slider(name, float(point[name]), k) for k, name in enumerate(names))
    if arrays and not names:
        sliders = '<p>The program has no input that is a single number: no sliders.</p>'
    output = next(item for item in drawn.items if item.id == graph.output)
    title = html.escape(output.expr or output.title)
    page = _PAGE.format(title=title, sliders=sliders, svg=svg, data=script_json(data),
                        code=code, size=size, helpers=_HELPERS)
    return page.encode('utf-8')


def _colors():
    """The colours of --color magnitude, for the page to recolour as a picture
    is coloured (style._node_attrs and style._edge_health): the scale's bins
    from their low ends up, each with its fill and its edge's line."""
    return {
        'scale': [[-1e308 if low == -math.inf else low, fill, darker(fill)]
                  for low, fill, _ in SCALE],
        'nonfinite': [NONFINITE_FILL, NONFINITE], 'blocked': [BLOCKED, BLOCKED_TEXT],
        'ink': INK, 'vanishing': VANISHING, 'exploding': EXPLODING,
    }


def _label_rows(drawn, look):
    """For each node, the positions of its value and gradient among its label's
    lines (as style._label lays them out), or null where it has none. An
    array's is [line, form]: one 'line', a 'grid' of every entry a text (the
    gradient's after a line of its own, ∂f/∂W), or a 'summary' line likewise."""
    rows = []
    for item in drawn.items:
        k = 1 + (1 if item.expr else 0)
        value = grad = None
        if is_array(item.value):
            if item.kind != 'const' or item.title[:1] != '[':
                value = [k, _form(item.value)]
                k += 1 if value[1] != 'grid' else item.value.size
        elif not (item.kind == 'const' and item.title == number(item.value)):
            value, k = k, k + 1
        if item.live:
            grad = [k, _form(item.grad)] if is_array(item.grad) else k
        rows.append([value, grad])
    return rows


def _form(x):
    """How style._array_rows shows an array: on one line, as a grid, or summed up."""
    cells = grid(x)
    return 'summary' if cells is None else 'line' if len(cells) == 1 else 'grid'


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>adgrad: {title}</title>
<style>
  body {{ font-family: system-ui, sans-serif; margin: 1.5rem; color: #1c1917; }}
  h1 {{ font-size: 1.2rem; font-weight: 600; }}
  #inputs {{ display: flex; flex-wrap: wrap; gap: .5rem 2rem; margin: 1rem 0; }}
  .input {{ display: flex; align-items: center; gap: .5rem; }}
  .input input[type=number] {{ width: 9em; font-size: 1rem; }}
  .input code {{ font-size: 1.1rem; }}
  #graph {{ overflow: auto; }}
  #graph svg {{ max-width: 100%; height: auto; }}
  #exact {{ font-family: ui-monospace, monospace; color: #57534e; }}
  #exact td {{ padding: 0 1rem 0 0; }}
</style>
</head>
<body>
<h1>Values and gradients of <code>{title}</code></h1>
<p>Move a slider or type a number: every value and gradient is computed again, in this page.</p>
<div id="inputs">
{sliders}
</div>
<div id="graph">
{svg}
</div>
<table id="exact"><tbody></tbody></table>
<script>
(function () {{
  'use strict';
  var data = {data};
{helpers}
  function number(x) {{   // as the pictures write numbers: Python's format(x, '.4g')
    if (x !== x) return 'nan';
    if (x === Infinity) return 'inf';
    if (x === -Infinity) return '-inf';
    if (x === Math.trunc(x) && Math.abs(x) < 1e15) return String(x === 0 ? 0 : x);
    var parts = x.toExponential(3).split('e'), e = parseInt(parts[1], 10);
    if (e < -4 || e >= 4) {{
      var m = parts[0].replace(/\\.?0+$/, '');
      return m + 'e' + (e < 0 ? '-' : '+') + (Math.abs(e) < 10 ? '0' : '') + Math.abs(e);
    }}
    var fixed = x.toFixed(3 - e);
    return fixed.indexOf('.') < 0 ? fixed : fixed.replace(/\\.?0+$/, '');
  }}
  function full(x) {{   // every digit: the shortest text that reads back as x
    if (x !== x) return 'nan';
    if (x === Infinity) return 'inf';
    if (x === -Infinity) return '-inf';
    return String(x);
  }}
  function word(v) {{ return v === 'inf' ? Infinity : v === '-inf' ? -Infinity : v === 'nan' ? NaN : v; }}
  var c = data.constants.map(word);
  var t = new Float64Array({size});
  function run(x) {{
    {code}
  }}
  function at(slot) {{ return slot < 0 ? c[-slot - 1] : t[slot]; }}
  // An array is {{shape, slots}}: its entries' places in t[] or c[], row-major.
  function each(ref) {{ return ref.slots.map(at); }}
  function norm(v) {{
    var s = 0;
    for (var j = 0; j < v.length; j++) s += v[j] * v[j];
    return Math.sqrt(s);
  }}
  function summary(v) {{   // as preview.summary; NumPy's min and max are nan if an entry is
    var low = Infinity, high = -Infinity;
    for (var j = 0; j < v.length; j++) {{
      if (v[j] !== v[j]) {{ low = high = NaN; break; }}
      low = Math.min(low, v[j]); high = Math.max(high, v[j]);
    }}
    return 'min ' + number(low) + ', max ' + number(high) + ', norm ' + number(norm(v));
  }}
  function line(ref, v) {{   // [a, b]; a matrix of one row [[a, b]]
    var text = '[' + v.map(number).join(', ') + ']';
    return ref.shape.length === 2 ? '[' + text + ']' : text;
  }}
  function short(ref) {{   // as preview.short, for an edge
    if (typeof ref === 'number') return number(at(ref));
    var v = each(ref);
    return ref.shape.length === 1 && v.length <= 3 ? line(ref, v) : 'norm ' + number(norm(v));
  }}
  function size(ref) {{   // as --color magnitude judges a gradient: an array by its norm
    return typeof ref === 'number' ? at(ref) : norm(each(ref));
  }}
  function put(texts, k, text) {{ if (texts[k]) texts[k].textContent = text; }}
  function show(texts, place, ref, head) {{   // an array's value (no head) or gradient
    var v = each(ref), k = place[0];
    if (place[1] === 'line') return put(texts, k, head + line(ref, v));
    if (head) put(texts, k++, head.replace(/ = $/, ''));
    if (place[1] === 'summary') put(texts, k, summary(v));
    else v.forEach(function (e, j) {{ put(texts, k + j, number(e)); }});
  }}
  function nested(ref) {{   // every entry in full, in lists as its shape nests them
    var v = each(ref).map(full), shape = ref.shape;
    for (var d = shape.length - 1; d >= 0; d--) {{
      var grouped = [];
      for (var j = 0; j < v.length; j += shape[d]) grouped.push('[' + v.slice(j, j + shape[d]).join(', ') + ']');
      v = grouped;
    }}
    return v[0];
  }}
  var nodes = data.rows.map(function (row, i) {{
    var group = document.getElementById('node-n' + data.ids[i]);
    return group ? group.querySelectorAll('text') : [];
  }});
  var edges = data.flowEdges.map(function (k) {{
    var group = document.getElementById('grad-' + k);
    return group ? group.querySelector('text') : null;
  }});
  var exact = document.querySelector('#exact tbody');
  function cancelling() {{   // as the picture marks rounding noise of terms that cancel
    var total = data.rows.map(function () {{ return 0; }}), count = total.slice();
    data.refs.flows.forEach(function (slot, k) {{   // numbers only, as scene._mark_cancelling
      var g = typeof slot === 'number' ? at(slot) : NaN, src = data.flowEnds[k][0];
      if (isFinite(g)) {{ total[src] += Math.abs(g); count[src] += 1; }}
    }});
    return data.rows.map(function (row, i) {{
      if (typeof data.refs.grads[i] !== 'number') return false;
      var g = at(data.refs.grads[i]);
      return g !== 0 && count[i] > 1 && isFinite(g) &&
        Math.abs(g) <= count[i] * data.epsilon * total[i];
    }});
  }}
  function bin(g) {{   // the scale's bin of log10 |g|
    var m = Math.log10(Math.abs(g)), found = data.colors.scale[0];
    data.colors.scale.forEach(function (b) {{ if (m >= b[0]) found = b; }});
    return found;
  }}
  function paint(group, fill, stroke, width) {{
    if (!group) return;
    var shape = group.querySelector('polygon, ellipse, path');
    if (shape && fill !== null) shape.setAttribute('fill', fill);
    group.querySelectorAll('polygon, ellipse, path').forEach(function (s) {{
      if (stroke !== null) s.setAttribute('stroke', stroke);
      if (width !== null) s.setAttribute('stroke-width', width);
    }});
  }}
  function recolour() {{   // --color magnitude, at this point
    var C = data.colors;
    data.rows.forEach(function (row, i) {{
      if (data.refs.grads[i] === null) return;
      var g = size(data.refs.grads[i]), group = document.getElementById('node-n' + data.ids[i]);
      if (!isFinite(g)) paint(group, C.nonfinite[0], C.nonfinite[1], '3');
      else if (g === 0) paint(group, C.blocked[0], C.ink, '1');
      else {{
        var wild = Math.abs(g) < C.vanishing || Math.abs(g) > C.exploding;
        paint(group, bin(g)[1], C.ink, wild ? '3' : '1');
      }}
    }});
    data.refs.flows.forEach(function (slot, k) {{
      var g = size(slot), group = document.getElementById('grad-' + k);
      if (!group) return;
      var line = !isFinite(g) ? C.nonfinite[1] : g === 0 ? C.blocked[0] : bin(g)[2];
      group.querySelectorAll('path').forEach(function (s) {{ s.setAttribute('stroke', line); }});
      group.querySelectorAll('polygon').forEach(function (s) {{
        s.setAttribute('stroke', line); s.setAttribute('fill', line);
      }});
    }});
  }}
  function state(g) {{
    if (!isFinite(g) || g === 0) return '';
    var m = Math.abs(g);
    return m < data.colors.vanishing ? ' \\u00a0(vanishing)' : m > data.colors.exploding ? ' \\u00a0(exploding)' : '';   // two spaces, as dot writes them
  }}
  function update(x) {{
    run(x);
    var noise = cancelling();
    data.rows.forEach(function (row, i) {{
      var texts = nodes[i], ref = data.refs.grads[i];
      var head = '\\u2202' + data.f + '/\\u2202' + data.symbols[i];
      if (row[0] !== null && typeof row[0] !== 'number') show(texts, row[0], data.refs.values[i], '');
      else if (row[0] !== null) put(texts, row[0], number(at(data.refs.values[i])));
      if (row[1] !== null && typeof row[1] !== 'number' && ref !== null)
        show(texts, row[1], ref, head + (data.magnitude ? state(size(ref)) : '') + ' = ');
      else if (row[1] !== null && texts[row[1]] && ref !== null) {{
        var g = at(ref);
        texts[row[1]].textContent = noise[i] ? head + ' \\u2248 0' :
          head + ' = ' + number(g) + (data.magnitude ? state(g) : '');
        // Why a gradient was zero holds at the first point only.
        if (data.magnitude && g !== 0)
          for (var r = row[1] + 1; r < row[1] + 3 && r < texts.length; r++)
            if (texts[r].getAttribute('fill') === data.colors.blocked[1]) texts[r].textContent = '';
      }}
    }});
    data.refs.flows.forEach(function (slot, k) {{
      if (edges[k]) edges[k].textContent = noise[data.flowEnds[k][1]] ? '\\u22480' : short(slot);
    }});
    if (data.magnitude) recolour();
    exact.textContent = '';
    var row = exact.insertRow();
    row.insertCell().textContent = 'value';
    row.insertCell().textContent = full(at(data.output));
    data.exactNames.forEach(function (name, k) {{
      var r = exact.insertRow(), g = data.inputGrads[k];
      r.insertCell().textContent = 'd_' + name;
      var cell = r.insertCell();
      cell.id = 'exact-' + k;
      cell.textContent = g === null ? '0.0' : typeof g === 'number' ? full(at(g)) : nested(g);
    }});
  }}
  var x = data.start.map(word);
  data.names.forEach(function (name, k) {{
    var range = document.getElementById('r' + k), box = document.getElementById('n' + k);
    var j = data.sliders[k];   // this input's place among every number the program takes
    range.addEventListener('input', function () {{
      x[j] = parseFloat(range.value); box.value = range.value; update(x);
    }});
    box.addEventListener('input', function () {{
      var v = parseFloat(box.value);
      if (v === v) {{ x[j] = v; if (isFinite(v)) range.value = v; update(x); }}
    }});
  }});
  update(x);
}})();
</script>
</body>
</html>
"""
