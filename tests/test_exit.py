"""The way out of a batch: a real Ctrl-C (SIGINT to the process) while rows
are computed and written is exit 130 with nothing on stderr and nothing
half-written, and what pyarrow opened is closed before the command returns."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Slow enough per row that the batch is still running when it is interrupted.
SLOW = '+'.join(f'sin({k}*x)*cos(x/{k})' for k in range(1, 41))


def _points(tmp_path, rows=600_000):
    path = tmp_path / 'p.csv'
    path.write_text('x\n' + ''.join(f'{k * 1e-5}\n' for k in range(rows)))
    return path


def _rows(path, ending):
    if ending == 'parquet':
        import pyarrow.parquet as pq
        return pq.ParquetFile(path).metadata.num_rows
    return path.read_bytes().count(b'\n') - 1


def _adgrad(args, **options):
    """This checkout's adgrad, with Python's own Ctrl-C (not an ignored one
    inherited from the test runner)."""
    return subprocess.Popen([sys.executable, '-m', 'autodiff_cli', *args],
                            env={**os.environ, 'PYTHONPATH': str(ROOT)}, cwd=ROOT,
                            stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
                            **options)


def _interrupted(process, ready):
    """SIGINT once ready() says the batch is under way; (exit code, stderr)."""
    deadline = time.monotonic() + 60
    while process.poll() is None and not ready() and time.monotonic() < deadline:
        time.sleep(0.01)
    if process.poll() is not None:
        _, err = process.communicate()
        assert process.returncode == 0, err
        pytest.skip('the batch ended before it could be interrupted')
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    return process.returncode, err.decode()


@pytest.mark.skipif(sys.platform == 'win32', reason='SIGINT')
def test_ctrl_c_while_rows_go_to_stdout_is_130_and_quiet(tmp_path):
    process = _adgrad(['grad', SLOW, '--points', str(_points(tmp_path))], stdout=subprocess.PIPE)
    first = []

    def ready():
        first.append(process.stdout.readline())   # the first pass is over: rows are written
        return True
    code, err = _interrupted(process, ready)
    assert (code, err) == (130, '')
    assert first[0] == b'x,value,d_x\n'


@pytest.mark.skipif(sys.platform == 'win32', reason='SIGINT')
@pytest.mark.parametrize('ending', ['csv', 'parquet'])
def test_ctrl_c_while_rows_go_to_a_file_is_130_and_leaves_nothing(tmp_path, ending):
    pytest.importorskip('pyarrow')
    points = _points(tmp_path)
    target = tmp_path / f'out.{ending}'

    def ready():   # the temporary file beside the target has rows in it
        return any(p.name.startswith('.out.') and p.stat().st_size > 0
                   for p in tmp_path.iterdir())
    process = _adgrad(['grad', SLOW, '--points', str(points), '-o', str(target)],
                      stdout=subprocess.DEVNULL)
    code, err = _interrupted(process, ready)
    if code in (130, -signal.SIGINT) and err == '' and target.exists():
        # The signal came as the command renamed its whole output into place
        # (a fast machine's last block), or in the exit after it. Whole, then.
        assert _rows(target, ending) == 600_000
        pytest.skip('the batch ended before the signal arrived')
    assert (code, err) == (130, '')
    assert sorted(p.name for p in tmp_path.iterdir()) == ['p.csv']


def test_a_parquet_source_is_closed_when_a_bad_row_stops_the_batch(tmp_path, run_cli,
                                                                   monkeypatch):
    pa = pytest.importorskip('pyarrow')
    import pyarrow.parquet as pq

    from autodiff_cli.table import sources as points
    cells = [str(k) for k in range(200_000)]
    cells[150_000] = 'abc'   # past the first chunk: the reader is mid-file
    pq.write_table(pa.table({'x': cells}), tmp_path / 'p.parquet', row_group_size=50_000)
    opened = []
    init = points.ParquetSource.__init__

    def recorded(self, *args):
        init(self, *args)
        opened.append(self)
    monkeypatch.setattr(points.ParquetSource, '__init__', recorded)
    for output in ([], ['-o', str(tmp_path / 'out.csv')]):
        opened.clear()
        code, _, err = run_cli('grad', 'x^2', '--points', str(tmp_path / 'p.parquet'), *output)
        assert code == 2 and "row 150001: 'x' is 'abc', not a number" in err
        assert opened and all(source.file.closed for source in opened)


def test_the_allocator_is_tuned_by_a_batch_on_the_command_line_only(tmp_path, run_cli,
                                                                   monkeypatch):
    from autodiff_cli.cli import batch as batch_options
    from autodiff_cli.core.batch import run_batch
    from autodiff_cli.language.lower import lower
    calls = []
    monkeypatch.setattr(batch_options, 'tune_allocator', lambda: calls.append(True))
    assert run_cli('grad', 'x*y', 'x=2', 'y=3')[0] == 0
    run_batch(lower('x*y'), {'x': 2.0, 'y': 3.0}, 4, ['x'])   # the library, as a caller uses it
    assert calls == []
    points = tmp_path / 'p.csv'
    points.write_text('x,y\n1,2\n3,4\n')
    assert run_cli('grad', 'x*y', '--points', str(points))[0] == 0
    assert calls == [True]


@pytest.mark.parametrize('to_file', [False, True])
def test_ctrl_c_inside_reading_a_chunk_waits_for_the_chunk_boundary(tmp_path, run_cli,
                                                                   monkeypatch, to_file):
    """A Ctrl-C that lands while a chunk is read (where pyarrow is imported on
    first use: an import cut short leaves the module half made, and the
    process died by SIGINT in its exit) lets the reading finish; the batch
    stops at the next boundary, 130, with nothing written."""
    from autodiff_cli.table import sources
    points = tmp_path / 'p.csv'
    points.write_text('x\n' + ''.join(f'{k}\n' for k in range(3 * sources.CHUNK_ROWS)))
    columns, finished = sources.Chunk.columns, []

    def interrupted_midway(chunk, *args):
        signal.raise_signal(signal.SIGINT)   # as a terminal's Ctrl-C, in this thread
        finished.append(True)                # not reached if it raised here
        return columns(chunk, *args)
    monkeypatch.setattr(sources.Chunk, 'columns', interrupted_midway)
    output = ['-o', str(tmp_path / 'out.csv')] if to_file else []
    code, out, err = run_cli('grad', 'x^2', '--points', str(points), *output)
    assert (code, err) == (130, '')
    assert finished == [True]   # one chunk read whole, then the stop
    assert sorted(p.name for p in tmp_path.iterdir()) == ['p.csv']
    assert out == ''


def test_a_second_ctrl_c_stops_at_once(tmp_path, run_cli, monkeypatch):
    """The first Ctrl-C waits for the chunk boundary; a second one before it
    does not (a read of a terminal would wait for input until then)."""
    from autodiff_cli.table import sources
    points = tmp_path / 'p.csv'
    points.write_text('x\n' + ''.join(f'{k}\n' for k in range(3 * sources.CHUNK_ROWS)))
    columns, between = sources.Chunk.columns, []

    def interrupted_twice(chunk, *args):
        signal.raise_signal(signal.SIGINT)
        between.append(True)                 # the first one waits
        signal.raise_signal(signal.SIGINT)
        between.append(True)                 # not reached: the second one stops here
        return columns(chunk, *args)
    monkeypatch.setattr(sources.Chunk, 'columns', interrupted_twice)
    code, out, err = run_cli('grad', 'x^2', '--points', str(points), '-o', str(tmp_path / 'o.csv'))
    assert (code, out, err) == (130, '', '')
    assert between == [True]
    assert sorted(p.name for p in tmp_path.iterdir()) == ['p.csv']
