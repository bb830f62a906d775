"""`for` loops: the same numbers as the program written out (unrolled), at a
point, in a batch and with arrays (PyTorch float64 where installed), in
time and memory linear in the iterations, and one-line errors with a caret."""

import json
import re

import numpy as np
import pytest

from autodiff_cli import backward, forward, lower
from autodiff_cli.core import tensors
from autodiff_cli.core.batch import run_batch
from tests.helpers import numpy_kernels, run_main


def unrolled(source):
    """The program with each (unnested) loop written out, its index a number."""
    pattern = re.compile(r'for (\w+) in (\d+)\.\.(\d+) \{\n(.*?)\n\}', re.S)

    def expand(match):
        name, first, stop, body = match.groups()
        return '\n'.join(re.sub(rf'\b{name}\b', str(t), body)
                         for t in range(int(first), int(stop)))
    return pattern.sub(expand, source)


def point(source, **inputs):
    graph = lower(source)
    values = forward(graph, inputs)
    grads = backward(graph, values)
    return values[graph.output], {name: grads[i] for name, i in graph.inputs.items()}


SCALAR = {
    'tanh chain': ('input x = 0.5\nfor i in 0..10 {\n    x = tanh(1.5*x + 0.1)\n}\nz = x^2',
                   {'x': 0.5}),
    'two carried': ('input x = 0.3, a = 1.1\ns = 0\nfor i in 0..6 {\n    s += x * i\n'
                    '    x = if(x > 0.5, sin(a*x), x + a/4)\n}\nz = s + x', {'x': 0.3, 'a': 1.1}),
    'a name bound in the body': ('input x = 0.7, w = 0.9\nfor k in 2..7 {\n    h = w*x + k\n'
                                 '    x = log(1 + h^2) - x\n}\nz = x * h', {'x': 0.7, 'w': 0.9}),
    'swap': ('input a = 0.5, b = 2\nfor i in 0..5 {\n    t = a\n    a = b*a + 0.1\n'
             '    b = t - sin(b)\n}\nz = a * b', {'a': 0.5, 'b': 2.0}),
    'block call': ('input x = 0.4, c = 0.3\nf(u) = u*c + sin(u)\nfor i in 0..4 {\n'
                   '    x = f(x) - c\n}\nz = x', {'x': 0.4, 'c': 0.3}),
}


@pytest.mark.parametrize('name', sorted(SCALAR))
def test_a_loop_gives_what_its_unrolled_program_gives(name):
    source, inputs = SCALAR[name]
    value, grads = point(source, **inputs)
    value_out, grads_out = point(unrolled(source), **inputs)
    assert value == value_out
    # A value the body only reads sums its gradient iteration by iteration,
    # the unrolled program in one tape order: an ulp or two apart.
    assert grads == pytest.approx(grads_out, rel=1e-14, abs=0)
    # With nothing but carried values, the same operations in the same order:
    chain = 'input x = 0.5\nfor i in 0..10 {\n    x = tanh(1.5*x + 0.1)\n}\nz = x'
    assert point(chain, x=0.5) == point(unrolled(chain), x=0.5)


@pytest.mark.parametrize('name', sorted(SCALAR))
def test_a_loop_in_a_batch_gives_each_row_its_single_point(name):
    source, inputs = SCALAR[name]
    graph = lower(source)
    rng = np.random.default_rng(3)
    rows = 40
    columns = {k: v + rng.uniform(-0.6, 0.6, rows) for k, v in inputs.items()}
    wrt = list(graph.inputs)
    value, gradient, _ = run_batch(graph, columns, rows, wrt)
    for r in range(rows):
        at = {k: float(c[r]) for k, c in columns.items()}
        with numpy_kernels():   # NumPy's tanh and log can be an ulp from C's
            v, g = point(source, **at)
        assert value[r] == v
        assert all(gradient[k][r] == g[k] for k in wrt), (r, at)


def test_an_if_inside_a_loop_takes_its_branch_per_row_and_its_nan_never_reaches_a_gradient():
    # A row that takes `then` computes log(-x) = nan on the other side, in a batch.
    source = 'input x = 1\nfor i in 0..4 {\n    x = if(x > 0, x*0.5 + 1, log(-x))\n}\nz = x'
    columns = {'x': np.array([1.0, -5.0, 3.0, -0.5, -20.0])}
    value, gradient, _ = run_batch(lower(source), columns, 5, ['x'])
    for r in range(5):
        with numpy_kernels():
            v, g = point(source, x=float(columns['x'][r]))
        assert value[r] == v and gradient['x'][r] == g['x']
    assert gradient['x'][0] == 0.5 ** 4
    assert np.isfinite(gradient['x']).all()


