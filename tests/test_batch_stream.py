"""Batches that stream: hostile points files (issue 12), chunk boundaries,
all-or-nothing output (-o FILE, stdout after a first pass), Parquet."""

import csv
import io
import json
import os
import signal
import sys

import pytest

from tests.helpers import evaluate, run_main, same


def _file(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data.encode('utf-8', 'surrogatepass') if isinstance(data, str) else data)
    return str(path)


def _csv_rows(text):
    return list(csv.reader(io.StringIO(text, newline='')))


DEEP = '{"x": ' + '[' * 100_000 + ']' * 100_000 + '}\n'

# name, contents, extra arguments, exit code, what stderr says (or stdout's CSV rows on exit 0)
HOSTILE = [
    ('quoted new line, two rows', 'p.csv', 'label,x\n"a\nb",1\n"c",2\n', [], 0,
     [['label', 'x', 'value'], ['a\nb', '1', '2.0'], ['c', '2', '4.0']]),
    ('quoted new line, one row', 'p.csv', 'label,x\n"a\r\nb",1\n', [], 0,
     [['label', 'x', 'value'], ['a\r\nb', '1', '2.0']]),
    ('U+2028 and NEL inside a cell', 'p.csv', 'label,x\na\u2028b\x85c\x0bd,3\n', [], 0,
     [['label', 'x', 'value'], ['a\u2028b\x85c\x0bd', '3', '6.0']]),
    ('a field of 200,000 characters', 'p.csv', 'label,x\n"' + 'a' * 200_000 + '",1\n', [], 0,
     [['label', 'x', 'value'], ['a' * 200_000, '1', '2.0']]),
    ('an unquoted long field', 'p.csv', 'label,x\n' + 'b' * 200_000 + ',1\n', [], 0,
     [['label', 'x', 'value'], ['b' * 200_000, '1', '2.0']]),
    ('CR line breaks', 'p.csv', 'x,y\r1,2\r3,4\r', [], 0,
     [['x', 'y', 'value'], ['1', '2', '2.0'], ['3', '4', '6.0']]),
    ('an integer of 5,000 digits', 'p.jsonl', '{"x": 1' + '0' * 5000 + '}\n', [], 2,
     'line 1: not JSON that adgrad reads (an integer of too many digits)'),
    ('arrays nested 100,000 deep', 'p.jsonl', DEEP, [], 2, 'line 1: not JSON that adgrad reads'),
    ('a bare array of a huge integer', 'p.jsonl', '[100000000000000000000000]\n', [], 2,
     'line 1: expected a JSON object'),
    ('a bare array, not named .jsonl', 'p.txt', '[100000000000000000000000]\n', [], 2,
     "no value for 'x'"),
    ('a lone surrogate, --format csv', 'p.jsonl', '{"x": 1, "s": "ok"}\n{"x": 1, "s": "\\ud800"}\n',
     ['--format', 'csv'], 2, 'line 2: not JSON text (a lone surrogate'),
    ('a lone surrogate in a key', 'p.jsonl', '{"x": 1, "\\udfff": 2}\n', [], 2, 'line 1'),
    ('NaN', 'p.jsonl', '{"x": NaN}\n', [], 2, 'line 1: not JSON that adgrad reads (NaN'),
    ('Infinity', 'p.jsonl', '{"x": 1}\n{"x": -Infinity}\n', [], 2, 'line 2: not JSON'),
    ('true for a number', 'p.jsonl', '{"x": true}\n', [], 2, "line 1: 'x' is true, not a number"),
    ('null with no default', 'p.jsonl', '{"x": null}\n', [], 2, "line 1: no value for 'x'"),
    ('a string for a number', 'p.jsonl', '{"x": "1"}\n', [], 2, """line 1: 'x' is "1", not a number"""),
    ('U+2028 inside a JSON string', 'p.jsonl', '{"x": 1, "s": "a\u2028b"}\n', ['--format', 'csv'],
     0, [['x', 's', 'value'], ['1', 'a\u2028b', '2.0']]),
    ('bad UTF-8', 'p.csv', b'x\n1\n\xff\n', [], 2, 'p.csv: line 3: byte 4 is not UTF-8 text'),
    ('bad UTF-8 in the header', 'p.csv', b'x\xff\n1\n', [], 2, 'line 1: byte 1 is not UTF-8'),
    ('bad UTF-8 after CRLF lines', 'p.csv', b'x\r\n1\r\n2\r\n\xff\r\n', [], 2,
     'line 4: byte 9 is not UTF-8'),
    ('bad UTF-8 in a quoted field of two lines', 'p.csv', b'x,l\n1,"a\nb\xff"\n', [], 2,
     'line 3: byte 10 is not UTF-8'),
    ('bad UTF-8 past the first megabyte', 'p.csv', b'x\n' + b'1\n' * 600_000 + b'\xe9\n', [], 2,
     'line 600002: byte 1200002 is not UTF-8'),
    ('bad UTF-8 in JSON Lines', 'p.jsonl', b'{"x": 1}\n{"x": "\xff"}\n', [], 2,
     'line 2: byte 16 is not UTF-8'),
    ('bad UTF-8 in JSON Lines after a CR', 'p.jsonl', b'{"x":1,\r"y":2}\n{"x":"\xff"}\n', [], 2,
     'line 2: byte 21 is not UTF-8'),
    ('bad UTF-8 after CR line breaks', 'p.csv', b'x\r1\r\xff\r', [], 2, 'line 3: byte 4 is not UTF-8'),
    ('a quote left open', 'p.csv', 'label,x\n"open,1\n2,3\n', [], 2,
     'line 2: a quoted field opens here and is never closed'),
    ('a row too short after many', 'p.csv', 'x,y\n' + '1,2\n' * 5000 + '3\n', [], 2,
     'line 5002: 1 fields where the header has 2'),
]


