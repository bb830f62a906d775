"""The batch figures of benchmarks/run.py: --points streamed in chunks.

    python benchmarks/batches.py generate ROWS > points.csv    x1,x2,y rows for samples/logistic.ad
    python benchmarks/batches.py generate ROWS wide > wide.csv the same among 22 columns, a quoted label first

Every figure runs the installed adgrad as a subprocess (peak memory is its
maximum resident set size). Comparisons are measured side by side, in
alternating rounds, and reported as ratios:
- the batch core against hand-written NumPy (in-process, child.py);
- CSV in to CSV out with pyarrow's reader against the pure-Python path (the
  same adgrad with pyarrow made unimportable), 10^6 and 10^7 rows, and 10^6
  rows of another shape: 22 columns, the first a quoted label holding a
  comma and a doubled quote (issue 13 is checked with such files);
- JSON Lines and JSON output against CSV output of the same 10^6 rows;
- 10^8 rows generated on the fly into a pipe (`adgrad grad --points -`);
- --engine dask on a 2-worker local cluster over 10 Parquet files against
  the single-process stream of the same rows in one Parquet file;
- --points FILE --mean (one row of totals) against --points FILE to
  /dev/null, 10^7 rows; and --mean over 10^8 rows generated into a pipe
  (opt-in: `run.py --only mean_pipe`, being long).
"""

import filecmp
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
LOGISTIC = ROOT / 'samples' / 'logistic.ad'

# (full, quick) sizes
SIZES = {'rows': (1_000_000, 1000), 'big': (10_000_000, 5000), 'pipe': (100_000_000, 20_000),
         'dask': (10_000_000, 4000), 'mean': (10_000_000, 5000), 'rounds': (3, 1)}

# adgrad with pyarrow unimportable: the pure-Python reader, for the side-by-side ratio
WITHOUT_PYARROW = [sys.executable, '-c', "import sys; sys.modules['pyarrow'] = None; "
                   "from autodiff_cli.cli.main import main; sys.exit(main())"]


EXTRA = 18   # columns besides the label and the variables, in the wide shape


def generate(rows, out, seed=5, block=100_000, wide=False):
    """x1,x2,y rows of the logistic sample: a block of random rows, repeated.
    Wide: label,x1,x2,y,c0,...,c17, the label quoted, with a comma and a
    doubled quote inside (the text  point 7, "b"  in CSV's quoting), the
    other columns numbers."""
    import random
    rng = random.Random(seed)

    def row(k):
        text = f'{rng.gauss(0, 1)!r},{rng.gauss(0, 1)!r},{rng.randint(0, 1)}'
        if wide:
            text = (f'"point {k}, ""{"ab"[k % 2]}""",{text},'
                    + ','.join(f'{rng.uniform(-9, 9):.6f}' for _ in range(EXTRA)))
        return text + '\n'
    lines = ''.join(row(k) for k in range(min(rows, block))).encode()
    out.write((f'label,x1,x2,y,{",".join(f"c{k}" for k in range(EXTRA))}\n' if wide
               else 'x1,x2,y\n').encode())
    done = 0
    while done < rows:
        n = min(block, rows - done)
        out.write(lines if n == block else b''.join(lines.splitlines(True)[:n]))
        done += n
    out.flush()


