"""Pictures that teach at every size (issue 11): the collapsed view, slide
sizes, gradient health, frames for slides, and the golden DOT of two samples.

Numbers are checked against hand derivations, not against adgrad's own lists.
"""

import math
import os
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from autodiff_cli import backward, forward, lower
from autodiff_cli.cli.main import main
from autodiff_cli.pictures.collapse import collapse
from autodiff_cli.pictures.health import diagnose, explain
from autodiff_cli.pictures.layout import picture_size, unviewable
from autodiff_cli.pictures.render import render
from autodiff_cli.pictures.style import OVAL, Look
from autodiff_cli.pictures.steps import forward_steps

from tests.helpers import run_main, scalar_samples

ROOT = Path(__file__).parent.parent
SAMPLES = ROOT / 'samples'
GOLDEN = Path(__file__).parent / 'golden' / 'views'
needs_dot = pytest.mark.skipif(shutil.which('dot') is None, reason='Graphviz is not installed')
SVG = '{http://www.w3.org/2000/svg}'
# A 16:9 slide: 1920 x 1080 px at the 144 dpi of adgrad's PNGs, in points.
SLIDE = (1920 / 144 * 72, 1080 / 144 * 72)


def sample(name, **inputs):
    graph = lower((SAMPLES / f'{name}.ad').read_text())
    values = forward(graph, {**graph.defaults, **inputs})
    return graph, values, backward(graph, values)


def svg_of(tmp_path, *argv):
    target = tmp_path / 'p.svg'
    assert main(['render', *argv, '-o', str(target)]) == 0
    return target.read_text(encoding='utf-8')


