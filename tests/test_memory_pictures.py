"""What the backward pass keeps, drawn (issue 29): saved values read off the
rules, `render --memory`, `render --checkpoint` and its step frames.

Counts are checked against the programs by hand: samples/deep.ad's layer is
tanh(1.5*a + 0.1), whose rules read the tanh's output and the product's
arguments, never the sum."""

import re
import shutil
from pathlib import Path

import pytest

from autodiff_cli import lower
from autodiff_cli.cli.main import main
from autodiff_cli.core import checkpoint
from autodiff_cli.core.passes import backward, forward
from autodiff_cli.core.primitives import NUMBERS
from autodiff_cli.core.saved import OUT, reads, saved

from tests.helpers import run_main
from tests.test_pictures import SLIDE, points, smallest_font, svg_of

ROOT = Path(__file__).parent.parent
needs_dot = pytest.mark.skipif(shutil.which('dot') is None, reason='Graphviz is not installed')
CHAIN = 'input x = 0.5\n' + ''.join(f'x{k} = tanh({"x" if k == 1 else f"x{k - 1}"})\n'
                                    for k in range(1, 17)) + 'z = x16^2\n'


@pytest.mark.parametrize('op, read', [('add', set()), ('sub', set()), ('neg', set()),
                                      ('mul', {0, 1}), ('tanh', {OUT}), ('exp', {OUT}),
                                      ('sin', {0}), ('sqrt', {OUT})])
def test_a_rule_reads_what_its_formula_uses(op, read):
    # ∂(a + b) = g, g; ∂(a*b) = g*b, g*a; tanh' = (1 - y)(1 + y); sin' = cos(a)
    args = [0.7] * (1 if op in ('neg', 'tanh', 'exp', 'sin', 'sqrt') else 2)
    assert reads(op, 0.5, args, NUMBERS) == read


def test_the_plain_pass_keeps_what_the_rules_read_and_gets_the_same_gradients():
    graph = lower((ROOT / 'samples/deep.ad').read_text())
    values = forward(graph, graph.defaults)
    keep = saved(graph, values, NUMBERS)
    ops = [node.op for node, k in zip(graph.nodes, keep) if k and node.args]
    assert ops.count('tanh') == 10 and ops.count('add') == 0 and ops.count('pow') == 1
    run = checkpoint.gradients(graph, graph.defaults, NUMBERS)
    assert run.grads[graph.inputs['x']] == backward(graph, values)[graph.inputs['x']]
    assert run.memory.values == sum(keep)


def marked(dot, what):
    return len(re.findall(rf'>{what}, 32 B<', dot))


def dot_of(*argv):
    code, out, err = run_main(['render', *argv, '--format', 'dot', '-o', '-'])
    assert code == 0, err
    return out


def test_render_memory_marks_each_layers_tanh_as_kept(monkeypatch):
    monkeypatch.chdir(ROOT)
    dot = dot_of('-f', 'samples/deep.ad', '--collapse', 'blocks', '--memory')
    # x, z and each call's tanh: one of its three computed values
    assert len(re.findall(r'keeps 1 of 3 values, 32 B', dot)) == 10
    assert marked(dot, 'kept') == 2
    assert 'the backward pass keeps 12 values, 384 B' in dot


def test_render_checkpoint_draws_segments_and_their_checkpoints(monkeypatch):
    monkeypatch.chdir(ROOT)
    dot = dot_of('-f', 'samples/deep.ad', '--collapse', 'blocks', '--checkpoint', 'sqrt')
    # 12 units (x, ten calls, z; the 2 as well): ⌈√13⌉ = 4 a segment
    assert re.findall(r'segment \d: computed again from (\w+)', dot) == ['x', 'x3', 'x7']
    assert marked(dot, 'checkpoint') == 3 and dot.count('>computed again<') == 8 + 1   # + legend
    loop = dot_of('-f', 'samples/deep_loop.ad', '--checkpoint', 'every:4')
    assert 'iterations: ■□□□ ■□□□ ■□' in loop
    assert 'keeps its state every 4 iterations: 3, 96 B' in loop


def test_checkpointed_steps_compute_a_segment_again_before_its_gradients(tmp_path):
    from autodiff_cli.cli.render import _memory_plan   # noqa: F401 (the command's own plan)
    from autodiff_cli.pictures.render import drawing
    from autodiff_cli.pictures.steps import checkpoint_steps
    graph = lower(CHAIN)
    values = forward(graph, graph.defaults)
    grads = backward(graph, values)
    plan = checkpoint.plan(graph, values, NUMBERS, checkpoint.policy('sqrt'))
    drawn = drawing(graph, values, grads, plan=plan, folds=False)
    step_list, frames = checkpoint_steps(graph, values, grads, plan, drawn)
    segment = {item.id: item.segment for item in drawn.items}
    again = [k for k, frame in enumerate(frames) if frame.again]
    assert [segment[step_list[k].node] for k in again] == [3, 2, 1, 0]   # the last first
    for k in again:   # before the segment's first gradient, its values are back
        assert frames[k].again.isdisjoint(frames[k].dropped)
        first = next(j for j in range(k + 1, len(frames)) if not frames[j].again)
        assert segment[step_list[first].node] == segment[step_list[k].node]
        assert all(frames[j].again.isdisjoint(frames[j].done) for j in range(k + 1))


