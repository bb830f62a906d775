"""`render --steps` and `--format text` through a loop: one step per iteration,
the last first, each with the cotangents that came back through it, checked
against the chain rule by hand and central differences; with checkpoints a
step before each segment that computes it again; a long loop in a few steps."""

import math
import re

import numpy as np
import pytest

from autodiff_cli import backward, forward, lower
from autodiff_cli.core import tensors
from autodiff_cli.pictures.loop_steps import AGAIN, DONE, DROPPED, KEPT, NOW
from autodiff_cli.pictures.steps import steps
from autodiff_cli.pictures.text import number
from tests.helpers import run_main

SINES = 'input x = 0.5\nfor i in 0..4 {\n    x = sin(x)\n}\nz = x^2'


def _hand_sines(count=4, x=0.5):
    """∂z/∂x before each iteration t, by hand: z = x_n², x_{t+1} = sin(x_t)."""
    xs = [x]
    for _ in range(count):
        xs.append(math.sin(xs[-1]))
    after = [0.0] * (count + 1)
    after[count] = 2 * xs[count]
    for t in range(count - 1, -1, -1):
        after[t] = after[t + 1] * math.cos(xs[t])
    return after


def _loop_steps(graph, strides=None):
    values = forward(graph, {'x': 0.5})
    grads = backward(graph, values)
    listed = steps(graph, values, grads, strides)
    loop = graph.loops[0]
    return [s for s in listed if s.node == loop], listed, grads


def test_each_iteration_says_what_came_back_through_it_as_the_chain_rule_by_hand():
    graph = lower(SINES)
    mine, listed, grads = _loop_steps(graph)
    hand = _hand_sines()
    assert len(mine) == 4
    for k, step in enumerate(mine):
        t = 3 - k                              # the last iteration first
        assert step.caption.startswith(f'Iteration {t + 1} of 4 (i={t}), backward')
        assert f'∂z/∂x is {number(hand[t + 1])} after it, {number(hand[t])} before' \
            in step.caption, step.caption
    # what the loop passes back is backward()'s gradient, and the input's step says it
    assert listed[-1].node == graph.inputs['x']
    assert listed[-1].caption == f'∂z/∂x = what the loop passes back = {number(grads[0])}'
    assert math.isclose(grads[0], hand[0], rel_tol=1e-14)


def test_a_checkpointed_loop_computes_each_segment_again_before_its_gradients():
    graph = lower(SINES)
    mine, _, _ = _loop_steps(graph, lambda i: (2,))   # a state every 2 iterations
    captions = [s.caption.split(',')[0] for s in mine]
    assert captions == [
        'Iterations 3 to 4 of 4 are computed again from the state kept at the start of '
        'iteration 3 (i=2)', 'Iteration 4 of 4 (i=3)', 'Iteration 3 of 4 (i=2)',
        'Iterations 1 to 2 of 4 are computed again from the state kept at the start of '
        'iteration 1 (i=0)', 'Iteration 2 of 4 (i=1)', 'Iteration 1 of 4 (i=0)']
    cells = [re.sub(r'^backward: | +\(.*$', '', s.strip[0]) for s in mine]
    assert cells == [f'{KEPT}{DROPPED} {AGAIN}{AGAIN}', f'{KEPT}{DROPPED} {AGAIN}{NOW}',
                     f'{KEPT}{DROPPED} {NOW}{DONE}', f'{AGAIN}{AGAIN} {DONE}{DONE}',
                     f'{AGAIN}{NOW} {DONE}{DONE}', f'{NOW}{DONE} {DONE}{DONE}']
    assert re.sub(r'^backward: | +\(.*$', '', mine[-1].strip[1]) == f'{DONE}{DONE} {DONE}{DONE}'


