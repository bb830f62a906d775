"""Pictures: the DOT of the tutorial's examples, SVG, escaping, steps, and the render command."""

import math
import os
import re
import shutil
import stat
import xml.etree.ElementTree as ET

import pytest

from autodiff_cli import backward, forward, lower
from autodiff_cli.cli.main import main
from autodiff_cli.core.graph import Graph, Node
from autodiff_cli.pictures.render import render
from autodiff_cli.pictures.scene import scene
from autodiff_cli.pictures.style import JUST_DONE, KNOWN, layout_size
from autodiff_cli.pictures.steps import index_html, step_pictures, steps

BLOCKS = open(os.path.join(os.path.dirname(__file__), '..', 'samples', 'blocks.ad')).read()
needs_dot = pytest.mark.skipif(shutil.which('dot') is None, reason='Graphviz is not installed')
SVG = '{http://www.w3.org/2000/svg}'


def drawn(source, **inputs):
    graph = lower(source)
    values = forward(graph, {**graph.defaults, **inputs})
    grads = backward(graph, values)
    return graph, values, grads


def edges(dot):
    """[(tail, head, attributes)] of the DOT text's edge statements, in order."""
    return re.findall(r'^\s*(n\d+) -> (n\d+)(?: \[(.*)\])?$', dot, re.M)


def node_label(dot, node):
    return re.search(rf'^\s*{node} \[label=<(.*)> ', dot, re.M).group(1)


def texts(svg):
    """Every piece of text the SVG draws, in document order."""
    root = ET.fromstring(svg)
    return [t.text for t in root.iter(f'{SVG}text') if t.text]


# ---- the tutorial's first graph: x*y*z at 2, 3, 4 ----

def test_product_dot_has_the_tape_nodes_and_edges():
    dot = render(*drawn('x*y*z', x=2, y=3, z=4)).source
    assert re.findall(r'^\s*(n\d+) \[', dot, re.M) == ['n0', 'n1', 'n2', 'n3', 'n4']
    forward_edges = [(t, h) for t, h, a in edges(dot) if 'dir=back' not in a]
    backward_edges = [(t, h, a) for t, h, a in edges(dot) if 'dir=back' in a]
    assert forward_edges == [('n0', 'n2'), ('n1', 'n2'), ('n2', 'n4'), ('n3', 'n4')]
    # Backward edges carry the gradient flowing along them: ∂f/∂x arrives as 12 from x*y.
    assert [(t, h, re.search(r'label=(\S+)', a).group(1)) for t, h, a in backward_edges] == [
        ('n0', 'n2', '12'), ('n1', 'n2', '8'), ('n2', 'n4', '4'), ('n3', 'n4', '6')]
    assert all('style=dashed' in a for _, _, a in backward_edges)


def test_product_labels_show_names_values_and_gradients():
    dot = render(*drawn('x*y*z', x=2, y=3, z=4)).source
    expected = {'n0': ('x', '2', '∂f/∂x = 12'), 'n1': ('y', '3', '∂f/∂y = 8'),
                'n2': ('*', '6', '∂f/∂(x*y) = 4'), 'n3': ('z', '4', '∂f/∂z = 6'),
                'n4': ('*', '24', '∂f/∂f = 1')}
    for node, (title, value, grad) in expected.items():
        cells = re.findall(r'>([^<>]+)</', node_label(dot, node))
        assert cells[0] == title and value in cells and grad in cells, (node, cells)
    assert 'x*y' in re.findall(r'>([^<>]+)</', node_label(dot, 'n2'))
    assert 'f = x*y*z' in re.findall(r'>([^<>]+)</', node_label(dot, 'n4'))