MLP = 'input W[4, 3, 3], b[4, 3], x[3]\nfor i in 0..4 {\n    x = tanh(W[i] @ x + b[i])\n}\nloss = sum(x^2)'


def mlp_inputs():
    rng = np.random.default_rng(0)
    return {'W': rng.normal(size=(4, 3, 3)) * 0.5, 'b': rng.normal(size=(4, 3)) * 0.1,
            'x': rng.normal(size=3)}


def array_point(source, inputs):
    graph = lower(source)
    values = tensors.evaluate(graph, inputs)
    grads = tensors.gradients(graph, values)
    return values[graph.output], {name: grads[i] for name, i in graph.inputs.items()}


def assert_torchs_tanh_layers(value, grads, inputs):
    """value and grads are those of sum(x^2) after x = tanh(W[i] @ x + b[i])
    over every slice, as torch computes them."""
    torch = pytest.importorskip('torch')
    t = {k: torch.tensor(v, requires_grad=True) for k, v in inputs.items()}
    h = t['x']
    for i in range(len(inputs['W'])):
        h = torch.tanh(t['W'][i] @ h + t['b'][i])
    loss = (h ** 2).sum()
    loss.backward()
    assert value == pytest.approx(loss.item(), rel=1e-14)
    for k in inputs:
        np.testing.assert_allclose(grads[k], t[k].grad.numpy(), rtol=1e-12, atol=1e-15)


def test_an_array_loop_takes_the_slices_of_a_stacked_parameter_as_torch_does():
    pytest.importorskip('torch')
    inputs = mlp_inputs()
    assert_torchs_tanh_layers(*array_point(MLP, inputs), inputs)


STACKED = ('input W[4, 3, 3], b[4, 3], x[3]\nfor i in reversed(0..4) {\n    X[i] = x\n'
           '    x = tanh(W[i] @ x + b[i])\n    H[i] = x * i\n}\n'
           'loss = sum(X^2) + sum(x) + sum(H[1])')


def test_stacked_outputs_of_a_reversed_loop_are_torchs_stack():
    torch = pytest.importorskip('torch')
    inputs = mlp_inputs()
    value, grads = array_point(STACKED, inputs)
    t = {k: torch.tensor(v, requires_grad=True) for k, v in inputs.items()}
    h, X, H = t['x'], [None] * 4, [None] * 4
    for i in reversed(range(4)):
        X[i] = h
        h = torch.tanh(t['W'][i] @ h + t['b'][i])
        H[i] = h * i
    loss = (torch.stack(X) ** 2).sum() + h.sum() + torch.stack(H)[1].sum()
    loss.backward()
    assert value == pytest.approx(loss.item(), rel=1e-14)
    for k in inputs:
        np.testing.assert_allclose(grads[k], t[k].grad.numpy(), rtol=1e-12, atol=1e-15)


def test_checkpointed_stacked_outputs_give_the_plain_gradient_bit_for_bit():
    from autodiff_cli.core import checkpoint
    graph = lower(STACKED)
    inputs = mlp_inputs()
    k = tensors.algebra()
    plain = tensors.gradients(graph, tensors.evaluate(graph, inputs))
    for how in ('every:1', 'every:3', 'sqrt'):
        got = checkpoint.gradients(graph, inputs, k, checkpoint.policy(how)).grads
        for name, i in graph.inputs.items():
            assert got[i].tobytes() == plain[i].tobytes(), (how, name)


def test_a_stacked_scalar_loop_differentiates_as_its_finite_differences():
    # X's rows: x before each iteration; its Jacobian and the Hessian of a sum of it
    source = 'input x = 0.5\nfor i in 0..5 {\n    x = sin(x) + 0.5*x\n    X[i] = x * i\n}\n'
    run = run_main(['jacobian', source + 'X', '--json'])
    got = np.array(json.loads(run.out)['jacobian']['x'])
    h = 1e-6
    graph = lower(source + 'X')
    f = lambda x: tensors.evaluate(graph, {'x': x})[graph.output]   # noqa: E731
    np.testing.assert_allclose(got, (f(0.5 + h) - f(0.5 - h)) / (2 * h), rtol=1e-7, atol=1e-9)
    run = run_main(['hessian', source + 'sum(X^2)', '--json'])
    second = json.loads(run.out)['hessian'][0][0]
    g = lambda x: array_point(source + 'sum(X^2)', {'x': x})[1]['x']   # noqa: E731
    assert second == pytest.approx((g(0.5 + h) - g(0.5 - h)) / (2 * h), rel=1e-6)


