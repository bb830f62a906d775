"""The Hessian of array programs against torch.autograd.functional.hessian
(reverse over reverse, as ours), at ordinary and edge points; and `adgrad
hessian` on arrays: rows flattened row-major and labelled W[0,1]."""

import json

import numpy as np
import pytest

from autodiff_cli.derive.array_record import Trace, array_hessian, recorded_gradient
from autodiff_cli.language.lower import lower

from .helpers import run_main

torch = pytest.importorskip('torch')
T = torch
RNG = np.random.default_rng(3)


def _m(*shape):
    return np.round(RNG.standard_normal(shape), 3)


X3, A33, A23, B2, S223 = _m(3), _m(3, 3), _m(2, 3), _m(2), _m(2, 2, 3)
SPD = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
# Singular by a row of zeros, not by a multiple of a row: torch's LU rounds
# [2, 4, 6] - 2*[1, 2, 3] to det = -7e-16 on some CPUs, and numpy's to 0.
SINGULAR = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [1.0, 0.0, 1.0]])
RANK_1 = np.outer([1.0, 2.0, 3.0], [1.0, -1.0, 2.0])
NEGATIVE = np.array([[0.0, 1.0], [1.0, 0.0]]) + 0.1
TIES = np.array([[1.0, 3.0, 3.0], [3.0, 0.0, -1.0]])
ZEROS3 = np.array([[[1.0, 0.0, 2.0], [3.0, 0.0, 1.0]], [[2.0, 2.0, 0.0], [1.0, 1.0, 1.0]]])

