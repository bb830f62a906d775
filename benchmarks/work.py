"""Issue 30's figures: gradients put to work.

- fit on 10^6 generated rows of a 3-parameter exponential model, in-process,
  against scipy.optimize.curve_fit with a hand-written Jacobian, both from the
  same start to the same tolerances; and the whole `adgrad fit` process;
- minimize of the 100-variable chained Rosenbrock with newton: whether it
  converges, and its evaluations;
- plot of a 10^3-op expression at 1,000 samples, the whole process.
Timings of the two sides of a ratio alternate, so drift in load hits both.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _variable in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ[_variable] = '1'

import numpy as np  # noqa: E402

TOLERANCE = 1e-14   # derive/fit.py's: both sides stop at the same place
ADGRAD = [sys.executable, '-m', 'autodiff_cli']


def _rows(n):
    rng = np.random.default_rng(30)
    t = rng.uniform(0, 10, n)
    y = 5 * np.exp(-0.4 * t) + 1 + rng.normal(0, 0.05, n)
    return t, y


def fit_figure(rows, runs):
    from scipy.optimize import curve_fit

    from autodiff_cli.derive.fit import fit
    from autodiff_cli.language.lower import lower
    t, y = _rows(rows)
    graph = lower('a*exp(-k*t) + c')
    start = {'a': 1.0, 'k': 1.0, 'c': 0.0}

    def model(t, a, k, c):
        return a * np.exp(-k * t) + c

    def jacobian(t, a, k, c):   # the hand-written one
        e = np.exp(-k * t)
        return np.column_stack([e, -a * t * e, np.ones_like(t)])

    def ours():
        return fit(graph, {'t': t}, y, start)

    def theirs():
        return curve_fit(model, t, y, p0=list(start.values()), jac=jacobian, method='lm',
                         ftol=TOLERANCE, xtol=TOLERANCE, gtol=TOLERANCE)

    result, (p, _) = ours(), theirs()
    if not np.allclose([result.parameters[n] for n in start], p, rtol=1e-8):
        raise SystemExit('the two fits differ')
    a, b = [], []
    for _ in range(runs):
        a.append(_seconds(ours))
        b.append(_seconds(theirs))
    print(f'fit in-process, {rows} rows: ours {min(a) * 1e3:.0f} ms, curve_fit '
          f'{min(b) * 1e3:.0f} ms: {min(a) / min(b):.2f}x')
    with tempfile.TemporaryDirectory() as folder:
        import pyarrow as pa
        import pyarrow.parquet as pq
        path = Path(folder) / 'rows.parquet'
        pq.write_table(pa.table({'t': t, 'y': y}), path)
        command = ADGRAD + ['fit', 'a*exp(-k*t) + c', '--data', str(path), '--target', 'y',
                            'a=1', 'k=1', 'c=0', '--json']
        whole = min(_seconds(lambda: subprocess.run(command, check=True, capture_output=True))
                    for _ in range(runs))
    print(f'fit whole process, {rows} rows: {whole:.2f} s')


def rosenbrock_figure(variables):
    terms = [f'100*(x{i + 1} - x{i}^2)^2 + (1 - x{i})^2' for i in range(1, variables)]
    starts = [f'x{i}={-1.2 if i % 2 else 1}' for i in range(1, variables + 1)]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / 'rosenbrock.ad'
        path.write_text(' + '.join(terms) + '\n')
        done = subprocess.run(ADGRAD + ['minimize', '-f', str(path), *starts, '--method',
                                        'newton', '--json'], capture_output=True, text=True)
    result = json.loads(done.stdout)
    print(f"rosenbrock {variables} variables, newton: converged {result['converged']}, "
          f"{result['iterations']} iterations, {result['evaluations']} evaluations, "
          f"{result['hessians']} Hessians, f {result['f']:.3g}")


def plot_figure(ops, samples, runs):
    import random
    rng = random.Random(3)
    forms = ['sin({})', '({})*0.9 + x', 'tanh({})', '({})^2*0.1 + x', 'exp(-({})^2)',
             '({}) - cos(x)']
    text = 'x'
    for _ in range(ops // 3):   # each form adds about three ops
        text = rng.choice(forms).format(text)
    with tempfile.TemporaryDirectory() as folder:
        source, picture = Path(folder) / 'f.ad', Path(folder) / 'f.png'
        source.write_text(text + '\n')
        command = ADGRAD + ['plot', '-f', str(source), 'x=-3..3', '--samples', str(samples),
                            '-o', str(picture)]
        subprocess.run(command, check=True)   # warm the file cache and bytecode
        whole = min(_seconds(lambda: subprocess.run(command, check=True)) for _ in range(runs))
    print(f'plot of {ops} ops at {samples} samples, whole process: {whole:.2f} s')


def _seconds(function):
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def main():
    quick = '--quick' in sys.argv
    fit_figure(10_000 if quick else 1_000_000, 1 if quick else 3)
    rosenbrock_figure(10 if quick else 100)
    plot_figure(100 if quick else 1000, 100 if quick else 1000, 1 if quick else 3)


if __name__ == '__main__':
    main()