@pytest.mark.parametrize('name, file, data, extra, code, expected', HOSTILE,
                         ids=[case[0] for case in HOSTILE])
def test_hostile_points(tmp_path, name, file, data, extra, code, expected):
    path = _file(tmp_path, file, data)
    target = _file(tmp_path, 'out.csv', 'untouched\n')
    for argv in (['eval', '2*x', '--points', path, *extra],
                 ['eval', '2*x', '--points', path, '-o', target, *extra]):
        run = run_main(argv)
        assert run.code == code, (argv, run.err)
        if code == 2:
            assert run.out == '' and expected in run.err and len(run.err.splitlines()) == 1
            assert open(target).read() == 'untouched\n'
            assert sorted(os.listdir(tmp_path)) == sorted(['out.csv', file])  # no temp file left
        elif '-o' in argv:
            assert run.out == '' and _csv_rows(open(target, newline='').read()) == expected
        else:
            assert _csv_rows(run.out) == expected


def test_a_binding_the_points_also_have_gets_a_warning(tmp_path):
    path = _file(tmp_path, 'p.csv', 'x,y\n1,2\n3,\n')
    run = run_main(['eval', 'x*y', 'y=10', '--points', path])
    assert run.code == 0 and run.out == 'x,y,value\n1,2,2.0\n3,,30.0\n'
    assert "the points have a column 'y'" in run.err and 'fills only its empty cells' in run.err


def test_a_big_table_shows_its_first_and_last_rows(tmp_path):
    from autodiff_cli.table.writers import TABLE_ROWS
    rows = 1000
    path = _file(tmp_path, 'p.csv', 'x,label\n' + ''.join(f'{i},[b]{i}[/b]\n' for i in range(rows)))
    run = run_main(['eval', 'x', '--points', path, '--format', 'table'])
    assert run.code == 0
    assert f'{rows - 2 * TABLE_ROWS:,} more rows not shown' in run.out
    assert '[b]0[/b]' in run.out and f'[b]{rows - 1}[/b]' in run.out  # markup shown as text
    assert f'[b]{TABLE_ROWS}[/b]' not in run.out


# ---- chunks ----

@pytest.fixture
def tiny_chunks(monkeypatch):
    """Chunks of a few rows and reads of a few bytes: every boundary gets crossed."""
    from autodiff_cli.table import sources as points
    monkeypatch.setattr(points, 'CHUNK_ROWS', 3)
    monkeypatch.setattr(points, '_READ_BYTES', 7)
    monkeypatch.setattr(points, '_ARROW_BYTES', 0)


MIXED = ('label,x,y\r\n"a, quoted",0.5,-1\r\n\r\nplain,2,2\n"multi\nline ""q""",-3,0.25\n'
         + ''.join(f'r{i},{i / 7!r},{-i}\n' for i in range(40)) + '\n  \nlast,1e300,-1e-300')


@pytest.mark.parametrize('fmt', ['csv', 'tsv', 'jsonl', 'json'])
def test_tiny_chunks_give_the_same_bytes(tmp_path, monkeypatch, fmt):
    path = _file(tmp_path, 'p.csv', MIXED)
    expr = 'h(t) = t^2 * sin(t); h(x) / (1 + y^2) + max(x, y)'
    whole = run_main(['grad', expr, '--points', path, '--format', fmt])
    from autodiff_cli.table import sources as points
    monkeypatch.setattr(points, 'CHUNK_ROWS', 3)
    monkeypatch.setattr(points, '_READ_BYTES', 7)
    chunked = run_main(['grad', expr, '--points', path, '--format', fmt])
    assert whole.code == chunked.code == 0 and whole.out == chunked.out