CASES = [
    ('x @ A @ x', dict(x=X3, A=A33), lambda x, A: x @ A @ x),
    ('sum(tanh(W @ x + b)^2)', dict(W=A23, x=X3, b=B2), lambda W, x, b: (T.tanh(W @ x + b) ** 2).sum()),
    ('norm(A @ x - b)^2', dict(A=A23, x=X3, b=B2), lambda A, x, b: T.linalg.vector_norm(A @ x - b) ** 2),
    ('norm(x) * sum(x)', dict(x=X3), lambda x: T.linalg.vector_norm(x) * x.sum()),
    ('norm(x)', dict(x=np.zeros(3)), lambda x: T.linalg.vector_norm(x)),   # nan, as torch
    ('norm(x, 1)', dict(x=np.array([1.0, 0.0, -2.0])), lambda x: T.linalg.vector_norm(x, 1)),
    ('-sum(y * log(softmax(W @ x)))', dict(W=_m(3, 4), x=_m(4), y=np.array([0.0, 1.0, 0.0])),
     lambda W, x, y: -(y * T.log(T.softmax(W @ x, 0))).sum()),
    ('logsumexp(x) + sum(softmax(x) * x)', dict(x=X3),
     lambda x: T.logsumexp(x, 0) + (T.softmax(x, 0) * x).sum()),
    ('logsumexp(x)', dict(x=np.array([1000.0, 999.0, -1000.0])), lambda x: T.logsumexp(x, 0)),
    ('sum(softmax(x) * [1, 2, 3])', dict(x=np.array([800.0, 790.0, -5.0])),
     lambda x: (T.softmax(x, 0) * T.tensor([1.0, 2.0, 3.0], dtype=T.float64)).sum()),
    ('sum(logsumexp(A, axis=1) * mean(A, 1))', dict(A=A23),
     lambda A: (T.logsumexp(A, 1) * A.mean(1)).sum()),
    # linear algebra, singular and negative determinants included
    ('logdet(X)', dict(X=SPD), lambda X: T.logdet(X)),
    ('logdet(X)', dict(X=NEGATIVE), lambda X: T.logdet(X)),
    ('det(X)', dict(X=SPD), lambda X: T.linalg.det(X)),
    ('det(X)', dict(X=SINGULAR), lambda X: T.linalg.det(X)),   # torch: the cofactors' derivative
    # the program's own det in the second pass: the plain rule's 0 where singular
    ('det(X)^2', dict(X=SINGULAR), lambda X: T.linalg.det(X) ** 2),
    ('det(X) * sum(X)', dict(X=np.array([[1.0, 2.0], [2.0, 4.0]])),
     lambda X: T.linalg.det(X) * X.sum()),
    ('det(X) * sum(X)', dict(X=RANK_1), lambda X: T.linalg.det(X) * X.sum()),
    ('det(X)^2', dict(X=np.zeros((1, 1))), lambda X: T.linalg.det(X) ** 2),
    ('trace(inv(X) @ B)', dict(X=SPD, B=A33), lambda X, B: T.trace(T.linalg.inv(X) @ B)),
    ('sum(inv(X)) + trace(X @ X)', dict(X=A33 + 3 * np.eye(3)),
     lambda X: T.linalg.inv(X).sum() + T.trace(X @ X)),
    ('sum(solve(X, b) * b)', dict(X=SPD, b=X3), lambda X, b: (T.linalg.solve(X, b) * b).sum()),
    ('sum(solve(X, B)^2)', dict(X=SPD, B=_m(3, 2)), lambda X, B: (T.linalg.solve(X, B) ** 2).sum()),
    ('sum(solve(X, b))', dict(X=np.array([[1.0, 1.0], [1.0, 1.0 + 1e-10]]), b=np.array([1.0, 2.0])),
     lambda X, b: T.linalg.solve(X, b).sum()),
    ('sum(diag(outer(x, x))^2) + sum(diag(A)^3) + trace(A)^2', dict(x=X3, A=A23),
     lambda x, A: (T.diag(T.outer(x, x)) ** 2).sum() + (T.diag(A) ** 3).sum() + T.trace(A) ** 2),
    ('sum(diag(x) @ A)', dict(x=X3, A=A33), lambda x, A: (T.diag(x) @ A).sum()),
    # reductions: products with zeros, ties
    ('prod(x)', dict(x=X3), lambda x: x.prod()),
    ('prod(x)', dict(x=np.array([1.0, 0.0, 2.0])), lambda x: x.prod()),
    ('prod(x)', dict(x=np.array([0.0, 0.0, 2.0])), lambda x: x.prod()),
    ('sum(prod(S, 1)) + prod(S)', dict(S=ZEROS3), lambda S: S.prod(1).sum() + S.prod()),
    ('sum(prod(S, 2)^2)', dict(S=ZEROS3), lambda S: (S.prod(2) ** 2).sum()),
    ('max(A) * sum(A)', dict(A=TIES), lambda A: A.max() * A.sum()),
    ('sum(max(A, axis=1)^2)', dict(A=TIES), lambda A: (T.amax(A, 1) ** 2).sum()),
    ('min(A)^2', dict(A=TIES), lambda A: A.min() ** 2),
    ('max(x) * sum(x^2)', dict(x=X3), lambda x: x.max() * (x ** 2).sum()),
    # shapes and broadcasting
    ('sum(concat(x, x^2)[1:4]^3) + sum(stack(x, x)[1]^2)', dict(x=X3),
     lambda x: (T.cat([x, x ** 2])[1:4] ** 3).sum() + (T.stack([x, x])[1] ** 2).sum()),
    ('sum(reshape(A, [6])^3) + mean(A, 0) @ mean(A, 0)', dict(A=A23),
     lambda A: (A.reshape(6) ** 3).sum() + A.mean(0) @ A.mean(0)),
    ('sum(A[1, 0:2] * A[:, 0]^2) + A[0, 1]^3', dict(A=A23),
     lambda A: (A[1, 0:2] * A[:, 0] ** 2).sum() + A[0, 1] ** 3),
    ('sum((P * Q)^2 * S)', dict(P=_m(2, 1), Q=_m(1, 3), S=S223),
     lambda P, Q, S: ((P * Q) ** 2 * S).sum()),
    ('sum((S @ B)^2)', dict(S=S223, B=_m(3, 2)), lambda S, B: ((S @ B) ** 2).sum()),
    ('sum((A + c)^2 * c)', dict(A=A23, c=np.array(1.5)), lambda A, c: ((A + c) ** 2 * c).sum()),
    # scalar functions at their edges
    ('sum(sqrt(x))', dict(x=np.array([0.0, 1.0, 4.0])), lambda x: T.sqrt(x).sum()),
    ('sum(relu(x)^2 + abs(x)^3)', dict(x=np.array([-1.0, 0.0, 2.0])),
     lambda x: (T.relu(x) ** 2 + T.abs(x) ** 3).sum()),
    ('sum(x^y)', dict(x=np.array([0.0, 1.0, 2.0]), y=np.array([2.0, 0.0, 3.0])),
     lambda x, y: (x ** y).sum()),
    ('sum(where(x > 0, x^3, -x^2))', dict(x=X3), lambda x: T.where(x > 0, x ** 3, -x ** 2).sum()),
]


