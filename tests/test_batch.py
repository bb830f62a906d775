"""Batches of points (--points), the shared output formats, pipes and completion."""

import csv
import io
import itertools
import json
import math
import os
import shutil
import subprocess
import sys

import pytest

from autodiff_cli import lower
from autodiff_cli.core.batch import run_batch

from tests.helpers import CASES, evaluate, same

EDGE_POINTS = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e300, -1e-300, math.inf, -math.inf, math.nan]


@pytest.mark.parametrize('op', sorted(CASES))
def test_arrays_agree_with_the_scalar_path_for_every_primitive(op):
    expr = CASES[op][0]
    graph = lower(expr)
    names = sorted(graph.inputs)
    grid = list(itertools.product(EDGE_POINTS, repeat=len(names)))
    import numpy as np
    columns = {n: np.array([p[i] for p in grid]) for i, n in enumerate(names)}
    value, gradient, _ = run_batch(graph, columns, len(grid), names)
    for row, point in enumerate(grid):
        want_value, want_grads = evaluate(expr, **dict(zip(names, point)))
        assert same(value[row], want_value, rel=1e-14), (op, point)
        for n in names:
            assert same(gradient[n][row], want_grads[n], rel=1e-14), (op, point, n)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_rows_match_single_point_grad(run_cli, tmp_path):
    expr = 'h(t) = t^2 * sin(t); h(x) / (1 + y^2) + max(x, y)'
    points = [(0.5, -1.0), (2.0, 2.0), (-3.0, 0.25), (0.0, 0.0)]
    path = write(tmp_path, 'p.csv', 'x,y\n' + ''.join(f'{x},{y}\n' for x, y in points))
    code, out, err = run_cli('grad', expr, '--points', path)
    assert code == 0 and err == ''
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [list(r) for r in rows][0] == ['x', 'y', 'value', 'd_x', 'd_y']
    for row, (x, y) in zip(rows, points):
        value, grads = evaluate(expr, x=x, y=y)
        assert float(row['value']) == value
        assert float(row['d_x']) == grads['x'] and float(row['d_y']) == grads['y']


def test_input_columns_are_echoed_in_order(run_cli, tmp_path):
    path = write(tmp_path, 'p.csv', 'label,x\n"a, quoted",1\nb,2\nc,3\n')
    out = run_cli('eval', 'x*10', '--points', path)[1]
    assert out == 'label,x,value\n"a, quoted",1,10.0\nb,2,20.0\nc,3,30.0\n'


def test_tsv_in_tsv_out(run_cli, tmp_path):
    path = write(tmp_path, 'p.tsv', 'x\ty\n1\t2\n')
    assert run_cli('grad', 'x*y', '--points', path)[1] == 'x\ty\tvalue\td_x\td_y\n1\t2\t2.0\t2.0\t1.0\n'


def test_jsonl_in_jsonl_out_with_defaults_and_bindings(run_cli, tmp_path):
    path = write(tmp_path, 'p.jsonl', '{"x": 1}\n\n{"x": 2, "y": 7}\n')
    out = run_cli('grad', 'input y = 3\nx*y*z', 'z=10', '--points', path)[1]
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows == [{'x': 1, 'value': 30.0, 'd_x': 30.0, 'd_y': 10.0, 'd_z': 3.0},
                    {'x': 2, 'y': 7, 'value': 140.0, 'd_x': 70.0, 'd_y': 20.0, 'd_z': 14.0}]


def test_empty_cells_take_defaults(run_cli, tmp_path):
    path = write(tmp_path, 'p.csv', 'x,y\n1,\n3,4\n')
    out = run_cli('eval', 'x*y', 'y=100', '--points', path)[1]
    assert out == 'x,y,value\n1,,100.0\n3,4,12.0\n'


