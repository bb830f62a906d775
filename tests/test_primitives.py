"""Every primitive against a central finite difference, and PyTorch's edge conventions."""

import math
import re
from pathlib import Path

import pytest

from autodiff_cli.core.primitives import (FUNCTIONS, INTERNAL as PRIMITIVES_INTERNAL, PRIMITIVES,
                                         TENSOR)

from tests.helpers import CASES, evaluate, same

INTERNAL = {row.name for row in PRIMITIVES_INTERNAL}
NAMES = ['x', 'y', 'z']   # a row's variables, by its arity

# The language's logic, away from the points where a comparison switches:
# there the true derivative is 0 (or the taken branch's), as a central
# difference sees. stop_gradient and custom say their derivative on purpose
# (no central difference can agree); tests/test_language.py checks them.
LOGIC_CASES = {
    'lt': ('(x < y) * x', [(0.3, -1.7), (-2.0, 5.0)]),
    'le': ('(x <= y) * x', [(0.3, -1.7), (-2.0, 5.0)]),
    'gt': ('(x > y) * y', [(0.3, -1.7), (-2.0, 5.0)]),
    'ge': ('(x >= y) * y', [(0.3, -1.7), (-2.0, 5.0)]),
    'eq': ('(x == y) + x*y', [(0.3, -1.7)]),
    'ne': ('(x != y) * x*y', [(0.3, -1.7)]),
    'and': ('(x > 0 and y > 0) * x*y', [(0.3, 1.7), (0.3, -1.7)]),
    'or': ('(x > 0 or y > 0) * x*y', [(0.3, -1.7), (-0.3, -1.7)]),
    'not': ('(not x > 0) * x*y', [(0.3, -1.7), (-0.3, 1.7)]),
    'if': ('if(x > y, x*y, sin(y))', [(0.3, -1.7), (-2.0, 5.0)]),
}
DECLARED = {'stop_gradient', 'custom'}


# The array rows have their own cases, against torch: tests/test_arrays_torch.py.
ARRAY_ROWS = {name for name, row in PRIMITIVES.items() if row.kind == TENSOR}
# a formula's own constants, eye(n) and n: tests/test_array_formula.py
ARRAY_ROWS |= {'eye', 'size'}


def test_every_primitive_has_a_test_row():
    assert set(PRIMITIVES) - INTERNAL - DECLARED - ARRAY_ROWS == set(CASES) | set(LOGIC_CASES)


def central_difference(expr, names, point, index):
    h = 1e-6 * max(1.0, abs(point[index]))
    up, down = list(point), list(point)
    up[index] += h
    down[index] -= h
    f_up, _ = evaluate(expr, **dict(zip(names, up)))
    f_down, _ = evaluate(expr, **dict(zip(names, down)))
    return (f_up - f_down) / (2 * h)


@pytest.mark.parametrize('op', sorted({**CASES, **LOGIC_CASES}))
def test_gradient_matches_central_difference(op):
    expr, points = {**CASES, **LOGIC_CASES}[op]
    names = NAMES[:len(points[0])]
    for point in points:
        _, grads = evaluate(expr, **dict(zip(names, point)))
        for index, name in enumerate(names):
            expected = central_difference(expr, names, point, index)
            assert grads[name] == pytest.approx(expected, rel=1e-6, abs=1e-7), (op, point, name)


@pytest.mark.parametrize('op', sorted(CASES))
def test_forward_matches_mpmath_at_50_digits(op):
    """Each forward value against the exact value rounded to float64, within 2 ulps (gelu 8)."""
    mp = pytest.importorskip('mpmath')
    mp.mp.dps = 50
    reference = {'add': lambda a, b: a + b, 'sub': lambda a, b: a - b, 'mul': lambda a, b: a * b,
                 'div': lambda a, b: a / b, 'neg': lambda a: -a, 'pos': lambda a: +a,
                 'pow': mp.power, 'abs': abs, 'min': min, 'max': max, 'tan': mp.tan,
                 'sigmoid': lambda a: 1 / (1 + mp.exp(-a)), 'relu': lambda a: max(a, 0),
                 'log2': lambda a: mp.log(a, 2), 'atan2': mp.atan2,
                 'sinc': mp.sincpi, 'exp2': lambda a: mp.power(2, a), 'sign': mp.sign,
                 'softplus': lambda a: a if a > 20 else mp.log1p(mp.exp(a)),
                 'gelu': lambda a: a / 2 * (1 + mp.erf(a / mp.sqrt(2))),
                 'silu': lambda a: a / (1 + mp.exp(-a)), 'round': mp.nint,
                 'clamp': lambda a, low, high: min(max(a, low), high),
                 'cbrt': lambda a: mp.sign(a) * mp.cbrt(abs(a))}
    # gelu is torch's x/2 (1 + erf(x/sqrt 2)), whose sum cancels for x < 0
    # (4 ulps at -1.5), as torch's own does; test_functions_reference.py holds
    # it to torch.
    ulps = {'gelu': 8}.get(op, 2)
    expr, points = CASES[op]
    fn = reference.get(op) or getattr(mp, op)
    names = NAMES[:len(points[0])]
    for point in points:
        value, _ = evaluate(expr, **dict(zip(names, point)))
        exact = float(fn(*[mp.mpf(p) for p in point]))
        assert abs(value - exact) <= ulps * math.ulp(exact), (op, point, value, exact)


