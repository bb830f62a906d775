"""`diff --lang numpy` and `--lang c` for every function a program may call:
the generated code is run (NumPy) and compiled with cc -std=c99 -Wall -Werror
(skipped without a compiler), at ordinary points and at edge points, and its
value and gradient are compared with adgrad's own evaluation and gradient
(test_derive_torch.py compares the NumPy code with PyTorch's at the ordinary
points). Random expressions and the samples are compiled too, and names
that a target language reserves must not escape.

At an ordinary point the numbers agree to rounding. At an edge point (an
input or an intermediate that is 0, inf or nan, a tie, a threshold) the
printed code is still the simplified derivative, whose identities (0*x = 0,
a - a = 0, ...) docs/numerics.md lists as differing from IEEE only where
some intermediate is inf or nan. So there a finite number from grad must be
matched to rounding, and a nan or inf by the same nan or the same inf. The
one exception is a gradient that grad makes nan or inf by meeting an inf or
nan on the way, and the code makes finite: that finite number must be the
derivative's true limit, as central differences of the value see it.
"""

import itertools
import math
import os
import shutil
import subprocess

import pytest

from autodiff_cli import backward, forward, lower
from autodiff_cli.core.primitives import FUNCTIONS
from autodiff_cli.derive.printers import adgrad_text, c_text, numpy_text
from autodiff_cli.derive.record import differentiate
from tests.helpers import CASES, numpy_function, scalar_samples
from tests.randexpr import cases, show

SAMPLES = [str(p) for p in scalar_samples(os.path.join(os.path.dirname(__file__), '..', 'samples'))]

# Beyond one row per primitive: the language's forms that lower to several
# nodes (n-ary min and max, log to a base), conditionals and the logic.
EXTRA = {
    'min3': ('min(x, y, z)', [(0.3, -1.7, 2.0), (1.0, 1.0, 2.0)]),
    'max3': ('max(x, y, z)', [(0.3, -1.7, 2.0), (1.0, 2.0, 2.0)]),
    'log_base': ('log(x, y)', [(0.3, 2.0), (20.0, 10.0)]),
    'if': ('if(x > y, x*y, sin(x) - y)', [(0.3, -1.7), (-2.0, 5.0)]),
    'logic': ('if(x > 0 and not (y >= 1) or x == y, x^2, y/x)', [(0.3, -1.7), (-2.0, 5.0)]),
    'compare': ('(x < y) + (x <= y) + (x != y) + x*y', [(0.3, -1.7), (2.0, 2.0)]),
    'stop_gradient': ('stop_gradient(x)*y + x', [(0.3, -1.7), (2.0, 5.0)]),
    'softplus_threshold': ('softplus(x*y)', [(4.0, 5.0), (5.0, 5.0), (-4.0, 5.0)]),
    'clamp_ties': ('clamp(x, y, 1)', [(0.0, 0.0), (1.0, 0.0), (0.5, 0.5)]),
}

EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, 20.0, 1e300, -700.0, math.inf, -math.inf, math.nan]


def _rows():
    rows = dict(CASES)
    rows.update(EXTRA)
    return rows


def test_every_function_a_program_may_call_has_a_row():
    covered = {op for expr, _ in _rows().values()
               for op in {n.op for n in lower(expr).nodes}}
    assert set(FUNCTIONS) <= covered, set(FUNCTIONS) - covered


def _points(expr, ordinary):
    names = list(lower(expr).inputs)
    grid = EDGES if len(names) < 3 else EDGES[::3]
    edges = [dict(zip(names, p)) for p in itertools.product(grid, repeat=len(names))]
    return [dict(zip(names, p)) for p in ordinary], edges


def _reference(graph, point):
    """(value, [gradient per variable], whether every value and gradient on
    the way was finite) from adgrad's evaluation and backward pass."""
    values = forward(graph, point)
    grads = backward(graph, values)
    finite = all(math.isfinite(v) for v in values + grads)
    scale = max([abs(v) for v in values + grads if math.isfinite(v)], default=0.0)
    return values[graph.output], [grads[i] for i in graph.inputs.values()], finite, scale


def _agrees(got, want, scale, rel=1e-12):
    """got (the generated code's number) against want (grad's): to rounding
    if want is finite, else the same nan or the same signed inf."""
    if math.isfinite(want):
        if not math.isfinite(got):
            return False
        return abs(got - want) <= rel * max(abs(got), abs(want)) + 1e-14 * scale + 1e-300
    return math.isnan(got) if math.isnan(want) else got == want


def _central_difference(graph, point, name):
    """d value / d name at point from the value alone (nan where it cannot
    say: an input not finite, or the value not finite nearby)."""
    x = point[name]
    if not all(math.isfinite(v) for v in point.values()):
        return math.nan
    h = 1e-6 * max(1.0, abs(x))
    up = forward(graph, {**point, name: x + h})[graph.output]
    down = forward(graph, {**point, name: x - h})[graph.output]
    return (up - down) / (2 * h)


def _is_the_limit(graph, point, name, got):
    # An identity (0*x = 0, a - a = 0, ...) may turn grad's nan or inf into
    # a finite number, and then it must be the true derivative.
    limit = _central_difference(graph, point, name)
    return math.isfinite(got) and math.isfinite(limit) and \
        abs(got - limit) <= 1e-5 * max(1.0, abs(limit))