@pytest.mark.parametrize('name, text, message', [
    ('p.csv', 'x,y\n1,2\n3\n', 'line 3: 1 fields where the header has 2'),
    ('p.csv', 'x,y\n1,2\n\n3,oops\n', "line 4: 'y' is 'oops', not a number"),
    ('p.csv', 'x,y\n1,2\n3,\n', "line 3: no value for 'y'"),
    ('p.csv', 'x\n1\n', "no value for 'y': the points have no such column"),
    ('p.csv', 'x,y,value\n1,2,3\n', "already have a column 'value'"),
    ('p.csv', '', 'empty'),
    ('p.jsonl', '{"x": 1, "y": 2}\n{"x": "1.5", "y": 2}\n', 'line 2: \'x\' is "1.5", not a number'),
    ('p.jsonl', '{"x": 1, "y": 2}\n[1, 2]\n', 'line 2: expected a JSON object'),
    ('p.jsonl', '{"x": 1, "y": 2}\n{"x": 1,\n', 'line 2: not JSON'),
    # Two bad rows: the first in the file is named, whatever is wrong with either.
    ('p.csv', 'x,y\n1,2\nabc,5\n6,7,8\n', "line 3: 'x' is 'abc', not a number"),
    ('p.csv', 'x,y\n1,2\n5,abc\nzz,5\n', "line 3: 'y' is 'abc', not a number"),
    ('p.jsonl', '{"x": 1, "y": "q"}\n{"x": "z", "y": 2}\n', 'line 1: \'y\' is "q", not a number'),
])
def test_bad_rows_name_their_line_and_print_nothing(run_cli, tmp_path, name, text, message):
    code, out, err = run_cli('grad', 'x*y', '--points', write(tmp_path, name, text))
    assert (code, out) == (2, '') and message in err and len(err.splitlines()) == 1


def test_csv_and_json_round_trip_to_the_same_numbers(run_cli, tmp_path):
    xs = [0.1, 1 / 3, 2 ** -1074, 1e300, -7.25, 0.0]
    path = write(tmp_path, 'p.csv', 'x\n' + ''.join(f'{x!r}\n' for x in xs))
    expr = 'exp(sin(x)) / 3'
    as_csv = list(csv.DictReader(io.StringIO(run_cli('grad', expr, '--points', path)[1])))
    as_json = json.loads(run_cli('grad', expr, '--points', path, '--format', 'json')[1])
    for x, row, obj in zip(xs, as_csv, as_json):
        value, grads = evaluate(expr, x=x)
        assert float(row['value']) == value == obj['value']
        assert float(row['d_x']) == grads['x'] == obj['d_x']


def test_non_finite_values_in_rows(run_cli, tmp_path):
    path = write(tmp_path, 'p.jsonl', '{"x": 0}\n{"x": "inf"}\n{"x": 1}\n')
    code, out, err = run_cli('grad', 'log(x)', '--points', path)
    assert [json.loads(line)['value'] for line in out.splitlines()] == ['-inf', 'inf', 0.0]
    assert err == ('adgrad: warning: x (node 0) is not finite in 1 of 3 rows, '
                   'the first node where that happens\n')
    assert run_cli('grad', 'log(x)', '--points', path, '--strict')[0] == 1


def test_single_point_row_formats(run_cli):
    assert run_cli('grad', 'x*y', 'x=2', 'y=3', '--format', 'csv')[1] == \
        'x,y,value,d_x,d_y\n2.0,3.0,6.0,3.0,2.0\n'
    assert run_cli('eval', 'x*y', 'x=2', 'y=3', '--format', 'tsv')[1] == 'x\ty\tvalue\n2.0\t3.0\t6.0\n'
    assert json.loads(run_cli('grad', 'x*y', 'x=2', 'y=3', '--format', 'jsonl')[1]) == \
        {'x': 2.0, 'y': 3.0, 'value': 6.0, 'd_x': 3.0, 'd_y': 2.0}


def _script():
    found = shutil.which('adgrad', path=os.path.dirname(sys.executable))
    return [found] if found else [sys.executable, '-m', 'autodiff_cli']


