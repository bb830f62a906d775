"""adgrad minimize: Rosenbrock's known minimiser, scipy with finite
differences and scipy's own Rosenbrock derivatives as references, the
training loops against their update rules by hand, and the failure paths."""

import json

import numpy as np
import pytest

from autodiff_cli.derive.optimize import minimize
from autodiff_cli.language.lower import lower

ROSENBROCK = '(1-x)^2 + 100*(y-x^2)^2'
START = {'x': -1.2, 'y': 1.0}


def _chained(n):
    return ' + '.join(f'100*(x{i + 1}-x{i}^2)^2 + (1-x{i})^2' for i in range(n - 1))


@pytest.mark.parametrize('method, digits', [('lbfgs', 5), ('newton', 8), ('trust', 8)])
def test_rosenbrock_reaches_its_minimiser(method, digits):
    pytest.importorskip('scipy')
    result = minimize(lower(ROSENBROCK), START, ['x', 'y'], method)
    assert result.converged, result.why
    assert abs(result.x['x'] - 1) < 10**-digits and abs(result.x['y'] - 1) < 10**-digits
    assert result.f < 1e-9 and result.evaluations >= result.iterations > 0
    assert (result.hessians > 0) == (method != 'lbfgs')


WOOD = ('100*(b - a^2)^2 + (1 - a)^2 + 90*(d - c^2)^2 + (1 - c)^2 '
        '+ 10.1*((b - 1)^2 + (d - 1)^2) + 19.8*(b - 1)*(d - 1)')


def test_lbfgs_goes_past_woods_saddle_to_its_minimum():
    """Wood's function has its minimum 0 at (1, 1, 1, 1) and a stationary point
    near f = 7.88, where scipy's default ftol stopped and called it converged."""
    pytest.importorskip('scipy')
    result = minimize(lower(WOOD), dict(a=-3.0, b=-1.0, c=-3.0, d=-1.0), list('abcd'), 'lbfgs')
    assert result.converged and result.why == '|∇f| is below the tolerance'
    assert result.f < 1e-10 and max(abs(v - 1) for v in result.x.values()) < 1e-4


def test_newtons_iteration_limit_is_said_plainly(run_cli):
    pytest.importorskip('scipy')
    code, _, err = run_cli('minimize', ROSENBROCK, 'x=-1.2', 'y=1', '--method', 'newton',
                           '--steps', '5')
    assert code == 1
    assert err.startswith('adgrad: error: newton did not converge: it reached the iteration '
                          'limit, 5 steps, with |∇f| = ') and err.endswith(' (raise --steps)\n')


def test_the_exact_gradient_beats_scipy_with_finite_differences():
    """Same method, same start: the same minimiser, in fewer evaluations of f
    than finite differences spend (n + 1 per gradient)."""
    scipy_optimize = pytest.importorskip('scipy.optimize')
    result = minimize(lower(ROSENBROCK), START, ['x', 'y'], 'lbfgs')
    fd = scipy_optimize.minimize(scipy_optimize.rosen, [-1.2, 1.0], method='L-BFGS-B')
    assert fd.success
    np.testing.assert_allclose([result.x['x'], result.x['y']], fd.x, atol=2e-4)
    np.testing.assert_allclose([result.x['x'], result.x['y']], [1, 1], atol=2e-5)
    assert result.evaluations < fd.nfev


def test_every_point_of_the_path_has_scipys_rosenbrock_gradient():
    scipy_optimize = pytest.importorskip('scipy.optimize')
    rows = []
    minimize(lower(ROSENBROCK), START, ['x', 'y'], 'lbfgs',
             trace=lambda k, v, f, norm: rows.append((k, np.array(v), f, norm)))
    assert [k for k, *_ in rows] == list(range(len(rows))) and len(rows) > 10
    for _, v, f, norm in rows:
        assert f == pytest.approx(scipy_optimize.rosen(v), rel=1e-13, abs=1e-300)
        assert norm == pytest.approx(np.linalg.norm(scipy_optimize.rosen_der(v)), rel=1e-12,
                                     abs=1e-300)