def _layers(x, W, b):
    for i in range(4):
        x = T.tanh(W[i] @ x + b[i]) + 0.5 * x
    return (x ** 2).sum() + 0.1 * (W ** 2).sum()


def _branching(x, W):
    for _ in range(5):
        x = T.where(x > 0, x * 0.9, T.tanh(W @ x)) + 0.1
    return (x ** 2).sum()


def _nested(x, W):
    for _ in range(3):
        for j in range(2):
            x = T.sin(W @ x) * (1 + 0.1 * j) + 0.5 * x
    return (x ** 3).sum()


def _scan_loss(w, X, y):
    loss = 0
    for i in range(5):
        loss = loss + (T.tanh(X[i] @ w) - y[i]) ** 2
    return loss


# Loops: the gradient's recording runs each iteration's rules (W[i] and the
# cotangent it sends back to W recorded too), then reverse over reverse.
LOOPS = [
    ('input x[3], W[4, 3, 3], b[4, 3]\nfor i in 0..4 {\n x = tanh(W[i] @ x + b[i]) + 0.5*x\n}\n'
     'sum(x^2) + 0.1*sum(W^2)', dict(x=X3, W=_m(4, 3, 3) / 2, b=_m(4, 3) / 4), _layers),
    ('input x[3], W[3, 3]\nfor i in 0..5 {\n x = if(x > 0, x * 0.9, tanh(W @ x)) + 0.1\n}\nsum(x^2)',
     dict(x=np.array([0.5, -0.3, 0.2]), W=A33 / 2), _branching),
    ('input x[2], W[2, 2]\nfor i in 0..3 {\n for j in 0..2 {\n  x = sin(W @ x) * (1 + 0.1*j) + 0.5*x'
     '\n }\n}\nsum(x^3)', dict(x=B2, W=_m(2, 2)), _nested),
    ('input w[2], X[5, 2], y[5]\nloss = 0\nfor i in 0..5 {\n loss = loss + (tanh(X[i] @ w) - y[i])^2'
     '\n}\nloss', dict(w=B2, X=_m(5, 2), y=_m(5)), _scan_loss),
]
CASES += LOOPS


def _torch_hessian(function, inputs):
    """torch's Hessian, its blocks joined into one matrix of flattened inputs."""
    blocks = T.autograd.functional.hessian(function, tuple(T.tensor(v) for v in inputs.values()))
    sizes = [int(np.size(v)) for v in inputs.values()]
    return np.block([[blocks[i][j].reshape(sizes[i], sizes[j]).numpy()
                      for j in range(len(sizes))] for i in range(len(sizes))])


@pytest.mark.parametrize('source, inputs, function', CASES,
                         ids=[f'{k}:{c[0][:40]}' for k, c in enumerate(CASES)])
def test_a_hessian_agrees_with_torch(source, inputs, function):
    ours = array_hessian(lower(source), inputs, list(inputs))
    np.testing.assert_allclose(ours, _torch_hessian(function, inputs), rtol=1e-10, atol=1e-10,
                               equal_nan=True)