def test_broken_pipe_exits_quietly(tmp_path):
    path = write(tmp_path, 'p.csv', 'x\n' + '\n'.join(str(i) for i in range(200_000)) + '\n')
    pipeline = subprocess.Popen(_script() + ['grad', 'x^2', '--points', path],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = pipeline.stdout.readline()
    pipeline.stdout.close()  # the reader goes away, as `| head -1` does
    pipeline.wait(timeout=60)
    assert first == b'x,value,d_x\n'
    assert pipeline.returncode == 0 and pipeline.stderr.read() == b''


@pytest.mark.parametrize('shell', ['bash', 'zsh', 'fish'])
def test_completion_scripts(run_cli, shell):
    code, out, _ = run_cli('completion', shell)
    assert code == 0 and 'adgrad' in out and '--points' in out and 'grad' in out
    if shell == 'bash' and shutil.which('bash'):
        assert subprocess.run(['bash', '-n'], input=out, text=True).returncode == 0


def test_ctrl_c_exits_130_without_a_traceback():
    import signal
    import time
    waiting = subprocess.Popen(_script() + ['eval', '-', 'x=1'], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(1.5)  # past start-up: now blocked reading the program from stdin
    waiting.send_signal(signal.SIGINT)
    _, err = waiting.communicate(timeout=30)
    assert waiting.returncode == 130 and b'Traceback' not in err


@pytest.mark.parametrize('block_bytes', [None, 1])   # 1: the fewest rows a block takes, 64
def test_many_blocks_give_the_same_rows_and_count_non_finite_rows(monkeypatch, block_bytes):
    import numpy as np

    from autodiff_cli import backward, forward
    from autodiff_cli.core import batch
    if block_bytes is not None:   # as a graph of many nodes has them
        monkeypatch.setattr(batch, '_BLOCK_BYTES', block_bytes)
    graph = lower('log(x) * y + sqrt(y)')
    rows = 100_000  # several of run_batch's blocks
    x, y = np.linspace(-1, 5, rows), np.linspace(0, 2, rows)
    value, gradient, bad = run_batch(graph, {'x': x, 'y': y}, rows, ['x', 'y'])
    for i in (0, 63, 64, 16_000, 40_000, 65_536, rows - 1):
        values = forward(graph, {'x': x[i], 'y': y[i]})
        grads = backward(graph, values)
        assert same(value[i], values[graph.output])
        assert same(gradient['x'][i], grads[graph.inputs['x']])
        assert same(gradient['y'][i], grads[graph.inputs['y']])
    assert bad == (graph.inputs['x'] + 1, int((x <= 0).sum()))


@pytest.mark.parametrize('block_bytes', [None, 1])
def test_the_node_to_blame_is_sought_only_in_rows_that_are_not_finite(monkeypatch, block_bytes):
    """Row 0: 1/x is inf, which min() masks (a finite value). Rows 100 and
    101: log(y) is -inf, and so is the value. The report names log(y) in 2
    rows, whether or not row 0 shares their block."""
    import numpy as np

    from autodiff_cli.core import batch
    if block_bytes is not None:
        monkeypatch.setattr(batch, '_BLOCK_BYTES', block_bytes)   # blocks of 64 rows
    graph = lower('min(1/x, 5) + log(y)')
    x, y = np.ones(200), np.ones(200)
    x[0], y[100:102] = 0.0, 0.0
    value, _, bad = run_batch(graph, {'x': x, 'y': y}, 200)
    log_y = next(i for i, node in enumerate(graph.nodes) if node.op == 'log')
    assert bad == (log_y, 2) and np.isfinite(value[0]) and np.isinf(value[100])


def test_every_row_is_as_wide_as_the_header(run_cli, tmp_path):
    # The totals agree (3 commas for 3 rows of 2 columns) but two rows do not.
    path = write(tmp_path, 'p.csv', 'x,y\n1,2,3\n4\n5,6\n')
    code, out, err = run_cli('eval', 'x', '--points', path)
    assert (code, out) == (2, '') and 'line 2: 3 fields where the header has 2' in err


def test_json_lines_cells_come_back_as_they_were(run_cli, tmp_path):
    path = write(tmp_path, 'p.jsonl', '{"id": "007", "ok": true, "tags": [1], "x": 2}\n')
    assert json.loads(run_cli('eval', 'x*2', '--points', path)[1]) == \
        {'id': '007', 'ok': True, 'tags': [1], 'x': 2, 'value': 4.0}
    assert run_cli('eval', 'x*2', '--points', path, '--format', 'csv')[1] == \
        'id,ok,tags,x,value\n007,true,[1],2,4.0\n'


def test_a_json_integer_beyond_float64(run_cli, tmp_path):
    path = write(tmp_path, 'p.jsonl', '{"x": 1}\n{"x": ' + '9' * 400 + '}\n')
    code, out, err = run_cli('eval', 'x', '--points', path)
    assert (code, out) == (2, '') and 'line 2:' in err and 'too large for a float64' in err


def test_every_row_names_an_array_form_that_exists():
    from autodiff_cli.core.batch import _arrays
    from autodiff_cli.core.primitives import PRIMITIVES
    _, arrays = _arrays()
    assert all(callable(getattr(arrays, name)) for name in PRIMITIVES)


def test_header_bom_and_duplicate_columns(run_cli, tmp_path):
    path = tmp_path / 'bom.csv'
    path.write_bytes('\ufeffx,y\n2,3\n'.encode())
    assert run_cli('eval', 'x*y', '--points', str(path))[1] == 'x,y,value\n2,3,6.0\n'
    code, out, err = run_cli('eval', 'x', '--points', write(tmp_path, 'd.csv', 'x,x\n1,2\n'))
    assert (code, out) == (2, '') and "the column 'x' appears twice" in err


def test_program_and_points_cannot_both_be_stdin(run_cli, monkeypatch):
    monkeypatch.setattr(sys, 'stdin', io.StringIO('x\n1\n'))
    code, _, err = run_cli('grad', '-', '--points', '-')
    assert code == 2 and 'cannot both come from standard input' in err


def test_huge_json_integers_are_echoed(run_cli, tmp_path):
    path = write(tmp_path, 'p.jsonl', '{"id": 12345678901234567890123, "x": 1}\n')
    assert json.loads(run_cli('eval', 'x', '--points', path)[1]) == \
        {'id': 1.2345678901234568e22, 'x': 1, 'value': 1.0}


def test_tanh_near_saturation_is_the_single_point_s_bit_for_bit():
    """np.tanh is an ulp from C's at about a point in three, and tanh' turns
    that ulp into 1e-7 relative near saturation (found by the fuzzer)."""
    np = pytest.importorskip('numpy')
    from autodiff_cli import backward, forward, lower
    from autodiff_cli.core.batch import run_batch
    graph = lower('tanh(x*10)')
    xs = np.linspace(-3, 3, 2001)
    value, gradient, _ = run_batch(graph, {'x': xs}, len(xs), ['x'])
    for k, x in enumerate(xs.tolist()):
        values = forward(graph, {'x': x})
        assert value[k] == values[graph.output]
        assert gradient['x'][k] == backward(graph, values)[graph.inputs['x']], x


@pytest.mark.parametrize('source', ['x ^ 0.5', 'x ^ 2', 'x ^ -1', 'x^-0.5', '2 ^ x', 'x ^ x'])
def test_powers_with_a_constant_exponent_are_c_s_pow_in_a_batch_too(source):
    """np.power with a scalar 0.5 takes sqrt's path: (-inf)^0.5 was nan and
    (-0.0)^0.5 was -0.0 in a batch, inf and 0.0 at a single point (found by
    the fuzzer's 100,000-case campaign)."""
    np = pytest.importorskip('numpy')
    from autodiff_cli import backward, forward, lower
    from autodiff_cli.core.batch import run_batch
    graph = lower(source)
    xs = [-math.inf, -0.0, 0.0, -2.0, 3.0, math.inf, math.nan, -1e-300]
    value, gradient, _ = run_batch(graph, {'x': np.array(xs)}, len(xs), ['x'])
    for k, x in enumerate(xs):
        values = forward(graph, {'x': x})
        single = (values[graph.output], backward(graph, values)[graph.inputs['x']])
        for got, want in zip((value[k], gradient['x'][k]), single):
            assert (got != got and want != want) or (
                got == want and math.copysign(1, got) == math.copysign(1, want)), (source, x)


def test_a_gradient_not_finite_where_every_value_is_is_reported(run_cli, tmp_path):
    """sqrt(x) at 0: every node's value is finite, d_x is inf. As at a single
    point (`the gradient ∂f/∂x is inf`), the batch says so, and --strict
    stops it before any output."""
    import numpy as np
    graph = lower('sqrt(x)*y')
    _, gradient, bad = run_batch(graph, {'x': np.array([1.0, 0.0, 4.0, 0.0]), 'y': 2.0}, 4,
                                 ['y', 'x'])
    assert np.isinf(gradient['x'][1]) and np.isfinite(gradient['y']).all()
    assert bad == (len(graph.nodes) + 1, 2)   # wrt[1], 'x', in 2 rows
    path = write(tmp_path, 'p.csv', 'x\n1\n0\n4\n')
    code, out, err = run_cli('grad', 'sqrt(x)', '--points', path)
    assert code == 0 and out.splitlines()[2] == '0,0.0,inf'
    assert err == 'adgrad: warning: the gradient ∂f/∂x is not finite in 1 of 3 rows\n'
    assert run_cli('grad', 'sqrt(x)', '--points', path, '--strict')[:2] == (1, '')
    assert run_cli('eval', 'sqrt(x)', '--points', path)[2] == ''   # no gradient, nothing to say


def test_a_sum_that_overflows_blames_nothing_when_every_row_is_finite():
    """Every value is 1e307, so their sum overflows and the rows are searched;
    none is non-finite, so nothing is reported, not even exp(1000), a
    constant that the output masks (it used to say "in 0 of 100 rows")."""
    import numpy as np
    graph = lower('1e307*x + exp(-exp(1000))')
    value, gradient, bad = run_batch(graph, {'x': np.ones(100)}, 100, ['x'])
    assert bad is None and (value == 1e307).all() and (gradient['x'] == 1e307).all()