def test_callable_names_are_the_documented_functions():
    """The functions docs/language.md lists, by arity, are the ones a program may call."""
    text = (Path(__file__).parent.parent / 'docs' / 'language.md').read_text(encoding='utf-8')
    documented = {}
    for arity, word in enumerate(('one', 'two', 'three'), 1):
        cell = re.search(rf'^\| {word}-argument functions \| `([^`]*)`', text, re.M).group(1)
        documented.update(dict.fromkeys(cell.split(), arity))
    assert 'stop_gradient(x)' in text
    documented['stop_gradient'] = 1
    assert {name: row.arity for name, row in FUNCTIONS.items()} == documented


# The README's edge-case table, row by row: (expression, point, variable, expected ∂).
EDGE_TABLE = [
    ('abs(x)', {'x': 0.0}, 'x', 0.0),
    ('relu(x)', {'x': 0.0}, 'x', 0.0),
    ('sqrt(x)', {'x': 0.0}, 'x', math.inf),
    ('0^y', {'y': 0.0}, 'y', 0.0),
    ('0^y', {'y': 2.5}, 'y', 0.0),
    ('x^0', {'x': 0.0}, 'x', 0.0),
    ('min(x, y)', {'x': 1.5, 'y': 1.5}, 'x', 0.5),
    ('min(x, y)', {'x': 1.5, 'y': 1.5}, 'y', 0.5),
    ('max(x, y)', {'x': 1.5, 'y': 1.5}, 'x', 0.5),
    ('max(x, y)', {'x': 1.5, 'y': 1.5}, 'y', 0.5),
    ('x^y', {'x': -2.0, 'y': 3.0}, 'x', 12.0),
    ('x^y', {'x': -2.0, 'y': 3.0}, 'y', math.nan),
    ('atan2(y, x)', {'x': 0.0, 'y': 0.0}, 'x', 0.0),
    ('atan2(y, x)', {'x': 0.0, 'y': 0.0}, 'y', 0.0),
    ('abs(x)', {'x': math.nan}, 'x', 0.0),
    ('relu(x)', {'x': math.nan}, 'x', 1.0),
]


@pytest.mark.parametrize('expr, point, name, expected', EDGE_TABLE)
def test_edge_table(expr, point, name, expected):
    _, grads = evaluate(expr, **point)
    assert same(grads[name], expected)


@pytest.mark.parametrize('expr, expected', [
    ('1/0', math.inf), ('-1/0', -math.inf), ('log(0)', -math.inf), ('log(-1)', math.nan),
    ('0/0', math.nan), ('sqrt(-1)', math.nan), ('exp(1000)', math.inf), ('10^400', math.inf),
    ('(-10)^401', -math.inf), ('0^-1', math.inf), ('(-8)^(1/3)', math.nan), ('asin(2)', math.nan),
    ('sinh(-1000)', -math.inf), ('cosh(1000)', math.inf), ('log2(0)', -math.inf),
    ('log10(-2)', math.nan), ('sigmoid(-1000)', 0.0), ('exp(-1000)', 0.0),
])
def test_ieee_results_instead_of_exceptions(expr, expected):
    value, _ = evaluate(expr)
    assert same(value, expected)


def test_rules_run_through_any_algebra():
    """A rule only calls its algebra, so a recording algebra sees every step."""
    calls = []

    class Recorder:
        def __getattr__(self, name):
            def op(*args):
                calls.append(name)
                return PRIMITIVES[name].forward(*args)
            return op

    PRIMITIVES['tan'].vjp(Recorder(), 1.0, math.tan(0.5), 0.5)
    assert calls == ['mul', 'add', 'mul']
