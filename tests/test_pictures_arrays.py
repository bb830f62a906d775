"""Pictures of array programs (issue 28): a node is a tensor, with its shape
and a preview of its value and gradient; the numbers are checked against
hand-derived arrays and NumPy, not against the picture's own code.
"""

import re
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from autodiff_cli import lower
from autodiff_cli.core import tensors
from autodiff_cli.pictures.render import drawing, render
from autodiff_cli.pictures.style import Look

from tests.helpers import run_main

ROOT = Path(__file__).resolve().parent.parent
needs_dot = pytest.mark.skipif(shutil.which('dot') is None, reason='Graphviz is not installed')
LEAST_SQUARES = 'sum((A @ x - b)^2)'
POINT = {'A': [[1, 2], [3, 4]], 'x': [1, -1], 'b': [0.5, 2]}


def passes(text, point):
    graph = lower(text)
    values = tensors.evaluate(graph, point)
    return graph, values, tensors.gradients(graph, values)


def labels(dot):
    """{node id: the texts of its label}, from the DOT source."""
    found = {}
    for match in re.finditer(r'^\s*n(\d+) \[label=<(.*)>', dot, re.M):
        found[int(match[1])] = re.findall(r'>([^<>]+)<', match[2])
    return found


def test_a_small_array_node_shows_every_entry_of_its_value_and_gradient():
    # d/dA of |Ax - b|^2 = 2(Ax - b)x^T: Ax - b = [-1.5, -3], so [[-3, 3], [-6, 6]]
    graph, values, grads = passes(LEAST_SQUARES, POINT)
    text = labels(render(graph, values, grads).source)[graph.inputs['A']]
    assert text[0] == 'A  [2,2]'
    assert text[1:5] == ['1', '2', '3', '4']                 # the value, row by row
    assert text[5] == '∂f/∂A'
    assert text[6:10] == ['-3', '3', '-6', '6']              # the gradient, row by row
    assert labels(render(graph, values, grads).source)[graph.inputs['x']][1:] == [
        '[1, -1]', '∂f/∂x = [-21, -30]']                    # 2 A^T (Ax - b)


def test_a_large_array_shows_its_shape_min_max_and_norm():
    rng = np.random.default_rng(7)
    W = rng.normal(size=(5, 4))
    graph, values, grads = passes('sum(tanh(W @ v))', {'W': W, 'v': [1, 2, 3, 4]})
    text = labels(render(graph, values, grads).source)[graph.inputs['W']]
    g = (1 - np.tanh(W @ [1, 2, 3, 4]) ** 2)[:, None] * np.array([1, 2, 3, 4])[None, :]
    assert text[0] == 'W  [5,4]'
    assert text[1] == f'min {W.min():.4g}, max {W.max():.4g}, norm {np.linalg.norm(W):.4g}'
    assert text[3] == f'min {g.min():.4g}, max {g.max():.4g}, norm {np.linalg.norm(g):.4g}'


def test_an_edge_carries_the_gradient_summed_back_to_its_arguments_shape():
    # x + b broadcasts b over x's rows: b's gradient sums them, 2 rows of 1 each
    graph, values, grads = passes('sum(x + b)', {'x': [[1, 2, 3], [4, 5, 6]], 'b': [1, 2, 3]})
    drawn = drawing(graph, values, grads)
    b = graph.inputs['b']
    (edge,) = [link for link in drawn.links if link.src == b]
    assert edge.grad.tolist() == [2.0, 2.0, 2.0]
    assert re.search(r'n%d -> n\d+ \[[^]]*label="\[2, 2, 2\]"' % b,
                     render(graph, values, grads).source)


def test_static_arguments_are_part_of_their_op_not_nodes():
    graph, values, grads = passes('sum(A, 0)[1]', {'A': [[1, 2], [3, 4]]})
    drawn = drawing(graph, values, grads)
    static = {i for i, node in enumerate(graph.nodes) if node.op == 'static'}
    assert static and not static & {item.id for item in drawn.items}
    assert not any(link.src in static for link in drawn.links)


def test_color_magnitude_judges_an_array_by_its_gradients_norm():
    graph, values, grads = passes('sum(1e-6 * tanh(x))', {'x': [0.1, 0.2]})
    dot = render(graph, values, grads, look=Look(color='magnitude')).source
    assert '(vanishing)' in ''.join(labels(dot)[graph.inputs['x']])