def test_an_array_loop_equals_its_unrolled_program():
    inputs = mlp_inputs()
    value, grads = array_point(MLP, inputs)
    value_out, grads_out = array_point(unrolled(MLP), inputs)
    assert value == value_out
    for k in inputs:
        np.testing.assert_array_equal(grads[k], grads_out[k])


def test_nested_loops_multiply_out():
    source = ('input x = 0.2\nfor i in 0..3 {\n    for j in 0..4 {\n        x = sin(x) + 0.1*i\n'
              '    }\n    x = x * 1.5\n}\nz = x')
    flat = 'input x = 0.2\n' + '\n'.join(
        '\n'.join(['x = sin(x) + 0.1*' + str(i)] * 4) + '\nx = x * 1.5' for i in range(3)) + '\nz = x'
    assert point(source, x=0.2) == point(flat, x=0.2)


def test_samples_deep_loop_equals_samples_deep():
    deep = open('samples/deep.ad').read()
    deep_loop = open('samples/deep_loop.ad').read()
    assert point(deep, x=0.5) == point(deep_loop, x=0.5)
    assert point(deep, x=-1.25) == point(deep_loop, x=-1.25)


@pytest.mark.parametrize('text, message, column', [
    ('input x = 1\nfor i in 0..0 {\n x = x + 1\n}', 'the range 0..0 is empty', 10),
    ('input x = 1\nfor i in 0..2.5 {\n x = x + 1\n}', "a loop's end must be a whole number", 13),
    ('input x = 1\nfor i in 0..x {\n x = x + 1\n}', "a loop's end must be a constant, such as 10", 13),
    # a carried name with no value before the loop: the caret at its read, in the body
    ('for i in 0..3 {\n  x = x*2\n}\nx', "'x' is read before it has a value: give it one before the loop", 7),
    ('input x = 1\nfor i in 0..3 { x = x*2\nx', "or close the loop with '}' before this line", 1),
    ('input x = 1\nfor i in 0..100000000 {\n x = x + 1\n}', 'adgrad runs at most 10,000,000', 1),
    ('input x = 1\nfor x in 0..3 {\n y = 1\n}', "'x' is already defined", 5),
    ('input x = 1\nfor i in 0..3 {\n x + 1\n}', 'a loop body binds names', 2),
    ('input x = 1\nfor i in 0..3 {\n input y = 2\n}', "an 'input' declaration goes outside", 2),
    ('input x = 1\nfor i in 0..3 {\n}', 'this loop binds no name', 1),
    ('input x[3]\nfor i in 0..3 {\n y = x[i, 0]\n}', "a loop's index subscripts a value", 6),
    ('input x[3]\nfor i in 0..3 {\n x = x[i] + x\n}', "'x' changes in the loop", 6),
    # the outer loop's slice, taken in the inner loop (it works as the message says:
    # test_an_outer_slice_subscripted_in_an_inner_loop)
    ('input x[3]\ns = 0\nfor i in 0..3 {\n for j in 0..3 {\n  s = s + x[i][j]\n }\n}',
     'x[i] slices in the loop over i only: write x_i = x[i] there and use x_i here', 11),
    ('input x[3]\ns = 0\nfor i in 0..3 {\n for j in 0..3 {\n  s = s + x[i, j]\n }\n}',
     'x[i] slices in the loop over i only', 11),
    # x[j, i] is no slice of the loop over i: that advice would read x[i, j] (the review)
    ('input x[3]\ns = 0\nfor i in 0..3 {\n for j in 0..3 {\n  s = s + x[j, i]\n }\n}',
     "a loop's index subscripts a value from outside the loop alone", 11),
    # X[i] = ...: a stacked output
    ('x[0] = 1', 'stacks a value per iteration of a loop; outside one, bind a name', 1),
    ('x = 1\nfor i in 1..3 {\n X[i] = x\n x = x*2\n}', 'stacks rows from i = 0', 2),
    ('x = 1\nfor i in 0..3 {\n X[0] = x\n x = x*2\n}', 'by its own index: X[i] = ...', 2),
    ('x = 1\nfor i in 0..3 {\n X[i] = x\n x = X*2\n}', "'X' is stacked by this loop", 6),
    ('x = 1\nfor i in 0..3 {\n X[i] = x\n X[i] = x\n}', "'X' is already defined", 2),
    ('x = 1\nfor i in backwards(0..3) {\n x = x*2\n}', 'or reversed(a..b), not backwards', 10),
])
def test_bad_loops_are_one_line_errors_with_a_caret(text, message, column):
    run = run_main(['eval', text, 'x=[1,2,3]' if 'x[3]' in text else 'x=1'])
    assert run.code == 2 and run.out == ''
    first, code_line, caret = run.err.splitlines()
    assert message in first, run.err
    assert caret.index('^') - 2 == column - 1, run.err


