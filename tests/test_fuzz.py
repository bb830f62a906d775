"""adgrad's fuzzer in CI: a bounded number of generated cases per kind, under hypothesis.

The generators and properties are tests/fuzz/gen.py and tests/fuzz/check.py:
exit 0, 1 or 2 and never 70; nothing on stdout on exit 2; an answer within
LIMIT seconds; the same numbers from a single point, a batch row and the
program with its blocks inlined; for array programs, one error line on
exit 1 or 2, and gradients that agree with torch float64. Hypothesis drives each generator through a
random.Random it can shrink, derandomized so that CI sees the same cases every
run; the long campaign (`python -m tests.fuzz --n 100000 --seed S`) explores.
Set ADGRAD_FUZZ_EXAMPLES to run more cases per kind here.
"""

import os
import random

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.fuzz import gen
from tests.fuzz.check import Hang, execute, problems

LIMIT = 10.0   # seconds per command line: a hang, not a speed target
EXAMPLES = int(os.environ.get('ADGRAD_FUZZ_EXAMPLES', '60'))

fuzz = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))


def check(case):
    try:
        runs = execute(case, LIMIT)
    except Hang:
        pytest.fail(f'no answer within {LIMIT} s: {case}')
    found = problems(case, runs)
    assert not found, (found, case, [run.err[-500:] for run in runs])


@fuzz
@given(st.randoms(use_true_random=False))
def test_programs_and_command_lines(rng):
    text, _, variables = gen.program(rng)
    check({'kind': 'program', 'argv': gen.command_line(rng, variables), 'stdin': text.encode(),
           'files': {'prog.ad': text.encode()}})


@fuzz
@given(st.randoms(use_true_random=False))
def test_mutated_text(rng):
    text, _, variables = gen.program(rng)
    data = gen.mutate(rng, text)
    check({'kind': 'mutated', 'argv': gen.command_line(rng, variables), 'stdin': data,
           'files': {'prog.ad': data}})


@fuzz
@given(st.randoms(use_true_random=False))
def test_points_files(rng):
    text, _, variables = gen.program(rng)
    name, data = gen.points_file(rng, variables)
    check({'kind': 'points', 'argv': gen.command_line(rng, variables, points_file=name),
           'stdin': text.encode(), 'files': {'prog.ad': text.encode(), name: data}})


@fuzz
@given(st.randoms(use_true_random=False))
def test_single_point_batch_and_inlined_program_agree(rng):
    check(gen.numbers_case(rng))


ARRAY_EXAMPLES = int(os.environ.get('ADGRAD_FUZZ_ARRAY_EXAMPLES', '40'))


@pytest.mark.parametrize('kind', ['tensor', 'arrays', 'array_text'])
def test_array_programs(kind):
    """A deterministic sample of the array kinds (tests/fuzz/arrays.py): a
    well-shaped program whose grad agrees with torch float64, hostile shapes,
    values and files, and array text with syntax near-misses."""
    if kind == 'tensor':
        pytest.importorskip('torch')
    for seed in range(ARRAY_EXAMPLES):
        check(gen.hostile_case(random.Random(f'ci-{kind}:{seed}'), (kind,)))


def test_the_torch_oracle_finds_a_wrong_gradient():
    """A tensor case whose gradient is off by one entry is a wrong number."""
    pytest.importorskip('torch')
    import json
    from tests.helpers import Run
    case = {'kind': 'tensor', 'argv': [], 'files': {}, 'block': False,
            'tree': ('red', 'sum', ('un', 'sin', ('var', 'x')), None, 'none'),
            'inputs': {'x': (2,)}, 'values': {'x': [0.5, -1.0]}}
    import math
    right = {'value': math.sin(0.5) + math.sin(-1.0),
             'gradient': {'x': [math.cos(0.5), math.cos(-1.0)]}}
    assert problems(case, [Run(0, json.dumps(right), '')]) == []
    wrong = {**right, 'gradient': {'x': [math.cos(0.5), math.cos(-1.0) * (1 + 1e-6)]}}
    assert problems(case, [Run(0, json.dumps(wrong), '')])[0].startswith('wrong numbers: x = ')