def test_kinds_are_distinct_and_gradients_highlighted():
    dot = render(*drawn('x*2 + 1', x=3)).source
    attrs = dict(re.findall(r'^\s*(n\d+) \[label=<.*> (.*)\]$', dot, re.M))
    assert 'shape=ellipse' in attrs['n0']                          # input
    assert 'shape=box' in attrs['n1'] and 'rounded' not in attrs['n1']   # constant
    assert 'rounded' in attrs['n2'] and 'peripheries' not in attrs['n2']  # operation
    assert 'peripheries=2' in attrs['n4']                          # the output
    # Every node but the constants carries a gradient: PyTorch computes none for them.
    assert [n for n, a in attrs.items() if f'fillcolor="{KNOWN}"' not in a] == ['n1', 'n3']
    assert '∂f/∂2' not in render(*drawn('x*2 + 1', x=3)).source
    plain = render(*drawn('x*2 + 1', x=3), mode='forward').source
    assert KNOWN not in plain


def test_forward_pass_has_values_and_no_gradients():
    dot = render(*drawn('x*y*z', x=2, y=3, z=4), mode='forward').source
    assert 'dir=back' not in dot and '∂' not in dot
    assert '>24<' in dot and '>6<' in dot
    assert 'forward: values' in dot and 'backward' not in dot


def test_structure_only_without_values():
    graph = lower('x*y*z')
    dot = render(graph).source
    assert len(edges(dot)) == 4 and 'dir=back' not in dot
    assert '>x*y<' in dot and '∂' not in dot


def test_gradients_match_backward_and_unused_nodes_are_not_highlighted():
    graph, values, grads = drawn('a = 1/x\nb = x*y\nb', x=0, y=3)   # a is unused: 1/0
    items = scene(graph, values, grads).items
    # By hand, in tape order 1, x, a = 1/x, y, b = x*y: ∂b/∂x = y = 3, ∂b/∂y = x = 0.
    assert [item.grad for item in items] == [0.0, 3.0, 0.0, 0.0, 1.0]
    unused = [item for item in items if not item.live]
    assert unused and all(item.grad == 0 for item in unused)
    dot = render(graph, values, grads).source
    for item in unused:
        assert KNOWN not in re.search(rf'^\s*n{item.id} \[.*$', dot, re.M).group(0)


def test_rankdir():
    assert 'rankdir=LR' in render(lower('x+1')).source
    assert 'rankdir=TB' in render(lower('x+1'), rankdir='TB').source


def test_the_dot_is_byte_identical_run_to_run():
    first = render(*drawn(BLOCKS)).source
    assert all(render(*drawn(BLOCKS)).source == first for _ in range(3))


# ---- blocks ----

def test_each_block_call_is_a_labelled_cluster():
    dot = render(*drawn(BLOCKS)).source
    clusters = re.findall(r'subgraph (cluster_\w+) \{\n\s*.*label=<(.*?)> ', dot)
    assert clusters == [('cluster_b0', 'block<BR ALIGN="RIGHT"/>h'),
                        ('cluster_b1', 'block<BR ALIGN="RIGHT"/>f')]
    h_body = dot.split('subgraph cluster_b0 {')[1].split('}')[0]
    f_body = dot.split('subgraph cluster_b1 {')[1].split('}')[0]
    assert re.findall(r'(n\d+) \[', h_body) == ['n1', 'n2']    # 2 and x^2
    assert re.findall(r'(n\d+) \[', f_body) == ['n3', 'n4']    # 1 and y + 1
    assert re.search(r'^\s*n0 \[', dot.split('subgraph')[0], re.M)   # x is outside
    assert '∂z/∂x = 4' in node_label(dot, 'n0')                # the output is named z


def test_nested_block_calls_are_nested_clusters():
    dot = render(*drawn('h(x) = x^2\nf(y) = h(y) + h(y + 1)\nf(x)', x=1)).source
    parents, stack = {}, []
    for line in dot.splitlines():
        opened = re.search(r'subgraph (cluster_\w+) \{', line)
        if opened:
            parents[opened.group(1)] = next((c for c in reversed(stack) if c), None)
            stack.append(opened.group(1))
        elif line.strip() == '{':        # a rank group
            stack.append(None)
        elif line.strip() == '}' and stack:
            stack.pop()
    assert parents == {'cluster_b0': None, 'cluster_b1': 'cluster_b0', 'cluster_b2': 'cluster_b0'}
    # a word a line, right-aligned: narrow, in the corner no arrow leaves by
    assert 'label=<block<BR ALIGN="RIGHT"/>h<BR ALIGN="RIGHT"/>call 1>' in dot
    assert 'label=<block<BR ALIGN="RIGHT"/>h<BR ALIGN="RIGHT"/>call 2>' in dot