def test_an_outer_slice_subscripted_in_an_inner_loop():
    # s = Σ_i Σ_j W[i, j]^2, so ∂s/∂W = 2W (by hand)
    W = np.arange(24.0).reshape(3, 4, 2) / 10
    text = ('input W[3, 4, 2]\ns = 0\nfor i in 0..3 {\n  W_i = W[i]\n  for j in 0..4 {\n'
            '    s = s + sum(W_i[j]^2)\n  }\n}\ns')
    run = run_main(['grad', text, 'W=' + str(W.tolist()), '--json'])
    assert run.code == 0, run.err
    result = json.loads(run.out)
    assert result['value'] == pytest.approx(float(np.sum(W ** 2)), rel=1e-15)
    np.testing.assert_allclose(result['gradient']['W'], 2 * W, rtol=1e-15)


def test_a_slice_past_the_stack_and_a_changing_shape_are_refused_before_running():
    run = run_main(['eval', MLP.replace('0..4', '0..5'), 'W=' + str(np.zeros((4, 3, 3)).tolist()),
                    'b=' + str(np.zeros((4, 3)).tolist()), 'x=[1,2,3]'])
    assert run.code == 2 and 'W[i] takes slice 4 of [4,3,3]' in run.err, run.err
    run = run_main(['eval', 'input w = 2, x = 1; for i in 0..3 { x = x * w[i] }; x'])
    assert run.code == 2 and 'w[i] takes slices of a scalar, which has none' in run.err, run.err
    run = run_main(['eval', 'input x[3]\nfor i in 0..2 {\n x = sum(x)\n}\nz = x', 'x=[1,2,3]'])
    assert run.code == 2 and "'x' is [3] before an iteration and a scalar after it" in run.err
    assert run.err.splitlines()[-1].index('^') == 7, run.err


def test_loops_nest_at_most_four_deep():
    nested = 'input x = 1\n' + ''.join(f'for i{k} in 0..2 {{\n' for k in range(5)) + \
        'x = x + 1\n' + '}\n' * 5
    run = run_main(['eval', nested])
    assert run.code == 2 and 'loops nest at most 4 deep' in run.err


def test_explain_mentions_memory_when_the_plain_pass_keeps_much():
    from autodiff_cli.cli.evaluate import memory_note
    big = lower('input x = 0.5\nfor i in 0..1000000 {\n    x = sin(x) + 0.5*x\n}\nz = x')
    note, = memory_note(big)
    # six values an iteration (its two inputs too) and its list: 248 MB as counted
    assert note.startswith('memory: the backward pass keeps 6,000,004 values, about 248.0 MB')
    assert '--checkpoint sqrt' in note
    assert memory_note(lower(open('samples/deep_loop.ad').read())) == []


NESTED = """input x[3], w[3]
for i in 0..3 {
    y = x
    for j in 0..2 {
        y = sin(y * w + 0.1)
    }
    x = x * y
}
x"""


def test_backward_runs_again_over_the_same_forward_of_nested_loops():
    # A Jacobian is one backward pass per output entry over one forward. A
    # review found the second and later rows wrong: the first pass had let
    # the inner loop's outputs go from the forward's stored values.
    args = ['jacobian', NESTED, 'x=[0.3,0.5,0.7]', 'w=[1.1,0.9,1.3]', '--format', 'json']
    reverse, tangents = run_main(args), run_main(args + ['--mode', 'forward'])
    assert reverse.code == tangents.code == 0, reverse.err + tangents.err
    by_rows, by_columns = json.loads(reverse.out), json.loads(tangents.out)
    assert by_rows['mode'] == 'reverse' and by_columns['mode'] == 'forward'
    for name in ('x', 'w'):
        np.testing.assert_allclose(by_rows['jacobian'][name], by_columns['jacobian'][name],
                                   rtol=1e-13, atol=0)
    graph = lower(open('samples/deep_loop.ad').read().replace('input x = 0.5', 'input x = 0.5\n'
                  'for k in 0..2 {\n    x = x + 0.0\n}'))
    values = forward(graph, graph.defaults)
    assert backward(graph, values) == backward(graph, values)


