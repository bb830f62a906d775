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
        assert step.within == (t > 0)          # the loop is done with its first iteration
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
        shown = re.search(r'∂loss/∂b\[i\] = \[([^\]]*)\]', step.caption).group(1)
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
