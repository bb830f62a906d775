"""Random expressions, printed with minimal parentheses, against independent references.

The references evaluate the generator's own tree, not adgrad's parse, so a
precedence bug shows up as a wrong number. Always: Python's math and central
differences. When PyTorch is installed: torch float64 autograd, to 1e-12.
"""

import math

import pytest

from tests.helpers import CASES, evaluate, same
from tests.randexpr import cases, show, variables

_MATH = {'add': lambda a, b: a + b, 'sub': lambda a, b: a - b, 'mul': lambda a, b: a * b,
         'div': lambda a, b: a / b, 'pow': math.pow, 'neg': lambda a: -a, 'pos': lambda a: a,
         'abs': abs, 'min': min, 'max': max, 'sigmoid': lambda a: 1 / (1 + math.exp(-a)),
         'relu': lambda a: max(a, 0.0)}


def by_math(t, point):
    """Plain float arithmetic on the tree; raises where math does (the case is skipped).
    Test trees are a few levels deep, so recursion is fine here."""
    kind = t[0]
    if kind == 'var':
        return point[t[1]]
    if kind == 'num':
        return t[1]
    if kind == 'call':
        args = [by_math(a, point) for a in t[2]]
        return (_MATH.get(t[1]) or getattr(math, t[1]))(*args)
    return _MATH[kind](*[by_math(c, point) for c in t[1:]])


def smooth_case(t, point):
    try:
        value = by_math(t, point)
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
    return value if math.isfinite(value) and abs(value) < 1e8 else None


def test_against_math_and_central_differences():
    checked = 0
    for t, point in cases(seed=2026, count=400):
        value = smooth_case(t, point)
        if value is None:
            continue
        text = show(t)
        ours, grads = evaluate(text, **{v: point[v] for v in variables(t)})
        assert ours == pytest.approx(value, rel=1e-12, abs=1e-12), text
        for name, grad in grads.items():
            h = 1e-6
            up, down = dict(point), dict(point)
            up[name] += h
            down[name] -= h
            f_up, f_down = smooth_case(t, up), smooth_case(t, down)
            if f_up is None or f_down is None:
                continue
            forward, backward = (f_up - value) / h, (value - f_down) / h
            # At a kink or near a pole the one-sided slopes disagree: no reference
            # there. Where the chain rule meets inf * 0 (asin'(1) times a zero
            # local derivative) adgrad gives nan as PyTorch does, which the
            # PyTorch test below checks; a difference quotient cannot.
            if math.isclose(forward, backward, rel_tol=1e-3, abs_tol=1e-4) and math.isfinite(grad):
                assert grad == pytest.approx((f_up - f_down) / (2 * h), rel=1e-4, abs=1e-5), \
                    (text, name)
                checked += 1
    assert checked > 300




def _torch():
    try:
        import torch
    except ImportError:
        pytest.skip('PyTorch is not installed (an optional reference)')
    return torch


def by_torch(torch, t, leaves):
    kind = t[0]
    if kind == 'var':
        return leaves[t[1]]
    if kind == 'num':
        return torch.tensor(t[1], dtype=torch.float64)
    ops = {'add': torch.add, 'sub': torch.sub, 'mul': torch.mul, 'div': torch.div,
           'pow': torch.pow, 'neg': torch.neg, 'pos': lambda a: a, 'asin': torch.asin,
           'acos': torch.acos, 'atan': torch.atan, 'min': torch.minimum, 'max': torch.maximum,
           'atan2': torch.atan2}
    if kind == 'call':
        fn = ops.get(t[1]) or getattr(torch.nn.functional, t[1], None) or getattr(torch, t[1])
        return fn(*[by_torch(torch, a, leaves) for a in t[2]])
    return ops[kind](*[by_torch(torch, c, leaves) for c in t[1:]])


def test_against_pytorch_float64():
    torch = _torch()
    compared = 0
    for t, point in cases(seed=7, count=600, depth=5):
        text = show(t)
        names = variables(t)
        leaves = {v: torch.tensor(point[v], dtype=torch.float64, requires_grad=True)
                  for v in names}
        out = by_torch(torch, t, leaves)
        ours, grads = evaluate(text, **{v: point[v] for v in names})
        assert same(ours, out.item()), text
        if names and out.requires_grad:
            reference = torch.autograd.grad(out, [leaves[v] for v in names], allow_unused=True)
            for v, g in zip(names, reference):
                assert same(grads[v], 0.0 if g is None else g.item()), (text, v)
            compared += 1
    assert compared > 400


EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 1e-300, 1e300, 700.0, -700.0,
         1000.0, math.inf, -math.inf, math.nan, 0.3, 1e-8]


def test_every_primitive_on_a_grid_of_edge_points_against_pytorch():
    """Values and gradients at IEEE edge points, to within 64 ulps (tanh' at ±3
    is ~45 ulps from torch's vectorised tanh; every other op is within 4)."""
    import itertools
    torch = _torch()
    failures = []
    for op, (expr, _) in sorted(CASES.items()):
        arity = 3 if 'z' in expr else 2 if 'y' in expr else 1
        tree = _as_tree(expr, op)
        if tree[0] == 'call' and not _torch_has(torch, op):
            continue  # cot, sech, cbrt...: against mpmath in test_functions_reference.py
        for point in itertools.product(EDGES, repeat=arity):
            leaves = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in point]
            out = by_torch(torch, tree, dict(zip('xyz', leaves)))
            reference = torch.autograd.grad(out, leaves, allow_unused=True)
            value, grads = evaluate(expr, **dict(zip('xyz', point)))
            got = [value] + [grads[name] for name in 'xyz'[:arity]]
            want = [out.item()] + [0.0 if r is None else r.item() for r in reference]
            for a, b in zip(got, want):
                if not (same(a, b, rel=0, abs_=0) or
                        (math.isfinite(a) and math.isfinite(b) and
                         abs(a - b) <= 64 * max(math.ulp(a), math.ulp(b)))):
                    failures.append((op, point, a, b))
    assert not failures, failures[:10]


def _as_tree(expr, op):
    """The generator's tree for a test_primitives row: op applied to x (and y)."""
    x, y = ('var', 'x'), ('var', 'y')
    if op in ('neg', 'pos'):
        return (op, x)
    if op in ('add', 'sub', 'mul', 'div', 'pow'):
        return (op, x, y)
    names = [name for name in 'xyz' if name in expr]
    return ('call', op, tuple(('var', name) for name in names))


def _torch_has(torch, op):
    return hasattr(torch, op) or hasattr(torch.nn.functional, op)
