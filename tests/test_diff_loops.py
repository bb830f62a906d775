"""`diff` of programs with loops: the loop printed as one loop carrying the
values and their tangents (derive/recurrence.py), read back by `eval -`,
run as NumPy and compiled as C, equal to grad's numbers; its size does not
grow with the iterations."""

import json
import math
import shutil
import subprocess

import numpy as np
import pytest

from autodiff_cli import backward, forward, lower
from autodiff_cli.derive.record import differentiate
from tests.helpers import numpy_function, run_main

PROGRAMS = {
    'sin chain': ('input x = 1\nfor i in 0..N {\n    x = sin(x) + 0.5*x\n}\nx',
                  [{'x': 1.0}, {'x': -0.4}]),
    'tanh layer': ('input x = 0.5\nlayer(a) = tanh(1.5*a + 0.1)\nfor i in 0..N {\n'
                   '    x = layer(x)\n}\nz = x^2', [{'x': 0.5}, {'x': -1.2}]),
    'read-only and index': ('input x = 0.7, w = 0.9\nc = w*w + 1\nfor k in 2..N {\n'
                            '    h = w*x + k/c\n    x = log(1 + h^2) - x*w\n}\nz = x * h',
                            [{'x': 0.7, 'w': 0.9}, {'x': -0.3, 'w': 0.2}]),
    'if in the body': ('input x = 0.3, a = 1.1\ns = 0\nfor i in 0..N {\n    s += x * i\n'
                       '    x = if(x > 0.5, sin(a*x), x + a/4)\n}\nz = s + x',
                       [{'x': 0.3, 'a': 1.1}, {'x': 0.9, 'a': -0.6}]),
    'swap': ('input a = 0.5, b = 2\nfor i in 0..N {\n    t = a\n    a = b*a/4 + 0.1\n'
             '    b = t - sin(b)\n}\nz = a * b', [{'a': 0.5, 'b': 2.0}, {'a': -1.0, 'b': 0.3}]),
    'a tangent that starts later': ('input a = 0.5\ns = 0\nfor i in 0..N {\n'
                                    '    s = s*a + i\n}\ns/N', [{'a': 0.5}, {'a': -0.9}]),
    'nested': ('input x = 0.3, a = 0.7\ns = 0\nfor i in 0..N {\n    y = x\n'
               '    for j in 0..3 {\n        y = cos(y)*a + s/7\n    }\n    s = s + y*x/N\n'
               '    x = tanh(x + y)\n}\nz = s*x', [{'x': 0.3, 'a': 0.7}, {'x': -0.8, 'a': 1.3}]),
    'reversed, with its index': ('input x = 0.5\nfor i in reversed(1..N) {\n'
                                 '    x = sin(x)/i + 0.5*x\n}\nx', [{'x': 0.5}, {'x': -2.0}]),
    'two loops and a value left behind': ('input x = 0.5, b = 2\nfor i in 0..N {\n'
                                          '    last = x\n    x = x*b/2.2 + 0.1\n}\ny = x*last\n'
                                          'for k in 0..3 {\n    y = sin(y) + b\n}\ny + x',
                                          [{'x': 0.5, 'b': 2.0}, {'x': 1.5, 'b': -0.5}]),
}


def _program(name, n=10):
    source, points = PROGRAMS[name]
    return source.replace('N', str(n)), points


def _grad(source, point):
    graph = lower(source)
    values = forward(graph, point)
    grads = backward(graph, values)
    return values[graph.output], {v: grads[i] for v, i in graph.inputs.items()}


def _close(a, b):
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-300)


@pytest.mark.parametrize('name', sorted(PROGRAMS))
def test_diff_of_a_loop_read_back_by_eval_gives_grads_numbers(name):
    source, points = _program(name)
    for variable in points[0]:
        diff = run_main(['diff', source, '--wrt', variable])
        assert diff.code == 0, diff.err
        assert diff.out.count('for ') == source.count('for ')    # a loop, not its copies
        for point in points:
            _, grads = _grad(source, point)
            words = [f'{k}={v!r}' for k, v in point.items()]
            back = run_main(['eval', '-', *words], stdin=diff.out.encode())
            assert back.code == 0, (back.err, diff.out)
            assert _close(float(back.out), grads[variable]), (point, variable, diff.out)


