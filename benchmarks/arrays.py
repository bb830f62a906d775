"""The array figures of issue 27, each against torch float64 in the same run.

    python benchmarks/arrays.py [--quick]

Prints one line per figure, which run.py reads back:
- a tanh layer, sum(tanh(W @ x + b)^2) with W 1000 x 1000: the gradient
  in-process, ours ÷ torch's, both on one BLAS thread;
- an MLP 784-256-10, tanh, softmax cross-entropy over 10,000 rows: all weight
  gradients in-process ÷ torch in-process, and the whole `adgrad grad --data`
  process ÷ torch in-process plus `import torch`;
- a 10^4-node program over 3-vectors: forward and backward per node.
Every pair of timings alternates, so drift in machine load hits both sides;
each side computes the same numbers, checked before any timing counts.
"""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _variable in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ[_variable] = '1'   # the same BLAS threads for both: one

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

MLP = """input W1[256, 784], b1[256], W2[10, 256], b2[10]
h = tanh(x @ W1.T + b1)
z = h @ W2.T + b2
mean(logsumexp(z, axis=1) - sum(y * z, axis=1))
"""


def best(function, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def alternate(ours, theirs, runs):
    a, b = [], []
    for _ in range(runs):
        a.append(best(ours, 1))
        b.append(best(theirs, 1))
    return min(a), min(b)


def ours_gradient(source, inputs, wrt=None):
    from autodiff_cli.core import tensors
    from autodiff_cli.language.lower import lower
    graph = lower(source)
    values = tensors.evaluate(graph, inputs)
    grads = tensors.gradients(graph, values, wrt=wrt)
    return {name: grads[i] for name, i in graph.inputs.items()}


def tanh_layer(runs, size):
    import torch
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    W, x, b = rng.standard_normal((size, size)) / size ** 0.5, rng.standard_normal(size), \
        rng.standard_normal(size)

    def ours():
        return ours_gradient('sum(tanh(W @ x + b)^2)', dict(W=W, x=x, b=b))

    def theirs():
        leaves = [torch.tensor(v, requires_grad=True) for v in (W, x, b)]
        (torch.tanh(leaves[0] @ leaves[1] + leaves[2]) ** 2).sum().backward()
        return {name: t.grad.numpy() for name, t in zip('Wxb', leaves)}

    check(ours(), theirs())
    a, b = alternate(ours, theirs, runs)
    print(f'tanh layer {size}x{size}: ours {a * 1e3:.2f} ms, torch {b * 1e3:.2f} ms: '
          f'{a / b:.3f}x')


def mlp_data(rows, folder):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((rows, 784))
    y = np.eye(10)[rng.integers(0, 10, rows)]
    params = dict(W1=rng.standard_normal((256, 784)) / 28, b1=np.zeros(256),
                  W2=rng.standard_normal((10, 256)) / 16, b2=np.zeros(10))
    import pyarrow as pa
    import pyarrow.parquet as pq
    columns = {f'x[{j}]': x[:, j] for j in range(784)} | {f'y[{j}]': y[:, j] for j in range(10)}
    pq.write_table(pa.table(columns), folder / 'mlp.parquet')
    for name, value in params.items():
        np.save(folder / f'{name}.npy', value)
    (folder / 'mlp.ad').write_text(MLP)
    return x, y, params


def mlp(runs, rows):
    import torch
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        x, y, params = mlp_data(rows, folder)
        names = ('W1', 'b1', 'W2', 'b2')

        def ours():
            g = ours_gradient(MLP, dict(x=x, y=y, **params), names)
            return {n: g[n] for n in names}

        def theirs():
            leaves = {n: torch.tensor(params[n], requires_grad=True) for n in names}
            h = torch.tanh(torch.from_numpy(x) @ leaves['W1'].T + leaves['b1'])
            z = h @ leaves['W2'].T + leaves['b2']
            torch.nn.functional.cross_entropy(z, torch.from_numpy(y)).backward()
            return {n: t.grad.numpy() for n, t in leaves.items()}

        check(ours(), theirs())
        a, b = alternate(ours, theirs, runs)
        print(f'mlp in-process, {rows} rows: ours {a * 1e3:.1f} ms, torch {b * 1e3:.1f} ms: '
              f'{a / b:.3f}x')
        command = [*adgrad(), 'grad', '-f', str(folder / 'mlp.ad'), '--data',
                   str(folder / 'mlp.parquet'), *[f'{n}=@{folder / n}.npy' for n in names],
                   '--json']
        importing = [sys.executable, '-c', 'import torch']
        whole, imports = [], []
        for _ in range(runs):
            whole.append(wall(command))
            imports.append(wall(importing))
        total = min(imports) + b
        print(f'mlp whole process, {rows} rows: ours {min(whole):.3f} s, torch import '
              f'{min(imports):.3f} s + {b:.3f} s: {min(whole) / total:.3f}x')


def adgrad():
    script = Path(sys.executable).with_name('adgrad')
    return [str(script)] if script.exists() else [sys.executable, '-m', 'autodiff_cli']


def wall(command):
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=dict(os.environ))
    return time.perf_counter() - start


def vectors(runs, nodes):
    """A chain of nodes over 3-vectors: the per-node cost of the loops, not of BLAS."""
    from autodiff_cli.core import tensors
    from autodiff_cli.language.lower import lower
    lines = ['input v[3] = [0.1, 0.2, 0.3]', 'a = v']
    for k in range(nodes // 3):
        lines.append(f'a = tanh(a * {1 + k % 7 / 10}) + v')
    lines.append('sum(a)')
    graph = lower('\n'.join(lines))
    inputs = dict(graph.defaults)

    def passes():
        values = tensors.evaluate(graph, inputs)
        tensors.gradients(graph, values)

    passes()
    cpu = []
    for _ in range(runs):   # CPU time: on a shared machine, wall time counts others' turns
        start = time.process_time()
        passes()
        cpu.append(time.process_time() - start)
    seconds = best(passes, runs)
    print(f'3-vectors, {len(graph.nodes)} nodes: forward + backward '
          f'{min(cpu) / len(graph.nodes) * 1e6:.2f} us per node '
          f'({seconds / len(graph.nodes) * 1e6:.2f} us by the clock)')


def check(ours, theirs):
    for name in theirs:
        if not np.allclose(ours[name], theirs[name], rtol=1e-9, atol=1e-12):
            raise SystemExit(f'the two sides differ in d_{name}')


def main():
    quick = '--quick' in sys.argv
    tanh_layer(1 if quick else 9, 100 if quick else 1000)
    mlp(1 if quick else 5, 100 if quick else 10_000)
    vectors(1 if quick else 5, 300 if quick else 10_000)


if __name__ == '__main__':
    main()