def test_an_array_loop_tells_each_slice_its_gradient_as_central_differences_give_it():
    source = ('input X[4, 3], W[3, 3, 3], b[3, 3], c = 0.5\nfor i in 0..3 {\n'
              '    X = tanh(X @ W[i] + c*b[i])\n}\nloss = mean(X^2)')
    graph = lower(source)
    rng = np.random.default_rng(7)
    point = {'X': rng.standard_normal((4, 3)), 'W': rng.standard_normal((3, 3, 3)) / 2,
             'b': rng.standard_normal((3, 3)), 'c': 0.5}
    values = tensors.evaluate(graph, point)
    grads = tensors.gradients(graph, values)
    mine = [s for s in steps(graph, values, grads) if s.node == graph.loops[0]]

    def loss(b):
        return float(tensors.evaluate(graph, {**point, 'b': b})[graph.output])
    h, shares = 1e-6, []
    for k, step in enumerate(mine):
        t = 2 - k
        row = []
        for j in range(3):
            up, down = point['b'].copy(), point['b'].copy()
            up[t, j] += h
            down[t, j] -= h
            row.append((loss(up) - loss(down)) / (2 * h))
        shown = re.search(rf'∂loss/∂b\[{t}\] is \[([^\]]*)\]', step.caption).group(1)
        assert np.allclose([float(v) for v in shown.split(', ')], row, rtol=2e-3, atol=1e-6), \
            (step.caption, row)
        shares.append(float(re.search(r'∂loss/∂c \+= (\S+?);', step.caption).group(1)))
    up, down = dict(point, c=0.5 + h), dict(point, c=0.5 - h)
    d_c = (float(tensors.evaluate(graph, up)[graph.output])
           - float(tensors.evaluate(graph, down)[graph.output])) / (2 * h)
    assert math.isclose(sum(shares), d_c, rel_tol=2e-3)


def test_a_long_loop_is_told_in_a_few_steps_of_runs_of_iterations():
    graph = lower('input x = 0.5\nfor i in 0..1000 {\n    x = x + 0.1*sin(x)\n}\nz = x')
    mine, _, grads = _loop_steps(graph)
    xs = [0.5]
    for _ in range(1000):
        xs.append(xs[-1] + 0.1 * math.sin(xs[-1]))
    hand = [1.0] * 1001            # ∂z/∂x before iteration t, by hand
    for t in range(999, -1, -1):
        hand[t] = hand[t + 1] * (1 + 0.1 * math.cos(xs[t]))
    assert len(mine) == 10
    for k, step in enumerate(mine):
        high, low = 1000 - 100 * k, 901 - 100 * k
        assert step.caption == (f'Iterations {high:,} down to {low:,} of 1,000, backward: ∂z/∂x '
                                f'is {number(hand[high])} after them, {number(hand[low - 1])} '
                                f'before'), step.caption
    assert number(hand[0]) == number(grads[0])
    assert mine[-1].strip == ('backward: 900 of 1,000 iterations done, 100 now',
                              'backward: 1,000 of 1,000 iterations done')