# ---- escaping ----

NASTY = 'a<b>&"c"{d|e}\\'


def test_comments_and_line_continuations_are_not_node_text():
    # A comment inside parentheses lies inside the node's span, but it is not
    # what the node computes; nor is the backslash that continues a line.
    source = 'y = (x # <b> & "q" {d|e} </TD> \x01 \ufffe\n + 1)\nz = y + \\\n x'
    graph, values, grads = drawn(source, x=1)
    dot = render(graph, values, grads).source
    assert '&lt;b&gt;' not in dot and '&quot;q' not in dot and '\x01' not in dot
    assert 'y = x + 1' in dot and 'z = y + x' in dot
    assert [s.caption.split(' = ')[0] for s in steps(graph, values, grads)][:2] == ['∂z/∂z', '∂z/∂y']


def test_escaping_survives_names_the_parser_would_never_make():
    graph = Graph(nodes=[Node('input', name=NASTY, span=None), Node('neg', (0,), span=(0, 20))],
                  output=1, inputs={NASTY: 0}, defaults={}, source='-(a<b>&"c"{d|e}\\ )  ')
    values = forward(graph, {NASTY: 2.0})
    dot = render(graph, values, backward(graph, values)).source
    assert 'a&lt;b&gt;&amp;&quot;c&quot;{d|e}\\' in dot


@needs_dot
def test_escaped_labels_render_to_valid_svg_with_the_text_intact():
    graph = Graph(nodes=[Node('input', name=NASTY, span=None), Node('neg', (0,), span=(0, 20))],
                  output=1, inputs={NASTY: 0}, defaults={}, source='-(a<b>&"c"{d|e}\\ )  ')
    values = forward(graph, {NASTY: 2.0})
    svg = render(graph, values, backward(graph, values))._repr_svg_()
    drawn_text = texts(svg)
    assert NASTY in drawn_text and '-(a<b>&"c"{d|e}\\ )' in ' '.join(drawn_text)


# ---- SVG ----

@needs_dot
def test_svg_parses_and_shows_the_values_and_gradients():
    svg = render(*drawn('x*y*z', x=2, y=3, z=4))._repr_svg_()
    drawn_text = texts(svg)
    for value in ('2', '3', '4', '6', '24'):
        assert value in drawn_text
    for grad in ('∂f/∂x = 12', '∂f/∂y = 8', '∂f/∂z = 6', '∂f/∂(x*y) = 4', '∂f/∂f = 1'):
        assert grad in drawn_text
    root = ET.fromstring(svg)
    titles = [t.text for t in root.iter(f'{SVG}title')]
    assert {'n0', 'n1', 'n2', 'n3', 'n4'} <= set(titles)


# ---- the backward pass step by step ----

def test_steps_follow_reverse_tape_order_with_chain_rule_captions():
    graph, values, grads = drawn('x*y*z', x=2, y=3, z=4)
    series = steps(graph, values, grads)
    assert [step.node for step in series] == [4, 3, 2, 1, 0]
    assert [step.grad for step in series] == [1, 6, 4, 8, 12]
    assert [step.caption for step in series] == [
        '∂f/∂f = 1 (the backward pass starts at the output)',
        '∂f/∂z = ∂f/∂f · ∂(x*y*z)/∂z = 1 · (x*y) = 1 · 6 = 6',
        '∂f/∂(x*y) = ∂f/∂f · ∂(x*y*z)/∂(x*y) = 1 · z = 1 · 4 = 4',
        '∂f/∂y = ∂f/∂(x*y) · ∂(x*y)/∂y = 4 · x = 4 · 2 = 8',
        '∂f/∂x = ∂f/∂(x*y) · ∂(x*y)/∂x = 4 · y = 4 · 3 = 12',
    ]


