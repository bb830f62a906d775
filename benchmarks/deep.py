"""Issue 29's figures: deep loops, the memory of the backward pass, checkpointing.

    python benchmarks/deep.py [--quick]

Prints one line per figure, which run.py reads back:
- a 100-layer tanh MLP, 256 wide, written as a loop over stacked W[100, 256,
  256] and b[100, 256], its loss over `--data` of 10,000 rows: the whole
  `adgrad grad` process, plain, with `--checkpoint sqrt`, and with
  `--memory-limit 300MB`: wall time, peak resident memory, and the peak that
  `--memory` reports;
- 10^6 iterations of x = sin(x) + 0.5*x, plain and `--checkpoint sqrt`.
Each run is a fresh process, measured by os.wait4 (its own peak RSS). This
process imports no NumPy (a child writes the files): a child's peak counts
what it shared with its parent when it was forked.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MLP = """input X[n, {width}], W[{layers}, {width}, {width}], b[{layers}, {width}]
for i in 0..{layers} {{
    X = tanh(X @ W[i] + b[i])
}}
loss = mean(X^2)
"""

SCALAR = """input x = 0.5
for i in 0..{count} {{
    x = sin(x) + 0.5*x
}}
z = x
"""


def adgrad():
    script = Path(sys.executable).with_name('adgrad')
    return [str(script)] if script.exists() else [sys.executable, '-m', 'autodiff_cli']


def measure(command, out_path):
    """(wall seconds, peak RSS in MB, the memory report) of one fresh process
    whose stdout (--json) goes to `out_path`: only its end is read back, so
    this process stays small while the next one forks."""
    with open(out_path, 'wb') as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=out, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
        err.seek(0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f'{command} failed: {err.read().decode()[-400:]}')
    with open(out_path, 'rb') as f:
        f.seek(max(0, os.path.getsize(out_path) - 8192))
        tail = f.read().decode()
    report = json.loads(tail[tail.rindex('"memory": ') + len('"memory": '):-2])
    return seconds, usage.ru_maxrss / 1024, report


def gradient_digest(path):
    """A digest of the output's gradients: the JSON up to its memory report."""
    import hashlib
    digest, size = hashlib.sha256(), os.path.getsize(path)
    with open(path, 'rb') as f:
        f.seek(max(0, size - 8192))
        cut = max(0, size - 8192) + f.read().rindex(b'"memory": ')
        f.seek(0)
        while f.tell() < cut:
            digest.update(f.read(min(1 << 20, cut - f.tell())))
    return digest.hexdigest()


def mlp_files(folder, rows, layers, width):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    rng = np.random.default_rng(2)
    x = rng.standard_normal((rows, width))
    pq.write_table(pa.table({f'X[{j}]': x[:, j] for j in range(width)}), folder / 'x.parquet')
    np.save(folder / 'W.npy', rng.standard_normal((layers, width, width)) / width ** 0.5)
    np.save(folder / 'b.npy', rng.standard_normal((layers, width)) * 0.1)
    (folder / 'mlp.ad').write_text(MLP.format(layers=layers, width=width))


def mlp(folder, rows, layers, width):
    subprocess.run([sys.executable, __file__, '--files', str(folder), str(rows), str(layers),
                    str(width)], check=True)
    base = [*adgrad(), 'grad', '-f', str(folder / 'mlp.ad'), '--data', str(folder / 'x.parquet'),
            f'W=@{folder / "W.npy"}', f'b=@{folder / "b.npy"}', '--memory', '--json']
    results = {}
    for name, extra in (('plain', []), ('sqrt', ['--checkpoint', 'sqrt']),
                        ('limit', ['--memory-limit', '300MB'])):
        out = folder / f'{name}.json'
        seconds, peak, report = measure(base + extra, out)
        results[name] = (seconds, peak, gradient_digest(out))
        out.unlink()
        print(f'mlp {layers}x{width}, {rows} rows, {name}: {seconds:.2f} s, peak RSS {peak:.0f} MB, '
              f'reported peak {report["peak"] / 1e6:.0f} MB')
    plain, sqrt = results['plain'], results['sqrt']
    same = plain[2] == sqrt[2] == results['limit'][2]
    print(f'mlp sqrt vs plain: peak {sqrt[1] / plain[1]:.3f}x, time {sqrt[0] / plain[0]:.3f}x, '
          f'gradients {"identical" if same else "DIFFERENT"}')


def scalar(folder, count):
    (folder / 'loop.ad').write_text(SCALAR.format(count=count))
    outs = {}
    for name, extra in (('plain', []), ('sqrt', ['--checkpoint', 'sqrt'])):
        out = folder / f'loop_{name}.json'
        seconds, peak, report = measure([*adgrad(), 'grad', '-f', str(folder / 'loop.ad'),
                                         '--memory', '--json', *extra], out)
        outs[name] = gradient_digest(out)
        print(f'loop {count} iterations, {name}: {seconds:.2f} s, peak RSS {peak:.0f} MB, '
              f'reported peak {report["peak"] / 1e6:.0f} MB')
    print(f'loop sqrt vs plain: gradients {"identical" if outs["plain"] == outs["sqrt"] else "DIFFERENT"}')


def main():
    if sys.argv[1:2] == ['--files']:
        folder, *sizes = sys.argv[2:]
        mlp_files(Path(folder), *map(int, sizes))
        return
    quick = '--quick' in sys.argv
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        mlp(folder, *((100, 10, 16) if quick else (10_000, 100, 256)))
        scalar(folder, 1000 if quick else 1_000_000)


if __name__ == '__main__':
    main()
