"""Issue 28's figures: derivatives of array programs as formulas and as code.

    python benchmarks/calculus.py [--quick]

- readability: adgrad's formula against the Matrix Cookbook's closed form, op
  for op, on the rows of COOKBOOK (docs/arrays.md shows the table);
- `adgrad diff` of the MLP 784-256-10 loss with respect to every weight, as a
  whole process;
- the generated NumPy gradient of that MLP ÷ `adgrad grad`'s, in-process;
- the printed size of the derivative of a chain of tanh layers against depth.
"""

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# (what, the program, differentiated by, the Cookbook's closed form, its equation
# number in the Matrix Cookbook (2012) or 'ML' for a textbook layer). Sizes are
# symbols, which a formula reads as numbers where it needs them (eye(n), /m).
DECLARE = ('input A[n, n], B[n, n], X[n, n], S[n, n], W[m, n], x[n], a[n], b[n], c[m], y[m], '
           'z[m], u[n]; ')
COOKBOOK = [
    ('x.T @ a', 'x', 'a', '(69)'),
    ('a.T @ x', 'x', 'a', '(69)'),
    ('x.T @ x', 'x', '2*x', '(85)'),
    ('x.T @ A @ x', 'x', '(A + A.T) @ x', '(81)'),
    ('a.T @ X @ b', 'X', 'outer(a, b)', '(70)'),
    ('a.T @ X.T @ b', 'X', 'outer(b, a)', '(71)'),
    ('trace(A @ X)', 'X', 'A.T', '(100)'),
    ('trace(X @ A)', 'X', 'A.T', '(101)'),
    ('trace(A @ X @ B)', 'X', 'A.T @ B.T', '(102)'),
    ('trace(X.T @ X)', 'X', '2*X', '(107)'),
    ('trace(X @ X)', 'X', '2*X.T', '(106)'),
    ('trace(X.T @ A @ X)', 'X', '(A + A.T) @ X', '(117)'),
    ('trace(X @ A @ X.T)', 'X', 'X @ (A + A.T)', '(118)'),
    ('det(X)', 'X', 'det(X)*inv(X).T', '(49)'),
    ('logdet(X)', 'X', 'inv(X).T', '(57)'),
    ('a.T @ inv(X) @ b', 'X', '-inv(X).T @ outer(a, b) @ inv(X).T', '(61)'),
    ('trace(inv(X))', 'X', '-(inv(X) @ inv(X)).T', '(124)'),
    ('(x - u).T @ inv(S) @ (x - u)', 'x', '(inv(S) + inv(S).T) @ (x - u)', '(86)'),
    ('norm(W @ x - c)^2', 'x', '2*W.T @ (W @ x - c)', '(84)'),
    ('sum((W @ x - c)^2)', 'W', '2*outer(W @ x - c, x)', '(88)'),
    ('norm(x)', 'x', 'x/norm(x)', '(129)'),
    ('logsumexp(x)', 'x', 'softmax(x)', 'ML'),
    ('logsumexp(z) - y @ z', 'z', 'softmax(z) - y', 'ML'),
    ('logsumexp(W @ x) - y @ (W @ x)', 'W', 'outer(softmax(W @ x) - y, x)', 'ML'),
    ('sum(tanh(W @ x + c))', 'W', 'outer(1 - tanh(W @ x + c)^2, x)', 'ML'),
    ('sum(tanh(W @ x + c))', 'x', 'W.T @ (1 - tanh(W @ x + c)^2)', 'ML'),
    ('sum(exp(W @ x))', 'x', 'W.T @ exp(W @ x)', 'ML'),
    ('trace(X)', 'X', 'eye(n)', '(99)'),
    ('mean((W @ x - c)^2)', 'x', '2*W.T @ (W @ x - c)/m', 'ML'),
]


def program(row):
    return DECLARE + row[0]


def count_ops(graph, roots):
    """Distinct operations the roots are made of: a shared subexpression
    counts once, as a binding does in adgrad's output."""
    keys, seen, stack = {}, set(), list(roots)
    order = []
    while stack:
        i = stack.pop()
        if i in seen:
            continue
        seen.add(i)
        order.append(i)
        stack.extend(graph.nodes[i].args)
    for i in sorted(order):
        node = graph.nodes[i]
        if node.op == 'pos':
            keys[i] = keys[node.args[0]]
        elif node.op in ('input', 'const', 'static'):
            keys[i] = (node.op, node.name, repr(node.value))
        else:
            keys[i] = (node.op,) + tuple(keys[a] for a in node.args)
    return len({k for i, k in keys.items() if k[0] not in ('input', 'const', 'static')})


def formula(row):
    """adgrad's derivative of the row, printed in its own language."""
    from autodiff_cli import lower
    from autodiff_cli.derive.array_printers import array_derivative_text
    return array_derivative_text(lower(program(row)), [row[1]])


def readability():
    """(row, adgrad's ops, the Cookbook's ops) for each row of COOKBOOK."""
    from autodiff_cli import lower
    result = []
    for row in COOKBOOK:
        ours = lower(formula(row))
        theirs = lower(DECLARE + row[2])
        result.append((row, count_ops(ours, [ours.output]), count_ops(theirs, [theirs.output])))
    return result