def test_a_node_used_twice_sums_its_terms():
    graph, values, grads = drawn('a = x*y\nb = a + x\nb*b', x=2, y=3)
    by_node = {step.node: step for step in steps(graph, values, grads)}
    x = by_node[graph.inputs['x']]
    assert x.caption == '∂f/∂x = ∂f/∂a · ∂a/∂x + ∂f/∂b · ∂b/∂x = 16 · y + 16 · 1 = 16 · 3 + 16 · 1 = 64'
    assert by_node[3].caption.endswith('= 1 · 8 + 1 · 8 = 16')      # b*b: one term per edge


@pytest.mark.parametrize('source, inputs', [
    ('x*y*z', dict(x=2, y=3, z=4)),
    ('tanh(w*x + b)', dict(w=0.5, x=2, b=-1)),
    ('a = sin(x)*x\nb = a/x - exp(a)\nmax(a, b) + b^2', dict(x=0.7)),
    (BLOCKS, {}),
])
def test_every_step_is_the_sum_of_its_chain_rule_terms(source, inputs):
    graph, values, grads = drawn(source, **inputs)
    for step in steps(graph, values, grads):
        if step.terms:
            total = sum(t.upstream * t.local for t in step.terms)
            assert total == pytest.approx(step.grad, nan_ok=True)
        assert step.grad == grads[step.node] or math.isnan(grads[step.node])


def test_step_frames_highlight_the_node_just_finished():
    graph, values, grads = drawn('x*y*z', x=2, y=3, z=4)
    pictures = step_pictures(graph, values, grads)
    assert len(pictures) == 5
    for k, (step, picture) in enumerate(pictures):
        dot = picture.source
        current = re.search(rf'^\s*n{step.node} \[.*$', dot, re.M).group(0)
        assert f'fillcolor="{JUST_DONE}"' in current
        assert dot.count(JUST_DONE) == 2      # the node, and its swatch in the legend
        assert f'Step {k + 1} of 5:' in dot
        # The edges its gradient came along are bold; edges into unfinished nodes hidden.
        bold = [(t, h) for t, h, a in edges(dot) if 'bold' in a]
        assert bold == [(f'n{step.node}', f'n{term.consumer}') for term in step.terms]
        hidden = {t for t, h, a in edges(dot) if 'invis' in a}
        assert hidden == {f'n{s.node}' for s in steps(graph, values, grads)[k + 1:]}


def test_index_html_references_every_frame_in_order():
    page = index_html('x*y', ['step-001.svg', 'step-002.svg'], ['one <&>', 'two'])
    assert re.findall(r'<img src="([^"]+)"', page) == ['step-001.svg', 'step-002.svg']
    assert 'one &lt;&amp;&gt;' in page and 'http' not in page.replace('http-equiv', '')
    assert 'ArrowRight' in page and 'ArrowLeft' in page


# ---- the command ----

def run(*argv):
    return main(list(argv))


@needs_dot
def test_render_svg_file(tmp_path, capsys):
    target = tmp_path / 'product.svg'
    assert run('render', 'x*y*z', 'x=2', 'y=3', 'z=4', '-o', str(target)) == 0
    assert capsys.readouterr() == ('', '')
    assert '∂f/∂x = 12' in texts(target.read_text())
    assert not [p for p in os.listdir(tmp_path) if p != 'product.svg']   # no temporary left


@needs_dot
@pytest.mark.parametrize('name, magic', [('g.png', b'\x89PNG'), ('g.pdf', b'%PDF'),
                                         ('g.dot', b'digraph'), ('g.gv', b'digraph')])
