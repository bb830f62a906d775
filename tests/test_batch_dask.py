"""--engine dask on a LocalCluster of 2 workers: row for row the single-process batch."""

import csv
import io
import os
import subprocess
import sys

import pytest

from tests.helpers import run_main

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
    assert 'not finite in' in err  # log(x) for x <= 0, counted over every file
    parts = sorted(os.listdir(out))
    assert parts == ['part-00000.csv', 'part-00001.csv', 'part-00002.csv']
    got = [_rows((out / p).read_text()) for p in parts]
    header = got[0][0]
    assert all(g[0] == header for g in got)
    single = _rows(run_main(['grad', EXPR, '--points', str(whole)])[1])
    assert single[0] == header and [r for g in got for r in g[1:]] == single[1:]
    bad = [line for line in run_main(['grad', EXPR, '--points', str(whole)])[2].splitlines()]
    assert bad == err.splitlines()  # the same warning, the same counts
    strict = tmp_path / 'strict'
    code, _, err = run_main(['grad', EXPR, '--points', str(folder), '--engine', 'dask',
                             '--scheduler', scheduler, '-o', str(strict), '--strict'])
    assert code == 1 and 'not finite in' in err and not strict.exists()


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
    code, _, err = run_main(['eval', 'x', '--points', '-', '--engine', 'dask', '-o',
                             str(tmp_path / 'o')])
    assert code == 2 and 'not standard input' in err
    (tmp_path / 'lines').mkdir()
    (tmp_path / 'lines' / 'a.jsonl').write_text('{"x": 1}\n')
    code, _, err = run_main(['eval', 'x', '--points', str(tmp_path / 'lines'), '--engine', 'dask',
                             '-o', str(tmp_path / 'o')])
    assert code == 2 and 'reads no JSON Lines' in err


# Rows the single process refuses, each in one file of a folder whose other
# file is good: the dask run refuses them with the single process's own
# message, naming the file and line, and writes nothing.
MALFORMED = [
    ('x,y\n1,0\n2,1,7\n', 'line 3: 3 fields where the header has 2'),
    ('x,y\n1,0\n2\n', 'line 3: 1 fields where the header has 2'),
    ('x,y\n1,0\n"2,1\n3,0\n', 'line 3: a quoted field opens here and is never closed'),
    ('x,y\n1,oops\n', "line 2: 'y' is 'oops', not a number"),
    ('x,z\n1,0\n', "no value for 'y'"),
]


@pytest.mark.parametrize('text, message', MALFORMED)
def test_a_bad_file_is_refused_as_the_single_process_refuses_it(tmp_path, scheduler, text,
                                                                  message):
    folder = tmp_path / 'in'
    folder.mkdir()
    (folder / 'a.csv').write_text('x,y\n1,2\n3,4\n')
    (folder / 'b.csv').write_text(text)
    single = run_main(['eval', 'x*y', '--points', str(folder / 'b.csv')])
    code, stdout, err = run_main(['eval', 'x*y', '--points', str(folder), '--engine', 'dask',
                                  '--scheduler', scheduler, '-o', str(tmp_path / 'out')])
    assert single.code == code == 2 and stdout == ''
    assert err == single.err or err == f'adgrad: error: {folder / "b.csv"}: ' + \
        single.err.removeprefix('adgrad: error: ')
    assert message in err and str(folder / 'b.csv') in err and len(err.splitlines()) == 1
    assert os.listdir(tmp_path) == ['in']   # no DIR, no temporary folder beside it


def test_each_part_is_what_the_single_process_writes_for_its_file(tmp_path, scheduler):
    folder = tmp_path / 'in'
    folder.mkdir()
    # spaces around names, quoted commas and line breaks, a BOM, blank lines, odd numbers
    files = {'a.csv': '\ufeffx , y ,label\n1e3, 2 ,"a, b"\n\n-0,inf,"two\nlines"\n',
             'b.csv': 'x,y,label\n1_000,007,c\n',
             'c.tsv': 'x\ty\n0.5\t-2\n'}
    for name, text in files.items():
        (folder / name).write_text(text, encoding='utf-8')
    out = tmp_path / 'out'
    code, _, err = run_main(['grad', 'x*y + sin(x)', '--points', str(folder), '--engine', 'dask',
                             '--scheduler', scheduler, '-o', str(out), '--format', 'csv'])
    assert code == 0, err
    for k, name in enumerate(sorted(files)):
        alone = run_main(['grad', 'x*y + sin(x)', '--points', str(folder / name), '--format',
                          'csv'])
        assert (out / f'part-{k:05d}.csv').read_text(encoding='utf-8') == alone.out


