"""`diff` of array programs with loops (derive/array_loops.py): one loop
forward that stacks its states, one loop backward over the indices in
reverse. What it prints is read back by `eval`, and run as NumPy, to grad's
numbers (grad's are torch's: test_loops.py); its size does not grow with
the iterations."""

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from autodiff_cli import lower
from autodiff_cli.core import tensors
from autodiff_cli.derive.array_printers import array_derivative_text

sys.path.insert(0, str(Path(__file__).resolve().parent))

PROGRAMS = {
    'layers': 'input W[N, 4, 4], b[N, 4], x[4]\nfor i in 0..N {\n    x = tanh(W[i] @ x + b[i])\n}\n'
              'sum(x^2)',
    # a weight every iteration reads, a slice of data, a carried sum and the index
    'recurrent': 'input A[4, 4], U[N, 4], h[4], c = 0.5\ns = 0\nfor t in 0..N {\n'
                 '    h = tanh(A @ h + U[t] * c)\n    s = s + sum(h^2) / (t + 1)\n}\ns',
    # X[i] = ... and a reversed loop of the program's own
    'stacked, reversed': 'input W[N, 3, 3], b[N, 3], x[3]\nfor i in reversed(0..N) {\n'
                         '    X[i] = x\n    x = tanh(W[i] @ x + b[i])\n    H[i] = x * i\n}\n'
                         'loss = sum(X^2) + sum(x) + sum(H[1])',
    'nested': 'input W[N, 4, 4], x[4], c[4]\nfor i in 0..N {\n    Wi = W[i]\n'
              '    for j in 0..2 {\n        x = tanh(Wi @ x + c * j)\n    }\n}\nsum(x^3)',
    'if in the body': 'input W[N, 3, 3], x[3]\nfor i in 0..N {\n'
                      '    x = if(i < 2, tanh(W[i] @ x), W[i] @ x / 3)\n}\nsum(x^2)',
    'symbolic sizes': 'input W[N, n, n], b[n], x[n]\nfor i in 0..N {\n'
                      '    x = sin(W[i] @ x) + b\n}\nmean(x^2)',
    # a name the next iteration does not read: its cotangent reaches the last only
    'a name left by the last iteration': 'input W[N, 4, 4], x[4]\nfor i in 0..N {\n'
                                         '    h = W[i] @ x\n    x = tanh(h)\n}\nsum(h^2)',
    # the rest the fuzzer found (helper session, 3,500 programs): a loop whose
    # only statements are stacked rows, a size and ones(n, n) in a body, 2*sum(A, 0)
    'rows only': 'input W[N, 2, 2], x[2]\nfor i in 0..N {\n    x = x + sum(W[i])\n}\nsum(x)',
    'stacked only': 'input b[N, 2], y[2]\nfor i in 0..N {\n    X[i] = sum(b[i]*y)\n}\nsum(X)',
    'nested rows only': 'input q = 0.3, b[N, 2, 3]\nfor i in 0..N {\n    S = b[i]\n'
                        '    for j in 0..2 {\n        q = q + sum(S[j])\n    }\n}\nq',
    'a size in the body': 'input x[n], u[n]\nfor i in 0..N {\n    x = x + mean(u) * x\n}\n'
                          'sum(x)',
    'ones of sizes in the body': 'input W[N, n, n], x[n]\nfor i in 0..N {\n'
                                 '    x = x + sum(W[i]) * x\n}\nsum(x)',
    'a scaled sum': 'input A[2, 2], y[2]\nfor i in 0..N {\n    y = y + 2*sum(A, 0)\n}\nsum(y)',
    # and what a second campaign found (2,246 programs), C's most of all: a copy
    # of a carried x, a slice or a constant read after the loop, upper-case
    # names, softplus's and gelu's own derivatives, s = s, unused cotangents
    'a copy of a carried value': 'input x[3]\nfor i in 0..N {\n    z = x\n    x = 2*x\n}\n'
                                 'sum(z^2) + sum(x)',
    'a slice read after the loop': 'input T[N, 3], x[3]\nfor i in 0..N {\n    z = T[i]\n}\n'
                                   'for i in 0..2 {\n    x = sin(x + z)\n}\nsum(x)',
    'a constant left by the loop': 'input x[2]\nfor i in 0..N {\n    z = ones(2)\n'
                                   '    x = sin(x)\n}\nsum(z) + sum(x)',
    'nothing of the arguments': 'input x[2]\nfor i in 0..N {\n    x = ones(2)*i\n'
                                '    z = sum(x)\n}\nz',
    'softplus and gelu': 'input x[2]\nfor i in 0..N {\n    x = softplus(x) - gelu(x)\n}\nsum(x)',
    'upper-case names': 'input X[2]\nS = 0\nfor i in 0..N {\n    X = sin(X)\n'
                        '    S = S + sum(X)\n}\nS',
    'names carried unchanged': 'input x[2], c = 0.3\ns = c\nr = 0\nfor i in 0..N {\n'
                               '    X[i] = x*s\n    s = s\n    r = r\n}\nsum(X) + s + r',
    'a branch of zeros': 'input x[2]\nfor i in 0..N {\n    x = if(x > 0, zeros(2), ones(2))\n'
                         '    z = sum(x)\n}\nz',
    'names nothing reads after the loop': 'input x[2]\ns = 0\nfor i in 0..N {\n'
                                          '    s = tanh(0.5*s + i)\n    w = sum(x)\n'
                                          '    z = if(s > 0.1, x, 2*x)\n}\nmean(z^3)',
    # (and, from a third run, arguments of slots no read part needs: declared, unread)
    'a later loop reads it for nothing': 'input x[2]\ns = 0\nfor i in 0..N {\n'
                                         '    s = sin(sum(x) * i)\n    z = ones(2, 2)\n}\n'
                                         'for i in 0..2 {\n    for t in 0..1 {\n'
                                         '        X[t] = s\n        Y[t] = z @ x\n    }\n'
                                         '    x = 0.5*x\n}\nsum(x)',
    'a cotangent for no variable': 'input V[n, n]\nJ = ones(n, n)\nI = eye(n)\n'
                                   'for i in 0..N {\n    s = max(if(i >= 2, I, J), axis=0)[0]\n'
                                   '    V = V @ J\n}\ns^2',
    'a number an inner loop leaves': 'input T[N, 3]\nfor i in 0..N {\n    S = T[i]\n'
                                     '    for t in 0..3 {\n        z = 1.5\n        w = S[t]\n'
                                     '    }\n}\nz + sum(T)',
    'a row of a stack of matrices': 'input x[3], b[N, 3]\nfor i in 0..N {\n'
                                    '    X[i] = outer(x, b[i])\n}\nsum(X[1]^2) + sum(X[-1])',
    'constants of an inner loop': 'input x[2]\nfor i in 0..N {\n    for t in 0..1 {\n'
                                  '        z = sum(ones(2, 2) + sum(eye(2), 1), 0)\n    }\n}\n'
                                  'sum(z) + sum(x)',
}


