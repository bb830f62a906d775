"""Issue 9's figures: diff size and time, the deep chain against SymPy,
--order 4, the Hessian against torch, readability against SymPy's diff.

    python benchmarks/derive.py [--quick]

Prints one line per figure, which says everything a reader needs to quote
it: the measurement, the target, and how it was measured (command, workload,
runs). Lines that start with two spaces are the detail behind a figure
(per depth, per textbook row); a figure's own line repeats what matters of
them, so quoting that one line is enough. Whole-process times run
`python -m autodiff_cli` as a subprocess; the Hessian is timed in-process,
imports excluded, side by side with torch.autograd.functional.hessian.
"""

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import workloads  # noqa: E402


def whole_process(args, runs=3):
    """(median seconds, stdout, every run's seconds) of `adgrad ARGS`."""
    times, out = [], ''
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, '-m', 'autodiff_cli', *args], capture_output=True,
                              text=True, check=True)
        times.append(time.perf_counter() - start)
        out = done.stdout
    return statistics.median(times), out, times


def _runs(times):
    if len(times) == 1:
        return 'one run'
    return f'median of {len(times)} runs: ' + ', '.join(f'{t:.2f}' for t in times) + ' s'


def chain(depth):
    return '\n'.join(['e0 = x'] + [f'e{i} = sin(e{i - 1}) + x*e{i - 1}' for i in range(1, depth + 1)])


def rosenbrock(n):
    terms = [f'100*(x{i + 1} - x{i}^2)^2 + (1 - x{i})^2' for i in range(n - 1)]
    return ' + '.join(terms), [f'x{i}' for i in range(n)]


TEXTBOOK = ['x^3', 'sin(x)^2', 'exp(-x^2)', 'log(x)/x', 'sqrt(1 + x^2)', 'tan(x)', 'atan(x)',
            'asin(x)', 'x*exp(x)', 'sin(x)*cos(x)', '1/(1 + x^2)', 'exp(sin(x))', 'log(cos(x))',
            'x^2*sin(x)', 'sqrt(x)*log(x)', 'tanh(x)', 'sinh(x)*cosh(x)', '(x + 1)^5',
            'exp(x)/(1 + exp(x))', 'log(1 + x^2)', 'sin(x^2)', 'cos(x)^3', 'x/(1 + x)',
            '2^x', 'x^2*exp(-x)']


def readability():
    import sympy
    from autodiff_cli import lower
    from autodiff_cli.derive.record import differentiate
    x = sympy.Symbol('x', real=True)
    rows = []
    for text in TEXTBOOK:
        ours = _to_sympy(differentiate(lower(text), ['x']), x, sympy)
        theirs = sympy.diff(sympy.sympify(text.replace('^', '**'), locals={'x': x}), x)
        rows.append((text, sympy.count_ops(ours), sympy.count_ops(theirs)))
    return rows


def _to_sympy(derivative, x, sympy):
    """The derivative with every binding inlined, as a SymPy expression."""
    ops = {'add': lambda a, b: a + b, 'sub': lambda a, b: a - b, 'mul': lambda a, b: a * b,
           'div': lambda a, b: a / b, 'neg': lambda a: -a, 'pow': lambda a, b: a ** b,
           'sin': sympy.sin, 'cos': sympy.cos, 'tan': sympy.tan, 'exp': sympy.exp,
           'log': sympy.log, 'sqrt': sympy.sqrt, 'asin': sympy.asin, 'atan': sympy.atan,
           'sinh': sympy.sinh, 'cosh': sympy.cosh, 'tanh': sympy.tanh}
    nodes, values = derivative.tape.nodes, {}
    for i in derivative.reachable():
        node = nodes[i]
        if node.op == 'input':
            values[i] = x
        elif node.op == 'const':
            value = node.value
            values[i] = sympy.Integer(int(value)) if value == int(value) else sympy.Float(value)
        else:
            values[i] = ops[node.op](*[values[a] for a in node.args])
    result = derivative.results[0][1]
    return values[result] if result in values else sympy.sympify(result)


def hessian_vs_torch(n, repeats=5):
    import torch
    from autodiff_cli import lower
    from autodiff_cli.derive.hessian import hessian
    source, names = rosenbrock(n)
    point = {name: 0.5 + 0.01 * i for i, name in enumerate(names)}
    ours = []
    for _ in range(repeats):
        start = time.perf_counter()
        hessian(lower(source), point, names)
        ours.append(time.perf_counter() - start)

    def f(*xs):
        total = 0.0
        for i in range(n - 1):
            total = total + 100 * (xs[i + 1] - xs[i] ** 2) ** 2 + (1 - xs[i]) ** 2
        return total
    leaves = tuple(torch.tensor(point[name], dtype=torch.float64) for name in names)
    theirs = []
    for _ in range(repeats):
        start = time.perf_counter()
        torch.autograd.functional.hessian(f, leaves)
        theirs.append(time.perf_counter() - start)
    return statistics.median(ours), statistics.median(theirs)