def test_format_from_the_extension(tmp_path, name, magic):
    assert run('render', 'x*y', 'x=2', 'y=3', '-o', str(tmp_path / name)) == 0
    assert (tmp_path / name).read_bytes().startswith(magic)


@needs_dot
def test_format_option_wins_and_dash_is_stdout(capsysbinary):
    assert run('render', 'x*y', 'x=2', 'y=3', '-o', '-', '--format', 'png') == 0
    assert capsysbinary.readouterr().out.startswith(b'\x89PNG')
    assert run('render', 'x*y', 'x=2', 'y=3', '-o', '-') == 0    # svg by default
    ET.fromstring(capsysbinary.readouterr().out)


def test_unknown_extension_is_an_error(tmp_path, run_cli):
    code, out, err = run_cli('render', 'x', 'x=1', '-o', str(tmp_path / 'g.jpg'))
    assert code == 2 and "cannot tell the format from '.jpg'" in err
    assert os.listdir(tmp_path) == []


def test_dot_to_stdout_is_deterministic(run_cli):
    first = run_cli('render', '-f', 'samples/blocks.ad', '--format', 'dot')
    assert first[0] == 0 and first[1].startswith('digraph adgrad {')
    assert run_cli('render', '-f', 'samples/blocks.ad', '--format', 'dot') == first


@needs_dot
def test_svg_is_deterministic(tmp_path):
    for name in ('a.svg', 'b.svg'):
        assert run('render', BLOCKS, '-o', str(tmp_path / name)) == 0
    assert (tmp_path / 'a.svg').read_bytes() == (tmp_path / 'b.svg').read_bytes()


def test_text_format_prints_values_gradients_and_the_chain_rule(run_cli):
    code, out, err = run_cli('render', 'x*y*z', 'x=2', 'y=3', 'z=4', '--format', 'text')
    assert code == 0 and err == ''
    row = next(line for line in out.splitlines() if ' n2 ' in line)
    assert re.search(r'x\*y .*n0, n1 .* 6 .* 4 ', row)
    assert '5. ∂f/∂x = ∂f/∂(x*y) · ∂(x*y)/∂x = 4 · y = 4 · 3 = 12' in out


def test_text_format_keeps_brackets_as_text(run_cli):
    # A comment is not node text (so its markup-like brackets never reach rich).
    code, out, _ = run_cli('render', '(x # [red]x[/red]\n + 1)', 'x=1', '--format', 'text')
    assert code == 0 and '(x + 1)' in out and 'red' not in out


def test_steps_inside_blocks_say_which_call():
    graph, values, grads = drawn('h(x) = x^2\nh(x) + h(x + 1)', x=1)
    ends = [step.caption.rpartition('  ')[2] for step in steps(graph, values, grads)]
    # One step for x^2 in each call (its constant 2 gets no gradient, so no step).
    assert ends.count('[block h, call 1]') == 1 and ends.count('[block h, call 2]') == 1


def test_unbound_variables_draw_the_structure(run_cli):
    code, out, err = run_cli('render', 'x*y', '--format', 'dot')
    assert code == 0 and err == '' and '∂' not in out and '>f = x*y<' in out
    code, out, err = run_cli('render', 'x*y', 'x=2', '--format', 'dot')
    assert code == 0 and "no value for 'y'" in err and '∂' not in out


def test_backward_pass_needs_every_value(run_cli):
    code, out, err = run_cli('render', 'x*y', 'x=2', '--pass', 'backward', '--format', 'dot')
    assert (code, out) == (2, '') and "no value for 'y'" in err


def test_defaults_from_the_program_count_as_values(run_cli):
    code, out, _ = run_cli('render', '-f', 'samples/blocks.ad', '--format', 'dot')
    assert code == 0 and '∂z/∂x = 4' in out


# ---- failures leave nothing behind ----

