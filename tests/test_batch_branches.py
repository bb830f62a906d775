"""A batch row equals its single point, bit for bit, through `if`s.

At a single point an `if` runs one branch and the backward pass sends the
other nothing at all; over a batch both branches run in every row, so a row
whose untaken side is nan or inf must still get exactly the single point's
numbers: the value, and the gradient of every node (nan matches nan, and
-0.0 is not 0.0). The reference is the scalar path itself, row by row, with
NumPy's kernels in place of C's libm: the two differ by an ulp on some CPUs
(see the README), which a program can grow without bound, and this is a
property of masking, not of libm. It fails wherever the array backward lets
a masked 0 meet a nan.
"""

import math
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from autodiff_cli import backward, forward, lower
from autodiff_cli.core.batch import _arrays, run_batch
from autodiff_cli.core.passes import executed
from autodiff_cli.errors import AdgradError

from tests.fuzz import gen
from tests.helpers import numpy_kernels, run_main

REPRO = 't0 = z ^ z; if(if(z ^ t0, z*t0, t0*t0), 1e-3, -z * z ^ t0)'

# Points whose untaken sides overflow, divide by zero or leave a domain.
EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -1.8, 1e-8, 700.0, 1e300, -1e300,
         math.inf, -math.inf, math.nan]


def identical(a, b):
    """The same float64, bit for bit but for nan's payload."""
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def row_of(x, r):
    return x if np.ndim(x) == 0 else x[r]


def mismatches(graph, points):
    """Where the batch of `points` ([{name: float}]) differs from each point run
    alone: [(row, what, single, batch)] over the output's value, the value of
    every node the point ran, and the gradient of every node."""
    np_, arrays = _arrays()
    names = sorted(graph.inputs)
    columns = {n: np.array([p[n] for p in points], dtype=np.float64) for n in names}
    with np.errstate(all='ignore'):
        batch_values = forward(graph, columns, arrays)
        batch_grads = backward(graph, batch_values, algebra=arrays)
        value, gradient, _ = run_batch(graph, columns, len(points), wrt=names)
    found = []
    for r, point in enumerate(points):
        with numpy_kernels():
            values = forward(graph, point)
            grads = backward(graph, values)
        ran = executed(graph, values)
        if not identical(values[graph.output], value[r]):
            found.append((r, 'value', values[graph.output], value[r]))
        for name in names:
            if not identical(grads[graph.inputs[name]], gradient[name][r]):
                found.append((r, f'd_{name}', grads[graph.inputs[name]], gradient[name][r]))
        for i in range(len(graph.nodes)):
            if ran[i] and not identical(values[i], row_of(batch_values[i], r)):
                found.append((r, f'value of node {i}', values[i], row_of(batch_values[i], r)))
            if not identical(grads[i], row_of(batch_grads[i], r)):
                found.append((r, f'gradient of node {i}', grads[i], row_of(batch_grads[i], r)))
    return found


# ---- the fuzzer's find, and hand-made cases ----

def test_the_fuzzers_program_through_the_command_line(tmp_path):
    points = tmp_path / 'p.csv'
    points.write_text('z\n-1.8\n')
    batch = run_main(['grad', REPRO, '--points', str(points)])
    single = run_main(['grad', REPRO, 'z=-1.8', '--format', 'csv'])
    assert batch.code == single.code == 0, (batch.err, single.err)
    assert batch.out.splitlines() == ['z,value,d_z', '-1.8,0.001,0.0']
    assert single.out.splitlines()[1] == '-1.8,0.001,0.0'


@pytest.mark.parametrize('source', [
    REPRO,
    # a node before the `if` whose derivative is inf or nan where its branch is not taken
    't = sqrt(x); if(x > 0, t * y, y)',
    't = log(x); y * if(x > 0, t, 1) + y',
    # the untaken branch itself overflows or leaves its domain
    'if(x < 0, 0, x ^ 0.5)',
    'if(x > 1, if(x > 2, log(x - 2), 1 / (x - 1)), asin(x))',
    # one node reached both from the taken path and from an untaken branch:
    # only the taken path's gradient counts
    't = x * x; t * if(x > 0, t, sqrt(-t))',
    't = exp(x); if(t > 1, t, log(-t)) + t',
    # the same node in both branches; and a condition that is a constant
    'if(x > y, x, x) * if(3, y, sqrt(-y))',
    # a -0.0 gradient must stay -0.0 where the untaken side adds nothing
    'y * -0 + if(y > 0, y, 1)',
    # a condition of nan takes the then branch, as at a point
    'if(x / x, x * y, sqrt(-y))',
])
def test_batch_rows_equal_single_points_on_edges(source):
    graph = lower(source)
    names = sorted(graph.inputs)
    points = [dict(zip(names, values)) for values in
              np.array(np.meshgrid(*[EDGES] * len(names))).reshape(len(names), -1).T.tolist()]
    assert not mismatches(graph, points)


def test_a_negative_zero_gradient_keeps_its_sign():
    # The property compares signs of zeros; check that the case above really
    # makes one (it would not prove anything if the point gave +0.0).
    graph = lower('y * -0 + if(y > 0, y, 1)')
    grads = backward(graph, forward(graph, {'y': -1.0}))
    assert math.copysign(1.0, grads[graph.inputs['y']]) == -1.0


def test_programs_without_if_still_agree():
    graph = lower('t = sqrt(x); t * y + log(y)')
    points = [{'x': x, 'y': y} for x in EDGES for y in EDGES]
    assert not mismatches(graph, points)


# ---- the property, over the fuzzer's programs with ifs ----

def program_with_ifs(rng):
    """A generated program (tests/fuzz/gen.py) whose graph has at least one `if`."""
    for _ in range(200):
        text, _, variables = gen.program(rng)
        try:
            graph = lower(text)
        except AdgradError:
            continue
        if graph.branches:
            return graph
    pytest.skip('no program with an if in 200 tries')


@settings(max_examples=200, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(st.randoms(use_true_random=False))
def test_batch_rows_equal_single_points_for_programs_with_ifs(rng):
    graph = program_with_ifs(rng)
    names = sorted(graph.inputs)
    # Mostly edge values (nan, inf, zeros, huge) so that untaken sides are
    # often non-finite; a few uniform ones for ordinary rows beside them.
    points = [{n: rng.choice(EDGES) if rng.random() < 0.7 else rng.uniform(-3, 3) for n in names}
              for _ in range(rng.randint(1, 12))]
    found = mismatches(graph, points)
    assert not found, (graph.source, points, found[:5])


def test_the_property_sees_untaken_sides_that_are_not_finite():
    # The property above is only worth something if its programs often have a
    # branch not taken whose nodes are nan or inf: count them on a fixed sample.
    rng, seen = random.Random(20261203), 0
    _, arrays = _arrays()
    for _ in range(100):
        graph = program_with_ifs(rng)
        names = sorted(graph.inputs)
        point = {n: rng.choice(EDGES) for n in names}
        ran = executed(graph, forward(graph, point))
        with np.errstate(all='ignore'):
            values = forward(graph, {n: np.array([point[n]]) for n in names}, arrays)
        seen += any(not ran[i] and not np.isfinite(values[i]).all() for i in range(len(ran)))
    assert seen >= 10