@needs_dot
@pytest.mark.parametrize('argv', [
    ['-f', 'samples/deep.ad', '--collapse', 'blocks', '--checkpoint', 'sqrt'],
    ['-f', 'samples/deep.ad', '--collapse', 'blocks', '--memory'],
    ['-f', 'samples/deep_loop.ad', '--checkpoint', 'sqrt'],
    ['-f', 'samples/deep_loop.ad', '--memory'],
    ['-f', 'CHAIN', '--checkpoint', 'sqrt'], ['-f', 'CHAIN', '--memory']],
    ids=lambda argv: ' '.join(argv[1:]))
def test_memory_pictures_fit_a_16_9_slide_with_12_point_text(argv, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    chain = tmp_path / 'chain.ad'
    chain.write_text(CHAIN)
    svg = svg_of(tmp_path, *[str(chain) if a == 'CHAIN' else a for a in argv])
    width, height = points(svg)
    assert width <= SLIDE[0] and height <= SLIDE[1], (width * 2, height * 2)
    assert smallest_font(svg) >= 12


@pytest.mark.parametrize('argv, message', [
    (['--memory', '--checkpoint', 'sqrt'], 'give one of them'),
    (['--checkpoint', 'auto'], 'draws sqrt or every:K'),
    (['--checkpoint', 'every:0'], "unknown --checkpoint 'every:0'"),
    (['--memory', '--format', 'html'], 'not html'),
    (['--memory', '--pass', 'forward'], 'draw the backward pass')])
def test_bad_memory_picture_options_are_one_line_usage_errors(argv, message, monkeypatch):
    monkeypatch.chdir(ROOT)
    code, _, err = run_main(['render', '-f', 'samples/deep.ad', *argv, '-o', '-'])
    assert code == 2 and message in err and err.count('\n') == 1, err


def test_a_constant_exponent_is_differentiated_only_over_numbers():
    # torch's needs_input_grad: over arrays ∂(x^2)/∂2 = x^2·log(x) is never
    # asked for, so the rule neither computes it nor keeps x^2 for it; the
    # exponent of x^y is a variable's, and keeps it. Numbers compute every
    # cotangent, so their probe reads the output either way.
    import numpy as np

    from autodiff_cli.core import tensors
    k = tensors.algebra()
    x, y = np.array([0.5, 2.0, 3.0]), np.array([2.0, 0.5, 1.5])
    assert reads('pow', x ** 2, [x, np.asarray(2.0)], k, needless=frozenset([1])) == {0, 1}
    assert reads('pow', x ** y, [x, y], k) == {OUT, 0, 1}
    assert reads('pow', 0.25, [0.5, 2.0], NUMBERS, needless=frozenset([1])) == {OUT, 0, 1}
    for text, power_kept in (('input x[3], y[3]\nmean(x^2)', False),
                             ('input x[3], y[3]\nmean(x^y)', True)):
        graph = lower(text)
        point = {'x': x, 'y': y}
        run = checkpoint.array_gradients(graph, point)
        power = next(i for i, node in enumerate(graph.nodes) if node.op == 'pow')
        assert saved(graph, forward(graph, point, k), k)[power] is power_kept
        # the gradients, by hand: 2x/3 and x^y·log(x)/3 (0 where y is no input's)
        assert np.allclose(run.grads[graph.inputs['x']], y * x ** (y - 1) / 3
                           if power_kept else 2 * x / 3, rtol=1e-15)
        expected_y = x ** y * np.log(x) / 3 if power_kept else np.zeros(3)
        assert np.allclose(run.grads[graph.inputs['y']], expected_y, rtol=1e-15)


def test_a_loop_s_output_is_counted_once_by_the_report_and_the_picture(tmp_path):
    # Plain, the loop's output is its last iteration's value, counted with
    # the loop's; checkpointed, it is held beside the checkpoints. The report
    # had counted it twice plain, the picture not at all checkpointed.
    import json
    import numpy as np
    (tmp_path / 'p.ad').write_text('input X[40, 3], W[6, 3, 3]\nfor i in 0..6 {\n'
                                   '    X = tanh(X @ W[i])\n}\nloss = mean(X^2)\n')
    X = np.linspace(-1, 1, 120).reshape(40, 3)
    W = np.stack([np.eye(3) * (0.5 + k / 10) for k in range(6)])
    argv = ['-f', str(tmp_path / 'p.ad'), 'X=' + json.dumps(X.tolist()),
            'W=' + json.dumps(W.tolist())]
    activation = checkpoint.ARRAY_BYTES + X.nbytes
    # An iteration keeps its list of 6 places and its place in the run's,
    # its tanh, its index (a 0-d array) and its slice W[i] (a view); of the
    # product it drops, only the place. Each value's own place is counted once.
    iteration = (checkpoint.LIST_BYTES + 8 * 6 + 8 + (activation - 8)
                 + (checkpoint.ARRAY_BYTES + 8 - 8) + (checkpoint.ARRAY_BYTES - 8))
    for extra, loop_holds in (([], 6 * iteration), (['--checkpoint', 'every:2'], None)):
        run = run_main(['grad', *argv, '--memory', '--json', *extra])
        report = json.loads(run.out)['memory']
        held = dict((h['what'], h['bytes']) for h in report['held_most'])
        part = [what for what in held if what.startswith('tanh(X @ W[i])')]
        dot = dot_of(*argv, *(extra or ['--memory']))
        node = next(line for line in dot.splitlines() if 'X#3 = tanh' in line)
        if loop_holds is not None:   # plain: the loop holds the output, once
            assert held['loop for i in 0..6 (line 2)'] == loop_holds and part == []
            assert 'kept' not in node
        else:
            assert held[part[0]] == activation and f'kept, {activation / 1000:.1f} kB' in node