def test_color_magnitude_says_why_a_number_gets_zero_from_an_array(tmp_path):
    # It asked `local == 0` of an array, an internal error (a review's case): here
    # b's gradient is sum(2·X·b · X), 0 as X is, and ∂(X*b)/∂b is X.
    from autodiff_cli.pictures.health import diagnose
    graph, values, grads = passes('input X[3], b = 1.0\nloss = sum((X*b)^2)',
                                  {'X': [0.0, 0.0, 0.0], 'b': 1.0})
    health = diagnose(graph, values, grads)[graph.inputs['b']]
    assert health.state == 'zero' and health.reason == 'zero: ∂(X*b)/∂b = 0 (node 2)', health


@needs_dot
def test_render_draws_an_array_program_and_refuses_an_array_output_in_one_line(tmp_path):
    out = tmp_path / 'a.png'
    done = run_main(['render', LEAST_SQUARES, *(f'{k}={v}' for k, v in POINT.items()),
                     '-o', str(out)])
    assert done.code == 0, done.err
    width, height = struct.unpack('>II', out.read_bytes()[16:24])
    assert width <= 1920 and height <= 1080
    refused = run_main(['render', 'A @ x', 'A=[[1, 2], [3, 4]]', 'x=[1, -1]', '-o', str(out)])
    assert refused.code == 2 and refused.err.count('\n') == 1 and 'Traceback' not in refused.err
    assert 'shape [2]' in refused.err


# ---- --unroll: the same program, entry by entry ----

UNROLLED = [
    ('sum(softmax(z) * w)', {'z': [0.5, -1.0, 2.0], 'w': [1.0, 2.0, 3.0]}),
    ('logsumexp(A, axis=1) @ v + mean(A, axis=0)[1]', {'A': [[1, 2], [3, -4]], 'v': [0.5, -2]}),
    ('norm(A.T @ v) + norm(v, 1) + prod(v) + max(A) - min(v)', {'A': [[1, 2], [3, 4]],
                                                               'v': [0.5, -2]}),
    ('sum(outer(v, w)) + trace(reshape(concat(v, w), [2, 2])) + sum(diag(v))',
     {'v': [1, -2], 'w': [3, 0.5]}),
    ('sum(where(v > 0, v^2, -v)) + sum(stack(v, v)[1])', {'v': [1.5, -2]}),
    ('sum(tanh(A @ B) * [[1, 2, 3], [4, 5, 6]]) + sum(v @ B)',
     {'A': [[1, 2], [3, -4]], 'B': [[0.5, -1, 2], [1, 0.25, -0.5]], 'v': [1, -1]}),
]


@pytest.mark.parametrize('text, point', UNROLLED, ids=[t for t, _ in UNROLLED])
def test_unrolled_program_has_the_arrays_values_and_gradients_entry_by_entry(text, point):
    from autodiff_cli import backward, forward
    from autodiff_cli.pictures.unroll import unroll
    graph, values, grads = passes(text, point)
    numbers, at = unroll(graph, point)
    assert all(node.op not in tensors.PRIMITIVES or tensors.PRIMITIVES[node.op].kind != 'tensor'
               for node in numbers.nodes)
    got = forward(numbers, at)
    back = backward(numbers, got)
    assert got[numbers.output] == pytest.approx(float(values[graph.output]), rel=1e-12)
    for name, i in graph.inputs.items():
        g = np.asarray(grads[i])
        for k in np.ndindex(g.shape):
            entry = name if not k else f'{name}[{",".join(map(str, k))}]'
            assert back[numbers.inputs[entry]] == pytest.approx(g[k], rel=1e-9, abs=1e-12), entry


def test_unrolled_mlp_is_the_scalar_mlp_neuron_by_neuron():
    from autodiff_cli import backward, forward
    from autodiff_cli.pictures.unroll import unroll
    graph = lower((ROOT / 'samples' / 'mlp.ad').read_text())
    numbers, at = unroll(graph, graph.defaults)
    scalar = lower((ROOT / 'samples' / 'mlp_scalar.ad').read_text())
    mine, theirs = forward(numbers, at), forward(scalar, scalar.defaults)
    by_name = {n.name: i for i, n in enumerate(numbers.nodes) if n.name}
    for k in range(4):   # h[k] is neuron k + 1, tanh(W1[k,0]*x[0] + b1[k])
        assert mine[by_name[f'h[{k}]']] == pytest.approx(theirs[scalar.nodes.index(next(
            n for n in scalar.nodes if n.name == f'h{k + 1}'))], rel=1e-15)
        assert numbers.text(by_name[f'h[{k}]']) == f'tanh(W1[{k},0]*x[0] + b1[{k}])'
    grads, expected = backward(numbers, mine), backward(scalar, forward(scalar, scalar.defaults))
    assert grads[numbers.inputs['W1[2,0]']] == pytest.approx(expected[scalar.inputs['w3']])


