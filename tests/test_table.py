"""Every command that takes --points reads every source alike (table/).

eval, grad, hessian and check read CSV, TSV, JSON Lines, Parquet and
standard input through one pipeline: the same numbers whatever the source
(each row checked against the command at that single point, a separate
path), the same error text for a bad file, and one warning line for many
points. The JSON writers' column-at-a-time path writes the bytes of their
row-by-row one.
"""

import csv
import io
import json

import pytest

from tests.helpers import run_main

ROWS = [(0.5, 2.0), (-1.25, 3.0), (2.0, -0.75)]
COMMANDS = {
    'eval': ['eval', 'x^2*y + sin(x)'],
    'grad': ['grad', 'x^2*y + sin(x)'],
    'hessian': ['hessian', 'x^2*y + sin(x)'],
    'check': ['check', 'x^2*y + sin(x)'],
}


def _write(folder, kind, rows=ROWS, header=('x', 'y')):
    """The rows as a points file of `kind`; returns its path."""
    path = folder / f'p.{kind}'
    if kind in ('csv', 'tsv'):
        text = io.StringIO()
        writer = csv.writer(text, delimiter=',' if kind == 'csv' else '\t', lineterminator='\n')
        writer.writerow(header)
        writer.writerows([[repr(c) if isinstance(c, float) else c for c in row] for row in rows])
        path.write_text(text.getvalue())
    elif kind == 'jsonl':
        path.write_text(''.join(json.dumps(dict(zip(header, row))) + '\n' for row in rows))
    else:
        pq = pytest.importorskip('pyarrow.parquet')
        import pyarrow as pa
        pq.write_table(pa.table({h: [row[k] for row in rows] for k, h in enumerate(header)}), path)
    return path


def _numbers(command, out):
    """The computed numbers of a --format csv output, row by row."""
    rows = list(csv.reader(io.StringIO(out)))
    if command == 'check':   # point, variable, ad, fd, ...: the variable and both numbers
        return [[r[1], float(r[2]), float(r[3]), r[6]] for r in rows[1:]]
    width = {'eval': 1, 'grad': 3, 'hessian': 4}[command]
    return [[float(c) for c in r[-width:]] for r in rows[1:]]


def _single(command, row):
    """The same numbers from the command at one point, without --points."""
    bindings = [f'x={row[0]!r}', f'y={row[1]!r}']
    run = run_main([*COMMANDS[command], *bindings, '--format', 'csv'])
    assert run.code == 0, run.err
    if command == 'hessian':   # the matrix, row-major
        return [[float(c) for line in list(csv.reader(io.StringIO(run.out)))[1:]
                 for c in line[1:]]]
    return _numbers(command, run.out)


def _run(command, path, stdin=None):
    points = '-' if stdin is not None else str(path)
    return run_main([*COMMANDS[command], '--points', points, '--format', 'csv'],
                    stdin=stdin if stdin is not None else b'')


@pytest.mark.parametrize('command', list(COMMANDS))
@pytest.mark.parametrize('kind', ['csv', 'tsv', 'jsonl', 'parquet', 'stdin csv', 'stdin jsonl'])
def test_every_command_reads_every_source_alike(tmp_path, command, kind):
    stdin = None
    if kind.startswith('stdin'):
        stdin = _write(tmp_path, kind.split()[1]).read_bytes()
    run = _run(command, _write(tmp_path, kind) if stdin is None else None, stdin)
    assert run.code == 0, run.err
    expected = [line for row in ROWS for line in _single(command, row)]
    got = _numbers(command, run.out)
    if command == 'check':   # the point numbers count the rows, in order
        assert [r[0] for r in csv.reader(io.StringIO(run.out))][1:] == \
            [str(k) for k in range(1, len(ROWS) + 1) for _ in range(2)]
    assert got == expected


BAD = {   # a cell that is no number, on the second row of points
    'csv': 'x,y\n1,2\nabc,3\n',
    'jsonl': '{"x": 1, "y": 2}\n{"x": "abc", "y": 3}\n',
    'missing': 'x\n1\n2\n',              # no column y, and no y= either
    'width': 'x,y\n1,2\n3\n',
    'utf8': b'x,y\n1,2\n\xff,3\n',
}


@pytest.mark.parametrize('kind', list(BAD))
@pytest.mark.parametrize('stdin', [False, True])
def test_a_bad_file_is_the_same_error_in_every_command(tmp_path, kind, stdin):
    data = BAD[kind] if isinstance(BAD[kind], bytes) else BAD[kind].encode()
    path = tmp_path / ('p.jsonl' if kind == 'jsonl' else 'p.csv')
    path.write_bytes(data)
    runs = {c: _run(c, path, data if stdin else None) for c in COMMANDS}
    assert {(r.code, r.out) for r in runs.values()} == {(2, '')}, runs
    errors = {r.err for r in runs.values()}
    assert len(errors) == 1, errors
    assert errors.pop().count('\n') == 1   # one line