@pytest.mark.parametrize('name', sorted(PROGRAMS))
def test_the_recorded_derivative_evaluates_to_grads_numbers(name):
    source, points = _program(name)
    graph = lower(source)
    derivative = differentiate(graph, with_value=True)
    for point in points:
        value, grads = _grad(source, point)
        for k, (label, _) in enumerate(derivative.results):
            recorded = derivative.graph(k)
            got = forward(recorded, {v: point[v] for v in recorded.inputs})[recorded.output]
            assert _close(got, value if label == 'value' else grads[label]), (label, point)


@pytest.mark.parametrize('name', sorted(PROGRAMS))
def test_the_printed_size_does_not_grow_with_the_iterations(name):
    small, big = _program(name, 10), _program(name, 100_000)
    printed = [run_main(['diff', source[0]]).out for source in (small, big)]
    # the same lines, some numbers longer: N's digits, and 1/N's, where folded
    assert printed[0].count('\n') == printed[1].count('\n') > 3
    assert len(printed[0]) <= len(printed[1]) <= len(printed[0]) + 60


def test_numpy_code_of_loops_agrees_with_grad_at_arrays_of_points():
    for name in sorted(PROGRAMS):
        source, points = _program(name)
        f = numpy_function(run_main(['diff', source, '--lang', 'numpy']).out)
        names = list(points[0])
        value, gradient = f(*[np.array([p[n] for p in points]) for n in names])
        for row, point in enumerate(points):
            want_value, grads = _grad(source, point)
            assert _close(value[row], want_value), name
            for n in names:
                assert _close(gradient[n][row], grads[n]), (name, n, point)


def test_c_code_of_loops_compiles_and_agrees_with_grad(tmp_path):
    cc = shutil.which('cc')
    if cc is None:
        pytest.skip('no C compiler')
    for k, name in enumerate(sorted(PROGRAMS)):
        source, points = _program(name)
        code = run_main(['diff', source, '--lang', 'c']).out
        names, order = sorted(points[0]), list(lower(source).inputs)   # grad's, parameters'
        calls = [f'    f({", ".join(repr(p[n]) for n in order)}, &value, grad);'
                 ' printf("%.17g", value);'
                 f' for (int j = 0; j < {len(names)}; j++) printf(" %.17g", grad[j]);'
                 ' printf("\\n");' for p in points]
        path = tmp_path / f'f{k}.c'
        path.write_text(code + '#include <stdio.h>\nint main(void)\n{\n    double value, grad[8];\n'
                        + '\n'.join(calls) + '\n    return 0;\n}\n')
        binary = tmp_path / f'f{k}'
        built = subprocess.run([cc, '-std=c99', '-Wall', '-Wextra', '-Werror', '-O2', '-o',
                                str(binary), str(path), '-lm'], capture_output=True, text=True)
        assert built.returncode == 0, (built.stderr, code)
        out = subprocess.run([str(binary)], check=True, capture_output=True, text=True).stdout
        for point, line in zip(points, out.splitlines()):
            numbers = [float(v) for v in line.split()]
            value, grads = _grad(source, point)
            assert _close(numbers[0], value), name
            assert all(_close(got, grads[n]) for got, n in zip(numbers[1:], names)), (name, line)


@pytest.mark.parametrize('words, message', [
    (['--lang', 'latex'], '--lang latex does not print loops'),
])
def test_what_diff_does_not_print_of_a_loop_is_refused_in_one_line(words, message):
    run = run_main(['diff', _program('sin chain')[0], *words])
    assert run.code == 2 and run.err.startswith(f'adgrad: error: {message}')
    assert run.err.count('\n') == 1


# ---- second derivatives: forward mode over the recurrence, loops kept loops ----

def _central_hessian(source, point, h=1e-5):
    """∂²f/∂a∂b by central differences of grad's gradient: an independent
    reference (reverse mode, no recording)."""
    names = list(point)
    rows = []
    for a in names:
        up = _grad(source, {**point, a: point[a] + h})[1]
        down = _grad(source, {**point, a: point[a] - h})[1]
        rows.append([(up[b] - down[b]) / (2 * h) for b in names])
    return rows