def test_explain_names_the_loop_a_gradient_vanishes_in():
    # Each iteration multiplies ∂/∂x by cos(x) + 0.5, about 0.18 near the
    # fixed point: over 1,000 of them the product underflows to 0 (worked out
    # here in floats). --explain asked the loop node for one local derivative
    # and said "this does not take loops yet".
    import math
    x, product = 0.5, 1.0
    for _ in range(1000):
        product *= math.cos(x) + 0.5
        x = math.sin(x) + 0.5 * x
    assert product == 0.0
    run = run_main(['grad', 'input x = 0.5\nfor i in 0..1000 {\n    x = sin(x) + 0.5*x\n}\nz = x',
                    '--explain'])
    assert run.code == 0, run.err
    assert 'd_x\t0.0\n' in run.out
    assert ('x: gradient 0, zero: it comes back 0 from the 1,000 iterations of the loop on '
            'line 2 (node 1)') in run.out
    # Beside another term, the loop's 1 meets a -1: that is cancelling (a review's case).
    run = run_main(['grad', 'input x = 0.5\ny = x\nfor i in 0..3 {\n    x = x * 1.0\n}\n'
                    'z = x - y', '--explain'])
    assert run.code == 0 and 'x: gradient 0, zero: the terms that reach it cancel exactly' \
        in run.out, run.out


def test_the_interactive_page_says_in_one_line_that_it_takes_no_loop(tmp_path, monkeypatch):
    # The page computes node by node in JavaScript; the steps, pictures and
    # the table go through a loop (tests/test_loop_steps.py).
    monkeypatch.chdir(tmp_path)
    run = run_main(['render', 'input x = 0.5\nfor i in 0..3 {\n    x = sin(x)\n}\nz = x',
                    '-o', 'page.html'])
    assert run.code == 2 and run.out == '' and list(tmp_path.iterdir()) == []
    assert run.err.count('\n') == 1 and 'does not take loops yet' in run.err, run.err


def test_a_hundred_thousand_iterations_take_linear_time():
    import time

    def seconds(n):   # the best of three: a busy machine only adds time (a CI run flaked)
        graph = lower(f'input x = 0.5\nfor i in 0..{n} {{\n    x = sin(x) + 0.5*x\n}}\nz = x')
        times = []
        for _ in range(3):
            start = time.process_time()
            backward(graph, forward(graph, {'x': 0.5}))
            times.append(time.process_time() - start)
        return min(times)
    small, large = seconds(10_000), seconds(100_000)
    assert large < 20 * small   # 10 times the iterations: linear, with room for noise


@pytest.mark.parametrize('text, value, gradient', [
    # a body that reads nothing from outside: the loop node has no arguments,
    # and was taken for a constant whose value is the loop itself (exit 70)
    ('for i in 0..3 {\n y = 2*i\n}\ny', 4.0, {}),
    ('input x = 1\nfor i in 0..3 {\n c = 5\n}\nx*c', 5.0, {'x': 5.0}),
    ('input x = 1\nfor i in 0..3 {\n x = i\n}\nx', 2.0, {'x': 0.0}),
])
def test_a_body_that_reads_nothing_from_outside_runs(text, value, gradient):
    run = run_main(['grad', text, '--json'])
    assert run.code == 0, run.err
    assert json.loads(run.out) == {'value': value, 'gradient': gradient}


def test_the_page_refuses_a_loop_in_one_line_and_a_notebook_shows_the_picture(tmp_path):
    run = run_main(['render', '-f', 'samples/deep_loop.ad', '-o', str(tmp_path / 'p.html')])
    assert run.code == 2 and run.err.startswith('adgrad: error: the interactive page does not '
                                                'take loops yet') and run.err.count('\n') == 1
    pytest.importorskip('graphviz')
    from autodiff_cli import Program
    result = Program('input x = 1\nfor i in 0..3 {\n x = sin(x)\n}\nx').grad()
    assert result._repr_html_() is None and '<svg' in result._repr_svg_()