def test_the_chained_rosenbrock_of_100_variables_converges_with_newton():
    pytest.importorskip('scipy')
    names = [f'x{i}' for i in range(100)]
    start = {n: (-1.2 if i % 2 == 0 else 1.0) for i, n in enumerate(names)}
    result = minimize(lower(_chained(100)), start, names, 'newton')
    assert result.converged, result.why
    assert max(abs(v - 1) for v in result.x.values()) < 1e-8
    # newton-cg stops on the step's size (xtol), not the gradient's: seen 3e-8 with scipy 1.17
    assert result.grad_norm < 1e-6 and result.hessians == result.iterations


def test_gd_takes_the_steps_of_its_update_rule():
    """x^2 + 3y^2: gd's step is x -= lr*2x, y -= lr*6y, exactly."""
    rows = []
    result = minimize(lower('x^2 + 3*y^2'), {'x': 4.0, 'y': 1.0}, ['x', 'y'], 'gd', lr=0.1,
                      steps=5, trace=lambda k, v, f, norm: rows.append(list(v)))
    x, y, expected = 4.0, 1.0, []
    for _ in range(6):
        expected.append([x, y])
        x, y = x - 0.1 * 2 * x, y - 0.1 * 6 * y
    np.testing.assert_allclose(rows, expected, rtol=1e-15)   # 3*(2*y) is not 6*y in the last bit
    assert not result.converged and 'iteration limit, 5 steps' in result.why
    assert result.iterations == 5 and result.evaluations == 6


def test_momentum_and_adam_take_the_steps_of_theirs():
    def grad(v):
        return np.array([2 * v[0], 6 * v[1]])
    for method in ('momentum', 'adam'):
        rows = []
        minimize(lower('x^2 + 3*y^2'), {'x': 4.0, 'y': 1.0}, ['x', 'y'], method, lr=0.05,
                 steps=4, trace=lambda k, v, f, norm, rows=rows: rows.append(np.array(v)))
        v, velocity, m, s = np.array([4.0, 1.0]), np.zeros(2), np.zeros(2), np.zeros(2)
        for step in range(1, 5):
            g = grad(v)
            if method == 'momentum':
                velocity = 0.9 * velocity - 0.05 * g
                v = v + velocity
            else:
                m, s = 0.9 * m + 0.1 * g, 0.999 * s + 0.001 * g**2
                v = v - 0.05 * (m / (1 - 0.9**step)) / (np.sqrt(s / (1 - 0.999**step)) + 1e-8)
            np.testing.assert_allclose(rows[step], v, rtol=1e-15)


@pytest.mark.parametrize('method, lr', [('gd', 0.1), ('momentum', 0.05), ('adam', 0.1)])
def test_the_loops_converge_on_a_bowl(method, lr):
    result = minimize(lower('(x-1)^2 + 3*(y+2)^2'), {'x': 4.0, 'y': 1.0}, ['x', 'y'], method,
                      lr=lr, steps=5000)
    assert result.converged, result.why
    assert abs(result.x['x'] - 1) < 1e-6 and abs(result.x['y'] + 2) < 1e-6


def test_bounds_hold_where_scipy_keeps_them():
    pytest.importorskip('scipy')
    graph = lower('(x-2)^2 + (y+1)^2')
    for method in ('lbfgs', 'trust'):
        result = minimize(graph, {'x': 0.0, 'y': 0.0}, ['x', 'y'], method,
                          bounds={'x': (None, 1.0), 'y': (0.0, None)})
        assert result.converged, result.why
        assert result.x['x'] == pytest.approx(1, abs=1e-3) and result.x['x'] <= 1
        assert result.x['y'] == pytest.approx(0, abs=1e-3) and result.x['y'] >= 0


# ---- the command line ----