@pytest.mark.parametrize('name', sorted(PROGRAMS))
def test_hessian_of_a_loop_agrees_with_differences_of_grad(name):
    from autodiff_cli import Program
    source, points = _program(name, 7)
    for point in points:
        names = list(point)
        got = Program(source).hessian(point, wrt=names)
        want = _central_hessian(source, point)
        for a, b in np.ndindex(len(names), len(names)):
            assert math.isclose(got[a][b], want[a][b], rel_tol=1e-6, abs_tol=1e-7), \
                (name, point, got, want)


def test_hessian_of_a_loop_agrees_with_torch():
    torch = pytest.importorskip('torch')
    source = ('input x = 0.5, y = -0.3\ns = 0\nfor i in 0..20 {\n    x = sin(x*y) + 0.5*x\n'
              '    y = y + 0.1*cos(x)\n    s += x*y\n}\nz = s + exp(y)')

    def f(v):
        x, y, s = v[0], v[1], 0
        for _ in range(20):
            x = torch.sin(x * y) + 0.5 * x
            y = y + 0.1 * torch.cos(x)
            s = s + x * y
        return s + torch.exp(y)
    for point in ([0.5, -0.3], [1.0, 2.0], [-0.7, 0.4]):
        want = torch.autograd.functional.hessian(f, torch.tensor(point, dtype=torch.float64))
        run = run_main(['hessian', source, f'x={point[0]!r}', f'y={point[1]!r}', '--json'])
        assert run.code == 0, run.err
        got = np.array(json.loads(run.out)['hessian'])
        assert np.allclose(got, want.numpy(), rtol=1e-13, atol=0), (point, got, want)


@pytest.mark.parametrize('name', ['sin chain', 'nested', 'swap', 'if in the body'])
def test_diff_order_2_of_a_loop_reads_back_to_the_hessian(name):
    from autodiff_cli import Program
    source, points = _program(name, 6)
    diff = run_main(['diff', source, '--order', '2'])
    assert diff.code == 0, diff.err
    assert diff.out.count('for ') <= (len(points[0]) + 1) * source.count('for ')   # loops
    names = sorted(points[0])
    for point in points:
        hessian = Program(source).hessian(point, wrt=names)
        words = [f'{k}={v!r}' for k, v in point.items()]
        for i, a in enumerate(names):
            for j, b in enumerate(names[i:], i):
                ask = diff.out + (f'd2_{a}_{b}\n' if len(names) > 1 else '')   # that entry
                back = run_main(['eval', '-', *words], stdin=ask.encode())
                assert back.code == 0, (back.err, ask)
                assert _close(float(back.out), hessian[i][j]), (name, point, a, b, diff.out)


def test_diff_order_3_of_a_loop_agrees_with_differences_of_order_2():
    source, (point, _) = _program('sin chain', 8)
    third = run_main(['diff', source, '--order', '3'])
    second = run_main(['diff', source, '--order', '2'])
    assert third.code == second.code == 0 and third.out.count('for ') == 1

    def at(text, x):
        return float(run_main(['eval', '-', f'x={x!r}'], stdin=text.encode()).out)
    h = 1e-5
    want = (at(second.out, point['x'] + h) - at(second.out, point['x'] - h)) / (2 * h)
    assert math.isclose(at(third.out, point['x']), want, rel_tol=1e-6)


def test_newton_fit_and_check_take_loops():
    source, _ = _program('sin chain', 5)
    run = run_main(['minimize', source, '--method', 'newton', '--json'])
    assert run.code == 0, run.err
    found = json.loads(run.out)
    _, grads = _grad(source, found['minimiser'])
    assert found['converged'] and abs(grads['x']) < 1e-6
    check = run_main(['check', source, '--order', '2'])
    assert check.code == 0 and check.out.count('\tpass') == 2, check.out


