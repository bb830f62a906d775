"""--engine dask on a LocalCluster of 2 workers: row for row the single-process batch."""

import csv
import io
import os

import pytest

from tests.helpers import run_main

dd = pytest.importorskip('dask.dataframe')
distributed = pytest.importorskip('dask.distributed')
pa = pytest.importorskip('pyarrow')
pq = pytest.importorskip('pyarrow.parquet')

EXPR = 'h(t) = t^2 * sin(t); h(x) / (1 + y^2) + max(x, y) + log(x)'


@pytest.fixture(scope='module')
def scheduler():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    yield cluster.scheduler_address
    cluster.close()


def _rows(text):
    return list(csv.reader(io.StringIO(text, newline='')))


def _points(n, seed):
    import random
    rng = random.Random(seed)
    return [(f'r{seed}-{i}', repr(rng.uniform(-2, 3)), repr(rng.gauss(0, 1))) for i in range(n)]


def test_csv_files_row_for_row(tmp_path, scheduler):
    folder = tmp_path / 'data'
    folder.mkdir()
    everything = []
    for k, n in enumerate((40, 1, 25)):
        rows = _points(n, k)
        everything += rows
        with open(folder / f'p{k}.csv', 'w', newline='') as f:
            csv.writer(f, lineterminator='\n').writerows([('label', 'x', 'y'), *rows])
    whole = tmp_path / 'all.csv'
    with open(whole, 'w', newline='') as f:
        csv.writer(f, lineterminator='\n').writerows([('label', 'x', 'y'), *everything])
    out = tmp_path / 'out'
    code, stdout, err = run_main(['grad', EXPR, '--points', str(folder / '*.csv'), '--engine', 'dask',
                                  '--scheduler', scheduler, '-o', str(out)])
    assert code == 0 and stdout == ''
    assert 'not finite in' in err  # log(x) for x <= 0, counted over every partition
    parts = sorted(os.listdir(out))
    assert parts == ['part-00000.csv', 'part-00001.csv', 'part-00002.csv']
    got = [_rows((out / p).read_text()) for p in parts]
    header = got[0][0]
    assert all(g[0] == header for g in got)
    single = _rows(run_main(['grad', EXPR, '--points', str(whole)])[1])
    assert single[0] == header and [r for g in got for r in g[1:]] == single[1:]
    bad = [line for line in run_main(['grad', EXPR, '--points', str(whole)])[2].splitlines()]
    assert bad == err.splitlines()  # the same warning, the same counts


def test_parquet_folder_and_a_bad_row(tmp_path, scheduler):
    folder = tmp_path / 'pq'
    folder.mkdir()
    xs = [[0.5, 1.5, 2.5], [3.5, -1.0]]
    for k, chunk in enumerate(xs):
        pq.write_table(pa.table({'x': chunk, 'y': [1.0] * len(chunk)}), folder / f'p{k}.parquet')
    out = tmp_path / 'out'
    code, _, err = run_main(['eval', 'x*y + 1', '--points', str(folder), '--engine', 'dask',
                             '--scheduler', scheduler, '-o', str(out)])
    assert code == 0, err
    back = [pq.read_table(out / p).to_pylist() for p in sorted(os.listdir(out))]
    assert [r['value'] for part in back for r in part] == [x * 1.0 + 1 for c in xs for x in c]
    # A bad cell: nothing is written, one line says where.
    pq.write_table(pa.table({'x': ['1', 'oops'], 'y': ['1', '2']}), folder / 'p9.parquet')
    bad_out = tmp_path / 'bad'
    code, _, err = run_main(['eval', 'x*y', '--points', str(folder), '--engine', 'dask',
                             '--scheduler', scheduler, '-o', str(bad_out)])
    assert code == 2 and "'x' is 'oops', not a number" in err and len(err.splitlines()) == 1
    assert not bad_out.exists() and not [n for n in os.listdir(tmp_path) if n.startswith('.bad')]


def test_refusals(tmp_path):
    code, _, err = run_main(['eval', 'x', '--points', str(tmp_path / '*.csv'), '--engine', 'dask',
                             '-o', str(tmp_path / 'o')])
    assert code == 2 and 'matches no file' in err
    (tmp_path / 'a.csv').write_text('x\n1\n')
    code, _, err = run_main(['eval', 'x', '--points', str(tmp_path / 'a.csv'), '--engine', 'dask'])
    assert code == 2 and 'give -o DIR' in err