@pytest.mark.parametrize('argv, message', [
    (['sum(x)', 'x=[' + ', '.join(['1'] * 61) + ']'], 'at most 60 numbers'),
    (['det(A)', 'A=[[1, 2], [3, 4]]'], 'cannot write det'),
    (['x*y', 'x=1', 'y=2'], 'of numbers already'),
    (['sum(A @ x)', 'A=[[1, 2], [3, 4]]'], "'x' has none"),
    # (was an internal error, KeyError: 'loop')
    (['input x[2] = [1, 2]; for i in 0..3 { x = sin(x) }; sum(x)'], 'without loops')])
def test_unroll_refuses_in_one_line(argv, message, tmp_path):
    done = run_main(['render', *argv, '--unroll', '-o', str(tmp_path / 'u.svg')])
    assert done.code == 2 and done.err.count('\n') == 1 and message in done.err, done.err


@needs_dot
def test_render_unroll_draws_the_mlp_as_neurons(tmp_path):
    out = tmp_path / 'u.svg'
    done = run_main(['render', '-f', str(ROOT / 'samples' / 'mlp.ad'), '--unroll', '-o', str(out)])
    assert done.code == 0, done.err
    svg = out.read_text(encoding='utf-8')
    for k in range(4):
        assert f'h[{k}] = tanh(W1[{k},0]*x[0]' in svg.replace('&#160;', ' ')


def test_a_long_label_is_shortened_between_whole_terms():
    """The unrolled MLP's `out` read `V[0,0]*h[0] + V[0,1]…] + V[0,3]*h[3] + c`:
    cut mid-term, a stray bracket. Whole terms from each end, '…' between."""
    from autodiff_cli.pictures.unroll import unroll
    graph = lower((ROOT / 'samples' / 'mlp.ad').read_text())
    numbers, _ = unroll(graph, graph.defaults)
    texts = [t for item in drawing(numbers).items for t in (item.expr, item.title) if t]
    assert 'out = V[0,0]*h[0] + … + V[0,3]*h[3] + c' in texts
    for text in texts:
        shown = text.replace('…', '')
        assert shown.count('[') == shown.count(']'), text
    from autodiff_cli.pictures.text import shortened
    assert shortened('a*b + c', 40) == 'a*b + c'
    assert shortened('first + second + third + fourth + fifth + sixth', 30) == \
        'first + … + fifth + sixth'
    # two terms too long for both: the first whole, and what follows it
    assert shortened('logsumexp(logits, axis=1) - sum(y * logits, axis=1)', 40) == \
        'logsumexp(logits, axis=1) - …'
    # one long term: cut beside a name, never inside an index
    cut = shortened('tanh(W1[0,0]*x[0] + W1[0,1]*x[1] + b1[0]) * tanh(W1[1,0]*x[0])', 40)
    assert len(cut) <= 41 and re.fullmatch(r'[^…]*[\s*+(]…[\s*+]?tanh.*', cut), cut


@pytest.mark.parametrize('fmt', ['dot', 'text'])
def test_render_data_draws_no_gradient_on_the_datas_columns(fmt, tmp_path):
    """grad --data prints no gradient for the data's columns; the picture drew
    one on them (x [60,2] ... norm 0.06747). Now it shows their values, says
    'data: no gradient', and no gradient arrow runs into them; the
    parameters keep theirs."""
    argv = ['render', '-f', str(ROOT / 'samples' / 'mlp_xor.ad'),
            '--data', str(ROOT / 'samples' / 'xor.csv'), '--format', fmt, '-o', '-']
    done = run_main(argv)
    assert done.code == 0, done.err
    if fmt == 'text':   # the table: no number in the column ∂f/∂node
        cells = {row[3]: row[-2] for row in (line.split('│') for line in done.out.splitlines())
                 if len(row) > 4}
        assert cells[' x         '].strip() == '-' and 'norm' in cells[' W1        ']
        return
    found = labels(done.out)
    graph = lower((ROOT / 'samples' / 'mlp_xor.ad').read_text())
    for name in ('x', 'y'):
        texts = found[graph.inputs[name]]
        assert 'data: no gradient' in texts and not any('0.06747' in t for t in texts), texts
        assert not re.search(rf'n{graph.inputs[name]} -> n\d+ \[[^\]]*dir=back', done.out)
    assert any('norm 0.1973' in t for t in found[graph.inputs['W1']])   # ∂f/∂W1's norm