def test_hessian_points_and_the_plots_second_derivative_take_loops(tmp_path):
    from autodiff_cli import Program
    from autodiff_cli.pictures.curves import sampler
    source, points = _program('swap', 6)
    rows = tmp_path / 'p.csv'
    rows.write_text('a,b\n' + ''.join(f"{p['a']!r},{p['b']!r}\n" for p in points))
    run = run_main(['hessian', source, '--points', str(rows)])
    assert run.code == 0, run.err
    for line, point in zip(run.out.splitlines()[1:], points):
        entries = [float(v) for v in line.split(',')[2:]]
        assert entries == sum(Program(source).hessian(point, wrt=['a', 'b']), [])
    # f'' along a, b fixed: the Hessian's corner, at every sample
    f = sampler(lower(source), 'a', {'b': 0.3}, order=2)
    xs = np.array([-1.0, 0.5, 1.25])
    second = f(xs)[2]
    for x, got in zip(xs, second):
        assert _close(got, Program(source).hessian({'a': x, 'b': 0.3}, wrt=['a'])[0][0])


def test_fit_takes_a_model_with_a_loop(tmp_path):
    # data made by Python's own math: y = 1.3 sin(...) + 0.2, three times over
    lines = ['t,y']
    for k in range(30):
        y = t = k / 10
        for _ in range(3):
            y = 1.3 * math.sin(y) + 0.2
        lines.append(f'{t!r},{y!r}')
    (tmp_path / 'd.csv').write_text('\n'.join(lines) + '\n')
    model = 'input a = 1, b = 0.5\ny = t\nfor i in 0..3 {\n    y = a*sin(y) + b\n}\ny'
    run = run_main(['fit', model, '--data', str(tmp_path / 'd.csv'), '--target', 'y', 'a=1',
                    'b=0.5', '--json'])
    assert run.code == 0, run.err
    found = json.loads(run.out)['parameters']
    assert math.isclose(found['a'], 1.3, rel_tol=1e-12) and math.isclose(found['b'], 0.2,
                                                                          rel_tol=1e-12)


@pytest.mark.parametrize('name', sorted(PROGRAMS))
def test_forward_mode_through_a_loop_gives_reverse_modes_numbers(name):
    # a tangent carried beside each carried value, iteration by iteration
    source, points = _program(name, 7)
    for point in points:
        words = [f'{k}={v!r}' for k, v in point.items()]
        forward_mode = run_main(['grad', source, *words, '--mode', 'forward', '--json'])
        assert forward_mode.code == 0, forward_mode.err
        _, grads = _grad(source, point)
        got = json.loads(forward_mode.out)['gradient']
        for v in point:
            assert math.isclose(got[v], grads[v], rel_tol=1e-13, abs_tol=1e-300), (name, v)


def test_forward_mode_jacobian_through_a_loop_over_slices():
    # W[i] scanned, x carried: a tangent pass per entry of x and of W
    rng = np.random.default_rng(7)
    W = rng.normal(size=(4, 3, 3)) * 0.7
    source = 'input W[4, 3, 3], x[3]\nfor i in 0..4 {\n    x = tanh(W[i] @ x) + 0.1*x\n}\nx'
    words = [f'W={json.dumps(W.tolist())}', 'x=[0.3, -1.2, 0.8]']
    runs = {mode: run_main(['jacobian', source, *words, '--mode', mode, '--json'])
            for mode in ('forward', 'reverse')}
    assert all(r.code == 0 for r in runs.values()), runs
    got = {mode: json.loads(r.out)['jacobian'] for mode, r in runs.items()}
    for name in ('W', 'x'):
        assert np.allclose(got['forward'][name], got['reverse'][name], rtol=1e-13, atol=1e-15)


def test_a_high_order_of_a_loop_stops_at_the_recording_limit_in_one_line():
    # each order doubles what the loop carries: order 30 would be 2^30 tangents
    source, _ = _program('sin chain', 5)
    run = run_main(['diff', source, '--order', '30'])
    assert run.code == 2 and run.out == '' and run.err.count('\n') == 1
    assert run.err.startswith('adgrad: error: the derivative of order 30 would take more than '
                              '250,000 steps to record'), run.err
    assert run.err.rstrip().endswith('or lower')   # the highest order that fits, named
