"""`adgrad diff` of array programs: formulas over symbolic shapes, checked against
grad's numbers at random matrices and against the Matrix Cookbook's closed forms
(benchmarks/calculus.py holds the table, docs/arrays.md shows it)."""

import json
import statistics
import sys
from pathlib import Path

import numpy as np
import pytest

from autodiff_cli import lower
from autodiff_cli.core import tensors
from autodiff_cli.derive.array_formula import declared_shapes
from autodiff_cli.derive.array_printers import array_derivative_text

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'benchmarks'))
import calculus  # noqa: E402

SIZES = {'n': 3, 'm': 4}


def random_point(graph, rng):
    """A value for every input of its declared shape; square ones well conditioned."""
    from autodiff_cli.derive.array_formula import declared_shapes
    point = {}
    for name, shape in declared_shapes(graph).items():
        shape = tuple(SIZES.get(n, n) for n in shape)
        value = rng.normal(size=shape)
        if len(shape) == 2 and shape[0] == shape[1]:
            value = value @ value.T + shape[0] * np.eye(shape[0])
        point[name] = value
    return point


def grad_of(graph, point, name):
    values = tensors.evaluate(graph, point)
    return tensors.gradients(graph, values)[graph.inputs[name]]


def evaluate(source, point):
    graph = lower(source)
    return tensors.evaluate(graph, {k: v for k, v in point.items() if k in graph.inputs})[
        graph.output]