def test_the_untaken_side_of_an_if_leaks_no_nan_into_the_hessian():
    """As the gradient: each entry takes its own branch's second derivative
    (hand-derived: 2 for x^2, -1/x^2 for log x), where torch.where gives nan."""
    x = np.array([-1.0, 0.0, 2.0])
    ours = array_hessian(lower('sum(if(x > 0, log(x), x^2))'), {'x': x}, ['x'])
    np.testing.assert_array_equal(ours, np.diag([2.0, 2.0, -0.25]))


def test_det_of_a_zero_matrix_has_its_true_hessian():
    """Where singular values repeat (the zero matrix) torch's SVD form of det's
    rule gives nan; adgrad the true derivative, hand-derived: det of [[a, b],
    [c, d]] is ad - bc, whose Hessian pairs a with d and b with c; det of a 3x3
    is cubic, so its Hessian at 0 is 0."""
    two = array_hessian(lower('det(X)'), {'X': np.zeros((2, 2))}, ['X'])
    np.testing.assert_array_equal(two, np.rot90(np.diag([1.0, -1.0, -1.0, 1.0])))
    three = array_hessian(lower('det(X)'), {'X': np.zeros((3, 3))}, ['X'])
    np.testing.assert_array_equal(three, np.zeros((9, 9)))


def test_every_adjoint_is_recorded_by_some_case():
    """The rows the rules are written with (broadcast_to, sum_to, unindex,
    others_product, minor_det) are differentiated in some case above: a new one without
    a case fails here by name."""
    from autodiff_cli.core.primitives import ADJOINTS
    recorded = set()
    for source, inputs, _ in CASES:
        trace, _ = recorded_gradient(lower(source), inputs, list(inputs))
        recorded |= {node.op for node in trace.nodes}
    assert not sorted(row.name for row in ADJOINTS if row.name not in recorded)


def test_newton_minimizes_a_loop_program_of_arrays():
    # the sum over i of (W[i] @ x - c[i])^2 is least squares: the normal
    # equations' solution, by NumPy
    W = np.array([[1.0, 2.0], [0.5, -1.0], [2.0, 0.3]])
    c = np.array([1.0, -2.0, 0.5])
    expected = np.linalg.solve(W.T @ W, W.T @ c)
    source = 'input x[2], W[3, 2], c[3]\ns = 0\nfor i in 0..3 {\n s = s + (W[i] @ x - c[i])^2\n}\ns'
    run = run_main(['minimize', source, 'x=[0, 0]', f'W={W.tolist()}', f'c={c.tolist()}',
                    '--wrt', 'x', '--method', 'newton', '--json'])
    assert run.code == 0, run.err
    np.testing.assert_allclose(json.loads(run.out)['minimiser']['x'], expected, rtol=1e-12)


def test_a_trace_folds_what_does_not_vary():
    trace = Trace()
    assert isinstance(trace.mul(np.ones(2), 3.0), np.ndarray) and not trace.nodes


# ---- the command ----

def test_hessian_of_a_quadratic_form_is_a_plus_a_transpose(tmp_path, monkeypatch):
    A = [[1.0, 2.0], [3.0, 5.0]]
    out = run_main(['hessian', 'x @ A @ x', 'x=[1, 2]', f'A={json.dumps(A)}', '--wrt', 'x',
                    '--json'])
    assert out.code == 0, out.err
    result = json.loads(out.out)
    assert result['variables'] == ['x[0]', 'x[1]']
    np.testing.assert_array_equal(result['hessian'], np.array(A) + np.array(A).T)


def test_matrix_inputs_are_flattened_row_major(tmp_path, monkeypatch):
    W = RNG.standard_normal((2, 3)).round(2)
    np.save(tmp_path / 'w.npy', W)
    x = [0.5, -1.0, 2.0]
    monkeypatch.chdir(tmp_path)
    out = run_main(['hessian', 'sum(tanh(W @ x)^2)', f'x={json.dumps(x)}', 'W=@w.npy', '--json'])
    assert out.code == 0, out.err
    result = json.loads(out.out)
    assert result['variables'][:4] == ['W[0,0]', 'W[0,1]', 'W[0,2]', 'W[1,0]']
    assert result['variables'][6:] == ['x[0]', 'x[1]', 'x[2]']
    expected = _torch_hessian(lambda W, x: (T.tanh(W @ x) ** 2).sum(), {'W': W, 'x': np.array(x)})
    np.testing.assert_allclose(result['hessian'], expected, rtol=1e-10, atol=1e-12)