def _program(name, n=4):
    source = PROGRAMS[name].replace('N', str(n))
    graph = lower(source)
    rng = np.random.default_rng(sum(map(ord, name)))
    from autodiff_cli.derive.array_formula import declared_shapes
    point = {k: rng.normal(size=tuple(3 if s == 'n' else s for s in shape)) * 0.6
             for k, shape in declared_shapes(graph).items()}
    values = tensors.evaluate(graph, point)
    grads = tensors.gradients(graph, values)
    return source, graph, point, values[graph.output], {
        k: grads[i] for k, i in graph.inputs.items()}


def _bindings(point, tmp_path):
    result = []
    for name, value in point.items():
        np.save(tmp_path / f'{name}.npy', np.asarray(value, dtype=np.float64))
        result.append(f'{name}=@{tmp_path / name}.npy')
    return result


@pytest.mark.parametrize('name', sorted(PROGRAMS))
def test_the_printed_loops_read_back_by_eval_give_grads_numbers(name, run_cli, tmp_path):
    source, graph, point, _, grads = _program(name)
    (tmp_path / 'f.ad').write_text(source)
    data = _bindings(point, tmp_path)
    for v in sorted(graph.inputs):
        code, text, err = run_cli('diff', '-f', str(tmp_path / 'f.ad'), '--wrt', v)
        assert (code, err) == (0, ''), err
        (tmp_path / 'd.ad').write_text(text)
        code, out, err = run_cli('eval', '-f', str(tmp_path / 'd.ad'), *data, '--json')
        assert (code, err) == (0, ''), text
        np.testing.assert_allclose(json.loads(out)['value'], grads[v], rtol=1e-12, atol=1e-14,
                                   err_msg=f'd_{v}\n{text}')