def points(svg):
    match = re.search(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"', svg)
    return float(match[1]), float(match[2])


def smallest_font(svg):
    return min(float(t.get('font-size')) for t in ET.fromstring(svg).iter(f'{SVG}text'))


# ---- sizes ----

@needs_dot
@pytest.mark.parametrize('argv', [
    ['-f', 'samples/deep.ad', '--collapse', 'blocks'],
    ['-f', 'samples/deep.ad', '--collapse', 'blocks', '--color', 'magnitude'],
    ['-f', 'samples/product.ad'], ['-f', 'samples/blocks.ad'],
    ['-f', 'samples/blocks.ad', '--collapse', 'blocks'], ['-f', 'samples/neuron.ad'],
    ['-f', 'samples/mlp.ad'], ['-f', 'samples/mlp.ad', '--unroll']],   # compact, boxes and all
    ids=lambda argv: ' '.join(argv[1:]))
def test_fits_a_16_9_slide_with_12_point_text(argv, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    svg = svg_of(tmp_path, *argv)
    width, height = points(svg)
    assert width <= SLIDE[0] and height <= SLIDE[1], (width, height)
    assert smallest_font(svg) >= 12          # no scaling down: the picture fits as drawn


def slide_commands():
    """{sample: its render options}, from docs/pictures.md's table of the view that
    fits a slide: `adgrad render -f samples/NAME.ad [options] -o NAME.png`."""
    readme = (ROOT / 'docs' / 'pictures.md').read_text(encoding='utf-8')
    return {m[1]: m[2].split() for m in re.finditer(
        r'`adgrad render -f samples/(\w+)\.ad([^`]*?) -o \1\.png`', readme)}


def test_the_docs_name_a_slide_view_for_every_sample():
    assert set(slide_commands()) == {p.stem for p in SAMPLES.glob('*.ad')}


@needs_dot
@pytest.mark.parametrize('name', sorted(p.stem for p in SAMPLES.glob('*.ad')))
def test_every_sample_fits_a_slide_in_the_view_the_docs_name(name, tmp_path, monkeypatch):
    """The issues' limit: at most 1920 x 1080 px at the 144 dpi of a PNG, every
    text at least 12 pt, as drawn (no scaling down), and the size the docs give."""
    monkeypatch.chdir(ROOT)
    options = slide_commands()[name]
    svg = svg_of(tmp_path, '-f', f'samples/{name}.ad', *options)
    width, height = points(svg)
    assert width <= SLIDE[0] and height <= SLIDE[1], (name, options, width * 2, height * 2)
    assert smallest_font(svg) >= 12
    readme = (ROOT / 'docs' / 'pictures.md').read_text(encoding='utf-8')
    row = re.search(rf'-o {name}\.png`[^|]*\| (\d+) × (\d+) \|', readme)
    assert abs(int(row[1]) - width * 2) <= 4 and abs(int(row[2]) - height * 2) <= 4, \
        (name, width * 2, height * 2)


def figure_commands():
    """{figure number: its render options}, from docs/pictures.md's table of the
    tutorial's figures: `adgrad render [options] -o figureN.png`."""
    readme = (ROOT / 'docs' / 'pictures.md').read_text(encoding='utf-8')
    return {int(m[1]): m[2].split() for m in re.finditer(
        r'^\| (\d+) \|[^|]*\| `adgrad render (.*?) -o figure\1\.png` \|$', readme, re.M)}


@needs_dot
@pytest.mark.parametrize('figure', range(1, 11))
def test_each_tutorial_figure_is_one_command_that_fits_a_slide(figure, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    options = figure_commands()[figure]
    svg = svg_of(tmp_path, *options)
    width, height = points(svg)
    assert width <= SLIDE[0] and height <= SLIDE[1], (figure, width * 2, height * 2)
    assert smallest_font(svg) >= 12


def test_the_forward_pass_of_blocks_shows_values_and_no_derivatives():
    """Figure 7 tells the forward pass: x → h → y → f → z with values; the
    calls' local derivatives wait for the backward pass (figure 9)."""
    graph, values, grads = sample('blocks')
    forward_view = render(graph, values, collapse='blocks').source
    assert '∂' not in forward_view.split('\tlabel=')[0] and '>4<' in forward_view
    assert '∂y/∂x = 2*x = 4' in render(graph, values, grads, collapse='blocks').source


def label_boxes(root):
    """(left, top, right, bottom) of each block box's label, from dot's SVG."""
    return [box for _, box in text_boxes(root, 'cluster')]


def text_boxes(root, kind):
    """(title, (left, top, right, bottom)) of each text in dot's SVG groups of
    class `kind`: 'cluster' (a block box's label) or 'edge' (an edge's label)."""
    for group in root.iter(f'{SVG}g'):
        if group.get('class') == kind:
            for text in group.iter(f'{SVG}text'):
                x, y, size = float(text.get('x')), float(text.get('y')), float(text.get('font-size'))
                width = len(text.text) * size * 0.6
                anchor = text.get('text-anchor')
                left = x - width if anchor == 'end' else x - width / 2 if anchor == 'middle' else x
                yield group.find(f'{SVG}title').text, (left, y - size, left + width,
                                                       y + size * 0.25)


def edge_points(group, steps=20):
    """Points along each cubic Bézier of an edge's path."""
    for path in group.iter(f'{SVG}path'):
        numbers = [float(v) for v in re.findall(r'-?[\d.]+', path.get('d'))]
        p = list(zip(numbers[0::2], numbers[1::2]))
        for k in range(0, len(p) - 3, 3):
            for s in range(steps + 1):
                t = s / steps
                w = ((1 - t) ** 3, 3 * (1 - t) ** 2 * t, 3 * (1 - t) * t * t, t ** 3)
                yield (sum(c * q[0] for c, q in zip(w, p[k:k + 4])),
                       sum(c * q[1] for c, q in zip(w, p[k:k + 4])))


@needs_dot
@pytest.mark.parametrize('rankdir', ['LR', 'TB'])
def test_mlp_neurons_in_order_arrows_apart_and_clear_of_the_block_labels(
        rankdir, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    svg = svg_of(tmp_path, '-f', 'samples/mlp_scalar.ad', '--rankdir', rankdir)
    root = ET.fromstring(svg)
    # Neurons 1, 2, 3, 4 across (TB) or down (LR), as the program calls them.
    where = {}
    for group in root.iter(f'{SVG}g'):
        if group.get('class') == 'node':
            text = ' '.join(t.text or '' for t in group.iter(f'{SVG}text'))
            found = re.search(r'h(\d) = tanh', text)
            if found:
                x, y = next(shape_centre(group))
                where[found[1]] = x if rankdir == 'TB' else y
    assert ''.join(sorted(where, key=where.get)) == '1234'
    # No arrow through a block's label ('block neuron' over 'call k').
    edges = [g for g in root.iter(f'{SVG}g') if g.get('class') == 'edge']
    boxes = list(label_boxes(root))
    assert len(boxes) == 12          # block, neuron, call k: four times
    for group in edges:
        for x, y in edge_points(group):
            assert not any(l <= x <= r and t <= y <= b for l, t, r, b in boxes), \
                group.find(f'{SVG}title').text
    # Each forward arrow and the backward one along it run apart, not over
    # each other: at most a third of the middle of one lies within 3 pt of
    # the other (where they start and end, at a shared node, they meet).
    pairs = {}
    for group in edges:
        dashed = group.find(f'{SVG}path').get('stroke-dasharray') is not None
        pairs.setdefault(group.find(f'{SVG}title').text, {})[dashed] = list(edge_points(group))
    for title, two in pairs.items():
        if len(two) == 2:
            middle = two[False][len(two[False]) // 4:3 * len(two[False]) // 4]
            near = sum(min(math.dist(p, q) for q in two[True]) < 3 for p in middle)
            assert near <= len(middle) / 2, title


def shape_centre(group):
    """The centre of a node's outline (a polygon, or a path when rounded)."""
    for shape in group:
        if shape.tag in (f'{SVG}polygon', f'{SVG}path'):
            numbers = [float(v) for v in re.findall(r'-?[\d.]+', shape.get('points')
                                                    or shape.get('d'))]
            xs, ys = numbers[0::2], numbers[1::2]
            yield (min(xs) + max(xs)) / 2, (min(ys) + max(ys)) / 2


@needs_dot
@pytest.mark.parametrize('argv', [
    ['-f', 'samples/deep.ad', '--collapse', 'blocks'],          # figure 10, wrapped onto rows
    ['-f', 'samples/mlp_scalar.ad', '--collapse', 'blocks'],    # compact
    ['-f', 'samples/logistic.ad'], ['-f', 'samples/product.ad']],
    ids=lambda argv: ' '.join(argv[1:]))
def test_no_edge_label_sits_on_another_arrow(argv, tmp_path, monkeypatch):
    """Issue 31: figure 10 wrapped onto rows had its gradients written over the
    arrows beside them. A label may touch its own edge, no other."""
    monkeypatch.chdir(ROOT)
    root = ET.fromstring(svg_of(tmp_path, *argv))
    edges = {}
    for group in root.iter(f'{SVG}g'):
        if group.get('class') == 'edge':
            edges.setdefault(group.find(f'{SVG}title').text, []).extend(edge_points(group))
    for title, (left, top, right, bottom) in text_boxes(root, 'edge'):
        for other, points_ in edges.items():
            if other != title:
                assert not any(left <= x <= right and top <= y <= bottom for x, y in points_), \
                    (title, other)


@needs_dot
@pytest.mark.parametrize('argv', [['-f', 'samples/product.ad'],
                                  ['-f', 'samples/deep.ad', '--collapse', 'blocks', '--color',
                                   'magnitude']],   # under a wider row: the scale's
                         ids=['product', 'magnitude'])
def test_the_legends_input_swatch_is_an_oval(argv, tmp_path, monkeypatch):
    """Inputs are ovals, so the legend's swatch for them is one: rows of the
    fill, widest in the middle and narrowing smoothly to the top and bottom
    (a pill would keep its full width down its straight sides), as wide as
    drawn, not stretched by a wider row of the legend under it."""
    monkeypatch.chdir(ROOT)
    root = ET.fromstring(svg_of(tmp_path, *argv))
    rows = {}
    for shape in root.iter(f'{SVG}polygon'):
        if shape.get('fill') in ('#eff6ff', '#2563eb') and shape.get('stroke') == 'transparent':
            numbers = [float(v) for v in re.findall(r'-?[\d.]+', shape.get('points'))]
            y = min(numbers[1::2])
            left, right = min(numbers[0::2]), max(numbers[0::2])
            old = rows.get(y, (left, right))
            rows[y] = (min(old[0], left), max(old[1], right))
    widths = [r - l for _, (l, r) in sorted(rows.items())]
    assert len(widths) >= 8
    middle = widths.index(max(widths))
    assert 0 < middle < len(widths) - 1
    assert widths[0] < 0.6 * max(widths) and widths[-1] < 0.6 * max(widths)
    assert all(a <= b for a, b in zip(widths[:middle], widths[1:middle + 1]))
    assert all(a >= b for a, b in zip(widths[middle:], widths[middle + 1:]))
    assert max(widths) > 1.8 * (len(widths))       # wider than tall: an oval, not a circle
    assert max(widths) <= OVAL[0] + 1               # 36 pt, stretched to 52 under the scale


@needs_dot
@pytest.mark.parametrize('name', [p.stem for p in scalar_samples(SAMPLES)])
def test_every_sample_is_viewable_in_every_view(name, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    for extra in ([], ['--collapse', 'blocks'], ['--color', 'magnitude']):
        svg = svg_of(tmp_path, '-f', f'samples/{name}.ad', *extra)
        width, height = points(svg)
        assert unviewable((width / 72, height / 72, False), 96) is None
        assert smallest_font(svg) >= 12


def test_what_no_viewer_can_show_is_named():
    assert unviewable((13, 7, False), 144) is None
    assert unviewable((2, 0.1, False), 144) is None                    # small: any shape
    assert 'strip' in unviewable((150, 0.4, False), 144)                # the 32,767 x 57 strip
    assert '200 inches' in unviewable((300, 40, False), 144)
    assert '32,767' in unviewable((227, 10, True), 144)


@needs_dot
def test_a_long_chain_of_calls_folds_or_wraps_onto_rows_and_the_full_view_is_refused(
        tmp_path, capsys):
    program = chain_of_calls(tmp_path, 130)
    png = tmp_path / 'long.png'
    assert main(['render', '-f', str(program), '-o', str(png)]) == 2
    err = capsys.readouterr().err
    assert 'the most a PNG can be' in err and '--collapse blocks' in err and not png.exists()
    assert main(['render', '-f', str(program), '--collapse', 'blocks', '-o', str(png)]) == 0
    width, height, clamped = picture_size(png.read_bytes(), 'png', 144)
    assert width * 144 <= 1920 and height * 144 <= 1080 and not clamped      # folded
    # Twelve calls are drawn whole: too long for one line, they wrap onto rows.
    dot = tmp_path / 'twelve.dot'
    assert main(['render', '-f', str(chain_of_calls(tmp_path, 12)), '--collapse', 'blocks',
                 '-o', str(dot)]) == 0
    assert '×' not in dot.read_text() and dot.read_text().count('rank=same') >= 3


def chain_of_calls(tmp_path, count):
    lines = ['input x = 0.1', 'f(a) = a + 1', 'y0 = f(x)'] + [f'y{i} = f(y{i - 1})'
                                                            for i in range(1, count)]
    program = tmp_path / 'chain.ad'
    program.write_text('\n'.join(lines) + '\n')
    return program


def test_a_long_chain_folds_into_one_node_that_says_what_it_stands_for():
    """The tutorial's x → Block 1 → x₁ → … → Block n → xₙ: a 601-node tanh
    chain draws x, two tanh, one node for the 595 between, two tanh."""
    from autodiff_cli.pictures.render import drawing
    graph = lower('tanh(' * 600 + 'x' + ')' * 600)
    values = forward(graph, {'x': 0.5})
    drawn = drawing(graph, values, backward(graph, values))
    assert [i.title for i in drawn.items] == ['x', 'tanh', 'tanh', 'tanh × 595', 'tanh', 'tanh',
                                              'tanh']                   # the last: the output
    folded = drawn.items[3]
    assert folded.id == 597 and folded.value == values[597]      # stands for its last
    t = [0.5]
    for _ in range(600):
        t.append(math.tanh(t[-1]))
    product = math.prod(1 - v * v for v in t[3:598])              # ∂t597/∂t2, by hand
    assert folded.notes[0] == f'values {t[3]:.4g} … {t[597]:.4g}'
    assert folded.notes[-1].endswith(f' = {product:.4g}')
    assert [(l.src, l.dst) for l in drawn.links] == [(0, 1), (1, 2), (2, 597), (597, 598),
                                                     (598, 599), (599, 600)]


@needs_dot
@pytest.mark.parametrize('argv', [['--collapse', 'blocks'], []], ids=['collapsed', 'full'])
def test_a_1000_call_chain_is_folded_or_refused_with_a_message(argv, tmp_path, capsys):
    program = chain_of_calls(tmp_path, 1000)
    png = tmp_path / 'chain.png'
    code = main(['render', '-f', str(program), *argv, '-o', str(png)])
    err = capsys.readouterr().err
    if argv:   # collapsed: y0, y1, f × 995, y997 … y999
        assert code == 0, err
        width, height, clamped = picture_size(png.read_bytes(), 'png', 144)
        assert width * 144 <= 1920 and height * 144 <= 1080 and not clamped
    else:      # a block box per call cannot fold: refused, and told what would draw it
        assert code == 2 and not png.exists()
        assert 'more than the limit of 2000' in err and '--collapse blocks' in err


@needs_dot
def test_a_601_node_tanh_chain_is_a_viewable_picture(tmp_path):
    png = tmp_path / 'tanh.png'
    assert main(['render', 'tanh(' * 600 + 'x' + ')' * 600, 'x=0.5', '-o', str(png)]) == 0
    width, height, clamped = picture_size(png.read_bytes(), 'png', 144)
    assert width * 144 <= 1920 and height * 144 <= 1080 and not clamped


# ---- the collapsed view ----

def test_collapsed_blocks_are_the_tutorials_x_h_y_f_z():
    drawn = collapse(*sample('blocks'))
    assert [(i.kind, i.title, i.expr) for i in drawn.items] == [
        ('input', 'x', None), ('call', 'h', 'y = h(x)'), ('call', 'f', 'z = f(y)')]
    x, y, z = (i.id for i in drawn.items)
    assert [(link.src, link.dst) for link in drawn.links] == [(x, y), (y, z)]
    # By hand at x = 2: y = x² = 4, z = y + 1 = 5; dy/dx = 2x = 4, dz/dy = 1.
    assert [i.value for i in drawn.items] == [2, 4, 5]
    assert [i.grad for i in drawn.items] == [4, 1, 1]
    # The local derivative as the block's rule, dy/dx = 2x, and as a number.
    assert drawn.items[1].notes == ('∂y/∂x = 2*x = 4',) and drawn.items[2].notes == ('∂z/∂y = 1',)
    assert [(link.grad, link.local) for link in drawn.links] == [(4, 4), (1, 1)]


def test_collapsed_deep_chain_has_each_layers_local_derivative_by_hand():
    graph, values, grads = sample('deep')
    drawn = collapse(graph, values, grads)
    calls = [i for i in drawn.items if i.kind == 'call']
    assert [c.expr for c in calls] == ['x1 = layer(x)'] + [f'x{k} = layer(x{k - 1})'
                                                            for k in range(2, 11)]
    a = 0.5
    for k, call in enumerate(calls, 1):
        t = math.tanh(1.5 * a + 0.1)
        local = 1.5 * (1 - t * t)            # d/da tanh(1.5a + 0.1)
        assert call.value == pytest.approx(t, rel=1e-15)
        shown = float(call.notes[0].rpartition(' = ')[2])
        assert shown == pytest.approx(local, rel=5e-4)                     # 4 digits
        assert drawn.links[k - 1].local == pytest.approx(local, rel=1e-12)
        a = t


def test_a_call_with_several_arguments_names_them_as_the_caller_wrote_them():
    graph, values, grads = sample('mlp_scalar')
    calls = [i for i in collapse(graph, values, grads).items if i.kind == 'call']
    assert [c.expr for c in calls] == [f'h{k} = neuron(w{k}, b{k}, x)' for k in range(1, 5)]
    # ∂h1/∂w1 = x·(1 - tanh²(w1·x + b1)) by hand; the formula on the first call only.
    h = math.tanh(0.3 * 0.5 - 0.1)
    assert f'∂h1/∂w1 = ((1-h1)*(h1+1))*x = {0.5 * (1 - h * h):.4g}' in calls[0].notes
    h = math.tanh(-0.6 * 0.5 + 0.2)
    assert f'∂h2/∂w2 = {0.5 * (1 - h * h):.4g}' in calls[1].notes


def test_products_put_the_chain_rule_on_the_edges():
    dot = render(*sample('product'), look=Look(products=True)).source
    for text in ('4 · 3 = 12', '4 · 2 = 8', '1 · 4 = 4', '1 · 6 = 6'):
        assert f'label="{text}"' in dot


def test_products_in_a_collapsed_view_reach_the_edges_outside_the_calls_too():
    # blocks.ad: y = h(x) = x^2 at x = 2, z = f(y) = y + 1. Collapsed, the edge
    # from x into h's call carries ∂z/∂y · ∂y/∂x = 1 · 4, and (a merge once
    # dropped it) the edge from z's call to the output node its own product.
    dot = render(*sample('blocks'), collapse='blocks', look=Look(products=True)).source
    assert '1 · 4 = 4' in dot
    deep = render(*sample('deep'), collapse='blocks', look=Look(products=True)).source
    x10 = 0.8938   # the last layer's value, as deep.ad's picture shows it
    assert f'1 · {2 * x10:.4g} = {2 * x10:.4g}' in deep      # ∂(x10^2)/∂x10 = 2 x10


# ---- gradient health ----

def test_health_names_vanishing_blocked_and_non_finite_gradients():
    graph = lower('relu(x) * max(x, y) + log(y) + z*0')
    values = forward(graph, {'x': -1.0, 'y': 0.0, 'z': 1.0})
    grads = backward(graph, values)
    health = diagnose(graph, values, grads)
    x, y, z = (graph.inputs[n] for n in 'xyz')
    assert health[x].state == 'blocked' and 'relu' in health[x].reason
    assert health[y].state == 'nonfinite'                          # d log(y)/dy at 0 = inf
    assert health[z].state == 'zero' and 'z*0' in health[z].reason
    lines = explain(graph, values, grads)
    assert lines[0].startswith('first non-finite gradient')
    assert any(line.startswith('x: gradient 0, blocked by relu(x)') for line in lines)


def test_deep_chain_vanishing_gradient_stands_out():
    graph, values, grads = sample('deep')
    health = diagnose(graph, values, grads)
    assert health[graph.inputs['x']].state == 'vanishing'          # 6.7e-05 < 1e-4
    dot = render(graph, values, grads, look=Look(color='magnitude')).source
    assert re.search(r'n0 \[label=<.*\(vanishing\).*penwidth=3', dot)
    assert 'inf / nan' in dot and '0: blocked' in dot                # the legended scale
    (line,) = [t for t in explain(graph, values, grads) if t.startswith('x:')]
    # Through x10 = tanh(1.5*x9 + 0.1) the gradient is multiplied by 1 - x10², by hand.
    x10 = values[next(i for i, node in enumerate(graph.nodes) if node.name == 'x10')]
    assert 'vanishing' in line and ('the step from x10 (node 50) back to 1.5*a + 0.1 (node 49), '
                                    f'which multiplies it by {1 - x10 * x10:.3g}') in line


def test_grad_explain_prints_the_diagnosis_after_the_result(capsys):
    assert main(['grad', '-f', str(SAMPLES / 'deep.ad'), '--explain']) == 0
    out = capsys.readouterr().out
    numbers, _, diagnosis = out.partition('\ndiagnosis:\n')
    assert numbers.startswith('value\t0.79896') and diagnosis.startswith('  x: gradient 6.682e-05')
    assert main(['grad', 'x', 'x=1', '--points', '-', '--explain']) == 2


def test_rounding_noise_is_shown_as_about_zero_but_kept_as_computed():
    graph, values, grads = sample('softmax')
    m = next(i for i, node in enumerate(graph.nodes) if node.name == 'm')
    assert grads[m] != 0 and abs(grads[m]) < 1e-15     # the computed number is untouched
    dot = render(graph, values, grads).source
    assert '∂loss/∂m ≈ 0' in dot and 'e-16' not in dot


# ---- frames ----

@needs_dot
def test_one_step_as_a_png_for_a_slide(tmp_path):
    target = tmp_path / 'step.png'
    assert main(['render', '-f', str(SAMPLES / 'product.ad'), '--step', '3',
                 '-o', str(target)]) == 0
    assert target.read_bytes()[:4] == b'\x89PNG'
    svg = tmp_path / 'step.svg'
    assert main(['render', '-f', str(SAMPLES / 'product.ad'), '--step', '3', '--no-legend',
                 '--font-scale', '1.5', '-o', str(svg)]) == 0
    text = svg.read_text()
    assert 'Step 3 of 5: ∂f/∂z = ∂f/∂f · ∂(x * y * z)/∂z = 1 · (x * y) = 1 · 6 = 6' in text and 'forward: values' not in text
    assert smallest_font(text) >= 18


ARRAY_STEPS = {   # each array sample's frames, in the view --steps draws (no --collapse)
    'mlp': ['-f', 'samples/mlp.ad'],
    'mlp unrolled': ['-f', 'samples/mlp.ad', '--unroll'],
    'softmax_regression': ['-f', 'samples/softmax_regression.ad', '--data',
                           'samples/softmax_regression.csv'],
    'least_squares': ['-f', 'samples/least_squares.ad', '--data', 'samples/least_squares.csv'],
    'mlp_xor': ['-f', 'samples/mlp_xor.ad', '--data', 'samples/xor.csv'],
}


@needs_dot
@pytest.mark.parametrize('name', ARRAY_STEPS)
def test_every_step_frame_of_an_array_sample_fits_a_slide(name, tmp_path, monkeypatch):
    """Each PNG frame, caption included, at most 1920 x 1080 px, all of one
    height (a caption pads to the series' longest), and a frame's text 12 pt."""
    monkeypatch.chdir(ROOT)
    folder = tmp_path / 'frames'
    assert main(['render', *ARRAY_STEPS[name], '--steps', str(folder), '--format', 'png']) == 0
    sizes = [tuple(int.from_bytes(png.read_bytes()[at:at + 4], 'big') for at in (16, 20))
             for png in sorted(folder.glob('step-*.png'))]
    assert len(sizes) > 5 and all(w <= 1920 and h <= 1080 for w, h in sizes), (name, sizes)
    assert len({h for _, h in sizes}) == 1, sizes
    last = len(sizes)                          # an input: its caption sums the most terms
    svg = svg_of(tmp_path, *ARRAY_STEPS[name], '--step', str(last))
    assert smallest_font(svg) >= 12 and f'Step {last} of {last}' in svg


@needs_dot
@pytest.mark.parametrize('tty', [True, False])
def test_steps_in_png_and_the_forward_pass(tmp_path, tty):
    # --format is the frames' format: no picture on stdout, terminal or not
    folder = tmp_path / 's'
    run = run_main(['render', '-f', str(SAMPLES / 'product.ad'), '--steps', str(folder),
                    '--format', 'png', '--forward-steps'], tty=tty)
    assert (run.code, run.out, run.err) == (0, '', '')
    names = sorted(os.listdir(folder))
    assert names == ['index.html'] + [f'step-00{k}.png' for k in range(1, 6)]
    page = (folder / 'index.html').read_text()
    assert 'Forward pass' in page and 'class="sr-only"' in page     # caption is in the PNG


def test_forward_steps_say_what_each_node_computed():
    graph, values, _ = sample('product')
    captions = [step.caption for step in forward_steps(graph, values)]
    assert captions[:4] == ['x = 2 (an input)', 'y = 3 (an input)', 'z = 4 (an input)',
                            'x * y = 6  (with x = 2, y = 3)']


@needs_dot
def test_size_shrinks_to_fit(tmp_path):
    svg = svg_of(tmp_path, '-f', str(SAMPLES / 'deep.ad'), '--size', '5,3')
    width, height = points(svg)
    assert width <= 5 * 72 + 1 and height <= 3 * 72 + 1


@pytest.mark.parametrize('argv, message', [
    (['--size', '0,3'], 'is not a size'), (['--font-scale', 'big'], 'is not a font scale'),
    (['--step', '0'], 'is not a step number'),
    (['--forward-steps'], '--forward-steps needs'),
    (['--collapse', 'blocks', '--steps', 'd'], 'use one or the other'),
    (['--step', '9', '--format', 'dot'], 'the pass has 5 steps')])
def test_bad_picture_options_are_usage_errors(argv, message, capsys):
    assert main(['render', '-f', str(SAMPLES / 'product.ad'), *argv]) == 2
    assert message in capsys.readouterr().err


# ---- golden DOT ----

GOLDEN_VIEWS = {
    'blocks-collapsed': ('blocks', dict(collapse='blocks')),
    'blocks-magnitude': ('blocks', dict(look=Look(color='magnitude'))),
    'deep-collapsed': ('deep', dict(collapse='blocks')),
    'deep-magnitude': ('deep', dict(look=Look(color='magnitude'))),
}


@pytest.mark.parametrize('view', sorted(GOLDEN_VIEWS))
def test_golden_dot(view):
    """The DOT, byte for byte, as reviewed. To accept a deliberate change:
    ADGRAD_GOLDEN=write python -m pytest tests/test_pictures.py -k golden, then
    read the diff."""
    name, options = GOLDEN_VIEWS[view]
    dot = render(*sample(name), **options).source
    path = GOLDEN / f'{view}.dot'
    if os.environ.get('ADGRAD_GOLDEN') == 'write':
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dot, encoding='utf-8')
    assert dot == path.read_text(encoding='utf-8')


# ---- text at 80 columns ----

@pytest.mark.parametrize('columns', [60, 80])
@pytest.mark.parametrize('name', ['mlp_scalar', 'deep', 'softmax'])
def test_text_on_a_narrow_terminal_never_cuts_a_number_or_a_term(name, columns, monkeypatch):
    from autodiff_cli.cli.render import _text
    from autodiff_cli.pictures.text import number
    monkeypatch.setenv('COLUMNS', str(columns))
    graph, values, grads = sample(name)
    text = re.sub(r'\x1b\[[0-9;]*m', '', _text(graph, values, grads, 'backward', True).decode())
    table, _, told = text.partition('backward pass, one node at a time:')
    rows = [line for line in table.splitlines() if re.match(r'│ n\d+ ', line)]
    assert len(rows) == len(graph.nodes)                  # one line per node: nothing wraps
    for line, value in zip(rows, values):
        cells = [c.strip() for c in line.strip('│').split('│')]
        assert number(value) in cells                     # whole, never '0.00039…'
    assert all(len(line) <= columns for line in text.splitlines())
    for line in told.strip('\n').splitlines():
        if line.startswith('      '):          # a continuation starts with the next term
            assert line[6:].startswith(('= ', '· ', '+ ', '[block ')), line
        assert not line.rstrip().endswith(('=', '·', '+')), line


def test_captions_wrap_between_terms():
    from autodiff_cli.pictures.text import wrap_terms
    caption = '∂f/∂x = ∂f/∂(x*y + 1) · ∂(x*y + 1)/∂x = 4.125 · 3.5 = 14.44'
    lines = wrap_terms(caption, 30)
    assert lines == ['∂f/∂x = ∂f/∂(x*y + 1)', '      · ∂(x*y + 1)/∂x = 4.125',
                     '      · 3.5 = 14.44']
    assert wrap_terms(caption, 200) == [caption]


def test_a_caption_of_prose_wraps_between_words_and_never_inside_parentheses():
    # a loop's step has no ' = ' to break at: at 80 columns the terminal cut
    # 'befo|re'; its words break, and '(i=8)' or a symbol stays whole
    from autodiff_cli.pictures.text import wrap_terms
    caption = ('Iteration 9 of 10 (i=8), backward: ∂z/∂(x + y) is 0.5391 after it, 0.1626 '
               'before')
    lines = wrap_terms(caption, 30)
    assert lines == ['Iteration 9 of 10 (i=8),', '      backward: ∂z/∂(x + y) is',
                     '      0.5391 after it, 0.1626', '      before']
    assert ' '.join(line.strip() for line in lines) == caption


@pytest.mark.parametrize('caption, width, expected', [
    # a bracket left open by an elided symbol protects nothing after it (a review's case)
    ('from m, (log(exp(a…(b - m)), gamma, delta, 2 values, before', 30,
     ['from m, (log(exp(a…(b - m)),', '      gamma, delta, 2 values,', '      before']),
    # an array's value and a block's label stay whole, as a symbol does
    ('backward: ∂f/∂x is [1, 2] after it, [block layer, call 10]', 30,
     ['backward: ∂f/∂x is [1, 2]', '      after it,', '      [block layer, call 10]']),
    # a term's ' = ' goes with its word, never alone at a line's end
    ('a = ' + 'b' * 25 + ' ccc', 20, ['a', '      = ' + 'b' * 25, '      ccc']),
    ('word ' * 6, 11, ['word word', '  word word', '  word word'])])   # no blank last line
def test_prose_wraps_keep_brackets_and_leading_signs_whole(caption, width, expected):
    from autodiff_cli.pictures.text import wrap_terms
    assert wrap_terms(caption, width, indent=2 if caption.startswith('word') else 6) == expected


def test_captions_name_block_arguments_as_the_caller_wrote_them():
    from autodiff_cli.pictures.steps import steps
    graph, values, grads = sample('deep')
    captions = [s.caption for s in steps(graph, values, grads)]
    assert '∂z/∂x9 = ∂z/∂(1.5*x9) · ∂(1.5*x9)/∂x9 = 0.3594 · 1.5 = 0.5391  [block layer, call 9]' \
        in captions
    assert not [c for c in captions if re.search(r'\ba\b', c)]          # never the parameter
    graph = lower('c = 3\ng(a, b) = a*c + 2*(b - a)\nz = g(x, x*x)')
    values = forward(graph, {'x': 2.0})
    captions = [s.caption for s in steps(graph, values, backward(graph, values))]
    assert any(c.startswith('∂z/∂(2*((x*x) - x)) = ') for c in captions)


def test_block_calls_are_named_as_the_program_calls_them():
    """From where each call is in the source: the argument as written, the
    rebinding's call, an unbound call by its text, never the block's body."""
    from autodiff_cli.pictures.calls import call_sites
    from autodiff_cli.pictures.steps import steps
    graph = lower('input x = 1\nf(a) = a*a\ny = f(x + 1)\ny = f(y)\nz = f(2*y) + 1\n')
    values = forward(graph, graph.defaults)
    grads = backward(graph, values)
    calls = [i for i in collapse(graph, values, grads).items if i.kind == 'call']
    assert [c.expr for c in calls] == ['y = f(x + 1)', 'y#2 = f(y)', 'f(2*y)']
    assert calls[2].notes == ('∂f(2*y)/∂(2*y) = 64',)                  # 2·(2·4), by hand
    captions = [s.caption for s in steps(graph, values, grads)]
    assert captions[1].startswith('∂z/∂f(2*y) = ∂z/∂z · ∂(f(2*y) + 1)/∂f(2*y) = 1 · 1 = 1')
    # Where the text and the tape do not pair surely, no call is named from
    # the text: a built-in softplus before the block of that name.
    graph = lower('input x = 1\ny = softplus(x)\nsoftplus(a) = a*3\nz = softplus(y) + softplus(x)')
    assert set(call_sites(graph)) == {'softplus#1', 'softplus#2'}
    assert call_sites(graph)['softplus#1'].arguments == 'y'
    graph = lower('input x = 1\nh(a) = a + 1\ng(b) = h(b)*2\nz = g(x) + h(x)')
    assert 'h#1' not in call_sites(graph) and 'g#1' in call_sites(graph)   # h called inside g


@needs_dot
def test_a_picture_taller_or_wider_than_slides_suggests_collapsing_blocks(tmp_path):
    tall = run_main(['render', '-f', str(SAMPLES / 'deep.ad'), '-o', str(tmp_path / 'd.svg')])
    assert tall.code == 0 and 'inches tall' in tall.err and '--collapse blocks' in tall.err
    wide = run_main(['render', '-f', str(SAMPLES / 'mlp_scalar.ad'), '-o', str(tmp_path / 'm.svg')])
    assert wide.code == 0 and 'wider than a slide' in wide.err
    fits = run_main(['render', '-f', str(SAMPLES / 'deep.ad'), '--collapse', 'blocks',
                     '-o', str(tmp_path / 'c.svg')])
    assert (fits.code, fits.err) == (0, '')


def _crossings(a, b, near):
    """Where the polylines a and b cross, away from the points in `near`."""
    def side(p, q, r):
        return (q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0])
    for p, q in zip(a, a[1:]):
        for r, s in zip(b, b[1:]):
            if side(p, q, r) * side(p, q, s) < 0 and side(r, s, p) * side(r, s, q) < 0:
                if all(math.dist(p, n) > 12 for n in near):
                    yield p


@needs_dot
@pytest.mark.parametrize('extra', [[], ['--color', 'magnitude']], ids=['plain', 'magnitude'])
def test_the_wrapped_chain_reads_row_by_row_without_crossings(extra, tmp_path, monkeypatch):
    """Figure 10 wrapped onto rows as text wraps: rows about equally wide (of
    three), the output at the end of the last row (its constant hanging after
    it), and no arrow
    crossing another, the gradient's arrow beside the value's from a row's end
    to the next row's start (they crossed, and x9 → x10 → z was a tangle)."""
    monkeypatch.chdir(ROOT)
    root = ET.fromstring(svg_of(tmp_path, '-f', 'samples/deep.ad', '--collapse', 'blocks', *extra))
    where = {}
    for group in root.iter(f'{SVG}g'):
        if group.get('class') == 'node':
            text = ' '.join(t.text or '' for t in group.iter(f'{SVG}text'))
            name = (re.search(r'(\w+) = ', text) or re.search(r'(\w+)', text))[1]
            oval = group.find(f'{SVG}ellipse')
            where[name] = next(shape_centre(group)) if oval is None else (
                float(oval.get('cx')), float(oval.get('cy')))
    rows = {}
    for name, (x, y) in where.items():
        rows.setdefault(round(y), []).append((x, name))
    order = [[n for _, n in sorted(row)] for _, row in sorted(rows.items())]
    assert sum(order, []) == ['x'] + [f'x{k}' for k in range(1, 11)] + ['z', '2']
    assert len(order) == 4 and min(map(len, order)) >= 2 and len(order[-1]) >= 4   # no stray
    if not extra:   # the magnitude view's vanishing nodes are wider: 2, 3, 4, 3
        assert [len(row) for row in order] == [3, 3, 3, 4]
    paths = [list(edge_points(g)) for g in root.iter(f'{SVG}g') if g.get('class') == 'edge']
    ends = [p for path in paths for p in (path[0], path[-1])]
    for k, a in enumerate(paths):
        for b in paths[k + 1:]:
            assert not list(_crossings(a, b, ends)), (a[0], b[0])


@pytest.mark.parametrize('compact', [False, True])
def test_the_magnitude_legend_shows_the_arrows_as_drawn(compact):
    """--color magnitude draws gradient arrows in the scale's colours (greys
    and greens here); its legend showed them cyan, as a plain picture draws them."""
    graph, values, grads = sample('deep')
    dot = render(graph, values, grads, collapse='blocks',
                 look=Look(color='magnitude', compact=compact)).source
    body, legend = dot.split('\tlabel=')
    arrows = set(re.findall(r'dir=back[^\]]*?color="(#\w+)"|color="(#\w+)"[^\]]*dir=back', body))
    colours = {a or b for a, b in arrows}
    assert colours and '#0891b2' not in colours
    assert '#0891b2' not in legend and 'coloured by size' in legend
    from autodiff_cli.pictures.style import SCALE, darker
    scale = {darker(fill) for _, fill, _ in SCALE}
    glyph = re.findall(r'<FONT COLOR="(#\w+)">[◀╌]</FONT>', legend)
    assert colours <= scale and len(glyph) == 3 and set(glyph) <= scale, (colours, glyph)


def test_the_nodes_a_diagnosis_names_show_their_ids():
    """--explain and the magnitude picture's reasons name nodes '(node 3)',
    '(node 49)': the magnitude picture shows '#3', '#49' on them (a collapsed
    call the ids of the named nodes inside it); a plain picture shows none."""
    def labelled(dot):
        return {int(m[1]): m[2] for m in re.finditer(r'^\s*n(\d+) \[label=<(.*)>', dot, re.M)}
    graph = lower('relu(x - 1)*y')
    values = forward(graph, {'x': 0.0, 'y': 2.0})
    grads = backward(graph, values)
    assert '(node 3)' in ' '.join(explain(graph, values, grads))
    dot = labelled(render(graph, values, grads, look=Look(color='magnitude')).source)
    assert '#3<' in dot[3] and '(node 3)' in dot[0]
    assert not any('#3<' in label for i, label in dot.items() if i != 3)
    assert not re.search(r'>#\d', ''.join(labelled(render(graph, values, grads).source).values()))
    graph, values, grads = sample('deep')
    (line,) = [t for t in explain(graph, values, grads) if t.startswith('x:')]
    assert '(node 50)' in line and '(node 49)' in line
    full = labelled(render(graph, values, grads, look=Look(color='magnitude')).source)
    assert '#49<' in full[49] and '#50<' in full[50]
    collapsed = labelled(render(graph, values, grads, collapse='blocks',
                                look=Look(color='magnitude')).source)
    assert '#49 #50<' in collapsed[50] and 'x10 = layer(x9)' in collapsed[50]


def test_a_label_cut_short_breaks_into_lines_without_losing_text():
    # A loop's folded label is its text cut short in the middle, so it can
    # close a parenthesis it never opened: the compact picture of such a loop
    # stopped with KeyError (exit 70) as it broke the label into lines.
    from autodiff_cli.pictures.style import broken
    text = 'for i in 0..7 { h = …*h + b), h*w - b) } + a long enough tail to break'
    lines = broken(text)
    assert len(lines) > 1
    assert ' '.join(lines).split() == text.split()
    source = ('input w = 0.5, b = 0\ninput x[n]\nh = x\nfor i in 0..7 {\n'
              '    h = if(h > 0.2, tanh(w*h + b), h*w - b)\n}\nmean(h)')
    assert main(['render', source, 'x=[0.3,-0.5]', '-o', os.devnull, '--format', 'dot']) == 0