def test_a_syntax_error_writes_nothing(tmp_path, run_cli):
    target = tmp_path / 'g.svg'
    code, _, err = run_cli('render', 'x*', 'x=1', '-o', str(target), '--steps', str(tmp_path / 's'))
    assert code == 2 and err.startswith('adgrad: error:')
    assert os.listdir(tmp_path) == []


def test_missing_dot_is_one_line_and_leaves_the_old_file(tmp_path, monkeypatch, run_cli):
    target = tmp_path / 'g.svg'
    target.write_text('old picture')
    monkeypatch.setenv('PATH', str(tmp_path / 'empty'))
    code, out, err = run_cli('render', 'x*y', 'x=2', 'y=3', '-o', str(target))
    assert code == 2 and out == ''
    assert len(err.splitlines()) == 1
    assert all(word in err for word in ('sudo apt', 'brew', 'conda', 'winget', '--format dot'))
    assert target.read_text() == 'old picture' and os.listdir(tmp_path) == ['g.svg']
    code, _, err = run_cli('render', 'x*y', 'x=2', 'y=3', '--steps', str(tmp_path / 's'))
    assert code == 2 and 'install Graphviz' in err and not (tmp_path / 's').exists()
    # Formats that need no layout still work.
    assert run_cli('render', 'x*y', 'x=2', 'y=3', '--format', 'dot')[1].startswith('digraph')
    assert '∂f/∂x' in run_cli('render', 'x*y', 'x=2', 'y=3', '--format', 'text')[1]


def test_too_many_nodes_is_refused_with_the_ways_out(tmp_path, run_cli):
    target = tmp_path / 'big.svg'
    big = ' + '.join(f'sin(x{i})' for i in range(700))   # 700 inputs, 700 sin, 699 add
    code, out, err = run_cli('render', big, '-o', str(target))
    assert code == 2 and 'has 2099 nodes' in err
    assert '--max-nodes 2099' in err and '--format dot' in err
    assert not target.exists()
    code, out, _ = run_cli('render', big, '--format', 'dot')    # no layout: no limit
    drawn_edges = [line for line in out.splitlines() if ' -> ' in line and 'invis' not in line]
    assert code == 0 and len(drawn_edges) == 700 + 2 * 699


HORNER = 'a0 = x\n' + '\n'.join(f'a{i} = a{i - 1}*x + 1' for i in range(1, 400))


def test_layout_size_counts_the_ranks_long_edges_cross():
    chain = lower('sin(' * 50 + 'x' + ')' * 50)
    assert layout_size(scene(chain)) == 51                  # no long edges
    spread = ' + '.join(f'sin(x{i})' for i in range(50))   # each sin right before its +
    assert layout_size(scene(lower(spread))) == len(lower(spread).nodes)
    horner = lower(HORNER)                                   # x feeds every step
    assert layout_size(scene(horner)) > 100 * len(horner.nodes)


def test_long_edges_are_refused_before_dot_runs(tmp_path, run_cli):
    target = tmp_path / 'h.svg'
    code, _, err = run_cli('render', HORNER, 'x=1.01', '-o', str(target))
    assert code == 2 and 'has 1199 nodes' in err and 'long edges' in err
    assert re.search(r'--max-nodes \d+', err) and '--format dot' in err
    assert not target.exists()


def test_a_dot_that_never_finishes_is_stopped(tmp_path, monkeypatch, run_cli):
    import autodiff_cli.cli.render as render_cli
    fake = tmp_path / 'bin' / 'dot'
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\nexec {shutil.which("sleep")} 30\n')
    fake.chmod(0o755)
    monkeypatch.setenv('PATH', str(fake.parent))
    monkeypatch.setattr(render_cli, 'DOT_SECONDS', 0.5)
    code, _, err = run_cli('render', 'x*y', 'x=1', 'y=2', '-o', str(tmp_path / 'g.svg'))
    assert code == 2 and 'dot did not finish' in err and '--format dot' in err
    assert sorted(os.listdir(tmp_path)) == ['bin']


