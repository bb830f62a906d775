"""adgrad check at hostile points: where finite differences cannot be trusted
it warns (exit 0), and it fails (exit 1) only where reverse mode is wrong.

Each row was a wrong verdict before, or pins one that must not change: a
jump where an `if` or a comparison switches within the stencil, subnormal
values, cancellation, poles, overflow, and deliberately wrong derivatives.
"""

import math

import pytest

from autodiff_cli import lower
from autodiff_cli.core.primitives import PRIMITIVES
from autodiff_cli.derive.check import _kind, check_gradient, check_hessian
from tests.helpers import run_main

SUBNORMAL = '4.9e-324'
WRONG_SQUARE = 'f(x) = x^2; grad f(x) = 3*x; f(x)'

# program, point, {variable: verdict}, exit code, a word of the reason (or '')
ROWS = [
    # an `if` whose branch (or condition) switches within ±h: a jump
    ('if(x, x, 1)', ['x=0'], {'x': 'warn'}, 0, 'jump'),
    ('if(x > 0, x, 1)', ['x=0'], {'x': 'warn'}, 0, 'jump'),
    ('if(x > 0, x, -x)', ['x=0'], {'x': 'warn'}, 0, 'kink'),
    ('if(x > 0, x, 1)', ['x=2'], {'x': 'pass'}, 0, ''),
    # the Hessian's check at a jump warns too, entry by entry
    ('if(x, x^2, 1)', ['x=0', '--order', '2'], {'x': 'warn', 'x,x': 'warn'}, 0, 'jump'),
    # comparisons, steps, ties, kinks and bounds
    ('x > 0', ['x=0'], {'x': 'warn'}, 0, 'jump'),
    ('x == 1', ['x=1'], {'x': 'warn'}, 0, 'jump'),
    ('floor(x)', ['x=1'], {'x': 'warn'}, 0, 'jump'),
    ('sign(x)*x', ['x=0'], {'x': 'warn'}, 0, 'jump'),
    ('min(x, y)', ['x=1', 'y=1'], {'x': 'warn', 'y': 'warn'}, 0, 'kink'),
    ('max(x, 1)', ['x=1'], {'x': 'warn'}, 0, 'kink'),
    ('abs(x)', ['x=0'], {'x': 'warn'}, 0, 'kink'),
    ('relu(x)', ['x=0'], {'x': 'warn'}, 0, 'kink'),
    ('clamp(x, 0, 1)', ['x=1'], {'x': 'warn'}, 0, 'kink'),
    ('clamp(x, 0, 1)', ['x=0.5'], {'x': 'pass'}, 0, ''),
    # smooth at 0 although pow's rule special-cases a zero base: no false kink
    ('x^2', ['x=0'], {'x': 'pass'}, 0, ''),
    ('2^x', ['x=0'], {'x': 'pass'}, 0, ''),
    ('x^y', ['x=0', 'y=2'], {'x': 'pass', 'y': 'pass'}, 0, ''),
    ('sinc(x)', ['x=0'], {'x': 'pass'}, 0, ''),
    # subnormal values: reverse mode is exact, differences cannot see 5e-324
    ('x*y', ['x=1', f'y={SUBNORMAL}'], {'x': 'warn', 'y': 'pass'}, 0, 'rounding'),
    ('x*y', [f'x={SUBNORMAL}', f'y={SUBNORMAL}'], {'x': 'warn', 'y': 'warn'}, 0, 'rounding'),
    ('x*y', [f'x={SUBNORMAL}', 'y=1'], {'x': 'pass', 'y': 'warn'}, 0, 'rounding'),
    ('x^3', ['x=1e-300'], {'x': 'pass'}, 0, ''),
    ('exp(x)', ['x=-745'], {'x': 'pass'}, 0, ''),
    # cancellation: rounding of an intermediate outweighs the differences
    ('(x + 1e16) - 1e16', ['x=1'], {'x': 'warn'}, 0, 'rounding'),
    # overflow, domain edges, poles, huge and mixed magnitudes
    ('x^2', ['x=1e308'], {'x': 'warn'}, 0, 'not finite'),
    ('x', ['x=1e308'], {'x': 'pass'}, 0, ''),
    ('exp(x)', ['x=709'], {'x': 'warn'}, 0, 'overflow'),
    ('x^2', ['x=-0.0'], {'x': 'pass'}, 0, ''),
    ('sqrt(x)', ['x=0'], {'x': 'warn'}, 0, 'domain'),
    ('log(x)', ['x=1e-300'], {'x': 'warn'}, 0, 'domain'),
    ('log(x)', ['x=0.001'], {'x': 'pass'}, 0, ''),
    ('1/x', ['x=0.001'], {'x': 'pass'}, 0, ''),
    ('tan(x)', ['x=1.5707963'], {'x': 'warn'}, 0, 'settle'),
    ('x*y + x/y', ['x=1e-300', 'y=1e300'], {'x': 'pass', 'y': 'pass'}, 0, ''),
    ('x*y*z', ['x=1e-200', 'y=1e-200', 'z=1e200'], {'x': 'pass', 'y': 'pass', 'z': 'pass'}, 0, ''),
    ('x + stop_gradient(x)', ['x=1'], {'x': 'warn'}, 0, 'stop_gradient'),
    # a wrong derivative still fails, also where the step must shrink
    (WRONG_SQUARE, ['x=1.5'], {'x': 'FAIL'}, 1, ''),
    (WRONG_SQUARE, ['x=0.001'], {'x': 'FAIL'}, 1, ''),
    ('f(x) = log(x); grad f(x) = 2/x; f(x)', ['x=0.001'], {'x': 'FAIL'}, 1, ''),
    ('f(x) = abs(x); grad f(x) = 1; f(x)', ['x=-2'], {'x': 'FAIL'}, 1, ''),
]


