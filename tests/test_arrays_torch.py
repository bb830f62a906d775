"""Every array primitive against torch float64 autograd, at ordinary and edge
points: the value, and the gradient of every input.

Each case is an adgrad expression, its inputs, and the same function written
in torch. The output is weighted by a fixed random array R of its shape, so
that every entry of the cotangent differs and a rule that mixes entries up
fails. Where torch's conventions differ by function (ties in max, the norm
at 0, det of a singular matrix), the case says which torch function is the
reference; docs/arrays.md lists them.
"""

import numpy as np
import pytest

from autodiff_cli.core import tensors
from autodiff_cli.derive import jacobian
from autodiff_cli.language.lower import lower

torch = pytest.importorskip('torch')

RNG = np.random.default_rng(7)


def _m(*shape):
    return np.round(RNG.standard_normal(shape), 3)


A23, B34, A22, X3, Y3, X2 = _m(2, 3), _m(3, 4), _m(2, 2) + 2 * np.eye(2), _m(3), _m(3), _m(2)
S223 = _m(2, 2, 3)
SPD = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
# Singular by a row of zeros, not by a multiple of a row: torch's LU rounds
# [2, 4, 6] - 2*[1, 2, 3] to det = -7e-16 on some CPUs, and numpy's to 0.
SINGULAR = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [1.0, 0.0, 1.0]])
NEGATIVE = np.array([[0.0, 1.0], [1.0, 0.0]]) + 0.1
ILL = np.array([[1.0, 1.0], [1.0, 1.0 + 1e-10]])
TIES = np.array([[1.0, 3.0, 3.0], [3.0, 0.0, -1.0]])
WITH_ZEROS = np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 1.5]])
ONE_ZERO = np.array([[1.0, 2.0, 0.0], [4.0, 0.5, 1.5]])