def test_an_error_is_one_line():
    """Exit 2 with anything but one error line (and its source and caret) is found."""
    from tests.helpers import Run
    case = {'kind': 'arrays'}
    assert problems(case, [Run(2, '', 'adgrad: error: bad (column 2)\n  xy\n   ^\n')]) == []
    assert problems(case, [Run(2, '', 'adgrad: warning: w\nadgrad: error: bad\n')]) == []
    assert problems(case, [Run(2, '', 'x.py:29: UserWarning: no data\nadgrad: error: bad\n')])


def test_the_campaign_reports_counts(capsys):
    """The long campaign's harness, on a few cases: a worker process, counts, a verdict."""
    from tests.fuzz.__main__ import main
    code = main(['--n', '12', '--seed', 'ci'])
    out = capsys.readouterr().out
    assert 'adgrad fuzz campaign: 12 cases' in out and 'exit codes:' in out
    assert code == (0 if 'internal errors (exit 70): 0 ' in out and 'hangs (over 5 s): 0' in out
                    and 'wrong numbers: 0' in out else 1)


def test_generated_programs_are_valid_and_inlining_keeps_their_meaning():
    """The generator itself: its programs lower, and its inlined twin has no block."""
    from autodiff_cli import lower
    for seed in range(200):
        text, inlined, _ = gen.program(random.Random(seed))
        lower(text)
        assert all(node.block is None for node in lower(inlined).nodes)


def test_the_inlining_oracle_skips_only_non_finite_gradients():
    """Sharing against duplication may turn an inf gradient into nan (0*inf), as in
    PyTorch: not a wrong number. Finite gradients and values are still compared."""
    import json
    from tests.fuzz.check import problems
    from tests.helpers import Run

    def runs(value, grad, inlined_value, inlined_grad):
        single = json.dumps({'value': value, 'gradient': grad})
        batch = json.dumps({'value': value, **{f'd_{k}': v for k, v in grad.items()}})
        inlined = json.dumps({'value': inlined_value, 'gradient': inlined_grad})
        return [Run(0, single, ''), Run(0, batch + '\n', ''), Run(0, inlined, '')]

    # the program and point behind the runs (the oracle recomputes a differing batch row)
    case = {'kind': 'numbers', 'row': 0,
            'files': {'prog.ad': b'sqrt(x) + z', 'inlined.ad': b'sqrt(x) + z',
                      'p.jsonl': b'{"x": 0, "z": 1}\n'}}
    assert problems(case, runs(1.0, {'x': 'inf', 'z': 2.0}, 1.0, {'x': 'nan', 'z': 2.0})) == []
    assert problems(case, runs(1.0, {'x': 3.0}, 1.0, {'x': '-inf'})) == []
    assert problems(case, runs(1.0, {'x': 3.0, 'z': 2.0}, 1.0, {'x': 'nan', 'z': 2.5})) == [
        "wrong numbers: inlined program gives z = 2.5, the single point 2.0"]
    assert problems(case, runs('inf', {'x': 1.0}, 'nan', {'x': 1.0})) == [
        "wrong numbers: inlined program gives value = nan, the single point inf"]
    assert problems(case, runs(1.0, {'x': 'inf'}, 1.0, {'x': 'inf'})) == []
    batch_differs = runs(1.0, {'x': 'inf'}, 1.0, {'x': 'inf'})
    batch_differs[1] = Run(0, json.dumps({'value': 1.0, 'd_x': 'nan'}) + '\n', '')
    assert problems(case, batch_differs) == [
        "wrong numbers: batch row gives x = nan, the single point inf"]