def test_render_draws_and_lists_the_steps_through_a_loop(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = run_main(['render', SINES, '--format', 'text', '-o', '-'])
    assert run.code == 0, run.err
    listed = re.findall(r'^ +\d+\. (.*)$', run.out, re.M)
    assert [line.split(',')[0] for line in listed[2:6]] == [
        'Iteration 4 of 4 (i=3)', 'Iteration 3 of 4 (i=2)', 'Iteration 2 of 4 (i=1)',
        'Iteration 1 of 4 (i=0)']
    run = run_main(['render', SINES, '--steps', 'frames', '--checkpoint', 'every:2',
                    '-o', 'all.svg'])
    assert run.code == 0, run.err
    frames = sorted((tmp_path / 'frames').glob('step-*.svg'))
    assert len(frames) == 2 + 6 + 1
    last = frames[-1].read_text()
    cells = re.search(rf'backward: ([{KEPT}{DROPPED}{AGAIN}{NOW}{DONE} ]+)', last).group(1).strip()
    assert cells == f'{DONE}{DONE} {DONE}{DONE}', cells
    run = run_main(['render', SINES, '--step', '4', '-o', 'one.svg'])
    assert run.code == 0 and 'Iteration 3 of 4' in (tmp_path / 'one.svg').read_text()


def test_what_reaches_the_last_iteration_is_every_result_of_the_loop_carried_or_not():
    # h is bound in the body, y copies x: both reach the last iteration (a review's cases)
    graph = lower('input x = 0.5\nfor i in 0..3 {\n    h = sin(x)\n    x = h * 2\n}\nz = h^2')
    values = forward(graph, {'x': 0.5})
    mine = [s for s in steps(graph, values, backward(graph, values)) if s.node == graph.loops[0]]
    xs = [0.5]
    for _ in range(3):
        xs.append(2 * math.sin(xs[-1]))
    h = math.sin(xs[2])
    # ∂z/∂x before the last iteration: through h = sin(x) alone, x's own result unused
    assert mine[0].caption == (f'Iteration 3 of 3 (i=2), backward: ∂z/∂h is {number(2 * h)} '
                               f'after it; ∂z/∂x is {number(2 * h * math.cos(xs[2]))} before it')
    graph = lower('input x = 0.5\ninput y = 0.1\nfor i in 0..2 {\n    x = sin(x)\n    y = x\n}\n'
                  'z = x^2 + 3*y')
    values = forward(graph, {'x': 0.5, 'y': 0.1})
    mine = [s for s in steps(graph, values, backward(graph, values)) if s.node == graph.loops[0]]
    x1, x2 = math.sin(0.5), math.sin(math.sin(0.5))
    assert mine[0].caption == (f'Iteration 2 of 2 (i=1), backward: ∂z/∂x is {number(2 * x2)} '
                               f'after it, {number((2 * x2 + 3) * math.cos(x1))} before; '
                               f'∂z/∂y is 3 after it')


def test_a_read_value_gets_its_share_from_each_run_and_two_loops_are_told_apart():
    source = ('input x = 0.5, c = 0.1\nfor i in 0..100 {\n    x = x + c*sin(x)\n}\n'
              'for j in 0..1 {\n    x = -x\n}\nz = c*x')
    graph = lower(source)
    values = forward(graph, {'x': 0.5, 'c': 0.1})
    grads = backward(graph, values)
    listed = steps(graph, values, grads)
    runs = [s for s in listed if s.node == graph.loops[0]]
    shares = [float(re.search(r'∂z/∂c \+= (\S+)$', s.caption).group(1)) for s in runs]
    assert len(runs) == 10
    h = 1e-7

    def z(c):
        x = 0.5
        for _ in range(100):
            x = x + c * math.sin(x)
        return c * -x
    through_loop = (z(0.1 + h) - z(0.1 - h)) / (2 * h) - z(0.1) / 0.1   # less c's own use
    assert math.isclose(sum(shares), through_loop, rel_tol=1e-3)
    c_step = next(s for s in listed if s.node == graph.inputs['c'])
    assert 'what the loop on line 2 passes back' in c_step.caption
    x_step = next(s for s in listed if s.node == graph.inputs['x'])
    assert x_step.caption == f'∂z/∂x = what the loop on line 2 passes back = {number(grads[0])}'
    assert grads[0] < 0 and '(-' not in x_step.caption      # a negative number, said once


def test_a_loops_gradient_shows_as_its_results_and_colours_by_it(tmp_path):
    from autodiff_cli.pictures.health import diagnose
    graph = lower(SINES)
    values = forward(graph, {'x': 0.5})
    health = diagnose(graph, values, backward(graph, values))
    assert health[graph.loops[0]].state == 'ok', health[graph.loops[0]]
    np.save(tmp_path / 'W.npy', np.random.default_rng(3).standard_normal((3, 3, 3)))
    run = run_main(['render', 'input X[4, 3], W[3, 3, 3]\nfor i in 0..3 {\n    X = tanh(X @ W[i])\n'
                    '}\nloss = mean(X^2)', f'X={np.ones((4, 3)).tolist()}', f'W=@{tmp_path / "W.npy"}',
                    '--color', 'magnitude', '-o', str(tmp_path / 'x.svg')])
    assert run.code == 0, run.err
    assert 'cancel' not in (tmp_path / 'x.svg').read_text()


def test_the_text_table_says_what_backward_keeps_and_lists_the_segments_computed_again(tmp_path):
    # every:2 over 4 iterations keeps the state before iterations 1 and 3 and
    # runs all 4 again; with x, the loop's result and z, five floats of 32 B
    # are kept: the table, its summary and the steps say so, as the pictures do
    run = run_main(['render', SINES, '--checkpoint', 'every:2', '--format', 'text', '-o', '-'])
    assert run.code == 0, run.err
    assert re.search(r'keeps its state every 2\s.*iterations: 2, 64 B', run.out, re.S), run.out
    assert 'every:2: keeps 5 values, 160 B; computes 4 again' in run.out, run.out
    listed = re.findall(r'^ +\d+\. (.*)$', run.out, re.M)
    assert [line.split(',')[0] for line in listed[2:8]] == [
        'Iterations 3 to 4 of 4 are computed again from the state kept at the start of '
        'iteration 3 (i=2)', 'Iteration 4 of 4 (i=3)', 'Iteration 3 of 4 (i=2)',
        'Iterations 1 to 2 of 4 are computed again from the state kept at the start of '
        'iteration 1 (i=0)', 'Iteration 2 of 4 (i=1)', 'Iteration 1 of 4 (i=0)']


def test_the_text_table_prints_a_policy_and_a_slice_as_written():
    # rich read ':100:' as an emoji code: 'every💯 keeps' (a review's case)
    run = run_main(['render', SINES, '--checkpoint', 'every:100', '--format', 'text', '-o', '-'])
    assert run.code == 0 and 'every:100: keeps' in run.out, run.out
    run = run_main(['render', 'input x[4]\nsum(x[0:4:2])', 'x=[1,2,3,4]', '--format', 'text',
                    '-o', '-'])
    assert run.code == 0 and 'x[0:4:2]' in run.out, run.out


def test_a_segment_of_one_value_is_said_in_the_singular():
    run = run_main(['render', 'input a = 2.0, b = -1.0, g = 0.5\nm = max(a, b)\n'
                    'lse = m + log(exp(a - m) + exp(b - m))\nloss = lse*g - a',
                    '--checkpoint', 'every:3', '--format', 'text', '-o', '-'])
    assert run.code == 0, run.err
    counts = re.findall(r', (\d+) (values?), before its', run.out.replace('\n      ', ' '))
    assert {n == '1' for n, _ in counts} == {True, False}, run.out   # both are said
    assert all((n == '1') == (word == 'value') for n, word in counts), counts


def test_a_stacked_arrays_row_reaches_each_iteration_of_a_reversed_loop():
    # x_{next} = sin(x)*i + x/2 with i = 3, 2, 1, 0; f = sum(X) + x, X[i] the x
    # iteration i starts from: ∂f/∂x before iteration i is ∂x_next/∂x times what
    # came after it, plus 1 for X[i]
    source = ('input x = 0.5\nfor i in reversed(0..4) {\n    X[i] = x\n'
              '    x = sin(x) * i + 0.5*x\n}\nsum(X) + x')
    run = run_main(['render', source, '--format', 'text'])
    xs = [0.5]
    for i in (3, 2, 1, 0):
        xs.append(math.sin(xs[-1]) * i + 0.5 * xs[-1])
    after, lines = 1.0, [line for line in run.out.splitlines() if 'Iteration' in line]
    for line, t, i in zip(lines, (3, 2, 1, 0), (0, 1, 2, 3)):
        before = after * (math.cos(xs[t]) * i + 0.5) + 1.0
        assert f'(i={i})' in line and f'∂f/∂X[{i}] is 1;' in line, line
        assert f'∂f/∂x is {number(after)} after it, {number(before)} before' in line, line
        after = before
    assert len(lines) == 4