def test_every_row_equals_its_single_point(tmp_path, tiny_chunks):
    expr = 'h(t) = t^2 * sin(t); h(x) / (1 + y^2) + max(x, y)'
    path = _file(tmp_path, 'p.csv', MIXED)
    run = run_main(['grad', expr, '--points', path])
    rows = list(csv.DictReader(io.StringIO(run.out, newline='')))
    assert run.code == 0 and len(rows) == 44
    # NumPy's pow is 1-2 ulps from C's on CPUs with AVX-512 (README, "A batch row
    # and a single point"); tests/test_batch_branches.py holds rows to the bit
    for row in rows:
        value, grads = evaluate(expr, x=float(row['x']), y=float(row['y']))
        for column, want in (('value', value), ('d_x', grads['x']), ('d_y', grads['y'])):
            assert same(float(row[column]), want, rel=1e-14, abs_=0), (row, column, want)


@pytest.fixture
def arrow_always(monkeypatch):
    """pyarrow's reader even for small files (it is imported past 512 KiB)."""
    from autodiff_cli.table import sources as points
    monkeypatch.setattr(points, '_ARROW_BYTES', 0)


# Blank lines (empty, or only white space) among the rows: skipped either way,
# even where every variable has a value to fill an empty cell with (x=9).
@pytest.mark.parametrize('name, data, extra, tail', [
    ('p.csv', 'x,y,label\r\n\n1,2,a\n  \n', [], 'inf, nan ,\u2028\n1_0,+3,x\n-0.0,.5,last'),
    ('p.csv', 'x,y,label\n\n1,2,"a, ""b"""\n\n', ['x=9', 'y=8'], '-0.0,.5,last\n'),
    ('p.tsv', 'x\ty\n1\t2\n\t\n\n', ['x=9', 'y=8'], '-0.0\t.5\n'),
])
@pytest.mark.parametrize('fmt', ['csv', 'jsonl'])
def test_without_pyarrow_the_same_bytes(tmp_path, monkeypatch, arrow_always, name, data, extra,
                                        tail, fmt):
    d = '\t' if name.endswith('.tsv') else ','
    rows = ''.join(f'{i / 7!r},{-i},r{i}\n' if d == ',' else f'{i / 7!r}\t{-i}\n'
                   for i in range(40))
    path = _file(tmp_path, name, data + rows + tail)
    from autodiff_cli.table import sources as points
    loads = []
    real = points._pyarrow_csv
    monkeypatch.setattr(points, '_pyarrow_csv', lambda: loads.append(1) or real())
    command = ['grad', 'x*y', '--points', path, '--format', fmt, *extra]
    fast = run_main(command)
    assert loads or real() is None  # pyarrow's reader was asked, where installed
    monkeypatch.setattr(points, '_pyarrow_csv', lambda: None)
    slow = run_main(command)
    assert fast.code == slow.code == 0 and fast.out == slow.out
    rows_out = 1 + 40 + tail.strip().count('\n') + 1   # the row in `data`, the 40, the tail's
    assert fast.out.count('\n') == rows_out + (fmt == 'csv')   # and a header


# Where orjson and repr spell a number differently (below 1e-4, non-finite), and around
SPELLED = [1e-05, 3.0, -2.5e-07, 1e-4, 0.00015, 9.99e-05, 1e15, 1e16, 1.5e20, -0.0, 0.0, 5e-324,
           1234567890123456.8, 0.1, 'inf', '-inf', 'nan', 1.7976931348623157e308]


@pytest.mark.parametrize('reader', ['pyarrow', 'python'])
def test_numbers_are_spelled_as_a_single_point_spells_them(tmp_path, monkeypatch, arrow_always,
                                                          reader):
    if reader == 'python':
        from autodiff_cli.table import sources as points
        monkeypatch.setattr(points, '_pyarrow_csv', lambda: None)
    xs = [str(v) if isinstance(v, str) else repr(v) for v in SPELLED]
    path = _file(tmp_path, 'p.csv', 'x,y\n' + ''.join(f'{x},2\n' for x in xs))
    run = run_main(['grad', 'x*y', '--points', path])
    assert run.code == 0
    got = _csv_rows(run.out)
    for x, row in zip(xs, got[1:]):
        single = _csv_rows(run_main(['grad', 'x*y', f'x={x}', 'y=2', '--format', 'csv']).out)
        assert got[0] == single[0] and row[2:] == single[1][2:], x  # the input cells echoed
    assert [row[4] for row in got[1:]] == xs  # d_y = x, as repr writes it


def test_a_bad_row_past_the_first_chunks_leaves_stdout_empty(tmp_path, tiny_chunks):
    path = _file(tmp_path, 'p.csv', 'x\n' + '1\n' * 50 + 'oops\n')
    run = run_main(['eval', 'x', '--points', path])
    assert (run.code, run.out) == (2, '') and "line 52: 'x' is 'oops'" in run.err


class _Pipe(io.RawIOBase):
    """Standard input that cannot be sought, as a pipe."""

    def __init__(self, data):
        self.data = io.BytesIO(data)

    def readable(self):
        return True

    def readinto(self, b):
        return self.data.readinto(b)