def test_a_local_cluster_says_a_bad_row_in_one_line(tmp_path):
    """Without --scheduler adgrad starts its own cluster, whose workers' logs
    (a task's traceback) must not reach the user's stderr."""
    folder = tmp_path / 'in'
    folder.mkdir()
    (folder / 'a.csv').write_text('x\n1\noops\n')
    scratch = tmp_path / 'tmp'
    scratch.mkdir()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # this checkout's adgrad
    done = subprocess.run([sys.executable, '-m', 'autodiff_cli', 'eval', '2*x', '--points',
                           str(folder), '--engine', 'dask', '-o', str(tmp_path / 'out')],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, 'TMPDIR': str(scratch), 'PYTHONPATH': root})
    assert done.returncode == 2 and done.stdout == ''
    assert os.listdir(scratch) == []   # the workers' scratch space is gone too
    assert done.stderr == f"adgrad: error: {folder / 'a.csv'}: line 3: 'x' is 'oops', not a number\n"


def test_relative_paths_reach_workers_that_run_elsewhere(tmp_path, scheduler, monkeypatch):
    """The fixture's workers run in pytest's folder, not in tmp_path."""
    monkeypatch.chdir(tmp_path)
    os.mkdir('in')
    with open('in/a.csv', 'w') as f:
        f.write('x,y\n1,2\n')
    code, _, err = run_main(['eval', 'x*y', '--points', 'in', '--engine', 'dask',
                             '--scheduler', scheduler, '-o', 'out'])
    assert code == 0, err
    assert open('out/part-00000.csv').read() == 'x,y,value\n1,2,2.0\n'
    with open('in/b.csv', 'w') as f:
        f.write('x,y\n1,oops\n')
    code, _, err = run_main(['eval', 'x*y', '--points', 'in/*.csv', '--engine', 'dask',
                             '--scheduler', scheduler, '-o', 'out2'])
    assert code == 2 and err == "adgrad: error: in/b.csv: line 2: 'y' is 'oops', not a number\n"


def test_of_several_bad_files_the_first_in_order_is_named(tmp_path, scheduler):
    folder = tmp_path / 'in'
    folder.mkdir()
    (folder / 'a.csv').write_text('x\n1\n' + '2\n' * 20000 + 'late\n')   # found last
    (folder / 'b.csv').write_text('x\nsoon\n')
    (folder / 'c.csv').write_text('x\n1\n')
    for _ in range(3):
        code, _, err = run_main(['eval', '2*x', '--points', str(folder), '--engine', 'dask',
                                 '--scheduler', scheduler, '-o', str(tmp_path / 'out')])
        assert code == 2 and err == (f"adgrad: error: {folder / 'a.csv'}: line 20003: 'x' is "
                                     "'late', not a number\n")


def test_a_folder_of_other_files(tmp_path):
    (tmp_path / 'README.txt').write_text('hello\n')
    code, _, err = run_main(['eval', 'x', '--points', str(tmp_path), '--engine', 'dask',
                             '-o', str(tmp_path / 'o')])
    assert code == 2 and err == (f"adgrad: error: --points '{tmp_path}' matches no .csv, .tsv "
                                 'or .parquet file\n')


def test_what_a_folder_or_glob_of_other_kinds_is_told(tmp_path, scheduler):
    mixed = tmp_path / 'mixed'
    mixed.mkdir()
    (mixed / 'a.csv').write_text('x\n1\n')
    (mixed / 'b.jsonl').write_text('{"x": 2}\n')
    code, _, err = run_main(['eval', '2*x', '--points', str(mixed), '--engine', 'dask',
                             '--scheduler', scheduler, '-o', str(tmp_path / 'out')])
    assert code == 0 and err == (f"adgrad: warning: --points '{mixed}': 1 JSON Lines file left "
                                 'out (--engine dask reads CSV, TSV and Parquet)\n')
    assert os.listdir(tmp_path / 'out') == ['part-00000.csv']
    code, _, err = run_main(['eval', '2*x', '--points', str(mixed / '*'), '--engine', 'dask',
                             '-o', str(tmp_path / 'o2')])
    assert code == 2 and err.endswith(f"files, not {mixed / 'b.jsonl'}\n")
    (tmp_path / 'afile').write_text('')
    code, _, err = run_main(['eval', '2*x', '--points', str(mixed), '--engine', 'dask',
                             '-o', str(tmp_path / 'afile')])
    assert code == 2 and err.endswith('the output is a folder, and this is a file\n')