@pytest.mark.parametrize('row', calculus.COOKBOOK, ids=[f'{r[0]} d{r[1]}' for r in calculus.COOKBOOK])
def test_every_cookbook_row_reads_back_to_grads_numbers(row):
    """adgrad's printed formula, read back by the language, gives grad's array;
    and so does the Cookbook's closed form, the independent reference."""
    source, wrt, closed, _ = row
    graph = lower(calculus.program(row))
    point = random_point(graph, np.random.default_rng(7))
    expected = grad_of(graph, point, wrt)
    formula = array_derivative_text(graph, [wrt])
    np.testing.assert_allclose(evaluate(formula, point), expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(evaluate(calculus.DECLARE + closed, point), expected,
                               rtol=1e-10, atol=1e-12)


def test_the_cookbook_table_meets_the_readability_targets():
    rows = calculus.readability()
    ratios = [o / t if t else 1.0 for _, o, t in rows]
    assert len(rows) >= 20
    assert statistics.median(ratios) <= 1.25 and max(ratios) <= 2


@pytest.mark.parametrize('source, wrt, expected', [
    ('input A[m, n], x[n], b[m]; sum((A @ x - b)^2)', 'x', 'd_x = 2*A.T @ (A @ x - b)'),
    ('input X[n, n]; logdet(X)', 'X', 'd_X = inv(X).T'),
    ('input A[n, n], x[n]; x.T @ A @ x', 'x', 'd_x = (A + A.T) @ x'),
    ('input X[n, n]; det(X)', 'X', 'd_X = det(X)*inv(X).T'),
])
def test_the_issues_formulas_print_as_the_cookbook_writes_them(source, wrt, expected):
    text = array_derivative_text(lower(source), [wrt])
    assert text.splitlines()[-1] == expected


def test_the_hessian_of_a_quadratic_form_is_a_plus_a_transpose():
    text = array_derivative_text(lower('input A[n, n], x[n]; x.T @ A @ x'), ['x'], order=2)
    assert text.splitlines()[-1] == 'd2_x = A + A.T'


@pytest.mark.parametrize('source', ['input W[m, n], x[n], c[m]; sum(tanh(W @ x + c))',
                                    'input A[n, n], x[n]; logsumexp(A @ x) + x @ A @ x'])
def test_a_hessian_formula_gives_hessians_numbers(source):
    from autodiff_cli.derive.array_record import array_hessian
    graph = lower(source)
    point = random_point(graph, np.random.default_rng(3))
    text = array_derivative_text(graph, ['x'], order=2)
    np.testing.assert_allclose(evaluate(text, point), array_hessian(graph, point, ['x']),
                               rtol=1e-10, atol=1e-12)


SAMPLES = {'mlp.ad': {}, 'least_squares.ad': {'x': (20,), 'y': (20,)},
           'softmax_regression.ad': {'x': (30, 2), 'y': (30, 3)},
           'mlp_xor.ad': {'x': (60, 2), 'y': (60, 2)}}


def sample_point(name, rng):
    graph = lower((ROOT / 'samples' / name).read_text())
    point = dict(graph.defaults)
    point.update({k: rng.normal(size=shape) for k, shape in SAMPLES[name].items()})
    return graph, point


@pytest.mark.parametrize('name', SAMPLES)
def test_generated_numpy_agrees_with_grad_on_every_array_sample(name):
    graph, point = sample_point(name, np.random.default_rng(5))
    names = sorted(graph.inputs)
    namespace = {}
    exec(array_derivative_text(graph, names, lang='numpy'), namespace)   # generated code
    value, gradient = namespace['f'](**{k: point[k] for k in graph.inputs})
    values = tensors.evaluate(graph, point)
    grads = tensors.gradients(graph, values)
    assert value == pytest.approx(float(values[graph.output]), rel=1e-12)
    for k in names:
        assert gradient[k].shape == np.shape(point[k])
        np.testing.assert_allclose(gradient[k], grads[graph.inputs[k]], rtol=1e-10, atol=1e-12)


def test_shapes_that_cannot_agree_are_refused_with_a_caret(run_cli):
    code, out, err = run_cli('diff', 'input A[m, n], x[m]; sum(A @ x)')
    assert (code, out) == (2, '')
    assert err.splitlines() == ['adgrad: error: cannot multiply A[m,n] by x[m]: sizes n and m '
                                'differ (column 26)', '  input A[m, n], x[m]; sum(A @ x)',
                                '                           ^']


def test_an_input_without_a_shape_is_refused_with_a_caret(run_cli):
    code, _, err = run_cli('diff', 'sum(x^2)')
    assert code == 2 and "'x' has no declared shape" in err and err.endswith('^\n')


def test_a_vector_output_is_refused(run_cli):
    code, _, err = run_cli('diff', 'input x[n]; 2*x')
    assert code == 2 and 'scalar output' in err and len(err.splitlines()) == 1


def test_latex_writes_transposes_products_and_traces(run_cli):
    _, out, _ = run_cli('diff', 'input A[n, n], X[n, n], x[n]; trace(A @ X) + sum(x * x) * det(X)',
                        '--lang', 'latex', '--wrt', 'X')
    assert r'^\top' in out and r'\det' in out
    _, out, _ = run_cli('diff', 'input W[m, n], x[n], c[m]; sum(tanh(W @ x + c) * c)',
                        '--lang', 'latex', '--wrt', 'W')
    assert r'\odot' in out and r'\frac{\partial f}{\partial W}' in out
    _, out, _ = run_cli('diff', 'input X[n, n]; trace(inv(X))', '--lang', 'latex')
    assert r'\operatorname{tr}' not in out and '^{-1}' in out
    _, out, _ = run_cli('diff', 'input X[n, n], A[n, n]; trace(diag(diag(X)) @ A)', '--lang',
                        'latex', '--wrt', 'A')
    assert r'\operatorname{diag}' in out


def test_a_deep_chain_prints_linearly_without_recursion():
    small = array_derivative_text(lower(calculus.tanh_chain(100)), ['x'])
    deep = array_derivative_text(lower(calculus.tanh_chain(2000)), ['x'])
    assert len(deep) / len(small) < 25
    assert len(small) <= 4 * len(calculus.tanh_chain(100))


def test_the_same_program_prints_the_same_bytes():
    source = (ROOT / 'samples' / 'mlp_xor.ad').read_text()
    texts = {array_derivative_text(lower(source), ['W1', 'W2'], lang=lang)
             for lang in ('numpy',) * 3}
    assert len(texts) == 1


def test_c_of_an_array_program_takes_sizes_and_arrays(run_cli):
    code, out, err = run_cli('diff', 'input A[m, n], x[n]; sum(tanh(A @ x))', '--lang', 'c')
    assert (code, err) == (0, '')
    assert 'int f(int m, int n, const double *A, const double *x, double *value, double *d_A, ' \
           'double *d_x)' in out


def test_an_array_literal_times_a_variable_is_a_node_of_the_formula():
    """eye(3) and [[1], [2]] stay arrays in the formula (Tape's folding took
    them for numbers: an internal ValueError), and read back to grad's numbers."""
    source = 'input x[3], y[3]; sum([x, y] * [[1], [2]]) + sum(x * eye(3) @ x)'
    graph = lower(source)
    point = random_point(graph, np.random.default_rng(4))
    text = array_derivative_text(graph, ['x', 'y'])
    for name in ('x', 'y'):
        np.testing.assert_allclose(evaluate(text + f'd_{name}', point), grad_of(graph, point, name),
                                   rtol=1e-12)


def bindings(point, names, tmp_path):
    """NAME=@NAME.npy for each of `names`, its array saved there."""
    result = []
    for name in names:
        np.save(tmp_path / f'{name}.npy', np.asarray(point[name], dtype=np.float64))
        result.append(f'{name}=@{tmp_path / name}.npy')
    return result


@pytest.mark.parametrize('name', SAMPLES)
def test_every_array_samples_formula_reads_back_to_grads_numbers(name, run_cli, tmp_path):
    """diff --wrt v, then eval of what it printed at the data's arrays (the
    defaults are in its declaration): grad's gradient, sizes such as n read
    from the arrays that arrive."""
    graph, point = sample_point(name, np.random.default_rng(6))
    values = tensors.evaluate(graph, point)
    grads = tensors.gradients(graph, values)
    data = bindings(point, SAMPLES[name], tmp_path)
    for v in sorted(graph.inputs):
        code, text, err = run_cli('diff', '-f', str(ROOT / 'samples' / name), '--wrt', v)
        assert (code, err) == (0, '')
        (tmp_path / 'd.ad').write_text(text)
        code, out, err = run_cli('eval', '-f', str(tmp_path / 'd.ad'), *data, '--json')
        assert (code, err) == (0, ''), text
        np.testing.assert_allclose(json.loads(out)['value'], grads[graph.inputs[v]], rtol=1e-10,
                                   atol=1e-12, err_msg=f'd_{v}')


@pytest.mark.parametrize('source, wrt, printed', [
    ('trace(X)', 'X', 'd_X = eye(n)'),
    ('mean((W @ x - c)^2)', 'x', 'd_x = W.T @ ((W @ x - c)*(2/m))'),
    ('sum(x)', 'x', 'd_x = ones(n)'),
    ('sum(W)', 'W', 'd_W = ones(m, n)'),
])
def test_a_formula_with_sizes_reads_back_through_a_pipe(source, wrt, printed, tmp_path):
    """`adgrad diff ... | adgrad eval - ...`, as the docs write it: a size the
    formula needs as a number (eye(n), /m, ones(n)) is read from the arrays."""
    import shutil
    import subprocess
    adgrad = shutil.which('adgrad', path=str(Path(sys.executable).parent))
    if adgrad is None:
        pytest.skip('adgrad is not installed beside this Python')
    program = calculus.DECLARE + source
    graph = lower(program)
    point = random_point(graph, np.random.default_rng(8))
    data = ' '.join(bindings(point, graph.inputs, tmp_path))
    done = subprocess.run(['bash', '-c', f"{adgrad} diff '{program}' --wrt {wrt} | tee d.ad | "
                           f'{adgrad} eval - {data} --json'], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / 'd.ad').read_text().splitlines()[-1] == printed
    np.testing.assert_allclose(json.loads(done.stdout)['value'], grad_of(graph, point, wrt),
                               rtol=1e-12)


@pytest.mark.parametrize('source, names', [
    ('input A[n, n], x[n], y[m], W[m, n]; x.T @ A @ x + sum(tanh(W @ x) * y) + sum(y^3)',
     ['x', 'y']),
    ('input x[n], w = 0.5, c[m], W[m, n]; logsumexp(w * W @ x + c) + w^3 * (x @ x)',
     ['w', 'x', 'c']),
])
def test_hessian_blocks_of_several_variables_give_hessians_numbers(source, names):
    """--order 2 --wrt x,y: d2_x_x, d2_x_y, d2_y_y, each the block of the
    Hessian of x's entries (rows) by y's (columns)."""
    from autodiff_cli.derive.array_record import array_hessian
    graph = lower(source)
    point = random_point(graph, np.random.default_rng(9))
    point['w'] = 0.5
    text = array_derivative_text(graph, names, order=2)
    matrix = array_hessian(graph, point, names)
    sizes = [int(np.size(point[v])) for v in names]
    starts = np.cumsum([0] + sizes)
    labels = [line.split(' = ')[0] for line in text.splitlines() if line.startswith('d2_')]
    assert sorted(labels) == sorted(f'd2_{x}_{y}' for i, x in enumerate(names) for y in names[i:])
    for i, x in enumerate(names):
        for j in range(i, len(names)):
            block = matrix[starts[i]:starts[i + 1], starts[j]:starts[j + 1]]
            got = evaluate(text + f'd2_{x}_{names[j]}', point)
            np.testing.assert_allclose(np.reshape(got, block.shape), block, rtol=1e-10,
                                       atol=1e-12, err_msg=f'{x}, {names[j]}')


@pytest.mark.parametrize('source', [
    'input x[4]; x[0]^2 + sum(x[1:3] * x[2:]) + x[-1]',
    'input X[3, 4]; X[1, 2]^2 + sum(X[0] * X[2]) + sum(X[:, 1]^3) + sum(X[1:, ::2]^2)',
    'input X[3, 4]; sum(X[:2, 3]) + sum(X[:, 1:3] * 2) + sum(X[-1]) + sum(X[:2] * X[1:])',
    'input X[n, m]; sum(X[0] * X[1]) + X[-1, 0] + sum(X[:, 0])',
])
def test_a_subscripts_gradient_reads_back_as_rows_of_the_identity(source):
    """The gradient of x[k] is g*eye(n)[k], of X[1:, ::2] eye(m)[1:].T @ G @
    eye(n)[::2]: products with 0 and 1 that give grad's numbers."""
    graph = lower(source)
    point = random_point(graph, np.random.default_rng(10))
    name = next(iter(graph.inputs))
    text = array_derivative_text(graph, [name])
    assert 'eye(' in text
    np.testing.assert_allclose(evaluate(text, point), grad_of(graph, point, name), rtol=1e-14)


@pytest.mark.parametrize('source, wrt', [
    # a vector broadcast along the rows of a product: its transpose is a column
    ('input x[3], u[3], A[3, 3]; y = sum(A.T*outer(x, u), 0); y[0]', 'u'),
    # a scaled cotangent made a row: no endless reshape of 2*g
    ('input A[2, 2], g[2]; sum(2*g*sum(A, 0))', 'A'),
    # P - P.T is antisymmetric, not symmetric: its transpose is not itself
    ('input P[3, 3], x[3]; sum(((P - P.T).T @ x)^2)', 'x'),
    # max over an axis printed as max(A, 0), the elementwise maximum
    ('input A[3, 3]; sum(tanh(max(A, axis=0))) + sum(min(A, axis=1)^2)', 'A'),
    # an array constant taken for a number by the scalar rules
    ('input x[2], c = 0.5; sum(if(c > 0, x, ones(2))*2)', 'x'),
    ('input x[2]; sum((ones(2, 2)*0.5 @ x)^2)', 'x'),
    ('input x[3]; sum((ones(3)*0.5 + zeros(3)*0.5) * x)', 'x'),
    # a row of a stack of matrices, which --lang adgrad refused
    ('input A[2, 3, 4]; sum(A[1]^2) + sum(A[-2] * A[1])', 'A'),
])
def test_formulas_the_fuzzer_found_wrong_read_back_to_grads_numbers(source, wrt, run_cli,
                                                                     tmp_path):
    graph = lower(source)
    rng = np.random.default_rng(3)   # (no square matrix made symmetric, as random_point's are)
    point = {k: rng.normal(size=shape) for k, shape in declared_shapes(graph).items()}
    code, text, err = run_cli('diff', source, '--wrt', wrt)
    assert (code, err) == (0, '')
    (tmp_path / 'd.ad').write_text(text)
    code, out, err = run_cli('eval', '-f', str(tmp_path / 'd.ad'),
                             *bindings(point, graph.inputs, tmp_path), '--json')
    assert (code, err) == (0, ''), text
    np.testing.assert_allclose(json.loads(out)['value'], grad_of(graph, point, wrt),
                               rtol=1e-12, atol=1e-14, err_msg=text)