def test_stdin_that_cannot_seek_is_spooled_then_checked(monkeypatch, tiny_chunks):
    good = 'x\n' + ''.join(f'{i}\n' for i in range(30))
    for data, code in ((good + 'oops\n', 2), (good, 0)):
        monkeypatch.setattr(sys, 'stdin', io.TextIOWrapper(io.BufferedReader(_Pipe(data.encode()))))
        from autodiff_cli.cli.main import main
        out = io.StringIO()
        monkeypatch.setattr(sys, 'stdout', out)
        assert main(['eval', 'x*2', '--points', '-']) == code
        assert out.getvalue() == ('' if code else
                                  'x,value\n' + ''.join(f'{i},{2.0 * i}\n' for i in range(30)))


def test_strict_refuses_before_any_output(tmp_path, tiny_chunks):
    path = _file(tmp_path, 'p.csv', 'x\n' + '1\n' * 20 + '0\n')
    target = _file(tmp_path, 'out.csv', 'old\n')
    run = run_main(['eval', 'log(x)', '--points', path, '--strict'])
    assert (run.code, run.out) == (1, '') and 'not finite in 1 of 21 rows' in run.err
    run = run_main(['eval', 'log(x)', '--points', path, '--strict', '-o', target])
    assert run.code == 1 and open(target).read() == 'old\n'
    run = run_main(['eval', 'log(x)', '--points', path, '-o', target])
    assert run.code == 0 and open(target).read().endswith('0,-inf\n')


def test_output_file_formats_by_ending(tmp_path):
    path = _file(tmp_path, 'p.csv', 'x\n1\n2\n')
    for name, want in (('o.jsonl', '{"x":1.0,"value":2.0}\n{"x":2.0,"value":4.0}\n'),
                       ('o.tsv', 'x\tvalue\n1\t2.0\n2\t4.0\n')):
        target = str(tmp_path / name)
        assert run_main(['eval', '2*x', '--points', path, '-o', target]).code == 0
        assert open(target).read() == want
    run = run_main(['eval', '2*x', 'x=1', '-o', str(tmp_path / 'one.csv')])
    assert run.code == 2 and 'go with --points' in run.err


def test_jsonl_to_csv_takes_every_key_as_a_column(tmp_path, tiny_chunks):
    lines = [{'x': 1}] * 5 + [{'x': 2, 'late': 'z'}]
    path = _file(tmp_path, 'p.jsonl', ''.join(json.dumps(r) + '\n' for r in lines))
    target = str(tmp_path / 'o.csv')
    assert run_main(['eval', 'x', '--points', path, '-o', target]).code == 0
    assert open(target).read() == 'x,late,value\n' + '1,,1.0\n' * 5 + '2,z,2.0\n'


def test_interrupts_wait_for_a_row_boundary():
    from autodiff_cli.table.pipeline import AtBoundaries
    with pytest.raises(KeyboardInterrupt):
        with AtBoundaries() as boundary:
            os.kill(os.getpid(), signal.SIGINT)
            written = 'a whole chunk'  # reached: the signal did not cut in
            boundary.check()
    assert written
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


class _SlowWriter:
    """A writer that batch.py runs in a thread (may_lag), slow enough to lag."""
    may_lag = True

    def __init__(self, fail_at=None):
        self.written, self.closed, self.fail_at = [], False, fail_at

    def write(self, chunk, computed):
        import time
        time.sleep(0.01)
        if chunk == self.fail_at:
            raise OSError(28, 'No space left on device')
        self.written.append(chunk)

    def close(self):
        self.closed = True


def test_the_writer_thread_writes_every_chunk_in_order_before_an_interrupt_leaves():
    from autodiff_cli.table.pipeline import _Behind
    slow = _SlowWriter()
    with pytest.raises(KeyboardInterrupt):
        with _Behind(slow) as writer:
            for k in range(5):
                writer.write(k, [])
            raise KeyboardInterrupt  # as AtBoundaries raises it, between chunks
    assert slow.written == [0, 1, 2, 3, 4] and not slow.closed


def test_the_writer_thread_raises_its_error_and_writes_nothing_after_it():
    from autodiff_cli.table.pipeline import _Behind
    slow = _SlowWriter(fail_at=2)
    with pytest.raises(OSError, match='No space'):
        with _Behind(slow) as writer:
            for k in range(6):
                writer.write(k, [])
            writer.close()
    assert slow.written == [0, 1] and not slow.closed


def test_a_full_disk_under_the_writer_thread_is_one_error_line(tmp_path):
    if not os.path.exists('/dev/full'):
        pytest.skip('no /dev/full')
    path = _file(tmp_path, 'p.csv', 'x\n' + ''.join(f'{i}\n' for i in range(200_000)))
    run = run_main(['eval', '2*x', '--points', path, '-o', '/dev/full'])
    assert run.code == 2 and 'No space left on device' in run.err and run.err.count('\n') == 1


# ---- Parquet ----