def _verdicts(out):
    rows = [line.split('\t') for line in out.splitlines()]
    return {cells[2]: cells[7] for cells in rows}, [cells[8] for cells in rows]


@pytest.mark.parametrize('program, point, verdicts, code, reason', ROWS)
def test_check_verdict_at_hostile_points(program, point, verdicts, code, reason):
    result = run_main(['check', program, *point])
    assert result.code == code, result.out + result.err
    got, reasons = _verdicts(result.out)
    assert got == verdicts, result.out
    if reason:
        assert any(reason in r for r in reasons), result.out
    assert ('warning' in result.err) == ('warn' in verdicts.values())


def test_pieces_come_from_the_table_of_primitives():
    """Every op's kind is read off its row; the ops a person knows to be
    non-smooth are all found, and every smooth one is left alone."""
    kinds = {op: _kind(op) for op in PRIMITIVES}
    assert {op for op, k in kinds.items() if k == 'kink'} >= {'abs', 'relu', 'min', 'max', 'clamp'}
    assert {op for op, k in kinds.items() if k == 'step'} >= {
        'lt', 'le', 'gt', 'ge', 'eq', 'ne', 'and', 'or', 'not', 'floor', 'ceil', 'round', 'sign'}
    assert {op for op, k in kinds.items() if k == 'choice'} == {'if', 'where'}
    assert kinds['stop_gradient'] == 'stop'
    for op in ('add', 'mul', 'div', 'sin', 'exp', 'log', 'sqrt', 'tanh', 'atan2', 'hypot'):
        assert kinds[op] == 'smooth', op


@pytest.mark.parametrize('x, y', [(1.0, 5e-324), (5e-324, 5e-324), (1e300, 1e-300), (-0.0, 2.0)])
def test_reverse_mode_is_right_where_the_check_no_longer_fails(x, y):
    """The AD the subnormal rows rely on agrees with torch exactly."""
    torch = pytest.importorskip('torch')
    a = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    b = torch.tensor(y, dtype=torch.float64, requires_grad=True)
    (a * b).backward()
    rows = {r.what: r for r in check_gradient(lower('x*y'), {'x': x, 'y': y})}
    assert rows['x'].ad == a.grad.item() and rows['y'].ad == b.grad.item()
    assert 'FAIL' not in {r.verdict for r in rows.values()}


def test_differences_shrink_their_step_near_a_pole():
    """log at 1e-3 with h = 2^-10 sees nothing of the slope 1000; a smaller
    step does, to the digits the check then passes at (mpmath's diff)."""
    mpmath = pytest.importorskip('mpmath')
    (row,) = check_gradient(lower('log(x)'), {'x': 0.001})
    exact = float(mpmath.diff(mpmath.log, mpmath.mpf('0.001')))
    assert row.verdict == 'pass' and math.isclose(row.fd, exact, rel_tol=1e-5)


def test_a_right_hessian_at_a_smooth_point_still_passes():
    rows = check_hessian(lower('x^3*y + exp(x*y)'), {'x': 0.5, 'y': 2.0})
    assert {r.verdict for r in rows} == {'pass'}
