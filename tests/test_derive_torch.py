"""Forward mode, Hessians and higher derivatives against PyTorch float64:
torch.autograd.forward_ad, torch.autograd.functional.hessian, and repeated
torch.autograd.grad with create_graph=True. Skipped without torch."""

import itertools
import math
import random

import pytest

from autodiff_cli import forward, lower
from autodiff_cli.core.primitives import PRIMITIVES
from autodiff_cli.derive.forward import gradient as forward_gradient
from autodiff_cli.derive.hessian import hessian
from autodiff_cli.derive.record import nth_derivative
from tests.helpers import CASES, numpy_function
from tests.randexpr import cases, show

torch = pytest.importorskip('torch')

_TORCH = {'add': torch.add, 'sub': torch.sub, 'mul': torch.mul, 'div': torch.div,
          'pow': torch.pow, 'neg': torch.neg, 'pos': lambda a: a, 'asin': torch.asin,
          'acos': torch.acos, 'atan': torch.atan, 'min': torch.minimum, 'max': torch.maximum,
          'atan2': torch.atan2, 'sign': torch.sgn, 'round': torch.round}


def _torch_function(op):
    return _TORCH.get(op) or getattr(torch.nn.functional, op, None) or getattr(torch, op, None)


def _has_torch(graph):
    return all(n.op in ('input', 'const') or _torch_function(n.op) for n in graph.nodes)


def by_torch(graph, leaves):
    """The graph's output computed by torch from {name: tensor}."""
    values = []
    for node in graph.nodes:
        if node.op == 'input':
            values.append(leaves[node.name])
        elif node.op == 'const':
            values.append(torch.tensor(node.value, dtype=torch.float64))
        elif node.op == 'pow' and graph.nodes[node.args[1]].op == 'const':
            # A literal exponent is a Python number to torch, as to adgrad's
            # recording (x^2 has no exponent to differentiate, so no mask).
            values.append(torch.pow(values[node.args[0]], graph.nodes[node.args[1]].value))
        else:
            values.append(_torch_function(node.op)(*[values[a] for a in node.args]))
    return values[graph.output]


def same(a, b, ulps=64, abs_=1e-290):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= max(ulps * max(math.ulp(a), math.ulp(b)), 1e-12 * max(abs(a), abs(b)),
                             abs_)


def torch_jvp(graph, point, seed):
    import torch.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        leaves = {n: (fwAD.make_dual(torch.tensor(v, dtype=torch.float64),
                                     torch.tensor(1.0, dtype=torch.float64))
                      if n == seed else torch.tensor(v, dtype=torch.float64))
                  for n, v in point.items()}
        tangent = fwAD.unpack_dual(by_torch(graph, leaves)).tangent
        return 0.0 if tangent is None else tangent.item()


def torch_grad(graph, point, name):
    leaves = {n: torch.tensor(v, dtype=torch.float64, requires_grad=True) for n, v in point.items()}
    out = by_torch(graph, leaves)
    if not out.requires_grad:
        return 0.0
    (g,) = torch.autograd.grad(out, [leaves[name]], allow_unused=True)
    return 0.0 if g is None else g.item()


EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -2.0, 3.0, 1e-300, 1e300, 700.0, -700.0,
         math.inf, -math.inf, math.nan]


def test_forward_mode_follows_forward_ad_on_every_primitive_at_edge_points():
    """Tangents come from the backward rules, except where PyTorch's own
    forward and backward formulas disagree (atan2 at and near the origin,
    min, max and clamp with a nan or a tie): there the row's jvp is torch's
    forward formula. Everywhere, adgrad's forward mode is forward_ad's."""
    failures, differing = [], set()
    for op, (expr, _) in sorted(CASES.items()):
        graph = lower(expr)
        if not _has_torch(graph):
            continue
        names = list(graph.inputs)
        for point in itertools.product(EDGES, repeat=len(names)):
            inputs = dict(zip(names, point))
            ours, _ = forward_gradient(graph, forward(graph, inputs), names)
            for name in names:
                want = torch_jvp(graph, inputs, name)
                if not same(want, torch_grad(graph, inputs, name)):
                    differing.add(op)
                if not same(ours[name], want):
                    failures.append((op, point, name, ours[name], want))
    assert not failures, failures[:10]
    # A row carries a jvp of its own only where torch's two formulas differ.
    assert {op for op in CASES if PRIMITIVES[op].jvp} <= differing, differing