def test_parquet_in_and_out(tmp_path):
    pa = pytest.importorskip('pyarrow')
    pq = pytest.importorskip('pyarrow.parquet')
    xs = [0.5, -2.0, 3.25, 1e-300]
    table = pa.table({'x': pa.array(xs), 'n': pa.array([1, 2, 3, None], pa.int64()),
                      'label': ['a', 'b,c', 'd"e', None]})
    source = str(tmp_path / 'p.parquet')
    pq.write_table(table, source, row_group_size=3)
    run = run_main(['grad', 'x*n', 'n=7', '--points', source])
    assert run.code == 0
    rows = list(csv.DictReader(io.StringIO(run.out, newline='')))
    assert [r['label'] for r in rows] == ['a', 'b,c', 'd"e', '']
    target = str(tmp_path / 'o.parquet')
    assert run_main(['grad', 'x*n', 'n=7', '--points', source, '-o', target]).code == 0
    back = pq.read_table(target).to_pylist()
    for x, n, row in zip(xs, [1, 2, 3, 7], back):
        value, grads = evaluate('x*n', x=x, n=n)
        assert (row['value'], row['d_x'], row['d_n']) == (value, grads['x'], grads['n'])
        assert row['x'] == x
    csv_in = _file(tmp_path, 'p.csv', 'x,label\n1.5,q\n')
    assert run_main(['eval', 'x', '--points', csv_in, '-o', target]).code == 0
    assert pq.read_table(target).to_pylist() == [{'x': '1.5', 'label': 'q', 'value': 1.5}]


def test_parquet_refusals(tmp_path):
    pytest.importorskip('pyarrow')
    bad = _file(tmp_path, 'bad.parquet', b'not parquet at all')
    run = run_main(['eval', 'x', '--points', bad])
    assert (run.code, run.out) == (2, '') and 'cannot read' in run.err
    run = run_main(['eval', 'x', '--points', _file(tmp_path, 'p.csv', 'x\n1\n'), '--format', 'csv',
                    '-o', str(tmp_path / 'o.parquet')])
    assert run.code == 2 and 'drop --format' in run.err


# ---- pyarrow's reader says what Python's float() says, or steps aside ----

_NUMBERISH = r'[ \t]?[+-]?(\d{0,3}(\.\d{0,3})?([eE][+-]?\d{1,3})?|inf|nan|infinity|Infinity|NaN|INF)[ \t]?'


def _cells():
    from hypothesis import strategies as st
    number = st.from_regex(_NUMBERISH, fullmatch=True)
    return st.one_of(number, number.map(lambda t: f'"{t}"'),
                     st.text(alphabet=' \t0123456789.eE+-_xnaif"\x0b\x0c\u00a0', max_size=6))


@pytest.mark.parametrize('block, records', [
    (b'1,"a, b",2\n', True),
    (b'1,"say ""hi""",2\n"",3,""""\n', True),     # doubled quotes, an empty field, a lone quote
    (b'"x"\n"y"\n', True),
    (b'1,"a\nb",2\n', False),                       # a quoted line break: two lines, one record
    (b'1,a"b,2\n', False),                           # a quote inside an unquoted field
    (b'1,"a"b,2\n', False),                          # text after a closing quote
    (b'1,"a""\n', False),                            # never closed
])
def test_which_blocks_have_a_record_per_line(block, records):
    import csv

    from autodiff_cli.table.sources import _simple_quotes
    assert _simple_quotes(block, ',') == records
    if records:   # as the csv module reads it, line by line
        lines = block.decode().splitlines()
        assert list(csv.reader(lines)) == [next(csv.reader([line])) for line in lines]


def test_a_block_has_a_record_per_line_exactly_when_each_line_is_csv_fields():
    """Every block of up to 8 bytes of a , " and line breaks, against the
    definition: each line is fields, each either without quotes or quoted
    whole, with no line break inside and any quote in it doubled."""
    import itertools
    import re

    from autodiff_cli.table.sources import _simple_quotes
    field = r'(?:[^",\n]*|"(?:[^"\n]|"")*")'
    line = re.compile(rf'{field}(?:,{field})*')
    for length in range(9):
        for chars in itertools.product('a,"\n', repeat=length):
            text = ''.join(chars) + '\n'
            expected = all(line.fullmatch(x) for x in text.split('\n')[:-1])
            assert _simple_quotes(text.encode(), ',') == expected, text