def main():
    quick = '--quick' in sys.argv
    size = 1000 if quick else 100_000
    depths = (250, 500, 1000) if quick else (2500, 5000, 10_000)
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / 'big.ad'
        big.write_text(workloads.sum_of_products(size // 2))
        seconds, out, times = whole_process(['diff', '-f', str(big)], runs=1 if quick else 3)
        ratio = len(out) / len(big.read_text())
        print(f'diff of a {size - 1}-op expression: {seconds:.2f} s (target <= 3 s), printed size '
              f'{ratio:.6f}x the input (target <= 6x); `adgrad diff -f FILE` as a whole process '
              f'on `python benchmarks/workloads.py sum_of_products {size // 2}`, {_runs(times)}')
        # The sum above collapses (its like terms meet); a deep nesting cannot:
        # every op needs a binding and a factor of the chain rule.
        nest = Path(tmp) / 'nest.ad'
        nest.write_text(workloads.nesting(size))
        seconds, out, times = whole_process(['diff', '-f', str(nest)], runs=1 if quick else 3)
        ratio = len(out) / len(nest.read_text())
        print(f'diff of a {size}-op nesting: {seconds:.2f} s (target <= 3 s), printed size '
              f'{ratio:.6f}x the input (target <= 6x); `adgrad diff -f FILE` as a whole process '
              f'on `python benchmarks/workloads.py nesting {size}`, {_runs(times)}')
        sizes, chain_times = {}, {}
        for depth in depths:
            path = Path(tmp) / f'chain{depth}.ad'
            path.write_text(chain(depth))
            chain_times[depth], out, _ = whole_process(['diff', '-f', str(path)], runs=1)
            sizes[depth] = len(out)
            print(f'  chain depth {depth}: {len(out)} characters, {chain_times[depth]:.2f} s')
        import sympy
        x = sympy.Symbol('x')
        theirs = {}
        for depth in (6, 8, 10):
            e = x
            for _ in range(depth):
                e = sympy.sin(e) + x * e
            start = time.perf_counter()
            theirs[depth] = sympy.count_ops(sympy.diff(e, x))
            print(f'  sympy depth {depth}: {theirs[depth]} ops in diff, '
                  f'{time.perf_counter() - start:.2f} s')
        low, high = depths[0], depths[-1]
        print(f'diff of e = sin(e) + x*e: size ratio {sizes[high] / sizes[low]:.2f} '
              f'for {high // low}x the depth (linear: {high // low}); printed '
              + ', '.join(f'{sizes[d]}' for d in depths) + ' characters at depths '
              + ', '.join(f'{d}' for d in depths) + ' (' + ', '.join(f'{chain_times[d]:.2f}'
                                                           for d in depths)
              + ' s); SymPy\'s diff has ' + ', '.join(f'{theirs[d]}' for d in theirs)
              + ' ops at depths 6, 8, 10')
        nest = Path(tmp) / 'nest.ad'
        nest.write_text(workloads.nesting(1000))
        seconds, out, times = whole_process(['diff', '-f', str(nest), '--order', '4'], runs=1)
        print(f'--order 4 of a 1,000-op expression: {seconds:.2f} s (target <= 5 s), '
              f'{len(out)} characters; `adgrad diff -f FILE --order 4` as a whole process on '
              f'`python benchmarks/workloads.py nesting 1000`, {_runs(times)}')
    n = 20 if quick else 100
    try:
        import torch  # noqa: F401   (the peer; a test-only tool, not a dependency)
    except ImportError:
        print(f'Hessian of a {n}-variable chained Rosenbrock: skipped, torch is not installed')
    else:
        ours, theirs = hessian_vs_torch(n)
        print(f'Hessian of a {n}-variable chained Rosenbrock: {ours * 1000:.1f} ms, torch '
              f'{theirs * 1000:.1f} ms: {ours / theirs:.2f}x (target <= 1.0x); in-process, '
              'imports excluded, median of 5 each: derive.hessian.hessian (one recording, one '
              'reverse pass per row) against torch.autograd.functional.hessian on the same '
              'scalar graph')
    rows = readability()
    ratios = sorted(o / t for _, o, t in rows)
    for text, o, t in rows:
        print(f'  {text:24} ours {o:3}  sympy {t:3}  {o / t:.2f}x')
    odd = ', '.join(f'{text} {o}/{t}' for text, o, t in rows if o != t) or 'none'
    print(f'readability: median {statistics.median(ratios):.2f}x (target <= 1.25x), worst '
          f'{max(ratios):.2f}x (target <= 2x); SymPy\'s count_ops of adgrad\'s derivative '
          f'(bindings inlined) over that of sympy.diff, {len(rows)} textbook rows; rows not at '
          f'1.00x: {odd}')


if __name__ == '__main__':
    main()
