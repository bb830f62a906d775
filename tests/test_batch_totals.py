"""--points FILE --sum and --mean: one row of totals, against references
computed apart (math.fsum and exact fractions over the whole column,
hand-derived gradients), in every format, read once in bounded memory."""

import csv
import io
import json
import math
import os
import subprocess
import sys
from fractions import Fraction

import pytest

from autodiff_cli.table.totals import SLICE, ExactSum, Totals

from tests.helpers import run_main

EXPR = 'x*y + log(x)'   # by hand: d_x = y + 1/x, d_y = x


def _file(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _points(n, seed=3):
    import random
    rng = random.Random(seed)
    return [(rng.uniform(0.1, 5), rng.gauss(0, 3)) for _ in range(n)]


def _by_hand(points):
    """The value and the gradients of EXPR at each point, as exact sums (fsum)."""
    columns = {'value': [x * y + math.log(x) for x, y in points],
               'd_x': [y + 1 / x for x, y in points], 'd_y': [x for x, _ in points]}
    return {k: math.fsum(v) for k, v in columns.items()}


def _close(a, b, ulps=4):
    return abs(a - b) <= ulps * math.ulp(max(abs(a), abs(b)))


# ---- the row out, in every format ----

@pytest.mark.parametrize('how', ['sum', 'mean'])
def test_the_row_agrees_with_sums_by_hand(tmp_path, how):
    points = _points(10_000)
    path = _file(tmp_path, 'p.csv', 'label,x,y\n' + ''.join(
        f'r{i},{x!r},{y!r}\n' for i, (x, y) in enumerate(points)))
    run = run_main(['grad', EXPR, '--points', path, f'--{how}'])
    assert run.code == 0 and run.err == ''
    (row,) = list(csv.DictReader(io.StringIO(run.out)))
    assert list(row) == ['rows', 'value', 'd_x', 'd_y'] and row['rows'] == '10000'
    for name, total in _by_hand(points).items():
        want = total / len(points) if how == 'mean' else total
        assert _close(float(row[name]), want), (name, row[name], want)


def test_every_format_writes_the_one_row(tmp_path):
    path = _file(tmp_path, 'p.csv', 'x,y,label\n1,2,a\n3,4,b\n')
    # by hand: value 2 + 0 and 12 + log 3; d_x 2 + 1 and 4 + 1/3; d_y 1 and 3
    value, d_x, d_y = 14 + math.log(3), 3 + 4 + 1 / 3, 4.0
    outs = {fmt: run_main(['grad', EXPR, '--points', path, '--sum', '--format', fmt])
            for fmt in ('csv', 'tsv', 'plain', 'json', 'jsonl', 'table')}
    assert all(run.code == 0 and run.err == '' for run in outs.values())
    line = f'2,{value!r},{d_x!r},{d_y!r}\n'
    assert outs['csv'].out == 'rows,value,d_x,d_y\n' + line
    assert outs['tsv'].out == outs['plain'].out == ('rows\tvalue\td_x\td_y\n'
                                                    + line.replace(',', '\t'))
    assert json.loads(outs['json'].out) == {'rows': 2, 'value': value, 'd_x': d_x, 'd_y': d_y}
    assert outs['jsonl'].out == outs['json'].out and outs['json'].out.count('\n') == 1
    assert all(word in outs['table'].out for word in ('rows', 'd_y', repr(value)))
    evaluated = run_main(['eval', EXPR, '--points', path, '--mean', '--json'])
    assert json.loads(evaluated.out) == {'rows': 2, 'value': value / 2}


def test_output_files_by_their_ending(tmp_path):
    pq = pytest.importorskip('pyarrow.parquet')
    path = _file(tmp_path, 'p.csv', 'x,y\n1,2\n3,4\n')
    out = tmp_path / 'm.parquet'
    assert run_main(['grad', EXPR, '--points', path, '--mean', '-o', str(out)]).code == 0
    table = pq.read_table(out)
    assert str(table.schema.field('rows').type) == 'int64'
    assert table.to_pylist() == [{'rows': 2, 'value': (14 + math.log(3)) / 2,
                                  'd_x': (3 + 4 + 1 / 3) / 2, 'd_y': 2.0}]
    jsonl = tmp_path / 'm.jsonl'
    run = run_main(['grad', EXPR, '--points', path, '--sum', '-o', str(jsonl)])
    assert run.code == 0 and run.out == '' and json.loads(jsonl.read_text())['rows'] == 2


def test_a_points_file_may_have_the_output_columns(tmp_path):
    """No input column is written, so 'value' or 'rows' among them repeats nothing."""
    path = _file(tmp_path, 'p.csv', 'rows,value,x\n7,1,2\n8,1,3\n')
    run = run_main(['eval', '2*x', '--points', path, '--sum'])
    assert run.code == 0 and run.out == 'rows,value\n2,10.0\n'


def test_json_lines_from_standard_input():
    lines = ''.join(json.dumps({'x': x, 'y': y}) + '\n' for x, y in _points(300))
    run = run_main(['grad', EXPR, '--points', '-', '--mean'], stdin=lines.encode())
    assert run.code == 0 and run.err == ''
    got = json.loads(run.out)
    want = _by_hand(_points(300))
    assert got['rows'] == 300
    assert all(_close(got[k], want[k] / 300) for k in want)


# ---- accuracy ----

def test_sums_do_not_drift_where_a_naive_sum_does(tmp_path):
    """0.1 a hundred thousand times, then random numbers: the sum is math.fsum's
    of the whole column (the exact sum, rounded once); a running sum is thousands
    of ulps off."""
    import random
    rng = random.Random(11)
    xs = [0.1] * 100_000 + [rng.uniform(0, 1) for _ in range(50_000)]
    path = _file(tmp_path, 'x.csv', 'x\n' + ''.join(f'{x!r}\n' for x in xs))
    exact = math.fsum(xs)
    naive = 0.0
    for x in xs:
        naive += x
    assert abs(naive - exact) > 1000 * math.ulp(exact)   # the data makes a running sum drift
    run = run_main(['grad', 'x^2 + x', '--points', path, '--sum', '--format', 'json'])
    got = json.loads(run.out)
    assert got['value'] == math.fsum(x * x + x for x in xs)
    assert got['d_x'] == math.fsum(2 * x + 1 for x in xs)
    mean = json.loads(run_main(['eval', 'x', '--points', path, '--mean', '--json']).out)
    assert mean['value'] == exact / len(xs)


def test_the_total_is_exact_over_many_rows_in_any_chunks():
    """10^7 rows of 0.1 in uneven chunks (some longer than a SLICE): exactly
    10^7 times the float 0.1, rounded once (Fraction)."""
    import numpy as np
    rows, sizes = 10_000_000, [SLICE + 7, 1, 4095, 70001, 3]
    totals, done, k, naive = Totals(1), 0, 0, 0.0
    while done < rows:
        n = min(sizes[k % len(sizes)], rows - done)
        totals.write(range(n), [np.full(n, 0.1)])
        naive += float(np.sum(np.full(n, 0.1)))
        done, k = done + n, k + 1
    totals.close()
    (got,) = totals.result('sum')
    assert totals.rows == rows and got == float(Fraction(0.1) * rows)
    assert naive != got   # the chunks' pairwise sums, added one by one, drift


def test_an_exact_sum_keeps_every_bit():
    import random
    rng = random.Random(2)
    xs = [rng.uniform(-1, 1) * 10.0 ** rng.randint(-300, 300) for _ in range(5000)]
    xs += [1e300, 1.0, -1e300, 1e-300]
    total = ExactSum()
    for x in xs:
        total.add(x)
    assert total.total() == float(sum(map(Fraction, xs)))
    import numpy as np
    from autodiff_cli.table.totals import exact_terms
    column = np.array(xs[:-4] + [5e-324, -2.5e-320, 1e-310, -0.0, 1.5e308, -1.5e308])
    np.random.default_rng(3).shuffle(column)
    terms = exact_terms(column)
    assert len(terms) < 2 * 2048 and math.fsum(terms) == float(sum(map(Fraction, column.tolist())))
    opposite = ExactSum()
    for x in xs:
        opposite.add(-x)
    opposite.add(0.5)
    merged = ExactSum()
    merged.merge(total.partials, total.special)    # as a Dask partition's sums are merged
    merged.merge(opposite.partials, opposite.special)
    assert merged.total() == 0.5
    big = ExactSum()
    for x in (sys.float_info.max, sys.float_info.max, -sys.float_info.max):
        big.add(x)
    assert big.total() == math.inf   # past float64's range on the way: inf, as documented
    special = ExactSum()
    for x in (1.0, math.inf, 2.0):
        special.add(x)
    assert special.total() == math.inf
    special.add(-math.inf)
    assert math.isnan(special.total())


def test_chunks_and_pipes_give_the_same_bytes(tmp_path, monkeypatch):
    """Pairs of 1e16-sized numbers that nearly cancel, on which a pairwise sum
    is far off and any two groupings of the rows differ: the exact mean, from
    a file, a pipe, tiny chunks and the Python reader alike."""
    import random
    rng = random.Random(8)
    xs = []
    for _ in range(10_000):
        big = rng.uniform(0, 1e16)
        xs += [big, rng.uniform(0, 1) - big]
    ys = [rng.uniform(1, 2) for _ in xs]
    text = 'x,y\n' + ''.join(f'{x!r},{y!r}\n' for x, y in zip(xs, ys))
    path = _file(tmp_path, 'p.csv', text)
    whole = run_main(['grad', 'x*y', '--points', path, '--mean'])
    piped = run_main(['grad', 'x*y', '--points', '-', '--mean'], stdin=text.encode())
    from autodiff_cli.table import sources
    monkeypatch.setattr(sources, 'CHUNK_ROWS', 1000)
    monkeypatch.setattr(sources, '_READ_BYTES', 5000)
    chunked = run_main(['grad', 'x*y', '--points', path, '--mean'])
    monkeypatch.setattr(sources, '_ARROW_BYTES', 1 << 40)   # the pure-Python reader
    pure = run_main(['grad', 'x*y', '--points', path, '--mean'])
    assert whole.code == 0 and whole.out == piped.out == chunked.out == pure.out
    products = [Fraction(x * y) for x, y in zip(xs, ys)]   # each row's value, as it rounds
    want = [len(xs), float(sum(products)) / len(xs), math.fsum(ys) / len(xs),
            math.fsum(xs) / len(xs)]
    assert whole.out == 'rows,value,d_x,d_y\n' + ','.join(map(repr, want)) + '\n'


# ---- rows that are not finite, and none ----

def test_a_non_finite_row_makes_the_total_so_and_is_reported(tmp_path):
    path = _file(tmp_path, 'p.csv', 'x,y\n1,2\n0,1\n-1,1\n3,4\n')
    run = run_main(['grad', EXPR, '--points', path, '--sum'])
    assert run.code == 0
    (row,) = list(csv.DictReader(io.StringIO(run.out)))
    # log(0) = -inf in one row and nan in another: the value's sum is nan; d_x has 1/0 = inf
    assert row['rows'] == '4' and row['value'] == 'nan' and row['d_x'] == 'inf'
    assert row['d_y'] == '3.0'
    minus = run_main(['eval', 'log(x)', '--points', '-', '--sum'], stdin=b'x\n1\n0\n2\n')
    assert minus.out == 'rows,value\n3,-inf\n'
    assert run.err == ('adgrad: warning: log(x) (node 3) is not finite in 2 of 4 rows, '
                       'the first node where that happens\n')
    strict = run_main(['grad', EXPR, '--points', path, '--mean', '--strict'])
    assert strict.code == 1 and strict.out == '' and 'not finite in 2 of 4 rows' in strict.err


def test_no_rows_and_an_overflowing_sum(tmp_path):
    empty = _file(tmp_path, 'e.csv', 'x\n')
    assert run_main(['eval', 'x', '--points', empty, '--sum']).out == 'rows,value\n0,0.0\n'
    run = run_main(['eval', 'x', '--points', empty, '--mean'])
    assert run.code == 0 and run.out == 'rows,value\n0,nan\n'
    assert run.err == 'adgrad: warning: the points have no rows: their mean is nan\n'
    assert run_main(['eval', 'x', '--points', empty, '--mean', '--strict']).code == 1
    big = _file(tmp_path, 'b.csv', 'x\n1e308\n1e308\n')
    run = run_main(['eval', 'x', '--points', big, '--mean'])
    assert run.out == 'rows,value\n2,inf\n'
    assert run.err == 'adgrad: warning: the sum of value over 2 rows overflows float64: inf\n'
    strict = run_main(['eval', 'x', '--points', big, '--sum', '--strict'])
    assert strict.code == 1 and strict.out == ''


# ---- refusals: one line, exit 2, nothing written ----

@pytest.mark.parametrize('argv, message', [
    (['grad', 'x', 'x=1', '--sum'], '--sum goes with --points FILE'),
    (['eval', 'x', 'x=1', '--mean', '-o', 'never.csv'], '--mean goes with --points FILE'),
    (['grad', 'x', '--points', 'p.csv', '--sum', '--mean'],
     'argument --mean: not allowed with argument --sum'),
    (['grad', 'x', '--points', 'p.csv', '--mean', '--nodes'], '--nodes shows one point'),
    (['hessian', 'x^2', '--points', 'p.csv', '--sum'], 'unrecognized arguments: --sum'),
    (['grad', 'mean(w*x)', '--data', 'p.csv', 'w=1', '--mean'],
     '--mean goes with --points FILE: the mean over its rows (over --data, write mean(...)'),
    (['grad', 'w*x', '--points', 'p.csv', 'w=[1,2]', '--sum'], 'grad needs a scalar output'),
])
def test_refusals(tmp_path, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / 'p.csv').write_text('x\n1\n')
    run = run_main(argv)
    assert run.code == 2 and run.out == '' and message in run.err
    assert len(run.err.splitlines()) == 1 and not (tmp_path / 'never.csv').exists()


def test_a_bad_row_leaves_nothing(tmp_path):
    path = _file(tmp_path, 'p.csv', 'x\n1\n2\noops\n')
    out = tmp_path / 'out.csv'
    run = run_main(['eval', 'x', '--points', path, '--sum', '-o', str(out)])
    assert run.code == 2 and run.err.endswith("line 4: 'x' is 'oops', not a number\n")
    assert not out.exists() and os.listdir(tmp_path) == ['p.csv']
    run = run_main(['eval', 'x', '--points', path, '--sum'])
    assert run.code == 2 and run.out == ''


# ---- read once, in bounded memory ----

def test_a_pipe_is_read_once_with_no_copy(monkeypatch, capsys):
    """Standard input that cannot be sought back is not copied to a spool."""
    import tempfile
    import threading

    from autodiff_cli.cli.main import main

    def refused(*args, **kwargs):
        raise AssertionError('a copy of the points was made')
    monkeypatch.setattr(tempfile, 'TemporaryFile', refused)
    read, write = os.pipe()
    feeder = threading.Thread(target=lambda: (os.write(write, b'x\n1\n2\n'), os.close(write)))
    feeder.start()
    with open(read, 'rb') as pipe:
        monkeypatch.setattr(sys, 'stdin', io.TextIOWrapper(pipe))
        code = main(['eval', '2*x', '--points', '-', '--sum'])
    feeder.join()
    assert code == 0 and capsys.readouterr().out == 'rows,value\n2,6.0\n'


def _peak_mb(rows):
    """adgrad --mean's peak resident set, `rows` generated rows through a pipe."""
    generate = ('import sys\nw = sys.stdout.buffer.write\nw(b"x,y\\n")\n'
                f'block = b"".join(b"%d.25,-%d.5\\n" % (i, i) for i in range(10000))\n'
                f'for _ in range({rows} // 10000): w(block)\n')
    producer = subprocess.Popen([sys.executable, '-c', generate], stdout=subprocess.PIPE)
    consumer = subprocess.Popen([sys.executable, '-m', 'autodiff_cli', 'grad', EXPR, '--points',
                                 '-', '--mean'], stdin=producer.stdout, stdout=subprocess.PIPE)
    producer.stdout.close()
    out = consumer.stdout.read()
    _, status, usage = os.wait4(consumer.pid, 0)
    assert producer.wait() == 0 and os.waitstatus_to_exitcode(status) == 0
    assert out.startswith(b'rows,value,d_x,d_y\n%d,' % rows)
    return usage.ru_maxrss / 1024


def test_memory_does_not_grow_with_the_rows():
    small, large = _peak_mb(100_000), _peak_mb(2_000_000)
    assert large < small + 25, (small, large)