@pytest.mark.parametrize('name', sorted(PROGRAMS))
def test_the_printed_numpy_gives_grads_numbers(name):
    _, graph, point, value, grads = _program(name)
    namespace = {}
    exec(array_derivative_text(graph, sorted(graph.inputs), lang='numpy'), namespace)  # generated
    got_value, got = namespace['f'](**point)
    assert got_value == pytest.approx(float(value), rel=1e-13)
    for k, g in grads.items():
        assert got[k].shape == np.shape(point[k])
        np.testing.assert_allclose(got[k], g, rtol=1e-12, atol=1e-14, err_msg=k)


def test_the_layers_gradient_is_torchs():
    from test_loops import assert_torchs_tanh_layers
    pytest.importorskip('torch')
    _, graph, point, _, _ = _program('layers', 6)
    namespace = {}
    exec(array_derivative_text(graph, sorted(graph.inputs), lang='numpy'), namespace)  # generated
    assert_torchs_tanh_layers(*namespace['f'](**point), point)


@pytest.mark.parametrize('name', sorted(PROGRAMS))
def test_the_printed_text_does_not_grow_with_the_iterations(name):
    texts = []
    for n in (4, 400):
        source = PROGRAMS[name].replace('N', str(n))
        texts.append(array_derivative_text(lower(source), sorted(lower(source).inputs)))
    assert len(texts[0].splitlines()) == len(texts[1].splitlines()) < 60, texts[1]


def test_a_loop_over_some_of_the_slices_is_refused_in_one_line(run_cli):
    source = 'input W[5, 4, 4], x[4]\nfor i in 1..4 {\n    x = tanh(W[i] @ x)\n}\nsum(x)'
    code, out, err = run_cli('diff', source)
    assert (code, out) == (2, '') and len(err.splitlines()) == 1
    assert 'all the slices of W[i] only' in err, err


@pytest.mark.skipif(shutil.which('cc') is None, reason='cc is not installed')
@pytest.mark.parametrize('name', sorted(PROGRAMS))
def test_the_printed_c_compiles_and_gives_grads_numbers(name, tmp_path):
    from test_array_c import check_against_grad
    _, graph, point, _, _ = _program(name)
    check_against_grad(graph, point, sorted(graph.inputs), tmp_path, {'n': 3})


@pytest.mark.parametrize('flags', [['--lang', 'latex'], ['--order', '2', '--wrt', 'x']])
def test_latex_and_second_orders_of_array_loops_say_so_in_one_line(flags, run_cli):
    code, out, err = run_cli('diff', PROGRAMS['layers'].replace('N', '3'), *flags)
    assert (code, out) == (2, '') and len(err.splitlines()) == 1 and 'adgrad' in err, err


def test_a_value_whose_cotangent_reaches_no_variable_is_not_computed_for_it():
    # s's cotangent reaches J and I only, constants: d_V needs the reverse loop
    # alone, not the forward loop that would recompute s for it
    source = PROGRAMS['a cotangent for no variable'].replace('N', '3').replace('s^2', 's^2 + sum(V)')
    text = array_derivative_text(lower(source), ['V'])
    assert [line for line in text.splitlines() if line.startswith('for ')] == \
        ['for i in reversed(0..3) {'], text