def test_the_worker_preload_is_added_to_the_user_s_own():
    from autodiff_cli.table.dask_engine import worker_preload
    ours = 'autodiff_cli.cli.dask_worker'
    settings = {'distributed.worker.preload': ['mine'], 'distributed.worker.preload-argv': [['-v']]}
    assert worker_preload(lambda key, default=None: settings.get(key, default), ours) == {
        'distributed.worker.preload': ['mine', ours],
        'distributed.worker.preload-argv': [['-v'], []]}
    assert worker_preload(lambda key, default=None: {'distributed.worker.preload': 'one'}.get(
        key, default), ours) == {'distributed.worker.preload': ['one', ours]}
    assert worker_preload(lambda key, default=None: default, ours) == {
        'distributed.worker.preload': [ours]}
    assert worker_preload(lambda key, default=None: settings.get(key, default), None) == {}


def _in_a_group_of_its_own(args, **env):
    """This checkout's adgrad as a process group of its own, with Python's
    own Ctrl-C (not pytest's), so that os.killpg signals it as a terminal
    signals the foreground group: adgrad, and every worker it starts."""
    import signal
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return subprocess.Popen(
        [sys.executable, '-m', 'autodiff_cli', *args], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
        env={**os.environ, 'PYTHONPATH': root, **env},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _skip_if_it_ended(process, why):
    """Skip when the run was over before the moment to interrupt it came; a
    run that failed is a failure, not a reason to skip."""
    if process.poll() is not None:
        _, stderr = process.communicate()
        assert process.returncode == 0, stderr
        pytest.skip(why)


@pytest.mark.skipif(sys.platform == 'win32', reason='process groups')
def test_ctrl_c_twice_while_parts_are_written_leaves_nothing(tmp_path):
    """SIGINT to the whole process group, as a terminal sends it, once the
    workers write parts, and again at once: exit 130, no DIR, no temporary
    folder beside it or in TMPDIR, and nothing on stderr."""
    import signal
    import time
    folder = tmp_path / 'in'
    folder.mkdir()
    rows = ''.join(f'{k % 97 * 0.01},{k % 89 * 0.02}\n' for k in range(200_000))
    for k in range(8):
        (folder / f'p{k}.csv').write_text('x,y\n' + rows)
    scratch = tmp_path / 'tmp'
    scratch.mkdir()
    process = _in_a_group_of_its_own(['grad', 'x*y + sin(x)', '--points', str(folder),
                                      '--engine', 'dask', '-o', str(tmp_path / 'out')],
                                     TMPDIR=str(scratch))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None and not any(
            name.startswith('part-') for temp in tmp_path.glob('.out.*')
            for name in os.listdir(temp)):
        time.sleep(0.02)
    _skip_if_it_ended(process, 'the run ended before the workers wrote a part')
    os.killpg(process.pid, signal.SIGINT)
    time.sleep(0.1)
    try:
        os.killpg(process.pid, signal.SIGINT)
    except ProcessLookupError:
        pass
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert (stdout, stderr) == ('', '')
    assert sorted(os.listdir(tmp_path)) == ['in', 'tmp'] and os.listdir(scratch) == []


def _spawned_workers(pid):
    """The worker processes a local cluster has spawned under `pid` so far (Linux)."""
    found = []
    for entry in os.listdir('/proc'):
        state = _process_state(entry)
        try:
            with open(f'/proc/{entry}/cmdline', 'rb') as f:
                command = f.read()
        except OSError:
            continue
        if state is not None and state[1] == pid and b'spawn_main' in command:
            found.append(int(entry))
    return found


def _process_state(pid):
    """(state letter, parent pid) of a process from /proc, or None once it is gone."""
    try:
        with open(f'/proc/{pid}/stat') as f:
            fields = f.read().rpartition(')')[2].split()
        return fields[0], int(fields[1])
    except (OSError, ValueError, IndexError):
        return None


@pytest.mark.skipif(not os.path.isdir('/proc/self'), reason='reads /proc')
def test_ctrl_c_while_the_local_cluster_starts_is_quiet(tmp_path):
    """SIGINT to the whole process group just as the workers are spawned,
    still importing Dask: it used to kill them with tracebacks and fail the
    start as exit 2 ('Nanny failed to start'). Now exit 130, nothing on
    stderr, no DIR, and no worker left running."""
    import signal
    import time
    folder = tmp_path / 'in'
    folder.mkdir()
    (folder / 'p0.csv').write_text('x,y\n1,2\n')
    process = _in_a_group_of_its_own(['grad', 'x*y', '--points', str(folder), '--engine', 'dask',
                                      '-o', str(tmp_path / 'out')])
    deadline = time.monotonic() + 60
    workers = []
    while time.monotonic() < deadline and process.poll() is None and not workers:
        workers = _spawned_workers(process.pid)
        time.sleep(0.005)
    _skip_if_it_ended(process, 'the run ended before a worker was spawned')
    os.killpg(process.pid, signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert (stdout, stderr) == ('', '')
    assert sorted(os.listdir(tmp_path)) == ['in']
    time.sleep(0.5)
    states = [_process_state(w) for w in workers]
    assert [s for s in states if s is not None and s[0] != 'Z'] == []


def test_a_scheduler_s_workers_get_the_allocator_tuning_of_the_command_line(tmp_path, scheduler):
    """A user's cluster has no preload of adgrad's: Client.run tunes each worker
    (a worker's untuned batch faults in fresh pages for every block's arrays)."""
    points = tmp_path / 'p.csv'
    points.write_text('x,y\n1,2\n3,4\n')
    code, _, err = run_main(['grad', 'x*y', '--points', str(points), '--engine', 'dask',
                             '--scheduler', scheduler, '-o', str(tmp_path / 'out')])
    assert code == 0, err
    with distributed.Client(scheduler) as client:
        tuned = client.run(_tuned)
    assert tuned and all(tuned.values()), tuned


def _tuned():
    from autodiff_cli.cli import batch
    return bool(batch._TUNED)


# ---- --sum and --mean: each file summed on its worker, the sums added here ----

def _write_parts(folder, sizes, seed=4):
    """CSV files of x,y rows, `sizes` rows each; returns every row, in order."""
    folder.mkdir()
    everything = []
    for k, n in enumerate(sizes):
        rows = [(x, y) for _, x, y in _points(n, seed + k)]
        everything += rows
        with open(folder / f'p{k}.csv', 'w', newline='') as f:
            csv.writer(f, lineterminator='\n').writerows([('x', 'y'), *rows])
    return everything


def _one_file(path, rows):
    with open(path, 'w', newline='') as f:
        csv.writer(f, lineterminator='\n').writerows([('x', 'y'), *rows])
    return str(path)


def test_mean_on_a_cluster_is_the_single_process_mean(tmp_path, scheduler):
    """Each file summed exactly on its worker, the sums added exactly: the mean
    is the single process's over the same rows to the bit, however the rows
    are split into files, and math.fsum's over each whole column."""
    import json
    import math
    expr = 'x*y + sin(x)'   # by hand: d_x = y + cos(x), d_y = x
    for k, sizes in enumerate([(4096, 8192, 300), (1000, 5001, 77, 3), (1,)]):
        rows = _write_parts(tmp_path / f'parts{k}', sizes)
        whole = _one_file(tmp_path / f'all{k}.csv', rows)
        spread = run_main(['grad', expr, '--points', str(tmp_path / f'parts{k}'),
                           '--engine', 'dask', '--scheduler', scheduler, '--mean'])
        single = run_main(['grad', expr, '--points', whole, '--mean'])
        assert spread.code == single.code == 0 and spread.err == single.err == ''
        assert spread.out == single.out, sizes
        got = json.loads(run_main(['grad', expr, '--points', whole, '--mean', '--json']).out)
        points = [(float(x), float(y)) for x, y in rows]
        exact = {'value': math.fsum(x * y + math.sin(x) for x, y in points),
                 'd_x': math.fsum(y + math.cos(x) for x, y in points),
                 'd_y': math.fsum(x for x, _ in points)}
        assert got['rows'] == len(points)
        for name, total in exact.items():
            assert got[name] == pytest.approx(total / len(points), rel=1e-15, abs=1e-15)


def test_sum_on_a_cluster_to_a_file_and_under_strict(tmp_path, scheduler):
    import json
    folder = tmp_path / 'pq'
    folder.mkdir()
    pq.write_table(pa.table({'x': [1.0, 2.0], 'y': [3.0, 4.0]}), folder / 'a.parquet')
    pq.write_table(pa.table({'x': [0.0], 'y': [5.0]}), folder / 'b.parquet')
    out = tmp_path / 'total.json'
    run = run_main(['grad', 'x*y + log(x)', '--points', str(folder), '--engine', 'dask',
                    '--scheduler', scheduler, '--sum', '-o', str(out)])
    assert run.code == 0 and run.out == ''
    assert run.err == ('adgrad: warning: log(x) (node 3) is not finite in 1 of 3 rows, '
                       'the first node where that happens\n')
    # by hand: value 3 + 8 + log 2 + (0 - inf); d_x 3 + 1 + 4 + 1/2 + (5 + inf); d_y 1 + 2 + 0
    assert json.loads(out.read_text()) == {'rows': 3, 'value': '-inf', 'd_x': 'inf', 'd_y': 3.0}
    strict = tmp_path / 'strict.json'
    run = run_main(['grad', 'x*y + log(x)', '--points', str(folder), '--engine', 'dask',
                    '--scheduler', scheduler, '--sum', '--strict', '-o', str(strict)])
    assert run.code == 1 and 'not finite in 1 of 3 rows' in run.err and not strict.exists()