T = torch
CASES = [
    # products and transposes
    ('A @ B', dict(A=A23, B=B34), lambda A, B: A @ B),
    ('A @ x', dict(A=A23, x=X3), lambda A, x: A @ x),
    ('x @ A', dict(x=X2, A=A23), lambda x, A: x @ A),
    ('x @ y', dict(x=X3, y=Y3), lambda x, y: x @ y),
    ('dot(x, y)', dict(x=X3, y=Y3), lambda x, y: T.dot(x, y)),
    ('S @ B', dict(S=S223, B=B34), lambda S, B: S @ B),
    ('S @ x', dict(S=S223, x=X3), lambda S, x: S @ x),
    ('A.T', dict(A=A23), lambda A: A.T),
    ('transpose(A) @ A', dict(A=A23), lambda A: A.T @ A),
    ('outer(x, y)', dict(x=X3, y=Y3), lambda x, y: T.outer(x, y)),
    # reductions
    ('sum(A)', dict(A=A23), lambda A: A.sum()),
    ('sum(A, 0)', dict(A=A23), lambda A: A.sum(0)),
    ('sum(A, axis=-1)', dict(A=A23), lambda A: A.sum(-1)),
    ('mean(A)', dict(A=A23), lambda A: A.mean()),
    ('mean(A, 1)', dict(A=A23), lambda A: A.mean(1)),
    ('prod(A)', dict(A=A23), lambda A: A.prod()),
    ('prod(A, 1)', dict(A=A23), lambda A: A.prod(1)),
    ('prod(A)', dict(A=ONE_ZERO), lambda A: A.prod()),
    ('prod(A)', dict(A=WITH_ZEROS), lambda A: A.prod()),
    ('prod(A, 1)', dict(A=WITH_ZEROS), lambda A: A.prod(1)),
    ('prod(A, 0)', dict(A=ONE_ZERO), lambda A: A.prod(0)),
    ('max(A)', dict(A=TIES), lambda A: A.max()),
    ('min(A)', dict(A=TIES), lambda A: A.min()),
    ('max(A, axis=1)', dict(A=TIES), lambda A: T.amax(A, 1)),
    ('min(A, axis=0)', dict(A=TIES), lambda A: T.amin(A, 0)),
    ('max(A)', dict(A=A23), lambda A: A.max()),
    ('norm(x)', dict(x=X3), lambda x: T.linalg.vector_norm(x)),
    ('norm(x)', dict(x=np.zeros(3)), lambda x: T.linalg.vector_norm(x)),
    ('norm(x, 1)', dict(x=np.array([1.0, 0.0, -2.0])), lambda x: T.linalg.vector_norm(x, 1)),
    ('norm(A)', dict(A=A23), lambda A: T.linalg.vector_norm(A)),
    ('logsumexp(x)', dict(x=X3), lambda x: T.logsumexp(x, 0)),
    ('logsumexp(x)', dict(x=np.array([1000.0, 999.0, -1000.0])), lambda x: T.logsumexp(x, 0)),
    ('logsumexp(A, axis=1)', dict(A=A23), lambda A: T.logsumexp(A, 1)),
    ('softmax(x)', dict(x=X3), lambda x: T.softmax(x, 0)),
    ('softmax(x)', dict(x=np.array([800.0, 790.0, -5.0])), lambda x: T.softmax(x, 0)),
    ('softmax(A, axis=0)', dict(A=A23), lambda A: T.softmax(A, 0)),
    ('softmax(A)', dict(A=A23), lambda A: T.softmax(A, -1)),
    # linear algebra
    ('trace(A)', dict(A=A22), lambda A: T.trace(A)),
    ('trace(A)', dict(A=A23), lambda A: T.trace(A)),
    ('det(A)', dict(A=SPD), lambda A: T.linalg.det(A)),
    ('det(A)', dict(A=NEGATIVE), lambda A: T.linalg.det(A)),
    ('det(A)', dict(A=SINGULAR), lambda A: T.linalg.det(A)),
    ('det(A)', dict(A=np.zeros((1, 1))), lambda A: T.linalg.det(A)),   # det' = 1 there
    ('logdet(A) * 2', dict(A=np.array([[0.5]])), lambda A: T.logdet(A) * 2),
    ('logdet(A)', dict(A=SPD), lambda A: T.logdet(A)),
    ('logdet(A)', dict(A=NEGATIVE), lambda A: T.logdet(A)),
    ('inv(A)', dict(A=SPD), lambda A: T.linalg.inv(A)),
    ('solve(A, b)', dict(A=SPD, b=X3), lambda A, b: T.linalg.solve(A, b)),
    ('solve(A, B)', dict(A=SPD, B=B34), lambda A, B: T.linalg.solve(A, B)),
    ('solve(A, b)', dict(A=ILL, b=X2), lambda A, b: T.linalg.solve(A, b)),
    ('diag(x)', dict(x=X3), lambda x: T.diag(x)),
    ('diag(A)', dict(A=A23), lambda A: T.diag(A)),
    # shapes
    ('reshape(A, [3, 2])', dict(A=A23), lambda A: A.reshape(3, 2)),
    ('reshape(A, [-1])', dict(A=A23), lambda A: A.reshape(-1)),
    ('concat(x, y)', dict(x=X3, y=Y3), lambda x, y: T.cat([x, y])),
    ('concat(A, B.T, axis=0)', dict(A=A23, B=_m(3, 2)), lambda A, B: T.cat([A, B.T], 0)),
    ('concat(A, A, axis=1)', dict(A=A23), lambda A: T.cat([A, A], 1)),
    ('stack(x, y)', dict(x=X3, y=Y3), lambda x, y: T.stack([x, y])),
    ('[x, 2*y, x*y]', dict(x=X3, y=Y3), lambda x, y: T.stack([x, 2 * y, x * y])),
    ('[a, b, a*b]', dict(a=np.array(0.5), b=np.array(-2.0)),
     lambda a, b: T.stack([a, b, a * b])),
    ('A[1, 2] * A[0, -1]', dict(A=A23), lambda A: A[1, 2] * A[0, -1]),
    ('A[:, 0]', dict(A=A23), lambda A: A[:, 0]),
    ('A[0, 1:]', dict(A=A23), lambda A: A[0, 1:]),
    ('x[1:3]', dict(x=X3), lambda x: x[1:3]),
    ('x[::2] * x[-1]', dict(x=X3), lambda x: x[::2] * x[-1]),
    ('S[1]', dict(S=S223), lambda S: S[1]),
    # broadcasting: size-1 axes sum back to the input's shape
    ('A + x', dict(A=A23, x=X3), lambda A, x: A + x),
    ('c * A - x', dict(c=np.array(1.5), A=A23, x=X3), lambda c, A, x: c * A - x),
    ('P * Q', dict(P=_m(2, 1), Q=_m(1, 3)), lambda P, Q: P * Q),
    ('S / (1 + A^2)', dict(S=S223, A=A23), lambda S, A: S / (1 + A ** 2)),
    ('x^y', dict(x=np.abs(X3) + 0.5, y=Y3), lambda x, y: x ** y),
    # scalar functions, elementwise
    ('tanh(A)', dict(A=A23), lambda A: T.tanh(A)),
    ('exp(A) + log(abs(A) + 1)', dict(A=A23), lambda A: T.exp(A) + T.log(T.abs(A) + 1)),
    ('sigmoid(A) * sqrt(abs(A))', dict(A=A23), lambda A: T.sigmoid(A) * T.sqrt(T.abs(A))),
    ('relu(x) + abs(x)', dict(x=np.array([-1.0, 0.0, 2.0])), lambda x: T.relu(x) + T.abs(x)),
    ('max(x, y)', dict(x=np.array([1.0, 2.0, 3.0]), y=np.array([1.0, 0.0, 4.0])),
     lambda x, y: T.maximum(x, y)),
    ('where(x > 0, x^2, -x)', dict(x=np.array([-1.0, 0.0, 2.0])),
     lambda x: T.where(x > 0, x ** 2, -x)),
    # a constant's entries (floor's gradient is 0) beside a variable's
    ('floor(A) + A', dict(A=A23), lambda A: T.floor(A) + A),
    ('floor(x) * 2 + x', dict(x=np.array([1.5])), lambda x: T.floor(x) * 2 + x),
    # compositions
    ('sum((A @ x - b)^2)', dict(A=A23, x=X3, b=X2), lambda A, x, b: ((A @ x - b) ** 2).sum()),
    ('x @ M @ x', dict(x=X3, M=SPD), lambda x, M: x @ M @ x),
    ('sum(tanh(W @ x + b)^2)', dict(W=A23, x=X3, b=X2),
     lambda W, x, b: (T.tanh(W @ x + b) ** 2).sum()),
    ('-sum(y * log(softmax(W @ x)))', dict(W=A23, x=X3, y=np.array([0.0, 1.0])),
     lambda W, x, y: -(y * T.log(T.softmax(W @ x, 0))).sum()),
    ('logdet(X.T @ X + eye(3))', dict(X=_m(4, 3)),
     lambda X: T.logdet(X.T @ X + T.eye(3, dtype=T.float64))),
    ('trace(inv(M) @ A.T @ A)', dict(M=SPD, A=A23), lambda M, A: T.trace(T.linalg.inv(M) @ A.T @ A)),
]