def test_arrow_reads_every_cell_as_float_does(arrow_always):
    hypothesis = pytest.importorskip('hypothesis')
    pytest.importorskip('pyarrow')
    from unittest import mock

    from hypothesis import strategies as st

    from autodiff_cli.table import sources as points

    # A label column as spreadsheets write one: quoted where it holds a
    # comma or a quote (doubled), and now and then a stray quote (not CSV).
    label = st.one_of(st.text(alphabet='ab ;', max_size=4),
                      st.text(alphabet='ab ,"', max_size=5).map(lambda t: '"' + t.replace('"', '""') + '"'),
                      st.text(alphabet='a,"', max_size=4))

    @hypothesis.settings(max_examples=300, deadline=None)
    @hypothesis.given(st.lists(st.tuples(_cells(), label, _cells()), min_size=1, max_size=6))
    def check(rows):
        import tempfile
        with tempfile.NamedTemporaryFile('w', suffix='.csv', delete=False) as f:
            f.write('x,label,y\n' + ''.join(f'{a},{t},{b}\n' for a, t, b in rows))
        try:
            fast = run_main(['eval', 'x + y', 'y=1', '--points', f.name])
            with mock.patch.object(points, '_pyarrow_csv', lambda: None):
                slow = run_main(['eval', 'x + y', 'y=1', '--points', f.name])
                # and every record through the csv module, quotes or not
                with mock.patch.object(points, '_lines_are_records', lambda *_: False):
                    csv_module = run_main(['eval', 'x + y', 'y=1', '--points', f.name])
        finally:
            os.unlink(f.name)
        assert (fast.code, fast.out, fast.err) == (slow.code, slow.out, slow.err)
        assert (fast.code, fast.out, fast.err) == (csv_module.code, csv_module.out, csv_module.err)
    check()


def test_the_arrow_paths_do_not_import_pandas(tmp_path):
    """pa.array() and pa.scalar() import pandas (0.2 s, more than writing 10^6
    rows): the writers build their arrays from buffers."""
    pytest.importorskip('pyarrow')
    import subprocess
    points = _file(tmp_path, 'p.csv', 'x,label\n1,a\n2,"b, ""c"""\n3,\n')
    code = ('import sys\n'
            'from autodiff_cli.cli import main\nfrom autodiff_cli.table import sources as points\n'
            'points._ARROW_BYTES = 0\n'
            f'for out in ("{tmp_path}/o.csv", "{tmp_path}/o.parquet"):\n'
            f'    assert main.main(["grad", "x*1e-9", "--points", "{points}", "-o", out]) == 0\n'
            'print(sorted(m for m in sys.modules if m.split(".")[0] == "pandas"))')
    run = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True)
    assert (run.returncode, run.stdout) == (0, '[]\n'), run.stderr
    assert (tmp_path / 'o.csv').read_text().splitlines()[1:3] == ['1,a,1e-09,1e-09',
                                                                  '2,"b, ""c""",2e-09,1e-09']


def test_parquet_output_without_pyarrow_is_refused_with_a_hint(tmp_path, monkeypatch):
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, 'find_spec',
                        lambda name, *a: None if name == 'pyarrow' else real(name, *a))
    points = tmp_path / 't.csv'
    points.write_text('x,y\n1,2\n')
    from tests.helpers import run_main
    code, out, err = run_main(['grad', 'x*y', '--points', str(points), '-o',
                               str(tmp_path / 'o.parquet')])
    assert (code, out) == (2, '') and "parquet extra: pip install pyarrow" in err
    assert not (tmp_path / 'o.parquet').exists()


def test_a_long_quoted_field_is_read_again_only_as_often_as_it_doubles(tmp_path, monkeypatch):
    """A record still open at a block's end is parsed again from its start:
    the next read is as long as what is pending, so a field of n bytes costs
    O(log n) parses, not one per block (which took 33 s for 64 MB)."""
    from autodiff_cli.table import sources as points
    monkeypatch.setattr(points, '_READ_BYTES', 64)
    field = 'abcdefg\nh' * 20_000   # 180 KB, line breaks inside
    path = _file(tmp_path, 'long.csv', f'x,label\n1,"{field}"\n2,b\n')
    parses = []
    real = points.CsvSource._quoted
    monkeypatch.setattr(points.CsvSource, '_quoted',
                        lambda self, block, final: parses.append(len(block)) or real(self, block, final))
    run = run_main(['eval', 'x', '--points', path])
    assert run.code == 0
    assert list(csv.reader(io.StringIO(run.out))) == [['x', 'label', 'value'], ['1', field, '1.0'],
                                                      ['2', 'b', '2.0']]
    assert len(parses) <= 2 * len(field).bit_length(), len(parses)


def test_parquet_takes_a_chunk_with_too_much_text_in_slices(tmp_path, monkeypatch):
    """An Arrow string array holds at most 2 GiB: a chunk with more text in a
    column is written in slices (here the limit is 2,000 bytes), and a single
    cell too big for one is an error naming its line."""
    pq = pytest.importorskip('pyarrow.parquet')
    from autodiff_cli.table import writers as rows
    real = rows.binary_array

    def small(pieces, valid=None):
        if sum(map(len, pieces)) >= 2000:
            raise OverflowError
        return real(pieces, valid)
    monkeypatch.setattr(rows, 'binary_array', small)
    labels = [f'label {i} ' * (i % 5) for i in range(600)]
    path = _file(tmp_path, 'p.csv', 'x,label\n' + ''.join(f'{i},{t}\n' for i, t in enumerate(labels)))
    out = tmp_path / 'o.parquet'
    assert run_main(['eval', 'x/2', '--points', path, '-o', str(out)]).code == 0
    assert pq.read_table(out).to_pylist() == [{'x': str(i), 'label': t, 'value': i / 2}
                                              for i, t in enumerate(labels)]
    path = _file(tmp_path, 'big.csv', 'x,label\n1,a\n2,' + 'b' * 3000 + '\n')
    run = run_main(['eval', 'x', '--points', path, '-o', str(tmp_path / 'big.parquet')])
    assert (run.code, run.err) == (2, f'adgrad: error: {path}: line 3: a cell of more than '
                                      '2 GiB cannot go into Parquet\n')
    assert not (tmp_path / 'big.parquet').exists()


