"""Properties over generated programs (hypothesis drives tests/fuzz/gen.py's generator).

- parse, print, parse again: the same graph (tests/helpers.py prints a graph
  back as adgrad text, every operation in parentheses, and compares canonical tapes);
- the gradient agrees with central differences wherever the function is smooth;
- every row of a batch equals the single point, edge values included.
"""

import json
import math
import os
import tempfile

from hypothesis import HealthCheck, given, settings, strategies as st

from autodiff_cli import backward, forward, lower
from tests.fuzz import gen
from tests.helpers import print_graph, run_main, same, structure

examples = settings(max_examples=int(os.environ.get('ADGRAD_PROPERTY_EXAMPLES', '150')),
                    deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


@examples
@given(st.randoms(use_true_random=False))
def test_parse_print_parse_gives_the_same_graph(rng):
    text, _, _ = gen.program(rng, conditionals=False)   # helpers.print_graph writes no if
    graph = lower(text)
    printed = print_graph(graph)
    again = lower(printed)
    assert structure(again) == structure(graph), (text, printed)
    assert print_graph(again) == printed


def _value(graph, point):
    return forward(graph, point)[graph.output]


def _one_sided(graph, point, name, h):
    moved = dict(point)
    moved[name] += h
    return (_value(graph, moved) - _value(graph, point)) / h


def _central(graph, point, name, h):
    up, down = dict(point), dict(point)
    up[name] += h
    down[name] -= h
    return (_value(graph, up) - _value(graph, down)) / (2 * h)


@examples
@given(st.randoms(use_true_random=False))
def test_gradient_agrees_with_central_differences_where_smooth(rng):
    text, _, variables = gen.program(rng)
    graph = lower(text)
    point = {v: rng.uniform(-2.5, 2.5) for v in graph.inputs}
    values = forward(graph, point)
    grads = backward(graph, values)
    if not all(math.isfinite(v) for v in values + [g for g in grads if g is not None]):
        # An inf or nan on the way, forward or backward (asin'(z/z) = inf times
        # d(z/z)/dz = 0): a singular point of some step, where the chain rule and
        # the difference quotient part ways, as they do in PyTorch.
        return
    largest = max((abs(v) for v in values), default=0.0)
    for name, node in graph.inputs.items():
        h = 1e-4 * max(1.0, abs(point[name]))
        if 0 < abs(point[name]) < h:
            continue   # 0 within h (x + x/x at 1e-91: 1/x - x/x^2 cancels the 1 away)
        coarse, fine = _central(graph, point, name, h), _central(graph, point, name, h / 2)
        if not (math.isfinite(coarse) and math.isfinite(fine)) or \
                abs(coarse - fine) > 1e-4 * max(1.0, abs(fine)):
            continue   # a kink, a pole or a cliff within h: not smooth here
        if abs(_one_sided(graph, point, name, h) - _one_sided(graph, point, name, -h)) > \
                1e-2 * max(1.0, abs(fine)):
            continue   # a kink at the point itself (min(x*x, x) at 0): the sides disagree
        if 1e-16 * largest / h > 1e-7 * max(1.0, abs(fine)):
            continue   # a step of h is lost in rounding next to a large value (x/1e-34 + z)
        estimate = (4 * fine - coarse) / 3   # Richardson: error O(h^4)
        assert same(grads[node], estimate, rel=1e-5, abs_=1e-5), (text, point, name)


@examples
@given(st.randoms(use_true_random=False))
def test_every_batch_row_equals_the_single_point(rng):
    text, _, variables = gen.program(rng)
    graph = lower(text)
    names = list(graph.inputs)
    rows = [gen.point(rng, names) for _ in range(rng.randint(1, 6))]
    lines = ''.join(json.dumps({n: v if math.isfinite(v) else gen.number_text(v)
                                for n, v in row.items()}) + '\n' for row in rows)
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as folder:
        os.chdir(folder)
        try:
            with open('prog.ad', 'w') as f:
                f.write(text)
            with open('p.jsonl', 'w') as f:
                f.write(lines)
            code, out, err = run_main(['grad', '-f', 'prog.ad', '--points', 'p.jsonl'])
        finally:
            os.chdir(cwd)
    assert code == 0, err
    written = [json.loads(line) for line in out.splitlines()]
    assert len(written) == len(rows)
    for row, got in zip(rows, written):
        values = forward(graph, row)
        grads = backward(graph, values)
        want = {'value': values[graph.output]} | {f'd_{n}': grads[i] for n, i in graph.inputs.items()}
        for key, expected in want.items():
            assert same(float(got[key]), expected, rel=1e-13, abs_=0.0), (text, row, key, got)