def test_the_output_in_plain_and_json(run_cli):
    pytest.importorskip('scipy')
    code, out, err = run_cli('minimize', ROSENBROCK, 'x=-1.2', 'y=1', '--method', 'trust')
    assert (code, err) == (0, '')
    lines = dict(line.split('\t') for line in out.splitlines())
    assert list(lines) == ['x', 'y', 'f', 'grad_norm', 'iterations', 'evaluations', 'hessians',
                           'converged']
    assert abs(float(lines['x']) - 1) < 1e-8 and lines['converged'] == 'true'
    code, out, err = run_cli('minimize', ROSENBROCK, 'x=-1.2', 'y=1', '--json')
    record = json.loads(out)
    assert code == 0 and set(record['minimiser']) == {'x', 'y'} and record['converged']
    code, out, _ = run_cli('minimize', ROSENBROCK, 'x=-1.2', 'y=1', '--format', 'csv')
    header, _ = out.splitlines()
    assert header == 'x,y,f,grad_norm,iterations,evaluations,hessians,converged'
    code, out, _ = run_cli('minimize', 'x^2', 'x=1', '--method', 'trust', '--format', 'table')
    cells = {line.split('│')[1].strip(): line.split('│')[2].strip()
             for line in out.splitlines() if line.count('│') == 3}
    assert code == 0 and cells['converged'] == 'true' and abs(float(cells['x'])) < 1e-12
    assert out.endswith('Optimization terminated successfully\n')


def test_the_trace_is_a_csv_that_plot_draws(run_cli, tmp_path):
    pytest.importorskip('scipy')
    trace = tmp_path / 'path.csv'
    code, out, err = run_cli('minimize', ROSENBROCK, 'x=-1.2', 'y=1', '--trace', str(trace))
    assert (code, err) == (0, '')
    lines = trace.read_text().splitlines()
    assert lines[0] == 'iteration,x,y,f,grad_norm'
    # At (-1.2, 1): f = 2.2^2 + 100*0.44^2; ∇f = (-2*2.2 - 400*-1.2*-0.44, 200*-0.44).
    iteration, x, y, f, norm = map(float, lines[1].split(','))
    assert (iteration, x, y) == (0, -1.2, 1.0)
    assert f == pytest.approx(2.2**2 + 100 * 0.44**2, rel=1e-15)
    assert norm == pytest.approx(np.hypot(215.6, 88), rel=1e-15)
    iterations = int(dict(line.split('\t') for line in out.splitlines())['iterations'])
    assert len(lines) == iterations + 2
    pytest.importorskip('matplotlib')
    picture = tmp_path / 'path.png'
    assert run_cli('plot', ROSENBROCK, 'x=-2..2', 'y=-1..3', '--samples', '40', '--path',
                   str(trace), '-o', str(picture))[0] == 0
    assert picture.read_bytes()[:4] == b'\x89PNG'


@pytest.mark.parametrize('args, code, message', [
    (['floor(x)', 'x=0.5'], 1,
     'lbfgs did not converge: a flat region: the gradient and the Hessian are exactly 0'),
    (['log(x)', 'x=1', '--method', 'gd', '--lr', '1'], 1,
     'f is not finite at iteration 1: log(x) (node 1) is -inf'),
    (['x^2 + y^2', 'x=3', 'y=1', '--method', 'gd', '--steps', '3'], 1,
     'gd did not converge: it reached the iteration limit, 3 steps'),
    (['x^2', 'x=1', '--method', 'newton', '--bounds', 'x>=0'], 2,
     '--method newton takes no bounds: use lbfgs or trust'),
    (['x^2', 'x=1', '--bounds', 'x=>0'], 2, "bad bound 'x=>0'"),
    (['x^2', 'x=1', '--bounds', 'y>=0'], 2, "'y' is not a variable being minimised over"),
    (['x^2', 'x=1', '--bounds', 'x>=2'], 2, 'the start x=1 is outside its bounds'),
    (['x^2', 'x=1', '--bounds', '2<=x<=1'], 2, "cannot be both >= 2 and <= 1"),
    (['x^2', 'x=1', '--lr', '0.1'], 2, '--lr is the step size of gd, momentum and adam'),
    (['x^2', 'x=1', '--method', 'gd', '--lr', '-1'], 2, "'-1' is not a positive number"),
    (['x*y', 'x=1'], 2, "no value for 'y'"),
    (['f^2', 'f=1'], 2, "a variable named 'f' would repeat a line of the output"),
    (['sum(log(x))', 'x=[-1, 2]'], 1, 'f is not finite at iteration 0'),
])
def test_failures_are_one_line(run_cli, args, code, message):
    pytest.importorskip('scipy')
    got, _, err = run_cli('minimize', *args)
    assert got == code, err
    assert err.startswith('adgrad: error: ') and message in err, err
    assert err.count('\n') == 1 or 'column' in err