def test_a_bad_row_after_parquet_output_began_is_one_line(tmp_path):
    pytest.importorskip('pyarrow')
    import subprocess
    # Many chunks: the Parquet file has rows in it when the bad one comes.
    path = _file(tmp_path, 'p.csv', 'x\n' + ''.join(f'{i}\n' for i in range(70_000)) + 'oops\n')
    code = ('import sys\n'
            'from autodiff_cli.cli import main\n'
            f'sys.exit(main.main(["eval", "x", "--points", "{path}", "-o", "{tmp_path}/o.parquet"]))')
    run = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True)
    assert (run.returncode, run.stderr) == (
        2, f"adgrad: error: {path}: line 70002: 'x' is 'oops', not a number\n")
    assert os.listdir(tmp_path) == ['p.csv']


@pytest.mark.parametrize('data', ['x,y\n\ufeff1,2\n3,4\n', 'x\ty\r\ufeff1\t2\r',
                                  'label,x,y\n\ufeffa,1,2\n'])
def test_a_byte_order_mark_inside_the_rows_is_a_cell_s_text(tmp_path, monkeypatch, arrow_always,
                                                            data):
    """pyarrow drops a byte-order mark at the start of what it reads, which
    for a chunk is a row's first cell: that chunk is read by Python, which
    keeps it (an error where it is a variable's cell, as float() says)."""
    from autodiff_cli.table import sources as points
    path = _file(tmp_path, 'p.tsv' if '\t' in data else 'p.csv', data)
    fast = run_main(['grad', 'x*y', '--points', path])
    monkeypatch.setattr(points, '_pyarrow_csv', lambda: None)
    assert fast == run_main(['grad', 'x*y', '--points', path])
    if data.startswith('x'):
        assert fast.code == 2 and "'x' is '\\ufeff1', not a number" in fast.err
    else:
        assert fast.code == 0 and fast.out.splitlines()[1] == '\ufeffa,1,2,2.0,2.0,1.0'


@pytest.mark.parametrize('rows', [2, 70_000])   # the csv module's reading, and past pyarrow's size
def test_a_quoted_field_never_closed_is_an_error_not_the_rest_of_the_file(tmp_path, rows):
    """The csv module reads an unclosed quote to the end of the file as one
    cell, so every row after it would vanish without a word."""
    path = _file(tmp_path, 'p.csv', 'x,note\n1,"stray\n' + ''.join(f'{i},ok\n' for i in range(rows)))
    run = run_main(['eval', 'x', '--points', path])
    assert (run.code, run.out) == (2, '')
    assert run.err == (f'adgrad: error: {path}: line 2: a quoted field opens here and is never '
                       'closed (the rest of the file would be its text)\n')
    fine = _file(tmp_path, 'q.csv', 'x,note\n1,"two\nlines"\n2,"a, ""b"""')   # no final line break
    assert run_main(['eval', 'x', '--points', fine]).out.splitlines()[-1] == '2,"a, ""b""",2.0'


def test_parquet_nulls_and_parquet_where_text_was_expected(tmp_path):
    pa = pytest.importorskip('pyarrow')
    import pyarrow.parquet as pq
    path = str(tmp_path / 'n.parquet')
    pq.write_table(pa.table({'x': [1.0, None, 2.0], 'y': pa.array([2, None, 5], pa.int64())}), path)
    run = run_main(['grad', 'x*y', '--points', path])
    assert (run.code, run.err) == (2, f"adgrad: error: {path}: row 2: no value for 'x'\n")
    run = run_main(['grad', 'x*y', '--points', path, 'y=3', '--wrt', 'y'])
    assert run.code == 2 and run.err.endswith(f"adgrad: error: {path}: row 2: no value for 'x'\n")
    assert run_main(['grad', 'x*y', '--points', path, 'x=7', 'y=3']).out.splitlines()[2] == \
        ',,21.0,3.0,7.0'
    data = (tmp_path / 'n.parquet').read_bytes()
    run = run_main(['eval', 'x', '--points', '-'], stdin=data)
    assert (run.code, run.err) == (2, 'adgrad: error: <stdin> is Parquet, which adgrad reads from '
                                      'a file whose name ends in .parquet (not from standard '
                                      'input)\n')
    misnamed = _file(tmp_path, 'n.bin', data)
    assert run_main(['eval', 'x', '--points', misnamed]).err.endswith(
        'is Parquet, which adgrad reads from a file whose name ends in .parquet\n')