def mlp(hidden=256, inputs=784, outputs=10):
    return (f'input W1[{hidden}, {inputs}], b1[{hidden}], W2[{outputs}, {hidden}], b2[{outputs}], '
            f'x[rows, {inputs}], y[rows, {outputs}]\n'
            'h = tanh(x @ W1.T + b1)\nlogits = h @ W2.T + b2\n'
            'mean(logsumexp(logits, axis=1) - sum(y * logits, axis=1))\n')


def tanh_chain(depth):
    lines = ['input x[n]'] + [f'input W{k}[n, n]' for k in range(depth)]
    lines += ['h0 = x'] + [f'h{k + 1} = tanh(W{k} @ h{k})' for k in range(depth)]
    lines.append(f'sum(h{depth})')
    return '\n'.join(lines) + '\n'


def adgrad_command():
    script = Path(sys.executable).with_name('adgrad')
    return [str(script)] if script.exists() else [sys.executable, '-m', 'autodiff_cli']


def whole_process(args, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(adgrad_command() + args, capture_output=True, text=True, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times), done.stdout


def numpy_against_grad(rows, runs):
    """(the generated NumPy gradient's time, grad's in-process time), median of runs."""
    import numpy as np
    from autodiff_cli import lower
    from autodiff_cli.core import tensors
    from autodiff_cli.derive.array_printers import array_derivative_text
    graph = lower(mlp())
    names = ['W1', 'b1', 'W2', 'b2']
    namespace = {}
    exec(array_derivative_text(graph, names, lang='numpy'), namespace)   # generated, trusted
    rng = np.random.default_rng(0)
    point = {'W1': rng.normal(0, 0.05, (256, 784)), 'b1': np.zeros(256),
             'W2': rng.normal(0, 0.1, (10, 256)), 'b2': np.zeros(10),
             'x': rng.random((rows, 784)), 'y': np.eye(10)[rng.integers(0, 10, rows)]}
    ours, theirs = [], []
    for _ in range(runs):
        start = time.perf_counter()
        value, gradient = namespace['f'](**point)
        ours.append(time.perf_counter() - start)
        start = time.perf_counter()
        values = tensors.evaluate(graph, point)
        grads = tensors.gradients(graph, values, wrt=names)
        theirs.append(time.perf_counter() - start)
    for name in names:
        np.testing.assert_allclose(gradient[name], grads[graph.inputs[name]], rtol=1e-9,
                                   atol=1e-12)
    return statistics.median(ours), statistics.median(theirs)


def main():
    quick = '--quick' in sys.argv
    rows = readability()
    ratios = [o / t if t else 1.0 for _, o, t in rows]   # a = a: no op on either side
    for ((source, wrt, closed, number), ours, theirs), ratio in zip(rows, ratios):
        print(f'  {source:34} d_{wrt:2} ours {ours:2}  cookbook {theirs:2}  {ratio:.2f}x')
    print(f'cookbook readability: median {statistics.median(ratios):.2f}x (target <= 1.25x), '
          f'worst {max(ratios):.2f}x (target <= 2x) over {len(rows)} rows; distinct ops of '
          "adgrad's formula over those of the Matrix Cookbook's closed form")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / 'mlp.ad'
        path.write_text(mlp())
        seconds, out = whole_process(['diff', '-f', str(path), '--wrt', 'W1,b1,W2,b2'],
                                     runs=1 if quick else 5)
        print(f'diff of the MLP 784-256-10 loss: {seconds:.3f} s (target <= 1 s), {len(out)} '
              'characters; `adgrad diff -f mlp.ad --wrt W1,b1,W2,b2` as a whole process, median '
              f'of {1 if quick else 5}')
        sizes = {}
        for depth in (10, 100) if quick else (25, 50, 100):
            path = Path(tmp) / f'chain{depth}.ad'
            path.write_text(tanh_chain(depth))
            _, out = whole_process(['diff', '-f', str(path)], runs=1)
            sizes[depth] = (len(out), len(path.read_text()))
        low, high = min(sizes), max(sizes)
        growth = (sizes[high][0] / sizes[low][0]) / (high / low)
        print(f'tanh chain of {high} layers: derivative {sizes[high][0]} characters, program '
              f'{sizes[high][1]}: {sizes[high][0] / sizes[high][1]:.2f}x (target <= 4x); '
              f'growth {growth:.2f} of linear from {low} to {high} layers')
    rows_data = 1000 if quick else 10_000
    ours, theirs = numpy_against_grad(rows_data, runs=1 if quick else 5)
    print(f'generated NumPy gradient of the MLP, {rows_data} rows: {ours * 1000:.1f} ms, grad '
          f'{theirs * 1000:.1f} ms: {ours / theirs:.2f}x (target <= 1.0x); in-process, median '
          'of runs, the same point, gradients equal to rtol 1e-9')


if __name__ == '__main__':
    main()
