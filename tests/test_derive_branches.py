"""Derivatives of nested conditionals read as a person writes them (issue 28),
stay linear in the nesting, and read back to grad's numbers in every region."""

import json
import math

import pytest

from tests.helpers import run_main

# (program, the derivative a person writes, points in each region)
NESTED = [
    ('if(x < 1, x^2, if(x < 3, 2*x - 1, log(x) + 5 - log(3)))',
     'd_x = if(x < 1, 2*x, if(x < 3, 2, 1/x))', [0.5, 2, 4]),
    ('if(x < 1, sin(x), if(x < 2, if(x < 1.5, x, 2*x), x^3))',
     'd_x = if(x < 1, cos(x), if(x < 2, if(x < 1.5, 1, 2), 3*x^2))', [0.5, 1.2, 1.7, 2.5]),
    ('if(x > 0, sqrt(x), -x)', 'd_x = if(x > 0, 1/(2*sqrt(x)), -1)', [-1, 4]),
]


@pytest.mark.parametrize('program, written, points', NESTED)
def test_nested_conditionals_print_as_written(program, written, points):
    out = run_main(['diff', program]).out
    assert out.strip() == written
    for x in points:      # and the formula is the derivative: central differences
        h = 1e-6 * max(1.0, abs(x))
        at = lambda t: float(run_main(['eval', program, f'x={t!r}']).out)
        slope = (at(x + h) - at(x - h)) / (2 * h)
        printed = float(run_main(['eval', written.split(' = ', 1)[1], f'x={x!r}']).out)
        assert printed == pytest.approx(slope, rel=1e-6)


def test_two_variables_in_two_nested_conditionals():
    program = 'if(x < 0, if(y < 0, x*y, x), if(y < 0, y, x + y))'
    out = run_main(['diff', program]).out
    assert 'd_x = if(t1, if(t2, y, 1), if(t2, 0, 1))' in out
    assert 'd_y = if(t1, if(t2, x, 0), 1)' in out
    for x in (-1.5, 2.0):
        for y in (-0.5, 3.0):
            grad = dict(line.split('\t') for line in
                        run_main(['grad', program, f'x={x}', f'y={y}']).out.splitlines())
            for name in ('x', 'y'):
                diff = run_main(['diff', program, '--wrt', name]).out
                value = run_main(['eval', '-', f'x={x}', f'y={y}'], stdin=diff.encode()).out
                assert float(value) == float(grad[f'd_{name}'])


def _staircase(depth):
    """if(x < 1, 1*x^2, if(x < 2, 2*x^2, ... x)): each `if` in the else of the last."""
    text = 'x'
    for k in range(depth, 0, -1):
        text = f'if(x < {k}, {k}*x^2, {text})'
    return text


def test_a_deep_staircase_is_linear_and_reads_back(tmp_path):
    # 1,000 deep was a RecursionError, and 100 deep printed 150 kB in 5 s.
    sizes = {}
    for depth in (300, 3000):
        path = tmp_path / f'stairs{depth}.ad'
        path.write_text(_staircase(depth))
        diff = run_main(['diff', '-f', str(path)])
        assert diff.code == 0, diff.err
        sizes[depth] = len(diff.out)
        for x in (0.5, depth / 2 + 0.25, depth + 7.0):
            k = math.floor(x) + 1     # the step x is on: k*x^2, or x past the last
            expected = 2 * k * x if k <= depth else 1.0
            assert float(run_main(['eval', '-', f'x={x}'], stdin=diff.out.encode()).out) == expected
    assert sizes[3000] < 12 * sizes[300]


def test_the_hessian_of_a_deep_staircase():
    # 400 deep was a RecursionError: each product was pushed under the gates
    # around it one recursive call per gate. Its cost is still quadratic in
    # the depth (each step's product is rebuilt under all the gates above it).
    depth = 400
    program = _staircase(depth)
    for x in (0.5, 250.5, depth + 7.0):
        k = math.floor(x) + 1
        run = run_main(['hessian', program, f'x={x}', '--json'])
        assert run.code == 0, run.err
        assert json.loads(run.out)['hessian'] == [[2.0 * k if k <= depth else 0.0]]