def _ours(source, inputs):
    names = sorted(inputs)
    graph = lower(source)
    values = tensors.evaluate(graph, inputs)
    out = values[graph.output]
    weight = np.round(np.random.default_rng(len(source)).standard_normal(np.shape(out)), 3) + 2
    weighted = lower(f'sum(({source}) * R__)')
    values = tensors.evaluate(weighted, {**inputs, 'R__': weight})
    grads = tensors.gradients(weighted, values)
    return out, weight, {n: grads[weighted.inputs[n]] for n in names if n in weighted.inputs}


def _theirs(function, inputs, weight):
    leaves = {n: torch.tensor(v, dtype=torch.float64, requires_grad=True)
              for n, v in sorted(inputs.items())}
    out = function(*[leaves[n] for n in inputs])   # the case's order, as its lambda takes them
    (out * torch.tensor(weight)).sum().backward()
    return out.detach().numpy(), {n: (t.grad.numpy() if t.grad is not None else np.zeros(t.shape))
                                  for n, t in leaves.items()}


@pytest.mark.parametrize('source, inputs, function', CASES,
                         ids=[f'{k}:{c[0]}' for k, c in enumerate(CASES)])
def test_an_array_program_agrees_with_torch(source, inputs, function):
    value, weight, gradient = _ours(source, inputs)
    expected, expected_gradient = _theirs(function, inputs, weight)
    assert np.shape(value) == np.shape(expected)
    np.testing.assert_allclose(value, expected, rtol=1e-10, atol=1e-12, equal_nan=True)
    for name, g in gradient.items():
        assert np.shape(g) == np.shape(inputs[name]), name
        np.testing.assert_allclose(g, expected_gradient[name], rtol=1e-10, atol=1e-10,
                                   equal_nan=True, err_msg=f'd/d{name}')


def test_every_array_row_has_a_case():
    """A new array row without a torch case here fails by name."""
    from autodiff_cli.core.primitives import ADJOINTS, PRIMITIVES, TENSOR
    covered = {node.op for source, _, _ in CASES for node in lower(source).nodes}
    covered |= {row.name for row in ADJOINTS}   # the rules' own: test_arrays_hessian covers them
    missing = sorted(name for name, row in PRIMITIVES.items()
                     if row.kind == TENSOR and name not in covered)
    assert not missing