def test_steps_have_a_smaller_limit_that_max_nodes_raises(tmp_path, run_cli):
    chain = 'sin(' * 70 + 'x' + ')' * 70
    code, _, err = run_cli('render', chain, 'x=1', '--steps', str(tmp_path / 's'))
    assert code == 2 and 'has 71 nodes' in err and '--steps' in err
    assert not (tmp_path / 's').exists()


@pytest.mark.parametrize('where', ['dir', 'missing/g.svg', 'file/g.svg'])
def test_bad_output_paths_are_one_line_errors(tmp_path, run_cli, where):
    (tmp_path / 'dir').mkdir()
    (tmp_path / 'file').write_text('')
    code, out, err = run_cli('render', 'x', 'x=1', '--format', 'dot', '-o', str(tmp_path / where))
    assert code == 2 and out == '' and len(err.splitlines()) == 1
    assert err.startswith(f'adgrad: error: cannot write {tmp_path / where}')
    assert sorted(os.listdir(tmp_path)) == ['dir', 'file'] and os.listdir(tmp_path / 'dir') == []


@pytest.mark.skipif(os.geteuid() == 0, reason='root may write anywhere')
def test_a_read_only_file_is_not_replaced(tmp_path, run_cli):
    target = tmp_path / 'g.dot'
    target.write_text('keep')
    target.chmod(0o444)
    code, _, err = run_cli('render', 'x', 'x=1', '-o', str(target))
    assert code == 2 and 'permission denied' in err and target.read_text() == 'keep'


def test_a_write_that_fails_midway_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch,
                                                                        run_cli):
    target = tmp_path / 'g.dot'
    target.write_text('old')

    def full_disk(source, destination):
        raise OSError(28, 'No space left on device')
    monkeypatch.setattr(os, 'replace', full_disk)
    code, _, err = run_cli('render', 'x', 'x=1', '-o', str(target))
    assert code == 2 and f'cannot write {target}: no space left on device' in err
    assert os.listdir(tmp_path) == ['g.dot'] and target.read_text() == 'old'


def test_a_symlink_is_written_through(tmp_path, run_cli):
    (tmp_path / 'real.dot').write_text('old')
    (tmp_path / 'link.dot').symlink_to('real.dot')
    assert run_cli('render', 'x', 'x=1', '-o', str(tmp_path / 'link.dot'))[0] == 0
    assert (tmp_path / 'link.dot').is_symlink()
    assert (tmp_path / 'real.dot').read_text().startswith('digraph')


def test_a_terminal_gets_no_svg_without_asking(monkeypatch, run_cli):
    import sys
    monkeypatch.setattr(sys.stdout, 'isatty', lambda: True)
    code, out, err = run_cli('render', 'x*y', 'x=1', 'y=2')
    assert (code, out) == (2, '') and 'give -o FILE' in err and '--format text' in err
    code, out, err = run_cli('render', 'x*y', 'x=1', 'y=2', '-o', '-', '--format', 'png')
    assert (code, out) == (2, '') and 'will not write PNG to a terminal' in err
    code, out, _ = run_cli('render', 'x*y', 'x=1', 'y=2', '--format', 'text')
    assert code == 0 and '∂f/∂x' in out


def test_replacing_a_file_keeps_its_mode(tmp_path, run_cli):
    target = tmp_path / 'g.dot'
    target.write_text('old')
    target.chmod(0o640)
    assert run_cli('render', 'x', 'x=1', '-o', str(target))[0] == 0
    assert target.read_text().startswith('digraph')
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


# ---- the step series on disk ----