def test_without_scipy_one_line_names_the_extra(run_cli, monkeypatch):
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, 'find_spec',
                        lambda name, *a: None if name == 'scipy' else real(name, *a))
    code, out, err = run_cli('minimize', 'x^2', 'x=1')
    assert (code, out) == (2, '')
    assert err == ("adgrad: error: --method lbfgs needs scipy, adgrad's optimize extra: "
                   "pip install scipy\n")
    assert run_cli('minimize', 'x^2', 'x=1', '--method', 'adam', '--lr', '0.1',
                   '--steps', '3000')[0] == 0   # the loops need no scipy


# ---- array programs and --data ----

@pytest.fixture
def regression(tmp_path):
    """50 rows of two features and a noisy linear target, as x[0], x[1], y."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((50, 2))
    y = X @ [1.5, -2.0] + 0.3 + rng.normal(0, 0.1, 50)
    path = tmp_path / 'ls.csv'
    path.write_text('x[0],x[1],y\n' + ''.join(f'{a},{b},{c}\n' for (a, b), c in
                                               zip(X.tolist(), y.tolist())))
    return path, np.linalg.lstsq(np.column_stack([X, np.ones(50)]), y, rcond=None)[0]


@pytest.mark.parametrize('method', ['lbfgs', 'newton', 'trust'])
def test_least_squares_over_data_is_numpys(run_cli, regression, method):
    pytest.importorskip('scipy')
    path, (w0, w1, b) = regression
    code, out, err = run_cli('minimize', 'mean((x @ w + b - y)^2)', '--data', str(path),
                             'w=[0, 0]', 'b=0', '--method', method, '--json')
    assert code == 0, err
    result = json.loads(out)
    assert set(result['minimiser']) == {'w', 'b'}   # the data's columns are not minimised over
    np.testing.assert_allclose(result['minimiser']['w'], [w0, w1], rtol=1e-6)
    np.testing.assert_allclose(result['minimiser']['b'], b, rtol=1e-6)
    assert (result['hessians'] > 0) == (method != 'lbfgs')


def test_an_array_is_traced_and_bounded_entry_by_entry(run_cli, regression, tmp_path):
    pytest.importorskip('scipy')
    path, _ = regression
    trace = tmp_path / 'path.csv'
    code, out, err = run_cli('minimize', 'mean((x @ w + b - y)^2)', '--data', str(path),
                             'w=[0, 0]', 'b=0', '--bounds', 'w>=-1', '--trace', str(trace),
                             '--json')
    assert code == 0, err
    assert trace.read_text().splitlines()[0] == 'iteration,b,w[0],w[1],f,grad_norm'
    w = json.loads(out)['minimiser']['w']
    assert w[1] == -1.0 and w[0] > 1   # the bound holds the slope of -2 at -1


def test_the_xor_network_learns_its_data(run_cli):
    """samples/mlp_xor.ad, trained by lbfgs: every point then gets its class,
    by NumPy's own forward pass at the minimiser."""
    pytest.importorskip('scipy')
    from pathlib import Path
    samples = Path(__file__).parent.parent / 'samples'
    code, out, err = run_cli('minimize', '-f', str(samples / 'mlp_xor.ad'), '--data',
                             str(samples / 'xor.csv'), '--json')
    assert code == 0, err
    p = {k: np.array(v) for k, v in json.loads(out)['minimiser'].items()}
    data = np.loadtxt(samples / 'xor.csv', delimiter=',', skiprows=1)
    logits = np.tanh(data[:, :2] @ p['W1'].T + p['b1']) @ p['W2'].T + p['b2']
    assert (logits.argmax(1) == data[:, 2:].argmax(1)).all()
    start = 0.7453384722187583   # the sample's loss at its start (torch)
    assert json.loads(out)['f'] < start / 100


def test_an_array_output_is_refused_in_one_line(run_cli):
    pytest.importorskip('scipy')
    code, out, err = run_cli('minimize', 'x * 2', 'x=[1, 2]')
    assert code == 2 and out == '' and len(err.splitlines()) == 1
    assert 'needs a scalar output' in err