def test_a_batch_row_may_differ_where_numpys_kernels_agree_with_it():
    """sinh(z) - z at z = 1e-8 is 0 with NumPy's sinh on AVX-512 CPUs and
    1.6e-24 with C's: the batch row is what the single point gives with
    NumPy's kernels, so it is no wrong number; any other number still is."""
    import json
    from autodiff_cli import backward, forward, lower
    from tests.fuzz.check import problems
    from tests.helpers import Run, numpy_kernels
    source = 't0 = sinh(z)\nt0 / (t0 + -z) + t0'
    graph = lower(source)
    with numpy_kernels():
        values = forward(graph, {'z': 1e-8})
        grads = backward(graph, values)
    numpy_value, numpy_grad = values[graph.output], grads[graph.inputs['z']]
    case = {'kind': 'numbers', 'row': 0,
            'files': {'prog.ad': source.encode(), 'p.jsonl': b'{"z": 1e-08}\n'}}
    single = Run(0, json.dumps({'value': 2.5, 'gradient': {'z': 7.0}}), '')
    inlined = single

    def batch(value, grad):
        return Run(0, json.dumps({'value': value, 'd_z': grad}, allow_nan=True)
                   .replace('Infinity', '"inf"').replace('NaN', '"nan"') + '\n', '')
    assert problems(case, [single, batch(numpy_value, numpy_grad), inlined]) == []
    assert problems(case, [single, batch(3.5, numpy_grad), inlined]) == [
        'wrong numbers: batch row gives value = 3.5, the single point 2.5']


def test_the_inlined_gradient_may_differ_by_the_rounding_of_terms_that_cancel():
    """f(p) = p/p shares its argument: the point's terms cancel exactly, to
    -0.0, where the inlined copy computes the argument twice and its terms of
    1e8 leave 6.9e-9 (campaign seed 20261208, case 78860). Within n·ε·Σ|term|
    that is no wrong number; a gradient off by more still is."""
    import json
    from tests.fuzz.check import problems
    from tests.helpers import Run
    case = {'kind': 'numbers', 'row': 0,
            'files': {'prog.ad': b'f2(p) = p / p\nf2(atan2(0.5, z) / z)\n',
                      'inlined.ad': b'atan2(0.5, z) / z / (atan2(0.5, z) / z)\n',
                      'p.jsonl': b'{"z": 1e-08}\n'}}

    def runs(inlined_gradient):
        single = Run(0, json.dumps({'value': 1.0, 'gradient': {'z': -0.0}}), '')
        batch = Run(0, json.dumps({'value': 1.0, 'd_z': -0.0}) + '\n', '')
        inlined = Run(0, json.dumps({'value': 1.0, 'gradient': {'z': inlined_gradient}}), '')
        return [single, batch, inlined]
    assert problems(case, runs(6.929310680803269e-09)) == []
    assert problems(case, runs(1e-3)) == [
        'wrong numbers: inlined program gives z = 0.001, the single point -0.0']


def test_points_are_read_by_pyarrow_and_by_python_and_must_agree(monkeypatch):
    """A points case runs twice, pyarrow's reader forced and then none: a
    reader that read a cell wrong (here pyarrow's, made to add 1) is found."""
    pytest.importorskip('pyarrow')
    from autodiff_cli.table import sources as points
    case = {'kind': 'points', 'argv': ['grad', 'x*x', '--points', 'p.csv', '-o', 'out.csv'],
            'files': {'p.csv': b'x,label\n1,"a, ""b"""\n2,c\n'}}
    runs = execute(case, LIMIT)
    assert len(runs) == 2 and runs[0] == runs[1] and '[out.csv: ' in runs[0].err
    assert problems(case, runs) == []
    real = points.CsvSource.fast_columns
    monkeypatch.setattr(points.CsvSource, 'fast_columns', lambda *a: None if real(*a) is None
                        else {k: v + 1 for k, v in real(*a).items()})
    assert problems(case, execute(case, LIMIT)) == [
        'readers differ: pyarrow and Python read the points differently']