JACOBIANS = [
    ('tanh(W @ x + b)', dict(W=A23, x=X3, b=X2), lambda W, x, b: T.tanh(W @ x + b)),
    ('softmax(x) * sum(x) + norm(x) * prod(x)', dict(x=X3),
     lambda x: T.softmax(x, 0) * x.sum() + T.linalg.vector_norm(x) * x.prod()),
    ('inv(A) @ b + solve(A, b) * det(A) + logdet(A) * diag(A)', dict(A=SPD, b=X3),
     lambda A, b: T.linalg.inv(A) @ b + T.linalg.solve(A, b) * T.linalg.det(A)
     + T.logdet(A) * T.diag(A)),
    ('concat(x, y)[1:4] + stack(x, y)[1] * reshape(outer(x, y), [9])[0:3] + A.T @ A[:, 0]',
     dict(x=X3, y=Y3, A=A23),
     lambda x, y, A: T.cat([x, y])[1:4] + T.stack([x, y])[1] * T.outer(x, y).reshape(9)[0:3]
     + A.T @ A[:, 0]),
    ('[max(x), min(x), mean(x), logsumexp(x), trace(M)]', dict(x=X3, M=SPD),
     lambda x, M: T.stack([x.max(), x.min(), x.mean(), T.logsumexp(x, 0), T.trace(M)])),
    ('x * c + c', dict(x=X3, c=np.array(2.0)), lambda x, c: x * c + c),
    # a variable exponent's cotangent, which a constant's (y^2) never computes
    ('(x*x + 1)^y + y^2 + 2^x', dict(x=X3, y=Y3), lambda x, y: (x * x + 1) ** y + y ** 2 + 2 ** x),
]


@pytest.mark.parametrize('mode', ['forward', 'reverse'])
@pytest.mark.parametrize('source, inputs, function', JACOBIANS,
                         ids=[c[0][:30] for c in JACOBIANS])
def test_a_jacobian_agrees_with_torch_in_either_mode(source, inputs, function, mode):
    graph = lower(source)
    values = tensors.evaluate(graph, inputs)
    jacobians, used = jacobian.jacobian(graph, values, list(inputs), mode)
    assert used == mode
    theirs = torch.autograd.functional.jacobian(
        function, tuple(torch.tensor(v, dtype=torch.float64) for v in inputs.values()))
    for name, expected in zip(inputs, theirs):
        assert jacobians[name].shape == tuple(expected.shape), name
        np.testing.assert_allclose(jacobians[name], expected.numpy(), rtol=1e-10, atol=1e-12,
                                   err_msg=name)


@pytest.mark.parametrize('source, inputs, function', JACOBIANS,
                         ids=[c[0][:30] for c in JACOBIANS])
def test_a_tangent_pass_is_torchs_jvp(source, inputs, function):
    graph = lower(source)
    values = tensors.evaluate(graph, inputs)
    rng = np.random.default_rng(11)
    directions = {name: rng.standard_normal(np.shape(v)) for name, v in inputs.items()}
    ours = jacobian.tangents(graph, values, directions)[graph.output]
    _, theirs = torch.func.jvp(function, tuple(torch.tensor(v) for v in inputs.values()),
                               tuple(torch.tensor(directions[n]) for n in inputs))
    np.testing.assert_allclose(np.broadcast_to(ours, theirs.shape), theirs.numpy(), rtol=1e-10,
                               atol=1e-12)


@pytest.mark.parametrize('source', ['sum(if(x > 0, log(x), 0))', 'sum(where(x > 0, log(x), 0))',
                                    'sum(if(x > 0, sqrt(x) * x, -x) * [1, 2, 3])',
                                    'sum(exp(if(x > 0, log(x), x)))'])
def test_the_untaken_side_of_an_if_leaks_no_nan(source):
    """torch.where gives nan here (0 * inf in the side not taken); adgrad, as
    a scalar if does, gives each entry its taken side's derivative. The
    reference: the same program at each entry alone, as a scalar."""
    x = np.array([0.0, 1.0, 2.0])
    graph = lower(source)
    values = tensors.evaluate(graph, {'x': x})
    gradient = tensors.gradients(graph, values)[graph.inputs['x']]
    h = 1e-6
    for k in range(3):   # entry by entry, a step that stays on the side it takes (x <= 0: else)
        step = np.zeros(3)
        step[k] = h if x[k] > 0 else -h
        moved = float(tensors.evaluate(graph, {'x': x + step})[graph.output])
        here = float(values[graph.output])
        assert gradient[k] == pytest.approx((moved - here) / step[k], rel=1e-5, abs=1e-5)
    assert np.isfinite(gradient).all()