def _check(label, graph, point, got_value, got_grads):
    value, grads, finite, scale = _reference(graph, point)
    failures = []
    if not _agrees(got_value, value, scale):
        failures.append((label, point, 'value', got_value, value))
    for name, got, want in zip(graph.inputs, got_grads, grads):
        if not _agrees(got, want, scale) and (
                finite or math.isfinite(want) or not _is_the_limit(graph, point, name, got)):
            failures.append((label, point, name, got, want))
    return failures


# ---- NumPy ----

@pytest.mark.parametrize('op', sorted(_rows()))
def test_numpy_code_agrees_with_grad(op):
    np = pytest.importorskip('numpy')
    expr, ordinary = _rows()[op]
    graph = lower(expr)
    f = numpy_function(numpy_text(differentiate(graph, with_value=True)))
    names = list(graph.inputs)
    failures = []
    for points in _points(expr, ordinary):
        # All the points at once, as arrays: the code has no Python loop.
        columns = {n: np.array([p[n] for p in points]) for n in names}
        value, gradient = f(*[columns[n] for n in names])
        for row, point in enumerate(points):
            failures += _check(op, graph, point, float(value[row]),
                               [float(gradient[n][row]) for n in names])
    assert not failures, failures[:10]


# ---- C ----

def _compile_and_run(tmp_path, units):
    """Compile every (graph, points) into one C program with cc -std=c99 -Wall
    -Werror, run it, and return per unit per point [value, gradient...]."""
    cc = shutil.which('cc')
    if cc is None:
        pytest.skip('no C compiler')
    helpers, bodies, calls = [], [], []
    for k, (graph, points) in enumerate(units):
        code = c_text(differentiate(graph, with_value=True), function=f'f{k}')
        for line in code.splitlines():
            if line.startswith('static double ad_') and line not in helpers:
                helpers.append(line)
        bodies.append('\n'.join(line for line in code.splitlines()
                                if not line.startswith(('#include', 'static double ad_'))))
        for point in points:
            args = ''.join(f'{_c_literal(point[name])}, ' for name in graph.inputs)
            calls.append(f'    f{k}({args}&value, grad); printf("%.17g", value);'
                         f' for (int j = 0; j < {len(graph.inputs)}; j++)'
                         ' printf(" %.17g", grad[j]); printf("\\n");')
    source = tmp_path / 'f.c'
    source.write_text('\n'.join(['#include <math.h>', '#include <stdio.h>', *helpers, *bodies,
                                 'int main(void)', '{', '    double value, grad[64];', *calls,
                                 '    return 0;', '}', '']))
    binary = tmp_path / 'f'
    built = subprocess.run([cc, '-std=c99', '-Wall', '-Werror', '-o', str(binary), str(source),
                            '-lm'], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    out = subprocess.run([str(binary)], check=True, capture_output=True, text=True).stdout
    rows = iter([float(v) for v in line.split()] for line in out.splitlines())   # inf, nan too
    return [[next(rows) for _ in points] for _, points in units]


def _c_literal(x):
    if math.isnan(x):
        return 'NAN'
    if math.isinf(x):
        return 'HUGE_VAL' if x > 0 else '-HUGE_VAL'
    return repr(x)


def test_c_code_compiles_and_agrees_with_grad(tmp_path):
    units, labels = [], []
    for op, (expr, ordinary) in sorted(_rows().items()):
        ordinary_points, edges = _points(expr, ordinary)
        units.append((lower(expr), ordinary_points + edges))
        labels.append(op)
    for source in [show(t) for t, _ in cases(seed=13, count=60, depth=4)] + \
            [open(path).read() for path in SAMPLES]:
        graph = lower(source)
        names = list(graph.inputs)
        if names:
            units.append((graph, [{n: graph.defaults.get(n, 0.7) for n in names},
                                  {n: -1.3 + 0.4 * i for i, n in enumerate(names)}]))
            labels.append(source)
    failures = []
    for label, (graph, points), rows in zip(labels, units, _compile_and_run(tmp_path, units)):
        for point, row in zip(points, rows):
            failures += _check(label, graph, point, row[0], row[1:])
    assert not failures, failures[:10]


# ---- names that a language reserves ----

HOSTILE = ['import', '__class__', 'int', 'double', 'return', 'value', 'f', 'np', 'signed',
           't1', 'd_x', 'NAN', 'sin_', 'main']


def test_reserved_names_cannot_escape(tmp_path):
    graph = lower(' + '.join(f'{n}*{n}' for n in HOSTILE))
    point = {n: 0.5 + i for i, n in enumerate(HOSTILE)}
    grads = backward(graph, forward(graph, point))
    want = {n: grads[i] for n, i in graph.inputs.items()}
    lower(adgrad_text(differentiate(graph)))        # reads back
    pytest.importorskip('numpy')
    f = numpy_function(numpy_text(differentiate(graph, with_value=True)))
    _, gradient = f(*[point[n] for n in graph.inputs])
    assert {n: float(g) for n, g in gradient.items()} == want
    row = _compile_and_run(tmp_path, [(graph, [point])])[0][0]
    assert row[1:] == [want[n] for n in graph.inputs]
