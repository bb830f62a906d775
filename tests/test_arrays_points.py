"""--points with an array program: the command line's arrays stay fixed while
each row gives the numbers; every row's value and gradient is torch's at
that row, and --sum, --mean and Dask reduce them as for numbers."""

import csv
import io
import json

import numpy as np
import pytest

from .helpers import run_main

torch = pytest.importorskip('torch')

PROGRAM = 'sum(tanh(W @ [x, y] + b)^2)'
W = np.array([[0.5, -1.0], [2.0, 0.25], [-0.3, 0.8]])
B = np.array([0.1, -0.2, 0.3])


def _torch_row(x, y):
    w = torch.tensor(W, requires_grad=True)
    b = torch.tensor(B, requires_grad=True)
    xy = torch.tensor([x, y], dtype=torch.float64, requires_grad=True)
    value = (torch.tanh(w @ xy + b) ** 2).sum()
    value.backward()
    return [value.item(), *w.grad.flatten().tolist(), *b.grad.tolist(), *xy.grad.tolist()]


@pytest.fixture
def points(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(2)
    rows = rng.standard_normal((40, 2)).round(4)
    (tmp_path / 'pts.csv').write_text('x,y\n' + ''.join(f'{x},{y}\n' for x, y in rows))
    np.save(tmp_path / 'w.npy', W)
    return rows


ARGS = ['grad', PROGRAM, 'W=@w.npy', f'b={json.dumps(B.tolist())}']


def test_each_row_is_torchs(points):
    out = run_main([*ARGS, '--points', 'pts.csv'])
    assert out.code == 0, out.err
    table = list(csv.reader(io.StringIO(out.out)))
    assert table[0] == ['x', 'y', 'value', 'd_W[0,0]', 'd_W[0,1]', 'd_W[1,0]', 'd_W[1,1]',
                        'd_W[2,0]', 'd_W[2,1]', 'd_b[0]', 'd_b[1]', 'd_b[2]', 'd_x', 'd_y']
    for (x, y), row in zip(points, table[1:]):
        np.testing.assert_allclose([float(v) for v in row[2:]], _torch_row(x, y), rtol=1e-12)


def test_the_mean_is_the_mean_of_torchs_rows(points):
    out = run_main([*ARGS, '--points', 'pts.csv', '--mean', '--format', 'json'])
    assert out.code == 0, out.err
    result = json.loads(out.out)
    assert result['rows'] == len(points)
    expected = np.mean([_torch_row(x, y) for x, y in points], axis=0)
    np.testing.assert_allclose([v for k, v in result.items() if k != 'rows'], expected, rtol=1e-12)


def test_dask_gives_the_single_process_sum(points, tmp_path):
    pytest.importorskip('dask.distributed')
    lines = (tmp_path / 'pts.csv').read_text().splitlines()
    (tmp_path / 'parts').mkdir()
    for k, chunk in enumerate((lines[1:15], lines[15:])):
        (tmp_path / 'parts' / f'p{k}.csv').write_text('\n'.join([lines[0], *chunk]) + '\n')
    single = run_main([*ARGS, '--points', 'pts.csv', '--sum', '--format', 'json'])
    spread = run_main([*ARGS, '--points', 'parts/*.csv', '--sum', '--format', 'json',
                       '--engine', 'dask'])
    assert spread.code == 0, spread.err
    assert json.loads(spread.out) == json.loads(single.out)


def test_an_array_output_is_flattened_into_columns(points):
    out = run_main(['eval', 'W @ [x, y]', 'W=@w.npy', '--points', 'pts.csv', '--format', 'jsonl'])
    assert out.code == 0, out.err
    first = json.loads(out.out.splitlines()[0])
    np.testing.assert_allclose([first['value[0]'], first['value[1]'], first['value[2]']],
                               W @ points[0], rtol=1e-15)


@pytest.mark.parametrize('words, message', [
    (['grad', 'W @ [x, y]', 'W=@w.npy'], 'grad needs a scalar output, and this one has shape [3]'),
    (['grad', 'sum(W @ x) * y', 'W=@w.npy', 'x=[1, 2]'], "the points have a column 'x', but x is an array"),
])
def test_refusals_are_one_line_before_any_output(points, words, message):
    out = run_main([*words, '--points', 'pts.csv'])
    assert out.code == 2 and out.out == ''
    assert message in out.err and len(out.err.strip().splitlines()) == 1, out.err


def test_an_unbound_array_is_named_not_taken_for_a_number(points):
    out = run_main(['grad', 'input W[3, 2]; sum(W @ [x, y])', '--points', 'pts.csv'])
    assert out.code == 2 and out.out == ''
    assert out.err.startswith("adgrad: error: no value for 'W': it is declared [3,2]"), out.err


def test_a_jsonl_row_that_gives_an_array_input_is_named(points, tmp_path):
    (tmp_path / 'late.jsonl').write_text('{"y": 1}\n{"y": 2, "x": 3}\n')
    out = run_main(['grad', 'sum(x) * y', 'x=[1, 2]', '--points', 'late.jsonl'])
    assert out.code == 2
    assert out.err == ("adgrad: error: late.jsonl: line 2: the row has a key 'x', but x is "
                       'an array: it stays fixed while rows vary\n')


def test_a_singular_matrix_names_its_row(points, tmp_path):
    # inv of [[a, 1], [2, 2]] is singular at a = 1 only: line 3 of the file
    (tmp_path / 'a.csv').write_text('a\n2\n1\n3\n')
    out = run_main(['grad', 'sum(inv([[a, 1], [2, 2]]))', '--points', 'a.csv'])
    assert out.code == 1
    assert out.err == 'adgrad: error: a.csv: line 3: inv: the matrix is singular\n'


def test_hessian_refuses_data_with_points(points):
    out = run_main(['hessian', 'x*y', '--data', 'pts.csv', '--points', 'pts.csv'])
    assert out.code == 2 and '--data binds whole columns and --points evaluates row by row' in out.err