def parquet_files(rows, files, folder, one):
    """`files` Parquet files of `rows` logistic rows in `folder`, and all of
    them in the file `one`. Run in a child process (see Batches.dask): built
    in the harness, these tables would swell it, and every later child would
    report the harness's peak as its own (subprocess starts a child with
    vfork, in the harness's memory, whose high-water mark ru_maxrss keeps
    through the exec)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    rng = np.random.default_rng(5)
    os.makedirs(folder, exist_ok=True)
    for k in range(files):
        n = rows // files + (k < rows % files)
        table = pa.table({'x1': rng.normal(size=n), 'x2': rng.normal(size=n),
                          'y': (rng.random(n) < 0.5).astype(np.float64)})
        pq.write_table(table, os.path.join(folder, f'part-{k:02d}.parquet'))
    pq.write_table(pq.read_table(folder), one)


def _peak_mb(usage):
    return usage.ru_maxrss / (1024 * 1024 if sys.platform == 'darwin' else 1024)


def _finish(child, start, err=b''):
    """(wall seconds, peak MB, CPU seconds: user + sys) of a child once it exits."""
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f'{child.args[0]} failed: {err.decode(errors="replace")[-300:]}')
    return seconds, _peak_mb(usage), usage.ru_utime + usage.ru_stime


def run_timed(command, stdout_path):
    """(wall seconds, peak MB, CPU seconds) of `command > stdout_path`. CPU time
    is what the figure costs on a loaded machine, where wall time is mostly
    waiting for a core."""
    with open(stdout_path, 'wb') as out:
        start = time.perf_counter()
        child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out,
                                 stderr=subprocess.PIPE)
        err = child.stderr.read()
        return _finish(child, start, err)


def run_pipe(producer, consumer):
    """(seconds, consumer's peak MB, its CPU seconds): producer | consumer > /dev/null."""
    with open(os.devnull, 'wb') as sink:
        start = time.perf_counter()
        first = subprocess.Popen(producer, stdout=subprocess.PIPE)
        second = subprocess.Popen(consumer, stdin=first.stdout, stdout=sink,
                                  stderr=subprocess.PIPE)
        first.stdout.close()
        err = second.stderr.read()
        result = _finish(second, start, err)
        if first.wait() != 0:
            raise RuntimeError('the generator of the pipe failed')
    return result


def _spread(xs):
    return f'best {min(xs):.2f} s, median {statistics.median(xs):.2f} s'


class Batches:
    def __init__(self, bench, figure, run_process, run_child, seconds, verdict):
        self.bench, self.Figure, self.run_process = bench, figure, run_process
        self.run_child, self.seconds, self.verdict = run_child, seconds, verdict
        quick = bench.sizes['batch_rows'] < 1_000_000
        self.size = {k: v[1] if quick else v[0] for k, v in SIZES.items()}
        if 'batch_rounds' in bench.sizes:  # --against repeats the whole figure instead
            self.size['rounds'] = bench.sizes['batch_rounds']
        self.dir = bench.dir

    def log(self, message):
        self.bench.log(message)

    def csv_file(self, rows, wide=False):
        path = self.dir / f'logistic-{rows}{"-wide" if wide else ""}.csv'
        if not path.exists():
            with open(path, 'wb') as f:
                generate(rows, f, wide=wide)
        return path

    # ---- the figures ----

    def core(self):
        rows = self.size['rows']
        name = (f'batch: gradient of samples/logistic.ad at {rows:,} points, '
                'compute core ÷ hand-written NumPy')
        reps, ours_s, theirs_s = 5, [], []
        for _ in range(self.size['rounds'] + 2):
            ours = self.run_child('batch-logistic', LOGISTIC, rows, reps)
            theirs = self.run_child('numpy-logistic', rows, reps)
            ours_s += ours['seconds']
            theirs_s += theirs['seconds']
        a, b = min(ours_s), min(theirs_s)
        ma, mb = statistics.median(ours_s), statistics.median(theirs_s)
        agree = all(abs(ours['gradient'][k] - v) <= 1e-6 * max(1.0, abs(v))
                    for k, v in theirs['gradient'].items())
        return self.Figure(
            name, f'{a / b:.2f}× best ({self.seconds(a)} ÷ {self.seconds(b)}); '
                  f'{ma / mb:.2f}× median', '≤ 1.2×', self.verdict(a / b <= 1.2),
            f'`python benchmarks/child.py batch-logistic samples/logistic.ad {rows} {reps}` '
            f'against `python benchmarks/child.py numpy-logistic {rows} {reps}`, alternating '
            'rounds: every input\'s gradient at every point, arrays in memory; best and '
            f'median of {len(ours_s)} repetitions each; sums of the gradients '
            f'{"agree" if agree else "DIFFER"}.', {'÷ NumPy, best': a / b})

    def csv(self, rows, target_s, target_mb=None, rounds=None, wide=False):
        path = self.csv_file(rows, wide)
        out = self.dir / 'points-out.csv'
        ours = self.bench.adgrad + ['grad', '-f', str(LOGISTIC), '--points', str(path)]
        pure = WITHOUT_PYARROW + ['grad', '-f', str(LOGISTIC), '--points', str(path)]
        runs = {'ours': [], 'pure': []}
        for _ in range(rounds or self.size['rounds']):
            runs['ours'].append(run_timed(ours, out))
            runs['pure'].append(run_timed(pure, self.dir / 'points-pure.csv'))
        # compared a block at a time: read whole, the outputs would swell this
        # process, and every child forked from it starts that big (ru_maxrss)
        same = filecmp.cmp(out, self.dir / 'points-pure.csv', shallow=False)
        wall = {k: [r[0] for r in v] for k, v in runs.items()}
        cpu = {k: [r[2] for r in v] for k, v in runs.items()}
        peak = {k: max(r[1] for r in v) for k, v in runs.items()}
        t, pt = min(wall['ours']), min(wall['pure'])
        ok = t <= target_s and (target_mb is None or peak['ours'] <= target_mb)
        target = f'≤ {target_s:g} s' + (f', ≤ {target_mb} MB' if target_mb else '')
        shape = f' of {EXTRA + 4} columns with quoted labels' if wide else ''
        generated = f'{rows}{" wide" if wide else ""} > {path.name}'
        columns = (f'columns label (quoted, with a comma and a doubled quote), x1, x2, y and '
                   f'{EXTRA} more numbers, all passed through' if wide else 'columns x1, x2, y')
        return self.Figure(
            f'batch: CSV in to CSV out, {rows:,} rows{shape}, whole process',
            f'{self.seconds(t)} best, {self.seconds(statistics.median(wall["ours"]))} median; '
            f'CPU {_spread(cpu["ours"])}; peak {peak["ours"]:.0f} MB (pure-Python path: '
            f'{self.seconds(pt)} best, CPU {_spread(cpu["pure"])}, {peak["pure"]:.0f} MB; '
            f'wall ratio {t / pt:.2f})', target, self.verdict(ok),
            f'`adgrad grad -f samples/logistic.ad --points {path.name} > out.csv` '
            f'(`python benchmarks/batches.py generate {generated}`: {columns}; '
            'all seven gradients out) with pyarrow installed (`pip install '
            "'adgrad[parquet]'`), against the same command with pyarrow made unimportable; "
            f'alternating rounds, wall {", ".join(f"{x:.2f}" for x in wall["ours"])} s and '
            f'{", ".join(f"{x:.2f}" for x in wall["pure"])} s; CPU (user + sys) '
            f'{", ".join(f"{x:.2f}" for x in cpu["ours"])} s and '
            f'{", ".join(f"{x:.2f}" for x in cpu["pure"])} s; outputs '
            f'{"byte-identical" if same else "DIFFER"}. Stdout is a file, so the rows are '
            'read twice (a checking pass, then the written one; the first keeps up to 32 MiB '
            'of parsed columns for the second). On a loaded machine wall time is mostly '
            'waiting for a core: CPU time is the steadier figure.',
            {'s, best': t, 'MB': peak['ours']})

    def formats(self, target=1.5):
        rows = self.size['rows']
        path = self.csv_file(rows)
        command = self.bench.adgrad + ['grad', '-f', str(LOGISTIC), '--points', str(path),
                                       '--format']
        wall = {'csv': [], 'jsonl': [], 'json': []}
        for _ in range(self.size['rounds']):
            for fmt, times in wall.items():
                times.append(run_timed(command + [fmt], self.dir / f'formats-out.{fmt}')[0])
        lines = {fmt: _count_lines(self.dir / f'formats-out.{fmt}') for fmt in wall}
        # a header line in CSV, brackets on lines of their own in JSON
        whole = lines == {'csv': rows + 1, 'jsonl': rows, 'json': rows + 2}
        best = {fmt: min(times) for fmt, times in wall.items()}
        jsonl, json = best['jsonl'] / best['csv'], best['json'] / best['csv']
        return self.Figure(
            f'batch: JSON Lines and JSON output ÷ CSV output, {rows:,} rows, whole process',
            f'JSON Lines {jsonl:.2f}×, JSON {json:.2f}× ({self.seconds(best["jsonl"])} and '
            f'{self.seconds(best["json"])} ÷ {self.seconds(best["csv"])})',
            f'≤ {target}× each', self.verdict(jsonl <= target and json <= target),
            f'`adgrad grad -f samples/logistic.ad --points {path.name} --format FMT > out` '
            f'(`python benchmarks/batches.py generate {rows} > {path.name}`) for FMT csv, jsonl '
            'and json, in turn within each round; best wall time of '
            + '; '.join(f'{fmt} {", ".join(f"{x:.2f}" for x in times)} s'
                        for fmt, times in wall.items())
            + f'; line counts {"as expected" if whole else f"WRONG: {lines}"}.',
            {'JSON Lines ÷ CSV': jsonl, 'JSON ÷ CSV': json})

    def pipe(self):
        rows = self.size['pipe']
        producer = [sys.executable, str(HERE / 'batches.py'), 'generate', str(rows)]
        consumer = self.bench.adgrad + ['grad', '-f', str(LOGISTIC), '--points', '-']
        t, peak, cpu = run_pipe(producer, consumer)
        return self.Figure(
            f'batch: {rows:,} rows generated into a pipe, `adgrad grad --points -`',
            f'{self.seconds(t)} (CPU {cpu:.1f} s), peak {peak:.0f} MB', '≤ 500 MB',
            self.verdict(peak <= 500),
            f'`python benchmarks/batches.py generate {rows} | adgrad grad -f '
            'samples/logistic.ad --points - > /dev/null`, once; peak is adgrad\'s maximum '
            'resident set. Standard input cannot be read twice, so adgrad copies it to a '
            'temporary file during its checking pass (disk: about 45 bytes a row).',
            {'s': t, 'MB': peak})

    def mean(self, target=1.2, target_mb=300):
        """--points FILE --mean (read once, one row out) ÷ --points FILE to /dev/null."""
        rows = self.size['mean']
        path = self.csv_file(rows)
        command = self.bench.adgrad + ['grad', '-f', str(LOGISTIC), '--points', str(path)]
        out = self.dir / 'mean-out.csv'
        runs = {'mean': [], 'rows': []}
        for k in range(self.size['rounds']):
            for name in (('mean', 'rows') if k % 2 == 0 else ('rows', 'mean')):
                runs[name].append(run_timed(command + ['--mean'], out) if name == 'mean' else
                                  run_timed(command, os.devnull))
        with open(out, encoding='utf-8') as f:
            counted = f.read().splitlines()[1].split(',')[0] == str(rows)
        wall = {k: [r[0] for r in v] for k, v in runs.items()}
        peak = {k: max(r[1] for r in v) for k, v in runs.items()}
        a, b = min(wall['mean']), min(wall['rows'])
        return self.Figure(
            f'batch: `--points --mean` over {rows:,} rows ÷ `--points` to /dev/null, whole process',
            f'{a / b:.2f} ({self.seconds(a)} ÷ {self.seconds(b)}), peak {peak["mean"]:.0f} MB '
            f'(--points: {peak["rows"]:.0f} MB)', f'≤ {target}, ≤ {target_mb} MB',
            self.verdict(a / b <= target and peak['mean'] <= target_mb and counted),
            f'`adgrad grad -f samples/logistic.ad --points {path.name} --mean` against '
            f'`adgrad grad -f samples/logistic.ad --points {path.name} > /dev/null` '
            f'(`python benchmarks/batches.py generate {rows} > {path.name}`), alternating which '
            f'goes first; wall times of {", ".join(f"{x:.2f}" for x in wall["mean"])} s and '
            f'{", ".join(f"{x:.2f}" for x in wall["rows"])} s; the row counts '
            f'{"all" if counted else "NOT all"} the rows. --mean reads the file once and keeps '
            'only a total per column; --points to /dev/null reads it twice (a checking pass, '
            'then the written one).', {'÷ --points': a / b, 'MB': peak['mean']})

    def mean_pipe(self, target_mb=300):
        rows = self.size['pipe']
        producer = [sys.executable, str(HERE / 'batches.py'), 'generate', str(rows)]
        consumer = self.bench.adgrad + ['grad', '-f', str(LOGISTIC), '--points', '-', '--mean']
        t, peak, cpu = run_pipe(producer, consumer)
        return self.Figure(
            f'batch: `--points - --mean` over {rows:,} rows generated into a pipe',
            f'{self.seconds(t)} (CPU {cpu:.1f} s), peak {peak:.0f} MB',
            f'completes, ≤ {target_mb} MB', self.verdict(peak <= target_mb),
            f'`python benchmarks/batches.py generate {rows} | adgrad grad -f '
            'samples/logistic.ad --points - --mean > /dev/null`, once (opt-in: `python '
            'benchmarks/run.py --only mean_pipe`); peak is adgrad\'s maximum resident set. '
            'The pipe is read once, with no copy to a temporary file.', {'s': t, 'MB': peak})

    def dask(self):
        rows = self.size['dask']
        # Looked for, not imported: the harness stays small, or every later
        # child would report its size (see parquet_files).
        from importlib.util import find_spec
        if find_spec('dask') is None or find_spec('pyarrow') is None:
            return self.Figure('batch: --engine dask, 2-worker local cluster ÷ single process',
                               'skipped: dask or pyarrow is not installed', '≤ 1.3×', 'n/a', '')
        folder, one = self.dir / 'parquet-parts', self.dir / 'all.parquet'
        if not one.exists():
            subprocess.run([sys.executable, str(HERE / 'batches.py'), 'parquet', str(rows),
                            str(folder), str(one)], check=True)
        single = self.bench.adgrad + ['grad', '-f', str(LOGISTIC), '--points', str(one),
                                      '-o', str(self.dir / 'single-out.parquet')]
        scheduler, cluster = _local_cluster(2)
        try:
            spread, alone = [], []
            for k in range(self.size['rounds']):
                out = self.dir / f'dask-out-{k}'
                # -o refuses a folder that exists, and --against runs this again
                shutil.rmtree(out, ignore_errors=True)
                command = self.bench.adgrad + [
                    'grad', '-f', str(LOGISTIC), '--points', str(folder), '--engine', 'dask',
                    '--scheduler', scheduler, '-o', str(out)]
                spread.append(self.run_process(command)[0])
                alone.append(self.run_process(single)[0])
        finally:
            _stop(cluster)
        a, b = statistics.median(spread), statistics.median(alone)
        return self.Figure(
            f'batch: --engine dask on a 2-worker local cluster ÷ single process, {rows:,} rows '
            'of Parquet',
            f'{a / b:.2f} ({self.seconds(a)} ÷ {self.seconds(b)})', '≤ 1.3×',
            self.verdict(a / b <= 1.3),
            f'`adgrad grad -f samples/logistic.ad --points parquet-parts --engine dask '
            '--scheduler ADDRESS -o DIR` over 10 Parquet files (a LocalCluster of two '
            'single-thread worker processes, started once before the rounds) against '
            '`adgrad grad -f samples/logistic.ad --points all.parquet -o out.parquet` on the '
            f'same rows in one file; alternating, medians of '
            f'{", ".join(f"{x:.2f}" for x in spread)} s and '
            f'{", ".join(f"{x:.2f}" for x in alone)} s.', {'÷ single process': a / b})


def _count_lines(path):
    # a block at a time: the harness stays small (see parquet_files)
    with open(path, 'rb') as f:
        return sum(block.count(b'\n') for block in iter(lambda: f.read(1 << 20), b''))


def _local_cluster(workers):
    """A scheduler and `workers` single-thread workers as one background process,
    which closes them when its stdin closes; (address, process)."""
    code = ('import sys\nfrom dask.distributed import LocalCluster\n'
            f'c = LocalCluster(n_workers={workers}, threads_per_worker=1, '
            'dashboard_address=None)\nprint(c.scheduler_address, flush=True)\n'
            'sys.stdin.read()\nc.close()\n')
    process = subprocess.Popen([sys.executable, '-c', code], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    address = process.stdout.readline().strip()
    if not address:
        _stop(process)
        raise RuntimeError('the local Dask cluster did not start')
    return address, process


def _stop(cluster):
    cluster.stdin.close()
    try:
        cluster.wait(timeout=120)
    except subprocess.TimeoutExpired:
        cluster.kill()
        cluster.wait()


def figures(bench, figure, run_process, run_child, seconds, verdict):
    b = Batches(bench, figure, run_process, run_child, seconds, verdict)
    rows = []
    for make in (b.core, lambda: b.csv(b.size['rows'], 1.0),
                 lambda: b.csv(b.size['rows'], 1.0, wide=True), b.formats,
                 lambda: b.csv(b.size['big'], 10.0, 300, rounds=1)):
        try:
            rows.append(make())
        except RuntimeError as error:
            rows.append(figure('batch', f'not available: {error}', '', 'n/a', ''))
        b.log(f'  {rows[-1].measured}')
    return rows


if __name__ == '__main__':
    if sys.argv[1:2] == ['generate']:
        generate(int(sys.argv[2]), sys.stdout.buffer, wide=sys.argv[3:4] == ['wide'])
    elif sys.argv[1:2] == ['parquet']:
        parquet_files(int(sys.argv[2]), 10, sys.argv[3], sys.argv[4])
    else:
        raise SystemExit(__doc__)
