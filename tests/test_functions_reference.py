"""Issue 10's functions against independent references, at ordinary and edge points.

PyTorch float64 autograd where torch has the op, mpmath at 50 digits where it
has none; values and gradients, one point at a time and in a batch. Each
allowance below is the largest difference measured, in units in the last
place (ulps), rounded up: a change that makes a function less accurate fails.
"""

import math
import random

import pytest

from autodiff_cli import backward, forward, lower
from autodiff_cli.core.primitives import FUNCTIONS
from tests.helpers import numpy_kernels

EDGES = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 1 + 2**-52, 1 - 2**-53,
         -1 - 2**-52, -1 + 2**-53, 0.5, -0.5, 2.5, -2.5, 3.0, 20.0, 20.000000000000004,
         1e-8, -1e-8, 1e-300, -1e-300, 5e-324, 1e300, -1e300, 1e154, 2e154, 700.0, -700.0,
         710.0, -710.0, 1000.0, -1000.0]


def _ordinary(seed, count=150):
    rng = random.Random(seed)
    return ([rng.uniform(-5, 5) for _ in range(count)] +
            [math.tan(rng.uniform(-1.5, 1.5)) for _ in range(count // 3)] +
            [rng.choice([-1, 1]) * math.exp(rng.uniform(-300, 300)) for _ in range(count // 3)])


POINTS = _ordinary(10) + EDGES


def ulps(a, b):
    """How far apart two float64 results are, in ulps of the larger; 0 for two
    nans, inf when only one is finite or they are zeros of different signs."""
    if math.isnan(a) or math.isnan(b):
        return 0 if math.isnan(a) and math.isnan(b) else math.inf
    if a == b:
        return 0 if math.copysign(1, a) == math.copysign(1, b) else math.inf
    if not (math.isfinite(a) and math.isfinite(b)):
        return math.inf
    return abs(a - b) / math.ulp(max(abs(a), abs(b)))


def value_and_gradient(graph, point):
    values = forward(graph, dict(zip('xyz', point)))
    grads = backward(graph, values)
    return [values[graph.output]] + [grads[graph.inputs[n]] for n in 'xyz'[:len(point)]]


# ---- against PyTorch ----

def _torch_functions(torch):
    F = torch.nn.functional
    names = ('asinh acosh atanh sinc sign hypot log1p expm1 exp2 erf erfc floor ceil round '
             'clamp').split()
    return {**{n: getattr(torch, n) for n in names},
            'softplus': F.softplus, 'gelu': F.gelu, 'silu': F.silu}


# (function, 'value' or 'grad') -> ulps, where more than 2 were measured at
# POINTS. expm1' = e^x + ... is torch's g (expm1(x) + 1), which cancels for
# x < 0 and magnifies the 1-ulp differences of C's expm1 and torch's; silu'
# = s (1 + x (1 - s)) cancels near x = -1.28 the same way.
# hypot: math.hypot is correctly rounded, torch's one-element path is C's
# hypot (its vectorised path agrees with math.hypot), up to 1 ulp apart, and
# x / hypot carries that on.
# sinc' = (pi x cos(pi x) - sin(pi x)) / (pi x^2) cancels as x grows (19 ulps
# measured, from torch's sin and cos).
TORCH_ULPS = {('expm1', 'grad'): 64, ('silu', 'grad'): 64, ('hypot', 'grad'): 4,
              ('sinc', 'grad'): 32}


@pytest.mark.parametrize('name', sorted(
    'asinh acosh atanh sinc sign hypot log1p expm1 exp2 softplus erf erfc gelu silu '
    'floor ceil round clamp'.split()))
def test_values_and_gradients_agree_with_pytorch(name):
    torch = pytest.importorskip('torch')
    reference = _torch_functions(torch)[name]
    arity = FUNCTIONS[name].arity
    graph = lower(f"{name}({', '.join('xyz'[:arity])})")
    rng = random.Random(name)
    points = ([(x,) for x in POINTS] if arity == 1 else
              [tuple(rng.choice(POINTS) for _ in range(arity)) for _ in range(600)])
    if name == 'clamp':  # ties and crossed bounds, where the gradient's owner changes
        points += [(1.0, 1.0, 2.0), (2.0, 1.0, 2.0), (1.0, 1.0, 1.0), (1.5, 2.0, 1.0),
                   (-0.0, 0.0, 1.0), (0.0, -0.0, 1.0), (2.0, 0.0, -0.0)]
    worst = {'value': 0, 'grad': 0}
    for point in points:
        leaves = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in point]
        out = reference(*leaves)
        want = [out.item()] + [g.item() for g in torch.autograd.grad(out, leaves)]
        got = value_and_gradient(graph, point)
        for kind, a, b in zip(['value'] + ['grad'] * arity, got, want):
            distance = ulps(a, b)
            assert distance <= TORCH_ULPS.get((name, kind), 2), (name, point, kind, a, b)
            worst[kind] = max(worst[kind], distance)
    # Most agree to the bit; none is a looser allowance than it needs to be.
    for kind in worst:
        assert worst[kind] <= TORCH_ULPS.get((name, kind), 2)


# ---- against mpmath, where torch has no op ----

def _mpmath_references(mp):
    """(value, derivative) of each function, written from its definition."""
    def real_cbrt(x):
        return mp.sign(x) * mp.cbrt(abs(x))
    return {
        'cot': (mp.cot, lambda x: -mp.csc(x) ** 2),
        'sec': (mp.sec, lambda x: mp.sec(x) * mp.tan(x)),
        'csc': (mp.csc, lambda x: -mp.csc(x) * mp.cot(x)),
        'acot': (mp.acot, lambda x: -1 / (1 + x * x)),
        'asec': (mp.asec, lambda x: 1 / (abs(x) * mp.sqrt(x * x - 1))),
        'acsc': (mp.acsc, lambda x: -1 / (abs(x) * mp.sqrt(x * x - 1))),
        'coth': (mp.coth, lambda x: -mp.csch(x) ** 2),
        'sech': (mp.sech, lambda x: -mp.sech(x) * mp.tanh(x)),
        'csch': (mp.csch, lambda x: -mp.csch(x) * mp.coth(x)),
        'acoth': (mp.acoth, lambda x: 1 / (1 - x * x)),
        'asech': (mp.asech, lambda x: -1 / (x * mp.sqrt(1 - x * x))),
        'acsch': (mp.acsch, lambda x: -1 / (abs(x) * mp.sqrt(1 + x * x))),
        'cbrt': (real_cbrt, lambda x: 1 / (3 * real_cbrt(x) ** 2)),
    }


# The largest differences measured from the exact results rounded to float64.
MPMATH_ULPS = {'cbrt': 8}


@pytest.mark.parametrize('name', 'cot sec csc acot asec acsc coth sech csch acoth asech acsch '
                                 'cbrt'.split())
def test_values_and_gradients_agree_with_mpmath(name):
    mp = pytest.importorskip('mpmath')
    mp.mp.dps = 50
    function, derivative = _mpmath_references(mp)[name]
    graph = lower(f'{name}(x)')
    allowed = MPMATH_ULPS.get(name, 4)
    checked = 0
    for x in POINTS:
        if not math.isfinite(x) or x == 0:
            continue  # the edge table below says what happens there
        exact = x_exact = mp.mpf(x)
        try:
            exact = [function(x_exact), derivative(x_exact)]
        except (ValueError, ZeroDivisionError):
            continue
        if any(isinstance(e, mp.mpc) for e in exact):
            continue  # outside the real domain: nan, checked below
        got = value_and_gradient(graph, (x,))
        for kind, a, e in zip(('value', 'grad'), got, exact):
            rounded = float(e)
            if rounded == 0 or abs(rounded) < 2.3e-308:  # underflow: a subnormal or 0
                assert abs(a - rounded) <= 2.3e-308 * 2**-40, (name, x, kind, a, rounded)
                continue
            assert ulps(a, rounded) <= allowed, (name, x, kind, a, rounded)
        checked += 1
    assert checked > 40   # asech has only (0, 1]


# ---- edge points, by hand ----

INF, NAN = math.inf, math.nan
PI = math.pi

# (expression, point, expected value, expected ∂/∂x): PyTorch's numbers where
# torch has the op, else the limit of the definition (nan outside the domain).
EDGE_TABLE = [
    ('sign(x)', 0.0, 0.0, 0.0), ('sign(x)', NAN, 0.0, 0.0), ('sign(x)', -3.0, -1.0, 0.0),
    ('sign(sqrt(x))', 0.0, 0.0, NAN),       # a zero, not "no gradient": sqrt'(0) * 0, as torch
    ('floor(x) * x', NAN, NAN, NAN), ('floor(x)', -0.0, -0.0, 0.0),
    ('floor(x)', INF, INF, 0.0), ('ceil(x)', -0.5, -0.0, 0.0),
    ('round(x)', 2.5, 2.0, 0.0), ('round(x)', -0.5, -0.0, 0.0), ('round(x)', 3.5, 4.0, 0.0),
    ('sinc(x)', 0.0, 1.0, 0.0), ('sinc(x)', 1e-200, 1.0, 0.0), ('sinc(x)', INF, NAN, NAN),
    ('softplus(x)', 20.0, 20.000000002061153, 0.9999999979388464),
    ('softplus(x)', 20.000000000000004, 20.000000000000004, 1.0),
    ('softplus(x)', -1000.0, 0.0, 0.0), ('softplus(x)', 1000.0, 1000.0, 1.0),
    ('log1p(x)', -1.0, -INF, INF), ('log1p(x)', -2.0, NAN, -1.0), ('expm1(x)', 1000.0, INF, INF),
    ('exp2(x)', 2000.0, INF, INF), ('exp2(x)', -2000.0, 0.0, 0.0),
    ('atanh(x)', 1.0, INF, INF), ('atanh(x)', -1.0, -INF, INF), ('atanh(x)', 2.0, NAN, -1 / 3),
    ('acosh(x)', 1.0, 0.0, INF), ('acosh(x)', 0.5, NAN, NAN),
    ('erf(x)', INF, 1.0, 0.0), ('erfc(x)', -INF, 2.0, -0.0),
    ('gelu(x)', -INF, NAN, NAN), ('silu(x)', -INF, NAN, NAN), ('silu(x)', INF, INF, NAN),
    ('cbrt(x)', 0.0, 0.0, INF), ('cbrt(x)', -8.0, -2.0, 1 / 12), ('cbrt(x)', INF, INF, 0.0),
    ('cot(x)', 0.0, INF, -INF), ('csc(x)', 0.0, INF, -INF), ('sec(x)', 0.0, 1.0, 0.0),
    ('acot(x)', 0.0, PI / 2, -1.0), ('acot(x)', -0.0, -PI / 2, -1.0), ('acot(x)', INF, 0.0, -0.0),
    ('asec(x)', 1.0, 0.0, INF), ('asec(x)', -1.0, PI, INF), ('asec(x)', 0.5, NAN, NAN),
    ('asec(x)', INF, PI / 2, 0.0), ('asec(x)', -INF, PI / 2, 0.0),
    ('acsc(x)', 1.0, PI / 2, -INF), ('acsc(x)', -1.0, -PI / 2, -INF), ('acsc(x)', 0.0, NAN, NAN),
    ('coth(x)', 0.0, INF, -INF), ('coth(x)', 800.0, 1.0, -0.0),
    ('sech(x)', 0.0, 1.0, -0.0), ('sech(x)', 720.0, 2 * math.exp(-720), -2 * math.exp(-720)),
    ('csch(x)', 0.0, INF, -INF), ('csch(x)', -720.0, -2 * math.exp(-720), -2 * math.exp(-720)),
    ('acoth(x)', 1.0, INF, -INF), ('acoth(x)', -1.0, -INF, -INF), ('acoth(x)', 0.5, NAN, 4 / 3),
    ('acoth(x)', INF, 0.0, -0.0),
    ('asech(x)', 1.0, 0.0, -INF), ('asech(x)', 0.0, INF, -INF), ('asech(x)', 1.5, NAN, NAN),
    ('acsch(x)', 0.0, INF, -INF), ('acsch(x)', INF, 0.0, -0.0),
    ('hypot(x, 0)', 0.0, 0.0, NAN), ('hypot(x, 3)', 4.0, 5.0, 0.8), ('hypot(x, 0)', INF, INF, NAN),
    ('clamp(x, 1, 2)', 1.0, 1.0, 1.0), ('clamp(x, 1, 2)', 2.0, 2.0, 1.0),
    ('clamp(x, 1, 2)', 0.5, 1.0, 0.0), ('clamp(x, 1, 2)', NAN, NAN, 0.0),
    ('clamp(x, 2, 1)', 1.5, 1.0, 0.0),
]


@pytest.mark.parametrize('expr, x, value, slope', EDGE_TABLE)
def test_edge_table(expr, x, value, slope):
    got = value_and_gradient(lower(expr), (x,))
    assert ulps(got[0], value) <= 2 and ulps(got[1], slope) <= 2, (got, value, slope)


@pytest.mark.parametrize('point, grads', [
    ((1.0, 1.0, 2.0), (1.0, 0.0, 0.0)),     # at the lower bound x keeps the gradient
    ((0.5, 1.0, 2.0), (0.0, 1.0, 0.0)),
    ((3.0, 1.0, 2.0), (0.0, 0.0, 1.0)),
    ((1.5, 2.0, 1.0), (0.0, 0.0, 1.0)),     # crossed bounds: the result is high's
    ((0.5, NAN, 1.0), (0.0, 0.0, 0.0)),     # a nan anywhere: no argument gets anything
])
def test_clamp_gradients_go_where_torch_sends_them(point, grads):
    got = value_and_gradient(lower('clamp(x, y, z)'), point)
    assert got[1:] == list(grads)


# ---- batches ----

# A batch row runs NumPy's kernels, a single point C's libm, with the same
# formulas. So a row must be the single point computed with NumPy's kernels
# (helpers.numpy_kernels), bit for bit: nan, inf and the sign of a zero
# included. Against C's libm only values are compared, within VALUE_ULPS:
# NumPy's own SIMD kernels are 1-2 ulps from C's (np.tanh everywhere, most
# functions on AVX-512 CPUs; 5 at most measured through these formulas),
# while a derivative computed from the value (expm1' = value + 1) can grow
# that without bound where it cancels (README, "A batch row and a single
# point").
VALUE_ULPS = 5


@pytest.mark.parametrize('name', sorted(
    'cot sec csc acot asec acsc coth sech csch asinh acosh atanh acoth asech acsch sinc sign '
    'hypot cbrt log1p expm1 exp2 softplus erf erfc gelu silu floor ceil round clamp'.split()))
def test_batch_rows_equal_single_points(name):
    np = pytest.importorskip('numpy')
    from autodiff_cli.core.batch import run_batch
    arity = FUNCTIONS[name].arity
    names = 'xyz'[:arity]
    graph = lower(f"{name}({', '.join(names)})")
    rng = random.Random(name)
    rows = [tuple(rng.choice(POINTS) for _ in names) for _ in range(400 if arity > 1 else 0)]
    rows += [(x,) * arity for x in POINTS]
    columns = {n: np.array([row[i] for row in rows]) for i, n in enumerate(names)}
    value, gradient, _ = run_batch(graph, columns, len(rows), tuple(names))
    for r, row in enumerate(rows):
        batch = [float(value[r])] + [float(gradient[n][r]) for n in names]
        with numpy_kernels():
            alike = value_and_gradient(graph, row)
        assert all(ulps(a, b) == 0 for a, b in zip(batch, alike)), (name, row, batch, alike)
        assert ulps(batch[0], value_and_gradient(graph, row)[0]) <= VALUE_ULPS, (name, row)


def test_erf_over_arrays_takes_a_constant_too():
    np = pytest.importorskip('numpy')
    from autodiff_cli.core.batch import run_batch
    value, gradient, _ = run_batch(lower('erf(x) + erf(0.5)'), {'x': np.array([0.0, 1.0])}, 2, ('x',))
    assert list(value) == [math.erf(0.5), math.erf(1.0) + math.erf(0.5)]