def torch_hessian(graph, point, names):
    def f(*xs):
        return by_torch(graph, dict(zip(names, xs)))
    leaves = tuple(torch.tensor(point[n], dtype=torch.float64) for n in names)
    h = torch.autograd.functional.hessian(f, leaves)
    return [[h[i][j].item() for j in range(len(names))] for i in range(len(names))]


def _random_graphs(seed, count, depth=4):
    for t, point in cases(seed, count, depth):
        graph = lower(show(t))
        if graph.inputs and _has_torch(graph):
            yield graph, {n: point[n] for n in graph.inputs}


def test_hessian_agrees_with_torch_on_random_expressions():
    compared, failures = 0, []
    for graph, point in _random_graphs(11, 300):
        names = list(graph.inputs)
        ours = hessian(graph, point, names)
        want = torch_hessian(graph, point, names)
        for i, j in itertools.product(range(len(names)), repeat=2):
            if not same(ours[i][j], want[i][j], ulps=256):
                failures.append((graph.source, point, names[i], names[j], ours[i][j], want[i][j]))
        compared += 1
    assert compared > 200
    assert not failures, failures[:5]


def test_hessian_agrees_with_torch_on_every_primitive_at_edge_points():
    failures = []
    for op, (expr, _) in sorted(CASES.items()):
        graph = lower(expr)
        if not _has_torch(graph):
            continue
        names = list(graph.inputs)
        grid = EDGES if len(names) < 3 else EDGES[::3]
        for point in itertools.product(grid, repeat=len(names)):
            inputs = dict(zip(names, point))
            ours = hessian(graph, inputs, names)
            want = torch_hessian(graph, inputs, names)
            for i, j in itertools.product(range(len(names)), repeat=2):
                if not same(ours[i][j], want[i][j]):
                    failures.append((op, point, names[i], names[j], ours[i][j], want[i][j]))
    assert not failures, failures[:10]


def test_hessian_is_symmetric_where_smooth():
    rng = random.Random(3)
    graph = lower('x^3*y + sin(x*y)*exp(z) - log(1 + y^2)*z')
    for _ in range(20):
        point = {n: rng.uniform(-2, 2) for n in graph.inputs}
        h = hessian(graph, point)
        for i, j in itertools.combinations(range(3), 2):
            assert h[i][j] == pytest.approx(h[j][i], rel=1e-13, abs=1e-13)


def torch_nth(graph, point, name, order):
    leaves = {n: torch.tensor(v, dtype=torch.float64, requires_grad=True) for n, v in point.items()}
    out = by_torch(graph, leaves)
    for _ in range(order):
        if not out.requires_grad:
            return 0.0
        (out,) = torch.autograd.grad(out, [leaves[name]], create_graph=True, allow_unused=True)
        if out is None:
            return 0.0
    return out.item()


@pytest.mark.parametrize('order', [1, 2, 3, 4])
def test_nth_derivative_agrees_with_repeated_torch_autograd(order):
    """Wherever PyTorch's number is finite, both tapes agree with it: the
    exact one and the printed (simplified) one, whose identities (0*x -> 0,
    ...) differ from IEEE only where something is inf or nan. Where torch's
    is inf or nan, the exact tape's is not finite either (which of inf and
    nan can differ: a rule written as g/sqrt(1 - x^2), as adgrad's acos is,
    and torch's g*rsqrt(1 - x^2) have the same first derivative but meet the
    singularity differently when differentiated again)."""
    compared, failures = 0, []
    for graph, point in _random_graphs(20 + order, 150, depth=3):
        name = next(iter(graph.inputs))
        want = torch_nth(graph, point, name, order)
        for exact in (True, False):
            d = nth_derivative(graph, name, order, exact=exact).graph()
            ours = forward(d, point)[d.output]
            if math.isfinite(want) and not same(ours, want, ulps=1024, abs_=1e-9) \
                    or exact and not math.isfinite(want) and math.isfinite(ours):
                failures.append((exact, graph.source, point, ours, want))
        compared += 1
    assert compared > 100
    assert not failures, failures[:5]