@needs_dot
def test_steps_write_numbered_frames_and_an_index(tmp_path, run_cli):
    folder = tmp_path / 'steps'
    code, out, err = run_cli('render', 'x*y*z', 'x=2', 'y=3', 'z=4', '--steps', str(folder))
    assert (code, out, err) == (0, '', '')
    frames = sorted(p for p in os.listdir(folder) if p.endswith('.svg'))
    assert frames == [f'step-00{k}.svg' for k in range(1, 6)]
    # An SVG frame is shown on the page, which writes the caption once, as text.
    assert not [t for name in frames for t in texts((folder / name).read_text())
                if t.startswith('Step ')]
    page = (folder / 'index.html').read_text()
    captions = re.findall(r'<li><a href="[^"]+" data-step="\d+">([^<]+)</a></li>', page)
    assert captions[0] == '∂f/∂f = 1 (the backward pass starts at the output)'
    assert captions[4].endswith('∂f/∂x = ∂f/∂(x*y) · ∂(x*y)/∂x = 4 · y = 4 · 3 = 12')
    assert re.findall(r'<img src="([^"]+)"', page) == frames
    assert not re.search(r'(src|href)="(https?:)?//', page)      # nothing from the network


@needs_dot
def test_a_shorter_series_removes_the_old_frames(tmp_path, run_cli):
    folder = tmp_path / 'steps'
    folder.mkdir()
    (folder / 'notes.txt').write_text('mine')
    assert run_cli('render', 'x*y*z', 'x=2', 'y=3', 'z=4', '--steps', str(folder))[0] == 0
    assert run_cli('render', 'x*y', 'x=2', 'y=3', '--steps', str(folder))[0] == 0
    assert sorted(os.listdir(folder)) == ['index.html', 'notes.txt', 'step-001.svg',
                                          'step-002.svg', 'step-003.svg']


def test_steps_need_the_backward_pass(tmp_path, run_cli):
    code, _, err = run_cli('render', 'x*y', 'x=2', 'y=3', '--pass', 'forward',
                           '--steps', str(tmp_path / 's'))
    assert code == 2 and '--steps and --step draw the backward pass' in err


# ---- the pictures of docs/pictures.md ----

README = open(os.path.join(os.path.dirname(__file__), '..', 'docs', 'pictures.md'), encoding='utf-8').read()
PICTURES = re.findall(r'!\[[^\]]*\]\((?:\.\./)?(samples/pictures/[\w.-]+\.svg)\)\n\n```sh\n(adgrad render [^\n]*)\n',
                      README)


def test_the_readme_shows_pictures():
    assert [path for path, _ in PICTURES] == ['samples/pictures/product.svg',
                                              'samples/pictures/blocks.svg',
                                              'samples/pictures/blocks-collapsed.svg']


@needs_dot
@pytest.mark.parametrize('path, command', PICTURES)
def test_each_readme_picture_is_what_its_command_draws_today(path, command, tmp_path):
    root = os.path.join(os.path.dirname(__file__), '..')
    committed = open(os.path.join(root, path), encoding='utf-8').read()
    assert len(committed) < 20_000                       # small enough to keep in git
    words = command.split()[1:]
    assert words[-2:] == ['-o', path]
    words[-1] = str(tmp_path / 'now.svg')
    cwd = os.getcwd()
    try:
        os.chdir(root)
        assert main(words) == 0
    finally:
        os.chdir(cwd)
    # The text drawn, not the bytes: another Graphviz version places things differently.
    assert texts(committed) == texts((tmp_path / 'now.svg').read_text(encoding='utf-8'))


def test_output_symbol_never_runs_out_of_names():
    from autodiff_cli.pictures.scene import output_symbol
    assert output_symbol(lower('f + F + out + output + f_ + f_1')) == 'f_2'


def test_the_output_is_not_named_like_a_block():
    """The issue-31 program: a block f means the output is not f, and its
    captions read ∂out/∂f(h(x)), not ∂f/∂f(h(x))."""
    from autodiff_cli.pictures.scene import output_symbol
    assert output_symbol(lower('h(x) = x^2; f(y) = y + 1; f(h(x))')) == 'out'
    assert output_symbol(lower('h(x) = x^2; g(y) = h(y) + 1; g(x)')) == 'f'
    assert output_symbol(lower('f(x) = x^2; g(y) = f(y) + 1; g(x)')) == 'out'   # f only inside g