def test_a_bad_parquet_cell_is_the_same_error_in_every_command(tmp_path):
    path = _write(tmp_path, 'parquet', rows=[('1', 2.0), ('abc', 3.0)])
    runs = {c: _run(c, path) for c in COMMANDS}
    assert {(r.code, r.out) for r in runs.values()} == {(2, '')}, runs
    errors = {r.err for r in runs.values()}
    assert len(errors) == 1 and 'row 2' in errors.pop(), runs


def test_check_says_its_untrusted_points_in_one_line(tmp_path):
    # abs at a kink (x = 0) on every third of 2,000 rows
    rows = [(0.0 if k % 3 == 0 else 0.25 + k / 1000, 1.0) for k in range(2000)]
    path = _write(tmp_path, 'csv', rows=rows)
    run = run_main(['check', 'abs(x)*y', '--points', str(path), '--format', 'csv'])
    assert run.code == 0, run.err
    warned = [r for r in csv.reader(io.StringIO(run.out)) if r[6] == 'warn']
    lines = run.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith('adgrad: warning: ∂f/∂x at point 1:'), lines
    points = len({r[0] for r in warned})
    assert lines[0].endswith(f'(and {len(warned) - 1} more of 4000 checks, at {points} of '
                             '2000 points)'), lines


HOSTILE = ['0', '-0', '-0.0', '1', '007', '1.50', '1e-400', '1e999', 'inf', 'nan', '1e-05',
           '0.00001', '1e-7', '1e16', '1E5', '9007199254740993', '12345678901234567890', '5e-324',
           ' 2 ', '1_000', 'abc', 'a"b', 'back\\slash', 'tab\there', 'é', 'a\u2028b', '\x7f', '',
           'true', 'null', '[1]', '-', '+1', '.5', '5.', 'a,b', '0.30000000000000004', '1e+16']


@pytest.mark.parametrize('fmt', ['jsonl', 'json'])
@pytest.mark.parametrize('delimiter', [',', '\t'])
def test_json_columns_at_a_time_write_the_bytes_of_rows_one_by_one(tmp_path, monkeypatch, fmt,
                                                                   delimiter):
    pytest.importorskip('pyarrow')
    from autodiff_cli.table import sources
    monkeypatch.setattr(sources, '_ARROW_BYTES', 0)   # pyarrow for a file of any size
    text = io.StringIO()
    writer = csv.writer(text, delimiter=delimiter, lineterminator='\n')
    writer.writerow(['x', 'label', 'y'])
    numbers = ['1.5', '-0.0', '0', '1e-300', '1e300', 'inf', 'nan', '-3.25e-7', '2']
    writer.writerows([[numbers[k % len(numbers)], cell, HOSTILE[(k * 7) % len(HOSTILE)]
                       if HOSTILE[(k * 7) % len(HOSTILE)] else '1'] for k, cell in
                      enumerate(HOSTILE * 3)])
    path = tmp_path / ('p.csv' if delimiter == ',' else 'p.tsv')
    path.write_text(text.getvalue())
    argv = ['grad', 'x*2', 'y=1', '--points', str(path), '--format', fmt]
    _column_path_writes_the_bytes_of_the_row_path(argv, monkeypatch)


@pytest.mark.parametrize('fmt', ['jsonl', 'json'])
def test_json_columns_of_parquet_write_the_bytes_of_rows_one_by_one(tmp_path, monkeypatch, fmt):
    pa = pytest.importorskip('pyarrow')
    import pyarrow.parquet as pq

    numbers = [1.5, -0.0, 0.0, 1e-300, 1e300, float('inf'), float('nan'), -3.25e-7, 1e-5, 2.0,
               1e16, 5e-324, -float('inf')]
    rows = len(HOSTILE) * 3
    pq.write_table(pa.table({'x': [numbers[k % len(numbers)] for k in range(rows)],
                             'label': [HOSTILE[k % len(HOSTILE)] for k in range(rows)],
                             'k': [(-1) ** k * 7 ** (k % 23) for k in range(rows)]}),
                   tmp_path / 'p.parquet')
    argv = ['grad', 'x*2', '--points', str(tmp_path / 'p.parquet'), '--format', fmt]
    _column_path_writes_the_bytes_of_the_row_path(argv, monkeypatch)


def _column_path_writes_the_bytes_of_the_row_path(argv, monkeypatch):
    """`adgrad ARGV` through the column-at-a-time JSON path, then with that
    path turned off: the column path must be taken, and write the same bytes."""
    from autodiff_cli.table import json_columns
    taken = []
    real = json_columns.input_texts
    monkeypatch.setattr(json_columns, 'input_texts',
                        lambda *a: taken.append(real(*a)) or taken[-1])
    columns = run_main(argv)
    assert taken and all(t is not None for t in taken), 'the column path was not taken'
    monkeypatch.setattr(json_columns, 'input_texts', lambda *a: None)
    rows = run_main(argv)
    assert columns.code == rows.code == 0, rows.err
    assert columns.out == rows.out