# Points where torch's second derivative comes from a double-backward kernel
# (softplus_double_backward with its mask x < 20, gelu's, sinc's through
# sinc_backward): either side of softplus's threshold and exactly at it
# (where the quotient z/(z + 1), differentiated, would cancel), and sinc and
# gelu around 0. rel 0 means `same`: 64 ulps or 1e-12 relative, whichever is looser.
@pytest.mark.parametrize('expr, x, rel', [
    ('softplus(x)', 20.0, 0), ('softplus(x)', 20.5, 0), ('softplus(x)', 800.0, 0),
    ('softplus(x)', 1e300, 0), ('softplus(x)', math.inf, 0), ('softplus(x)', -math.inf, 0),
    ('softplus(x)', math.nan, 0), ('softplus(x)', 0.0, 0), ('softplus(x)', -30.0, 0),
    ('softplus(x)', 19.9, 0), ('softplus(x)', 15.0, 0), ('softplus(x)', 3.0, 0),
    ('softplus(2*x)*x', 700.0, 0), ('softplus(2*x)*x', math.inf, 0), ('softplus(x^2)', 4.4, 0),
    ('softplus(x*y)', 4.0, 0), ('softplus(x*y)', 4.5, 0), ('softplus(x*y)', 5.0, 0),
    ('sinc(x)', 0.0, 0), ('sinc(x)', -0.0, 0), ('sinc(x)', 1e-300, 0),
    ('sinc(x)', 1.0, 1e-12), ('gelu(x)', 0.0, 1e-15), ('gelu(x)', -40.0, 0),
    ('gelu(x)', 40.0, 0), ('gelu(x)', 1e150, 0), ('gelu(x)', 1e300, 0), ('gelu(2*x)*x', 3.0, 0),
])
def test_second_derivatives_with_torch_kernels(expr, x, rel):
    graph = lower(expr)
    point = {name: x for name in graph.inputs}          # every variable at x
    names = list(graph.inputs)
    ours, want = hessian(graph, point, names), torch_hessian(graph, point, names)
    for i, j in itertools.product(range(len(names)), repeat=2):
        if rel == 0:
            assert same(ours[i][j], want[i][j]), (i, j, ours, want)
        else:
            assert ours[i][j] == pytest.approx(want[i][j], rel=rel, abs=1e-300), (ours, want)


@pytest.mark.parametrize('x', [1e300, -1e300, 1e155])
def test_gelu_second_derivative_past_the_square_overflow_is_nan_as_torchs(x):
    """torch's gelu_double_backward squares x first, so x*x = inf times the
    density 0 is nan; the rule's custom node carries that formula, where
    differentiating the first derivative would give the limit 0."""
    graph = lower('gelu(x)')
    assert math.isnan(torch_hessian(graph, {'x': x}, ['x'])[0][0])
    assert math.isnan(hessian(graph, {'x': x})[0][0])


# ---- the generated NumPy code against PyTorch (test_derive_code.py runs
# it, and the C code, against adgrad's own gradient at edge points too) ----

@pytest.mark.parametrize('op', sorted(CASES))
def test_numpy_code_agrees_with_torch(op):
    np = pytest.importorskip('numpy')
    from autodiff_cli.derive.printers import numpy_text
    from autodiff_cli.derive.record import differentiate
    expr, points = CASES[op]
    graph = lower(expr)
    if not _has_torch(graph):
        pytest.skip(f'torch has no {op}')
    f = numpy_function(numpy_text(differentiate(graph, with_value=True)))
    names = list(graph.inputs)
    for p in points:
        point = dict(zip(names, p))
        value, gradient = f(*[np.array([point[n]]) for n in names])
        leaves = {n: torch.tensor(v, dtype=torch.float64, requires_grad=True)
                  for n, v in point.items()}
        out = by_torch(graph, leaves)
        assert same(float(value[0]), out.item()), (op, point)
        grads = torch.autograd.grad(out, [leaves[n] for n in names], allow_unused=True)
        for n, g in zip(names, grads):
            assert same(float(gradient[n][0]), 0.0 if g is None else g.item()), (op, n, point)