@pytest.mark.skipif(not hasattr(os, 'mkfifo'), reason='no named pipes here')
@pytest.mark.parametrize('to_file', [False, True])
def test_points_from_a_pipe_by_its_path(tmp_path, to_file):
    """`--points <(...)`: a path that is a pipe can be read only once, so it
    is spooled like standard input, not opened again for the second pass
    (where it waited for a writer that had gone)."""
    import subprocess
    import threading
    fifo, out = tmp_path / 'points', tmp_path / 'out.csv'
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text('x\n1\n0\n4\n'), daemon=True)
    writer.start()
    command = [sys.executable, '-m', 'autodiff_cli', 'grad', 'sqrt(x)', '--points', str(fifo)]
    run = subprocess.run(command + (['-o', str(out)] if to_file else []), cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    text = out.read_text() if to_file else run.stdout
    assert run.returncode == 0 and text == 'x,value,d_x\n1,1.0,0.5\n0,0.0,inf\n4,2.0,0.25\n'
    assert 'the gradient ∂f/∂x is not finite in 1 of 3 rows' in run.stderr


def test_csv_cells_keep_their_text_in_json_unless_spelled_as_json_numbers(tmp_path):
    """An id '007' or a cell ' 2 ' is not respelled; float() still reads a variable's."""
    path = tmp_path / 'q.csv'
    path.write_text('x,y,id\n1_000, 2 ,007\n3,-0.5,1e3\n-0,1,inf\n'
                    '1.,.5,9007199254740993\n+1,0.1,12345678901234567890\n'
                    '1,1E+5,0.10000000000000000555\n2,1,1e-400\n')
    code, out, err = run_main(['eval', 'x+y', '--points', str(path), '--format', 'jsonl'])
    assert code == 0, err
    assert [json.loads(line) for line in out.splitlines()] == [
        {'x': '1_000', 'y': ' 2 ', 'id': '007', 'value': 1002.0},
        {'x': 3.0, 'y': -0.5, 'id': 1000.0, 'value': 2.5},
        {'x': -0.0, 'y': 1.0, 'id': 'inf', 'value': 1.0},
        # not JSON's spelling, or not the float's own digits: text as it was
        {'x': '1.', 'y': '.5', 'id': '9007199254740993', 'value': 1.5},
        {'x': '+1', 'y': 0.1, 'id': '12345678901234567890', 'value': 1.1},
        {'x': 1.0, 'y': 100000.0, 'id': '0.10000000000000000555', 'value': 100001.0},
        {'x': 2.0, 'y': 1.0, 'id': '1e-400', 'value': 3.0}]


def test_the_second_pass_reuses_what_the_first_learnt_of_each_block(tmp_path, monkeypatch):
    """On stdout a file is read twice; a block the first pass found to hold a
    record per line (its quotes checked) is not checked again, and the bytes
    out are those of one pass (-o), of a pipe (whose blocks are cut
    otherwise), and of the pure-Python reader."""
    from autodiff_cli.table import sources as points
    monkeypatch.setattr(points, '_READ_BYTES', 4096)   # past the first 64 KiB read
    plain = ''.join(f'"row {i}, ""q""",{i / 7!r},{-i}\n' for i in range(3000))
    spanning = '"two\nlines",1,2\n'   # a quoted line break: a block of records, not lines
    path = _file(tmp_path, 'p.csv', 'label,x,y\n' + plain + spanning + plain)
    checks = []
    real = points._lines_are_records
    monkeypatch.setattr(points, '_lines_are_records',
                        lambda block, delimiter: checks.append(block) or real(block, delimiter))
    twice = run_main(['grad', 'x*y', '--points', path])
    checked_twice, checks[:] = len(checks), []
    once = run_main(['grad', 'x*y', '--points', path, '-o', str(tmp_path / 'out.csv')])
    assert twice.code == once.code == 0
    assert twice.out == (tmp_path / 'out.csv').read_text() and 'two\nlines' in twice.out
    spanned = sum(not real(block, ',') for block in checks)
    assert len(checks) > 10 and spanned >= 1
    # Again only the blocks not of lines, and the first, which holds the
    # header and is read as the source opens, before it is told of the first pass.
    assert checked_twice == len(checks) + spanned + 1
    with open(path, 'rb') as f:
        monkeypatch.setattr(sys, 'stdin', io.TextIOWrapper(io.BufferedReader(_Pipe(f.read()))))
    from autodiff_cli.cli.main import main
    out = io.StringIO()
    monkeypatch.setattr(sys, 'stdout', out)
    assert main(['grad', 'x*y', '--points', '-']) == 0 and out.getvalue() == twice.out