def test_hessian_over_data_is_of_the_parameters(tmp_path, monkeypatch):
    """With --data and no --wrt, the rows and columns are the parameters'; the
    least-squares Hessian is 2/N [[Σx², Σx], [Σx, N]] by hand."""
    x, y = np.array([1.0, 2.0, 4.0]), np.array([2.0, 3.0, 9.0])
    (tmp_path / 'd.csv').write_text('x,y\n' + ''.join(f'{a},{b}\n' for a, b in zip(x, y)))
    monkeypatch.chdir(tmp_path)
    out = run_main(['hessian', 'mean((w*x + b - y)^2)', '--data', 'd.csv', 'w=0.5', 'b=0',
                    '--json'])
    assert out.code == 0, out.err
    result = json.loads(out.out)
    assert result['variables'] == ['b', 'w']
    n = len(x)
    np.testing.assert_allclose(result['hessian'], 2 / n * np.array([[n, x.sum()],
                                                                    [x.sum(), (x * x).sum()]]))


@pytest.mark.parametrize('words, message', [
    (['hessian', 'x * 2', 'x=[1, 2]'], 'the Hessian needs a scalar output, and this one has shape [2]'),
    (['hessian', 'sum(x)', 'x=[1, 2]', '--points', 'p.csv'], 'hessian --points takes programs of numbers'),
    (['hessian', 'x*y', 'x=1', '--data', 'p.csv'], 'the Hessian needs a scalar output'),
    # 12,000² entries: refused before anything is recorded, with what to do
    (['hessian', 'sum(x^2) + sum(y)', 'x=@big.npy', 'y=[1]'],
     'the Hessian by x, y would have 12,001 × 12,001 entries, past the 134,217,728 an array '
     'may hold: ask for fewer with --wrt'),
])
def test_hessian_refuses_in_one_line(words, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / 'p.csv').write_text('y\n1\n2\n')
    np.save(tmp_path / 'big.npy', np.ones(12000))
    out = run_main(words)
    assert out.code == 2
    assert message in out.err and len(out.err.strip().splitlines()) == 1, out.err


def test_the_library_gives_the_same_hessian():
    from autodiff_cli import Program
    x, A = np.array([1.0, -2.0]), np.array([[1.0, 2.0], [0.5, 3.0]])
    rows = Program('x @ A @ x').hessian(x=x, A=A, wrt=['x'])
    np.testing.assert_array_equal(rows, A + A.T)


# ---- check --order 2 ----

def test_check_order_2_passes_a_right_hessian_and_fails_a_wrong_one(monkeypatch):
    words = ['check', 'sum(tanh(W @ x)^2) + x @ x * W[0, 1]', 'W=[[1, 2], [3, 4]]', 'x=[0.5, -1]',
             '--order', '2', '--json']
    out = run_main(words)
    assert out.code == 0, out.err
    rows = json.loads(out.out)['rows'] if out.out.startswith('{') else json.loads(out.out)
    assert rows and all(row['verdict'] == 'pass' for row in rows)
    from autodiff_cli.derive import array_record
    right = array_record.array_hessian
    monkeypatch.setattr(array_record, 'array_hessian',
                        lambda *a: right(*a) + np.eye(6)[::-1] * 1e-6)   # a planted bug
    wrong = run_main(words)
    assert wrong.code == 1 and 'FAIL' in wrong.out + wrong.err


def test_check_order_2_warns_at_a_kink():
    out = run_main(['check', 'sum(relu(x)^2 * x)', 'x=[0, 1]', '--order', '2', '--json'])
    assert out.code == 0, out.err
    assert 'kink' in out.out
