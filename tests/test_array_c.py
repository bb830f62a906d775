"""`adgrad diff --lang c` of array programs: the C compiled with `cc -std=c99 -Wall
-Werror`, loaded with ctypes and run on the arrays grad is given, whose numbers it
must give (rtol 1e-10): every Cookbook row of docs/arrays.md and every array sample."""

import ctypes
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from autodiff_cli import lower
from autodiff_cli.core import tensors
from autodiff_cli.derive.array_printers import array_derivative_text

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'benchmarks'))
sys.path.insert(0, str(ROOT / 'tests'))
import calculus  # noqa: E402
from test_array_formula import SAMPLES, SIZES, random_point, sample_point  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which('cc') is None, reason='cc is not installed')
SIGNATURE = re.compile(r'^int f\((.*)\)$', re.M)


def compiled(text, tmp_path):
    """The C text as a shared library, compiled as the docs say, warnings as errors."""
    source, library = tmp_path / 'f.c', tmp_path / 'f.so'
    source.write_text(text)
    done = subprocess.run(['cc', '-std=c99', '-Wall', '-Werror', '-O2', '-shared', '-fPIC',
                           str(source), '-o', str(library), '-lm'], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr + text
    return ctypes.CDLL(str(library))


def run_c(text, tmp_path, point, sizes, shapes):
    """f(sizes, inputs, value, outputs) called on `point`: (value, {output: array})."""
    lib = compiled(text, tmp_path)
    arguments, outputs, keep = [], {}, []
    for parameter in SIGNATURE.search(text).group(1).split(', '):
        kind, name = parameter.rsplit(' ', 1)
        pointer = name.startswith('*')
        name = name.lstrip('*')
        if kind == 'int':
            arguments.append(ctypes.c_int(sizes[name]))
        elif kind == 'double' and not pointer:
            arguments.append(ctypes.c_double(float(point[name])))
        elif kind == 'const double' or kind == 'const double *':
            array = np.ascontiguousarray(point[name], dtype=np.float64)
            keep.append(array)
            arguments.append(array.ctypes.data_as(ctypes.POINTER(ctypes.c_double)))
        else:
            shape = () if name == 'value' else shapes[name]
            outputs[name] = np.full(shape, np.nan)
            arguments.append(outputs[name].ctypes.data_as(ctypes.POINTER(ctypes.c_double)))
    lib.f.restype = ctypes.c_int
    assert lib.f(*arguments) == 0
    return float(outputs.pop('value')), outputs


def check_against_grad(graph, point, names, tmp_path, sizes):
    text = array_derivative_text(graph, names, lang='c')
    values = tensors.evaluate(graph, point)
    grads = tensors.gradients(graph, values)
    shapes = {f'd_{k}': np.shape(point[k]) for k in names}
    value, outputs = run_c(text, tmp_path, point, sizes, shapes)
    assert value == pytest.approx(float(values[graph.output]), rel=1e-10)
    for k in names:
        np.testing.assert_allclose(outputs[f'd_{k}'], grads[graph.inputs[k]], rtol=1e-10,
                                   atol=1e-12, err_msg=k)


@pytest.mark.parametrize('row', calculus.COOKBOOK, ids=[f'{r[0]} d{r[1]}' for r in calculus.COOKBOOK])
def test_every_cookbook_row_compiles_and_gives_grads_numbers(row, tmp_path):
    graph = lower(calculus.program(row))
    point = random_point(graph, np.random.default_rng(11))
    check_against_grad(graph, point, [row[1]], tmp_path, SIZES)


@pytest.mark.parametrize('name', SAMPLES)
def test_every_array_sample_compiles_and_gives_grads_numbers(name, tmp_path):
    graph, point = sample_point(name, np.random.default_rng(5))
    sizes = {'n': next(iter(SAMPLES[name].values()), (0,))[0]}
    check_against_grad(graph, point, sorted(graph.inputs), tmp_path, sizes)


@pytest.mark.parametrize('source, wrt', [
    ('input A[n, n], x[n]; x.T @ A @ x', 'x'),
    ('input W[m, n], x[n], c[m]; sum(tanh(W @ x + c))', 'x'),
    ('input A[n, n], x[n]; logsumexp(A @ x) + x @ A @ x', 'x'),
])
def test_a_hessian_in_c_gives_hessians_numbers(source, wrt, tmp_path):
    from autodiff_cli.derive.array_record import array_hessian
    graph = lower(source)
    point = random_point(graph, np.random.default_rng(3))
    text = array_derivative_text(graph, [wrt], order=2, lang='c')
    assert 'the gradient' not in text
    value, outputs = run_c(text, tmp_path, point, SIZES, {f'd2_{wrt}': (3, 3)})
    np.testing.assert_allclose(outputs[f'd2_{wrt}'], array_hessian(graph, point, [wrt]),
                               rtol=1e-10, atol=1e-12)


# Every array op with a loop of its own, and elementwise ones under broadcasting.
OPS = [
    'input X[n, m], y[m]; sum(X * y + X / 2)',
    'input X[n, m], y[n]; sum(sin(X.T) * y)',
    'input X[n, m]; sum(softmax(X, axis=0) * X) + sum(logsumexp(X, axis=1))',
    'input X[n, m]; sum(max(X, axis=0)) + sum(min(X, axis=1)) + max(X)',
    'input X[n, m]; sum(prod(X, axis=1)) + prod(X[0])',
    'input X[3, m]; mean(X, axis=0) @ X.T @ mean(X, axis=1).T + ones(3) @ X @ X.T @ ones(3) + mean(X)',
    'input x[n]; norm(x, 1) + norm(x)',
    'input X[n, n], b[n]; sum(solve(X, b)) + sum(solve(X, X.T)) + trace(inv(X) @ X.T)',
    'input X[n, n]; det(X) + logdet(X) + sum(diag(X)) + sum(diag(X[0]) @ X)',
    'input X[3, 4]; sum(X[1:, ::2] * X[:2, 1::2]) + X[-1, -1] + sum(X[:, 1])',
    'input X[3, 4]; sum(reshape(X, [-1]) * reshape(X.T, [12])) + sum(reshape(X, [2, 6])[1])',
    'input x[3], y[3]; sum(concat(x, y, 2*x) ^ 2) + sum([x, y] * [[1], [2]])',
    'input X[2, 3], Y[2, 3]; sum(concat(X, Y, axis=1) ^ 2) + sum(stack(X, Y)[1] * X)',
    'input x[n], y[n]; sum(if(x > y, x * y, x - y)) + sum(where(x > 0, log(x ^ 2), 0))',
    'input x[n], c = 0.5; sum(exp(c * x) + relu(x) + sigmoid(x)) + c ^ 3',
    'input T[2, 3, m]; sum(T * T) + sum(sum(T, axis=1) ^ 2) + sum(softmax(T, axis=1) * T)',
    'input x[3]; sum(x * eye(3) @ x) + x @ x / 3',
]


@pytest.mark.parametrize('source', OPS)
def test_each_array_op_compiles_and_gives_grads_numbers(source, tmp_path):
    graph = lower(source)
    point = random_point(graph, np.random.default_rng(2))
    check_against_grad(graph, point, sorted(graph.inputs), tmp_path, SIZES)


def test_lu_pivots_rows_as_lapack_does(tmp_path):
    """At a matrix whose leading entry is 0, where elimination without row
    swaps divides by 0, and whose det's sign is the one swap's."""
    graph = lower('input X[3, 3], b[3]; det(X) + sum(solve(X, b)) + trace(inv(X)) + logdet(-X)')
    point = {'X': np.array([[0.0, 2.0, 1.0], [4.0, 1.0, 0.5], [1.0, 1.0, 3.0]]),
             'b': np.array([1.0, -2.0, 0.5])}
    assert np.linalg.det(point['X']) < 0
    check_against_grad(graph, point, ['X', 'b'], tmp_path, {})


def test_hessian_blocks_in_c_and_numpy_give_hessians_numbers(tmp_path):
    """--order 2 --wrt w,x,c: each block d2_x_y in C and in NumPy, x's shape
    then y's, named as the second derivative, never the gradient."""
    from autodiff_cli.derive.array_record import array_hessian
    names = ['w', 'x', 'c']
    graph = lower('input x[n], w = 0.5, c[m], W[m, n]; logsumexp(w * W @ x + c) + w^3 * (x @ x)')
    point = {**random_point(graph, np.random.default_rng(12)), 'w': 0.5}
    matrix = array_hessian(graph, point, names)
    shapes = {v: np.shape(point[v]) for v in names}
    starts = dict(zip(names, np.cumsum([0] + [int(np.prod(shapes[v])) for v in names])))
    blocks = {f'd2_{x}_{y}': (x, y) for i, x in enumerate(names) for y in names[i:]}
    text = array_derivative_text(graph, names, order=2, lang='c')
    _, outputs = run_c(text, tmp_path, point, SIZES,
                       {k: shapes[x] + shapes[y] for k, (x, y) in blocks.items()})
    namespace = {}
    exec(array_derivative_text(graph, names, order=2, lang='numpy'), namespace)   # generated
    _, numpy_blocks = namespace['f'](**point)
    assert set(numpy_blocks) == set(outputs) == set(blocks)
    for label, (x, y) in blocks.items():
        expected = matrix[starts[x]:starts[x] + int(np.prod(shapes[x])),
                          starts[y]:starts[y] + int(np.prod(shapes[y]))]
        for got in (outputs[label], numpy_blocks[label]):
            np.testing.assert_allclose(np.reshape(got, expected.shape), expected, rtol=1e-10,
                                       atol=1e-12, err_msg=label)
