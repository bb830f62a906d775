"""Measure adgrad's speed and memory, and rewrite BENCHMARKS.md.

    python benchmarks/run.py                    # every figure (a few minutes)
    python benchmarks/run.py --quick -o FILE    # tiny sizes: checks that the harness runs
    python benchmarks/run.py --against [REV]    # REV (default 135ea79) and the working tree
    python benchmarks/run.py --only mean_pipe   # an opt-in figure (OPT_IN): named, never by default

Whole-process figures run the installed `adgrad` (the script beside this
interpreter, else on PATH, else `python -m autodiff_cli`) as a subprocess,
with stdout a file, as in a shell pipeline; each is the median of several
runs, and peak memory is the child's maximum resident set size. Every
comparison is measured side by side in the same run and reported as a
ratio. In-process figures run benchmarks/child.py in a fresh interpreter.
These are measurements, not tests: nothing here fails on a slow machine.

--against REV checks REV out into a temporary detached git worktree and
runs every figure for it and for the working tree in turn, round after
round (old, new, new, old, ...), so that drift in machine load hits both;
then prints each figure's numbers side by side with their ratio, new ÷ old.
Both sides run as `python -m autodiff_cli` with this interpreter, PYTHONPATH
naming their tree, and the same harness and workloads, so nothing is
installed and only the package differs. The rule since issue 26: no figure
may get more than 10% worse than at 135ea79, measured this way.
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import workloads  # noqa: E402

# Sizes of the full run, and of --quick (which only shows the harness works).
FULL = dict(startup_runs=31, runs=5, large_terms=100_000, large_depth=100_000, chain_depth=10_000,
            torch_ops=100_000, torch_runs=7, linear_small=10_000, linear_large=100_000,
            linear_reps=5, memory_tokens=1_000_000, memory_runs=3, batch_rows=1_000_000,
            statements=80_000)
QUICK = dict(startup_runs=3, runs=1, large_terms=500, large_depth=1000, chain_depth=100,
             torch_ops=1000, torch_runs=1, linear_small=100, linear_large=1000,
             linear_reps=1, memory_tokens=10_000, memory_runs=1, batch_rows=1000,
             statements=800)

FIGURES = ('startup', 'large', 'torch', 'linearity', 'gradient', 'parse', 'derive', 'batch',
           'memory', 'scale', 'dask', 'pipe', 'mean', 'arrays', 'work', 'calculus', 'deep')
OPT_IN = ('mean_pipe',)   # run only when --only names them: too long for every run

AGAINST = '135ea79'   # the code every figure is held to (issue 26)
WITHIN = 1.10         # new ÷ old may be at most this
ONCE = ('pipe', 'mean_pipe')      # too long to repeat: one run a side
NEWER = ('mean', 'mean_pipe', 'arrays', 'work', 'deep')   # of code 135ea79 lacks: --against leaves them out


class Figure:
    """One row of the table, and how it was measured.

    `values` names the numbers the row's target judges (lower is better), as
    {quantity: number}: what --against compares, side by side.
    """

    def __init__(self, name, measured, target, status, how, values=None):
        self.name, self.measured, self.target, self.status, self.how = (
            name, measured, target, status, how)
        self.values = values or {}


def adgrad_command():
    import importlib.util
    if importlib.util.find_spec('autodiff_cli') is None:
        # Not installed: let every child (adgrad, child.py) import the checkout.
        os.environ['PYTHONPATH'] = os.pathsep.join(
            filter(None, [str(ROOT), os.environ.get('PYTHONPATH')]))
    script = Path(sys.executable).with_name('adgrad')
    if script.exists():
        return [str(script)]
    found = shutil.which('adgrad')
    return [found] if found else [sys.executable, '-m', 'autodiff_cli']


def shell(command):
    """A command list as one would type it: a program of the environment
    by its name, so that no machine's path is written into BENCHMARKS.md."""
    import shlex
    return ' '.join(shlex.quote(Path(part).name if part.startswith(sys.prefix + os.sep) else part)
                    for part in command)


def run_process(command, stdout_path=os.devnull, stdin_path=None, cwd=None):
    """(wall seconds, peak resident memory in MB, exit code) of one child process."""
    with open(stdout_path, 'wb') as out, \
            open(stdin_path or os.devnull, 'rb') as stdin, \
            tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(command, stdin=stdin, stdout=out, stderr=err, cwd=cwd)
        # wait4 gives this child's own rusage (RUSAGE_CHILDREN would be the
        # maximum over every child so far).
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            err.seek(0)
            raise RuntimeError(f'{shell(command)} exited {child.returncode}: '
                               f'{err.read().decode(errors="replace")[-500:]}')
    kb = usage.ru_maxrss / (1024 if sys.platform == 'darwin' else 1)  # bytes on macOS
    return seconds, kb / 1024, child.returncode


def run_child(*args):
    """The JSON printed by benchmarks/child.py ARGS."""
    out = subprocess.run([sys.executable, str(HERE / 'child.py'), *map(str, args)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr.strip()
                           else f'child.py {args[0]} exited {out.returncode}')
    return json.loads(out.stdout)


def _line(lines, name):
    """The line of benchmarks/deep.py's output for the MLP run `name`."""
    return next((line for line in lines.splitlines() if line.startswith('mlp ')
                 and f' rows, {name}:' in line), '')


def median(xs):
    return statistics.median(xs)


def seconds(x):
    if x < 0.01:
        return f'{x * 1000:.2f} ms'
    return f'{x * 1000:.0f} ms' if x < 1 else f'{x:.2f} s'


def cell(text):
    return text.replace('|', '\\|')  # a table cell cannot hold a bare pipe


def verdict(ok):
    return 'pass' if ok else 'miss'


class Bench:
    def __init__(self, sizes, workdir, log, adgrad=None):
        self.sizes = sizes
        self.dir = Path(workdir)
        self.adgrad = adgrad or adgrad_command()
        self.log = log
        self.cache = {}

    def file(self, name, size):
        path = self.dir / f'{name}-{size}.ad'
        if not path.exists():
            path.write_text(workloads.WORKLOADS[name](size), encoding='utf-8')
        return path

    def reproduce(self, name, size):
        return f'python benchmarks/workloads.py {name} {size} > {name}-{size}.ad'

    def grad_file(self, name, size, runs):
        """Median seconds, peak MB and output of `adgrad grad -f FILE`, memoised."""
        key = (name, size)
        if key not in self.cache:
            path = self.file(name, size)
            out = self.dir / 'out.txt'
            command = self.adgrad + ['grad', '-f', str(path)]
            times, peaks = [], []
            for _ in range(runs):
                t, peak, _ = run_process(command, out)
                times.append(t)
                peaks.append(peak)
            lines = dict(line.split('\t', 1) for line in out.read_text().splitlines())
            self.cache[key] = (median(times), max(peaks), lines, times)
            self.log(f'  grad {name} {size}: {seconds(median(times))}, {max(peaks):.0f} MB')
        return self.cache[key]

    # ---- the figures ----

    def startup(self):
        runs = self.sizes['startup_runs']
        python = [sys.executable, '-c', 'pass']
        adgrad = self.adgrad + ['eval', 'x*y*z', 'x=2', 'y=3', 'z=4']
        out = self.dir / 'startup.txt'
        run_process(python)
        run_process(adgrad, out)  # warm the file cache and bytecode
        if out.read_text().strip() != '24.0':
            raise RuntimeError(f'adgrad eval printed {out.read_text()!r}')
        # The floor for any command line that parses its arguments with
        # argparse: import it, build one parser, parse (gettext imports locale).
        floor = [sys.executable, '-c', 'import argparse; argparse.ArgumentParser().parse_args([])']
        # And adgrad's own floor: the library alone lowers, evaluates and prints the
        # same, run elsewhere, as `-c` here would import the tree, not the install.
        library = [sys.executable, '-c',
                   'import os; from autodiff_cli import forward, lower; g = lower("x*y*z"); '
                   'print(forward(g, dict(x=2.0, y=3.0, z=4.0))[g.output], flush=True); '
                   'os._exit(0)']
        run_process(library, out, cwd=self.dir)
        if out.read_text().strip() != '24.0':
            raise RuntimeError(f'the library alone printed {out.read_text()!r}')
        a, b, c, d = [], [], [], []
        for _ in range(runs):  # interleaved, so drift in machine load hits them all
            a.append(run_process(python)[0])
            b.append(run_process(adgrad, out)[0])
            c.append(run_process(floor)[0])
            d.append(run_process(library, cwd=self.dir)[0])
        ratio = median(b) / median(a)
        best = min(b) / min(a)
        how = (f'`{shell(adgrad)} | cat` against `{shell(python)}`, {runs} runs each, '
               f'interleaved; medians {median(b) * 1000:.1f} ms and {median(a) * 1000:.1f} ms, '
               f'best {min(b) * 1000:.1f} ms and {min(a) * 1000:.1f} ms. For scale, '
               f'interleaved with them: a bare argparse parser, `{shell(floor)}`, is '
               f'{median(c) / median(a):.1f}× median ({median(c) * 1000:.1f} ms); adgrad\'s '
               f'library alone, with no command line, `{shell(library)}`, is '
               f'{median(d) / median(a):.1f}× median ({median(d) * 1000:.1f} ms).')
        name = "start-up: `adgrad eval 'x*y*z' x=2 y=3 z=4 | cat` ÷ `python -c pass`"
        measured = (f'{ratio:.1f}× median, {best:.1f}× best '
                    f'({seconds(median(b))} ÷ {seconds(median(a))})')
        values = {'÷ python -c pass, median': ratio}
        # Issue 13's target is retired (issue 26): the console-script wrapper and
        # argparse alone sit above it here (see the floor in `how`).
        return [Figure(name, measured, '≤ 5×', verdict(ratio <= 5), how, values),
                Figure(name + ' (issue 13)', measured, 'reported', 'reported', how, values)]

    def derive(self):
        """Issue 9's figures: benchmarks/derive.py, run as it is, its lines read back."""
        import re
        quick = self.sizes is QUICK
        command = [sys.executable, str(HERE / 'derive.py')] + (['--quick'] if quick else [])
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        lines = done.stdout.splitlines()
        script = f"`python benchmarks/derive.py{' --quick' if quick else ''}`"
        rows = []

        def row(pattern, name, measured, target, ok, judged, detail=None):
            # A figure quotes its line of the output and the detail lines before
            # it (those holding `detail`); `judged` names the numbers its target judges.
            for line in lines:
                found = re.search(pattern, line)
                if found:
                    values = [float(v) for v in found.groups()]
                    quoted = [x.strip() for x in lines if detail and detail in x] + [line.strip()]
                    how = f'{script}, which prints: ' + '; '.join(quoted)
                    rows.append(Figure(name, measured(*values), target, verdict(ok(*values)), how,
                                       judged(*values)))
                    return

        row(r'diff of a (\d+)-op expression: ([\d.]+) s .*printed size ([\d.]+)x',
            'derivatives (issue 9): `adgrad diff` of a large sum of products, whole process',
            lambda n, s, size: f'{n:,.0f} ops: {s:.2f} s, printed size {size:.4g}× the input',
            '≤ 3 s, ≤ 6×', lambda n, s, size: s <= 3 and size <= 6,
            lambda n, s, size: {'s': s, 'printed size ×': size})
        row(r'diff of a (\d+)-op nesting: ([\d.]+) s .*printed size ([\d.]+)x',
            'derivatives (issue 9): `adgrad diff` of a deep nesting (sin cos tanh sigmoid), '
            'whole process',
            lambda n, s, size: f'{n:,.0f} ops: {s:.2f} s, printed size {size:.4g}× the input',
            '≤ 3 s, ≤ 6×', lambda n, s, size: s <= 3 and size <= 6,
            lambda n, s, size: {'s': s, 'printed size ×': size})
        row(r'size ratio ([\d.]+) for (\d+)x the depth',
            'derivatives (issue 9): `diff` of e = sin(e) + x*e, size against depth',
            lambda r, d: f'{r:.2f}× the size for {d:.0f}× the depth', 'linear',
            lambda r, d: r <= 1.25 * d, lambda r, d: {'size ratio': r}, detail='chain depth')
        row(r'--order 4 of a 1,000-op expression: ([\d.]+) s',
            'derivatives (issue 9): `diff --order 4` of a 1,000-op expression, whole process',
            lambda s: f'{s:.2f} s', '≤ 5 s', lambda s: s <= 5, lambda s: {'s': s})
        if any('Rosenbrock: skipped' in line for line in lines):
            rows.append(Figure('derivatives (issue 9): Hessian of a chained Rosenbrock ÷ '
                               'torch.autograd.functional.hessian',
                               'skipped: torch is not installed', '≤ 1.0', 'n/a', ''))
        row(r'Rosenbrock: ([\d.]+) ms, torch ([\d.]+) ms: ([\d.]+)x',
            'derivatives (issue 9): Hessian of a chained Rosenbrock ÷ torch.autograd.functional.hessian',
            lambda a, b, q: f'{q:.2f} ({a:.1f} ms ÷ {b:.1f} ms)', '≤ 1.0', lambda a, b, q: q <= 1,
            lambda a, b, q: {'÷ torch': q})
        row(r'readability: median ([\d.]+)x .*worst ([\d.]+)x',
            'derivatives (issue 9): printed op count ÷ SymPy diff, textbook rows',
            lambda m, w: f'median {m:.2f}×, worst {w:.2f}×', '≤ 1.25× median, ≤ 2× worst',
            lambda m, w: m <= 1.25 and w <= 2, lambda m, w: {'median ×': m, 'worst ×': w},
            detail=' ours ')
        return rows

    def arrays(self):
        """Issue 27's figures: benchmarks/arrays.py, run as it is, its lines read back."""
        import re
        check = subprocess.run([sys.executable, '-c', 'import torch, pyarrow'], capture_output=True)
        if check.returncode != 0:
            return [Figure('arrays (issue 27) against PyTorch', 'skipped: torch or pyarrow is '
                           f'not installed for {sys.executable}', '≤ 1.2', 'n/a', '')]
        quick = self.sizes is QUICK
        command = [sys.executable, str(HERE / 'arrays.py')] + (['--quick'] if quick else [])
        lines = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        script = f"`python benchmarks/arrays.py{' --quick' if quick else ''}`"
        rows = []
        for pattern, name, target, limit, judged in (
                (r'tanh layer (\S+): ours ([\d.]+) ms, torch ([\d.]+) ms: ([\d.]+)x',
                 'arrays (issue 27): gradient of sum(tanh(W @ x + b)^2), W {0}, in-process ÷ '
                 'torch float64, one BLAS thread each', '≤ 1.2', 1.2, '÷ torch'),
                (r'mlp in-process, (\d+) rows: ours ([\d.]+) ms, torch ([\d.]+) ms: ([\d.]+)x',
                 'arrays (issue 27): MLP 784-256-10, tanh, softmax cross-entropy over {0} rows, '
                 'all weight gradients, in-process ÷ torch in-process', '≤ 1.2', 1.2, '÷ torch'),
                (r'mlp whole process, (\d+) rows: ours ([\d.]+) s, torch import ([\d.]+) s '
                 r'\+ [\d.]+ s: ([\d.]+)x',
                 'arrays (issue 27): the same MLP, whole `adgrad grad --data` process ÷ torch '
                 'in-process plus `import torch`', '≤ 1.3', 1.3, '÷ torch')):
            found = re.search(pattern, lines)
            if found:
                ratio = float(found.group(4))
                rows.append(Figure(name.format(found.group(1)), f'{ratio:.2f}', target,
                                   verdict(ratio <= limit), f'{script}, which prints: '
                                   f'{found.group(0)}', {judged: ratio}))
        found = re.search(r'3-vectors, (\d+) nodes: forward \+ backward ([\d.]+) us per node.*',
                          lines)
        if found:
            per = float(found.group(2))
            rows.append(Figure(f'arrays (issue 27): a {int(found.group(1)):,}-node program over '
                               '3-vectors, forward + backward per node (CPU time)',
                               f'{per:.2f} µs', '≤ 5 µs', verdict(per <= 5),
                               f'{script}, which prints: {found.group(0)}', {'µs per node': per}))
        return rows

    def script(self, name, modules):
        """(its output, how the report names it, whether --quick) of
        benchmarks/NAME run as it is; None where `modules` do not import."""
        check = subprocess.run([sys.executable, '-c', f'import {modules}'], capture_output=True)
        if check.returncode != 0:
            return None
        quick = self.sizes is QUICK
        command = [sys.executable, str(HERE / name)] + (['--quick'] if quick else [])
        lines = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        return lines, f"`python benchmarks/{name}{' --quick' if quick else ''}`", quick

    def deep(self):
        """Issue 29's figures: benchmarks/deep.py, run as it is, its lines read back."""
        import re
        ran = self.script('deep.py', 'pyarrow')
        if ran is None:
            return [Figure('deep loops and checkpointing (issue 29)', 'skipped: pyarrow is not '
                           f'installed for {sys.executable}', 'reported', 'n/a', '')]
        lines, script, quick = ran
        found = {m[1]: (float(m[2]), float(m[3]), float(m[4])) for m in re.finditer(
            r'^mlp \S+, \d+ rows, (\w+): ([\d.]+) s, peak RSS (\d+) MB, reported peak (\d+) MB',
            lines, re.M)}
        loops = {m[1]: (float(m[2]), float(m[3]), float(m[4])) for m in re.finditer(
            r'^loop \d+ iterations, (\w+): ([\d.]+) s, peak RSS (\d+) MB, reported peak (\d+) MB',
            lines, re.M)}
        mlp = re.search(r'^mlp (\S+), (\d+) rows', lines, re.M)
        iterations = re.search(r'^loop (\d+) iterations', lines, re.M)
        rows = []
        if mlp and {'plain', 'sqrt', 'limit'} <= set(found):
            what = f'{mlp[1]} tanh MLP as a loop, --data of {int(mlp[2]):,} rows'
            plain, sqrt, limit = found['plain'], found['sqrt'], found['limit']
            rows.append(Figure(f'deep (issue 29): {what}, plain: peak memory',
                               f'{plain[1]:.0f} MB ({plain[0]:.1f} s; --memory says {plain[2]:.0f} '
                               'MB)', 'reported', 'reported', f'{script}, which prints: '
                               f'{_line(lines, "plain")}', {'MB': plain[1]}))
            peak, time_ = sqrt[1] / plain[1], sqrt[0] / plain[0]
            rows.append(Figure(f'deep (issue 29): the same with --checkpoint sqrt, ÷ plain',
                               f'peak {peak:.2f}, time {time_:.2f}', 'peak ≤ 0.25, time ≤ 1.6',
                               verdict(peak <= 0.25 and time_ <= 1.6),
                               f'{script}, which prints: {_line(lines, "sqrt")}',
                               {'peak ÷ plain': peak, 'time ÷ plain': time_}))
            rows.append(Figure(f'deep (issue 29): the same with --memory-limit 300MB: peak',
                               f'{limit[1]:.0f} MB ({limit[0]:.1f} s)', '≤ 330 MB',
                               verdict(limit[1] <= 330 or quick),
                               f'{script}, which prints: {_line(lines, "limit")}',
                               {'MB': limit[1]}))
        if iterations and {'plain', 'sqrt'} <= set(loops):
            plain, sqrt = loops['plain'], loops['sqrt']
            rows.append(Figure(f'deep (issue 29): {int(iterations[1]):,}-iteration scalar loop '
                               'x = sin(x) + 0.5*x, plain and --checkpoint sqrt',
                               f'plain {plain[0]:.1f} s, {plain[1]:.0f} MB; sqrt {sqrt[0]:.1f} s, '
                               f'{sqrt[1]:.0f} MB', 'both complete; sqrt ≤ 100 MB',
                               verdict(sqrt[1] <= 100), f'{script}',
                               {'sqrt MB': sqrt[1], 'plain s': plain[0]}))
        return rows

    def calculus(self):
        """Issue 28's figures: benchmarks/calculus.py, run as it is, its lines read back."""
        import re
        quick = self.sizes is QUICK
        command = [sys.executable, str(HERE / 'calculus.py')] + (['--quick'] if quick else [])
        done = subprocess.run(command, capture_output=True, text=True)
        script = f"`python benchmarks/calculus.py{' --quick' if quick else ''}`"
        if done.returncode != 0:   # a tree from before issue 28 has no array formulas
            return [Figure('matrix calculus (issue 28)', 'not run: ' + done.stderr.strip()
                           .splitlines()[-1][:80], 'reported', 'n/a', script)]
        lines, rows = done.stdout, []
        for pattern, name, target, ok, judged in (
                (r'cookbook readability: median ([\d.]+)x .*worst ([\d.]+)x .*over (\d+) rows',
                 'matrix calculus (issue 28): printed op count ÷ the Matrix Cookbook, {2:.0f} rows',
                 '≤ 1.25× median, ≤ 2× worst', lambda m, w, n: m <= 1.25 and w <= 2,
                 lambda m, w, n: {'median ×': m, 'worst ×': w}),
                (r'diff of the MLP 784-256-10 loss: ([\d.]+) s',
                 'matrix calculus (issue 28): `diff` of the MLP 784-256-10 loss w.r.t. every '
                 'weight, whole process', '≤ 1 s', lambda s: s <= 1, lambda s: {'s': s}),
                (r'generated NumPy gradient of the MLP, (\d+) rows: .*: ([\d.]+)x',
                 'matrix calculus (issue 28): the generated NumPy gradient of that MLP ({0:.0f} '
                 'rows) ÷ grad in-process', '≤ 1.0', lambda n, q: q <= 1.0,
                 lambda n, q: {'÷ grad': q}),
                (r'tanh chain of (\d+) layers: .*: ([\d.]+)x \(target <= 4x\); growth ([\d.]+)',
                 'matrix calculus (issue 28): printed size of the derivative of a {0:.0f}-layer '
                 'tanh chain ÷ the program', 'linear, ≤ 4×', lambda n, r, g: r <= 4 and g <= 1.25,
                 lambda n, r, g: {'size ×': r, 'growth': g})):
            found = re.search(pattern, lines)
            if found:
                values = [float(v) for v in found.groups()]
                rows.append(Figure(name.format(*values), found.group(0), target,
                                   verdict(ok(*values)), f'{script}, which prints: '
                                   f'{found.group(0)}', judged(*values)))
        return rows

    def work(self):
        """Issue 30's figures: benchmarks/work.py, run as it is, its lines read back."""
        import re
        check = subprocess.run([sys.executable, '-c', 'import scipy, matplotlib, pyarrow'],
                               capture_output=True)
        if check.returncode != 0:
            return [Figure('fit, minimize and plot (issue 30)', 'skipped: scipy, matplotlib or '
                           f'pyarrow is not installed for {sys.executable}', '≤ 1.5', 'n/a', '')]
        quick = self.sizes is QUICK
        command = [sys.executable, str(HERE / 'work.py')] + (['--quick'] if quick else [])
        lines = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        script = f"`python benchmarks/work.py{' --quick' if quick else ''}`"
        rows = []
        found = re.search(r'fit in-process, (\d+) rows: ours (\d+) ms, curve_fit (\d+) ms: '
                          r'([\d.]+)x', lines)
        if found:
            ratio = float(found.group(4))
            whole = re.search(r'fit whole process, \d+ rows: ([\d.]+) s', lines)
            rows.append(Figure(f'fit (issue 30): a 3-parameter exponential model over '
                               f'{int(found.group(1)):,} rows, in-process ÷ '
                               'scipy.optimize.curve_fit with a hand-written Jacobian',
                               f'{ratio:.2f}', '≤ 1.5', verdict(ratio <= 1.5),
                               f'{script}, which prints: {found.group(0)}; the whole '
                               f'`adgrad fit` process takes {whole.group(1)} s', {'÷ curve_fit': ratio}))
        found = re.search(r'rosenbrock (\d+) variables, newton: converged (\w+), .*', lines)
        if found:
            rows.append(Figure(f'minimize (issue 30): chained Rosenbrock of {found.group(1)} '
                               'variables, --method newton', found.group(0).split(': ', 1)[1],
                               'converges; evaluations reported',
                               verdict(found.group(2) == 'True'), f'{script}'))
        found = re.search(r'plot of (\d+) ops at (\d+) samples, whole process: ([\d.]+) s', lines)
        if found:
            took = float(found.group(3))
            rows.append(Figure(f'plot (issue 30): a {found.group(1)}-op expression at '
                               f'{found.group(2)} samples, whole process', f'{took:.2f} s',
                               '≤ 2 s', verdict(took <= 2), f'{script}, which prints: '
                               f'{found.group(0)}', {'seconds': took}))
        return rows

    def parse(self):
        """Issue 13: parse + lower per token, in-process, steady state."""
        s = self.sizes
        rows = []
        for name, size in (('nesting', s['large_depth']), ('sum_of_products', s['large_terms'])):
            p = self.phases(name, size)
            per = [t / p['tokens'] * 1e6 for t in p['lower']]
            rows.append(Figure(
                f'parse + lower per token (issue 13), {name.replace("_", " ")}, '
                f'{p["tokens"]:,} tokens',
                f'{min(per):.2f} µs best, {median(per):.2f} µs median', '≤ 1 µs',
                verdict(min(per) <= 1),
                f'`lower(text)` in-process (`python benchmarks/child.py phases FILE '
                f'{s["linear_reps"]}`), the collector paused as the CLI pauses it; '
                'tokens counted with the grammar\'s terminals.', {'µs per token, best': min(per)}))
        return rows

    def large(self):
        s = self.sizes
        rows = []
        for name, size, label in (
                ('sum_of_products', s['large_terms'], f'{s["large_terms"]:,}-term sum of products'),
                ('nesting', s['large_depth'], f'{s["large_depth"]:,}-deep nesting of unary functions'),
                ('block_chain', s['chain_depth'], f'{s["chain_depth"]:,}-deep chain of a block')):
            t, peak, _, times = self.grad_file(name, size, s['runs'])
            rows.append(Figure(
                f'large graph, whole `adgrad grad` process: {label}',
                f'{seconds(t)}, peak {peak:.0f} MB', '≤ 2 s', verdict(t <= 2),
                f'`{self.reproduce(name, size)}; adgrad grad -f {name}-{size}.ad`: '
                f'{workloads.operations(name, size):,} operations, '
                f'{workloads.tokens(name, size):,} tokens; median of '
                f'{", ".join(f"{x:.2f}" for x in times)} s.', {'s': t, 'MB': peak}))
        return rows

    def torch(self):
        s = self.sizes
        ops = s['torch_ops']
        check = subprocess.run([sys.executable, '-c', 'import torch'], capture_output=True)
        if check.returncode != 0:
            return [Figure('against PyTorch on the same 10^5-op graph', 'skipped: torch is not '
                           f'installed for {sys.executable}', '≤ 1.0', 'n/a',
                           'Install it (`pip install torch==2.13.0`) to measure this figure.')]
        rows = []
        for name, size in (('nesting', ops), ('sum_of_products', (ops + 1) // 2)):
            path = self.file(name, size)
            out = self.dir / 'out.txt'
            command = self.adgrad + ['grad', '-f', str(path)]
            ours, theirs = [], []
            for _ in range(s['torch_runs']):  # alternating, so drift in machine load hits both
                ours.append(run_process(command, out)[0])
                result = run_child('torch', name, size, 1)
                theirs.append(result['seconds'][0])
            t, torch_t = median(ours), median(theirs)
            ratio = t / torch_t
            value = float(dict(line.split('\t', 1) for line in out.read_text().splitlines())['value'])
            agree = abs(value - result['value']) <= 1e-9 * max(1.0, abs(value))
            ops_text = f'{workloads.operations(name, size):,}-op {name.replace("_", " ")}'
            name_text = (f'against PyTorch {result["torch"]}: `adgrad grad` whole process ÷ '
                         f'torch build + backward, {ops_text}')
            measured = f'{ratio:.2f} ({seconds(t)} ÷ {seconds(torch_t)})'
            how = (f'`adgrad grad -f {name}-{size}.ad` against torch: float64 scalar tensors, the '
                   'same operations built in a Python loop then `.backward()`, timed in-process '
                   'after a warm-up, import excluded (`python benchmarks/child.py torch '
                   f'{name} {size} 1`); {len(ours)} runs each, alternating; medians of '
                   f'{", ".join(f"{x:.2f}" for x in ours)} s and '
                   f'{", ".join(f"{x:.2f}" for x in theirs)} s; values '
                   f'{"agree" if agree else "DIFFER"} ({value!r} and {result["value"]!r}).')
            # the first target, and issue 13's stricter one, as start-up has both
            values = {'÷ torch': ratio}
            rows.append(Figure(name_text, measured, '≤ 1.0', verdict(ratio <= 1), how, values))
            rows.append(Figure(name_text + ' (issue 13)', measured, '≤ 0.5', verdict(ratio <= 0.5),
                               how, values))
        return rows

    def phases(self, name, size):
        key = ('phases', name, size)
        if key not in self.cache:
            self.cache[key] = run_child('phases', self.file(name, size), self.sizes['linear_reps'])
        return self.cache[key]

    def linearity(self):
        s = self.sizes
        rows = []
        for name in ('nesting', 'sum_of_products'):
            sizes = [s['linear_small'], s['linear_large']]
            if name == 'sum_of_products':
                sizes = [(n + 1) // 2 for n in sizes]  # terms for 10^4 and 10^5 operations
            totals = []
            for size in sizes:
                p = self.phases(name, size)
                totals.append(min(a + b + c for a, b, c in
                                  zip(p['lower'], p['forward'], p['backward'])))
            ratio = totals[1] / totals[0]
            small, large = (workloads.operations(name, n) for n in sizes)
            # best of each size: noise only adds time
            rows.append(Figure(
                f'linearity: time at {large:,} ÷ at {small:,} ops, {name.replace("_", " ")}',
                f'{ratio:.1f} ({seconds(totals[1])} ÷ {seconds(totals[0])})', '≤ 12',
                verdict(ratio <= 12),
                'in-process parse + lower + forward + backward (`lower`, `forward`, `backward` '
                f'from the library; `python benchmarks/child.py phases FILE {s["linear_reps"]}`), '
                'the best of the repetitions (noise only adds time), each size in a fresh '
                'interpreter.', {'ratio': ratio}))
        return rows

    def gradient(self):
        s = self.sizes
        rows = []
        for name, size in (('sum_of_products', s['large_terms']), ('nesting', s['large_depth'])):
            p = self.phases(name, size)
            f, b = min(p['forward']), min(p['backward'])
            ratios = [bb / ff for ff, bb in zip(p['forward'], p['backward'])]
            rows.append(Figure(
                f'cheap gradient: backward ÷ forward, in-process, '
                f'{workloads.operations(name, size):,}-op {name.replace("_", " ")}',
                f'{b / f:.2f} best, {median(ratios):.2f} median ({seconds(b)} ÷ {seconds(f)})',
                '≤ 3', verdict(b / f <= 3),
                f'`forward(graph, inputs)` and `backward(graph, values)` on the same graph '
                f'(`python benchmarks/child.py phases FILE {s["linear_reps"]}`), best of the '
                'repetitions.', {'ratio, best': b / f}))
        return rows

    def memory(self):
        s = self.sizes
        terms = (s['memory_tokens'] + 1) // 4
        t, peak, _, times = self.grad_file('sum_of_products', terms, s['memory_runs'])
        return [Figure(
            f'memory: an expression of {workloads.tokens("sum_of_products", terms):,} tokens, '
            'parse + grad, whole process',
            f'peak {peak:.0f} MB ({seconds(t)})', '≤ 1.5 GB', verdict(peak <= 1536),
            f'`{self.reproduce("sum_of_products", terms)}; adgrad grad -f '
            f'sum_of_products-{terms}.ad`: the largest maximum resident set size of '
            f'{len(times)} run(s).', {'MB': peak})]

    def scale(self):
        """Issue 13's figures at a million tokens, its --nodes cost, and issue
        12's programs of many statements: whole `adgrad grad` processes."""
        s = self.sizes
        rows = []
        terms = (s['memory_tokens'] + 1) // 4
        t, peak, _, times = self.grad_file('sum_of_products', terms, s['memory_runs'])
        tokens = workloads.tokens('sum_of_products', terms)
        rows.append(Figure(
            f'a million tokens (issue 13): {tokens:,}-token sum of products, whole `adgrad grad`',
            f'{seconds(t)}, peak {peak:.0f} MB', '≤ 1.0 s, ≤ 200 MB',
            verdict(t <= 1.0 and peak <= 200),
            f'`{self.reproduce("sum_of_products", terms)}; adgrad grad -f '
            f'sum_of_products-{terms}.ad`: median of {", ".join(f"{x:.2f}" for x in times)} s.',
            {'s': t, 'MB': peak}))
        small = terms // 10
        t10, _, _, times10 = self.grad_file('sum_of_products', small, s['runs'])
        # Less the start-up both pay, which would make any growth look linear.
        start = median([run_process(self.adgrad + ['eval', '1'])[0] for _ in range(s['runs'])])
        ratio = (t - start) / (t10 - start)
        rows.append(Figure(
            f'linearity (issue 13): whole `adgrad grad` less start-up, {tokens:,} ÷ '
            f'{workloads.tokens("sum_of_products", small):,} tokens, sum of products',
            f'{ratio:.1f} (({seconds(t)} - {seconds(start)}) ÷ ({seconds(t10)} - '
            f'{seconds(start)}))', '≤ 11', verdict(ratio <= 11),
            f'medians, the same files as the row above and `{self.reproduce("sum_of_products", small)}`'
            f' (median of {", ".join(f"{x:.2f}" for x in times10)} s); start-up is the median '
            "of `adgrad eval 1`.", {'ratio': ratio}))
        depth = s['memory_tokens'] // 3
        tc, pc, _, timesc = self.grad_file('block_chain', depth, s['memory_runs'])
        rows.append(Figure(
            f'a million tokens (issue 13): {workloads.tokens("block_chain", depth):,}-token chain '
            'of a block, whole `adgrad grad`',
            f'{seconds(tc)}, peak {pc:.0f} MB', '≤ 1.5 s', verdict(tc <= 1.5),
            f'`{self.reproduce("block_chain", depth)}; adgrad grad -f block_chain-{depth}.ad`: '
            f'{workloads.operations("block_chain", depth):,} operations (and two constants a '
            f'call); median of {", ".join(f"{x:.2f}" for x in timesc)} s.', {'s': tc, 'MB': pc}))
        # The other shapes issue 13 says it will be checked with, at a million tokens.
        rows.append(self._million('short_statements', 'program of short statements', 1.0, 200))
        rows.append(self._million('block_sums', f'sum of {workloads.SUM_DEPTH}-deep chains of a '
                                  'block that calls a block', 1.5))
        rows.append(self._nodes_cost())
        for name in ('bindings', 'semicolons'):
            n = s['statements']
            tb, pb, _, timesb = self.grad_file(name, n, s['runs'])
            what = 'binding lines' if name == 'bindings' else "';' in a row"
            rows.append(Figure(
                f'many statements (issue 12): {n:,} {what}, whole `adgrad grad`',
                f'{seconds(tb)}, peak {pb:.0f} MB', '≤ 1 s', verdict(tb <= 1),
                f'`{self.reproduce(name, n)}; adgrad grad -f {name}-{n}.ad`: median of '
                f'{", ".join(f"{x:.2f}" for x in timesb)} s.', {'s': tb, 'MB': pb}))
        return rows

    def _million(self, name, label, target_s, target_mb=None):
        """A whole `adgrad grad` of a million-token workload, against the
        target of the issue-13 row of its kind."""
        size = workloads.size_for(name, self.sizes['memory_tokens'])
        t, peak, _, times = self.grad_file(name, size, self.sizes['memory_runs'])
        ok = t <= target_s and (target_mb is None or peak <= target_mb)
        target = f'≤ {target_s} s' + (f', ≤ {target_mb} MB' if target_mb else '')
        return Figure(
            f'a million tokens (issue 13): {workloads.tokens(name, size):,}-token {label}, '
            'whole `adgrad grad`',
            f'{seconds(t)}, peak {peak:.0f} MB', target, verdict(ok),
            f'`{self.reproduce(name, size)}; adgrad grad -f {name}-{size}.ad`: '
            f'{workloads.operations(name, size):,} operations; median of '
            f'{", ".join(f"{x:.2f}" for x in times)} s.', {'s': t, 'MB': peak})

    def _nodes_cost(self):
        """--nodes's extra time per node: `grad --nodes --format plain` against
        `grad`, on the same nesting file, alternating."""
        s = self.sizes
        size = s['large_depth']
        path = self.file('nesting', size)
        plain = self.adgrad + ['grad', '-f', str(path), '--format', 'plain']
        nodes = plain + ['--nodes']
        without, with_nodes = [], []
        for _ in range(s['runs']):
            without.append(run_process(plain, self.dir / 'out.txt')[0])
            with_nodes.append(run_process(nodes, self.dir / 'nodes.txt')[0])
        count = sum(1 for line in open(self.dir / 'nodes.txt') if line.startswith('node\t'))
        per = (median(with_nodes) - median(without)) / count * 1e6
        return Figure(
            f'--nodes (issue 13): extra cost per node, {count:,}-node nesting',
            f'{per:.2f} µs per node ({seconds(median(with_nodes))} ÷ '
            f'{seconds(median(without))} whole process)', '≤ 2 µs', verdict(per <= 2),
            f'`adgrad grad -f nesting-{size}.ad --format plain --nodes` against the same '
            f'without --nodes, alternating, {s["runs"]} runs each: medians '
            f'{seconds(median(with_nodes))} and {seconds(median(without))}, the difference '
            'divided by the node lines printed.', {'µs per node': per})

    # ---- batches: benchmarks/batches.py ----

    def batch(self):
        import batches
        return batches.figures(self, Figure, run_process, run_child, seconds, verdict)

    def dask(self):  # 10^7 rows over 10 Parquet files on a 2-worker local cluster
        import batches
        return [batches.Batches(self, Figure, run_process, run_child, seconds, verdict).dask()]

    def pipe(self):  # 10^8 rows generated into a pipe: about ten minutes or more
        import batches
        return [batches.Batches(self, Figure, run_process, run_child, seconds, verdict).pipe()]

    def mean(self):  # --points --mean ÷ --points to /dev/null, 10^7 rows
        import batches
        return [batches.Batches(self, Figure, run_process, run_child, seconds, verdict).mean()]

    def mean_pipe(self):  # --mean over 10^8 rows generated into a pipe (opt-in)
        import batches
        return [batches.Batches(self, Figure, run_process, run_child, seconds, verdict)
                .mean_pipe()]


# ---- the report ----

def machine():
    cpu = platform.processor() or platform.machine()
    try:
        with open('/proc/cpuinfo') as f:
            cpu = next(line.split(':', 1)[1].strip() for line in f if line.startswith('model name'))
    except (OSError, StopIteration):
        pass
    nproc = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()
    return nproc, cpu


def reference_loop():
    """Milliseconds for a fixed pure-Python loop in a fresh interpreter: how fast
    this machine runs Python right now, to compare reports from different runs."""
    code = ('import time; t = time.perf_counter(); sum(range(10**7)); '
            'print(time.perf_counter() - t)')
    runs = [float(subprocess.run([sys.executable, '-c', code], capture_output=True,
                                 text=True, check=True).stdout) for _ in range(3)]
    return min(runs) * 1000


def versions():
    found = {}
    for module in ('autodiff_cli', 'lark', 'numpy', 'torch'):
        out = subprocess.run([sys.executable, '-c', f'import {module}; print({module}.__version__)'],
                             capture_output=True, text=True)
        found[module] = out.stdout.strip() if out.returncode == 0 else 'not installed'
    return found


def git_state():
    try:
        head = subprocess.run(['git', '-C', str(ROOT), 'rev-parse', '--short', 'HEAD'],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(['git', '-C', str(ROOT), 'status', '--porcelain', '--',
                                'autodiff_cli', 'grammar'],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return 'not a git checkout'
    return f'commit {head}' + (' with uncommitted changes to the package' if dirty else '')


def report(figures, command, started, load, reference, quick, adgrad):
    nproc, cpu = machine()
    v = versions()
    lines = ['# Benchmarks', '',
             'Written by the benchmark harness; do not edit by hand. Rerun with the command '
             'below (see "Benchmarks" in docs/development.md).', '',
             'The rule since issue 26: no figure may get more than 10% worse than at 135ea79, '
             'measured side by side with `python benchmarks/run.py --against 135ea79`; the '
             'targets below are the figures\' own.', '']
    if quick:
        lines += ['**Quick mode: tiny sizes that only show the harness runs. These are not the '
                  'figures of the targets.**', '']
    lines += [
        f'- command: `{command}`',
        f'- date: {started:%Y-%m-%d %H:%M} UTC',
        f'- machine: nproc {nproc}, {cpu}, {platform.system()} {platform.release()}; '
        f'load average {load[0]:.2f} at the start, {os.getloadavg()[0]:.2f} at the end; '
        f'`sum(range(10**7))` took {reference[0]:.0f} ms at the start, '
        f'{reference_loop():.0f} ms at the end',
        f'- Python {platform.python_version()} (in a virtual environment: {sys.prefix != sys.base_prefix})',
        f'- adgrad {v["autodiff_cli"]} ({git_state()}), run as `{shell(adgrad)}`; '
        f'Lark {v["lark"]}, NumPy {v["numpy"]}, PyTorch {v["torch"]}',
        '', '| figure | measured | target | result |', '|---|---|---|---|']
    for f in figures:
        lines.append(f'| {cell(f.name)} | {cell(f.measured)} | {f.target} | {f.status} |')
    lines += ['', '## How each figure was measured', '']
    for f in figures:
        if f.how:
            lines.append(f'- **{f.name}**: {f.how}')
    misses = [f for f in figures if f.status == 'miss']
    lines += ['', f'{len(figures) - len(misses)} of {len(figures)} figures meet their target'
              + (f'; missed: {"; ".join(f.name for f in misses)}.' if misses else '.'), '']
    return '\n'.join(lines)


# ---- --against: two trees side by side ----

def git(*args):
    return subprocess.run(['git', '-C', str(ROOT), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


class Side:
    """One tree that --against measures: its label, its root, and what it is."""

    def __init__(self, label, root, what):
        self.label, self.root, self.what = label, Path(root), what
        self.imports = None

    def enter(self, base):
        # Every child inherits this: adgrad, child.py, derive.py, Dask's workers.
        os.environ['PYTHONPATH'] = os.pathsep.join(filter(None, [str(self.root), base]))

    def check(self, base):
        """Fail unless a child run from here imports autodiff_cli from this tree."""
        self.enter(base)
        found = subprocess.run([sys.executable, '-c', 'import autodiff_cli; '
                                'print(autodiff_cli.__file__)'], capture_output=True,
                               text=True, check=True).stdout.strip()
        self.imports = Path(found).resolve().parent
        if self.imports != (self.root / 'autodiff_cli').resolve():
            raise RuntimeError(f'the {self.label} side imports {self.imports}, not its tree '
                               f'{self.root}')


def against_sizes(sizes):
    """Sizes for one round of --against: one run of each measurement, as the
    rounds are the repeats (start-up keeps a few, being the shortest)."""
    return dict(sizes, runs=1, torch_runs=1, memory_runs=1, batch_rounds=1,
                startup_runs=max(3, sizes['startup_runs'] // 5))


def against(rev, only, quick, rounds, log):
    """{figure: {quantity: {side label: [one value a round]}}}, and the two
    Sides, from measuring `rev` and the working tree in alternating turns."""
    try:
        commit = git('rev-parse', '--verify', '--quiet', f'{rev}^{{commit}}')
    except subprocess.CalledProcessError:
        raise ValueError(f'{rev!r} names no commit of {ROOT}') from None
    sizes = against_sizes(QUICK if quick else FULL)
    base = os.environ.get('PYTHONPATH')
    here = os.getcwd()
    table = {}
    with tempfile.TemporaryDirectory(prefix='adgrad-against-') as tmp:
        tree, work = Path(tmp) / 'tree', Path(tmp) / 'work'
        work.mkdir()
        git('worktree', 'add', '--detach', '--quiet', str(tree), commit)
        try:
            # Out of any tree: `python -m` and `-c` put the current directory
            # first on sys.path, ahead of PYTHONPATH.
            os.chdir(work)
            sides = (Side('old', tree, f'{rev} ({commit[:7]})'), Side('new', ROOT, git_state()))
            for side in sides:
                side.check(base)
            for name in (n for n in FIGURES + OPT_IN
                         if n in only and (n not in NEWER or rev != AGAINST)):
                for k in range(1 if name in ONCE else rounds):
                    for side in (sides if k % 2 == 0 else sides[::-1]):
                        log(f'{name}, round {k + 1}, {side.label} ...')
                        side.enter(base)
                        bench = Bench(sizes, work, log, [sys.executable, '-m', 'autodiff_cli'])
                        try:
                            rows = getattr(bench, name)()
                        except (OSError, ValueError, RuntimeError,
                                subprocess.CalledProcessError) as error:
                            rows = [Figure(name, f'failed: {error}', '', 'n/a', '')]
                        previous = None
                        for row in rows:
                            if row.values and row.values is previous:
                                continue  # one measurement under two targets
                            previous = row.values
                            log(f'  {row.measured}')
                            entry = table.setdefault(row.name, {})
                            # A row with no numbers (skipped, failed) shows what it says.
                            said = {f'{side.label}: {row.measured}'[:300]: None}
                            for quantity, value in (row.values or said).items():
                                entry.setdefault(quantity, {'old': [], 'new': []})[
                                    side.label].append(value)
        finally:
            os.chdir(here)
            if base is None:
                os.environ.pop('PYTHONPATH', None)
            else:
                os.environ['PYTHONPATH'] = base
            subprocess.run(['git', '-C', str(ROOT), 'worktree', 'remove', '--force', str(tree)],
                           capture_output=True)
    return table, sides


def number(x):
    return f'{x:.6g}'


def against_report(table, sides, command, rounds):
    """The side-by-side table, as Markdown: one line per figure and quantity."""
    old, new = sides
    lines = ['# Benchmarks side by side', '',
             f'- command: `{command}`',
             f'- old: {old.what}, imported from {old.imports} (a temporary worktree, removed)',
             f'- new: {new.what}, imported from {new.imports}',
             f'- Python {platform.python_version()}, both sides as '
             f'`python -m autodiff_cli`; {rounds} round(s), alternating which side goes first; '
             'each side\'s value is the median of its rounds; lower is better',
             f'- machine: nproc {machine()[0]}, load average {os.getloadavg()[0]:.2f} at the end',
             '', '| figure | quantity | old | new | new ÷ old | within 1.10 |',
             '|---|---|---|---|---|---|']
    worse, compared = [], 0
    for name, quantities in table.items():
        for quantity, runs in quantities.items():
            a = [x for x in runs['old'] if x is not None]
            b = [x for x in runs['new'] if x is not None]
            cells = [number(median(a)) if a else 'n/a', number(median(b)) if b else 'n/a']
            if a and b and median(a) > 0 and median(b) > 0:
                # judged as printed, so the table never shows 1.1000 beside NO
                ratio = round(median(b) / median(a), 4)
                compared += 1
                ok = ratio <= WITHIN
                if not ok:
                    worse.append(f'{name} ({quantity})' if quantity else name)
                cells += [f'{ratio:.4f}', 'yes' if ok else 'NO']
            else:
                cells += ['n/a', 'n/a']
            lines.append(f'| {cell(name)} | {cell(quantity)} | ' + ' | '.join(cells) + ' |')
    lines += ['', f'{compared - len(worse)} of {compared} compared quantities within '
              f'{WITHIN:.2f}' + (f'; worse: {"; ".join(worse)}.' if worse else '.'), '']
    return '\n'.join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true',
                        help='tiny sizes and single runs: checks the harness, measures nothing')
    parser.add_argument('-o', '--output', default=None,
                        help='where to write the report (default: BENCHMARKS.md; with '
                        '--against, standard output only)')
    parser.add_argument('--against', nargs='?', const=AGAINST, default=None, metavar='REV',
                        help=f'run REV (default {AGAINST}) and the working tree side by side '
                        'and print the ratios')
    parser.add_argument('--rounds', type=int, default=None,
                        help='with --against: turns of each side (default 3, 1 with --quick)')
    parser.add_argument('--only', default=','.join(FIGURES),
                        help=f'comma-separated figures to run, of {",".join(FIGURES)} (all by '
                             f'default), and {",".join(OPT_IN)} (only when named)')
    args = parser.parse_args(argv)
    if args.rounds is not None and args.rounds < 1:
        parser.error('--rounds must be at least 1')
    only = [name.strip() for name in args.only.split(',') if name.strip()]
    unknown = set(only) - set(FIGURES + OPT_IN)
    if unknown:
        parser.error(f'unknown figures: {", ".join(sorted(unknown))}')

    command = 'python benchmarks/run.py' + ''.join(f' {shell([a])}' for a in (argv or sys.argv[1:]))

    def log(message):
        print(message, file=sys.stderr, flush=True)

    if args.against:
        rounds = args.rounds or (1 if args.quick else 3)
        try:
            table, sides = against(args.against, only, args.quick, rounds, log)
        except ValueError as error:
            parser.error(str(error))
        except subprocess.CalledProcessError as error:
            parser.error(f'{shell(error.cmd)} failed: {error.stderr.strip()}')
        text = against_report(table, sides, command, rounds)
        print(text, end='')
        if args.output:
            Path(args.output).write_text(text, encoding='utf-8')
            log(f'wrote {args.output}')
        return 0
    args.output = args.output or str(ROOT / 'BENCHMARKS.md')
    started = datetime.datetime.now(datetime.timezone.utc)
    load = os.getloadavg()
    reference = (reference_loop(),)

    figures = []
    with tempfile.TemporaryDirectory(prefix='adgrad-bench-') as workdir:
        bench = Bench(QUICK if args.quick else FULL, workdir, log)
        for name in FIGURES + OPT_IN:
            if name in only:
                log(f'{name} ...')
                rows = getattr(bench, name)()
                for row in rows:
                    log(f'  {row.measured} [{row.status}]')
                figures += rows
        text = report(figures, command, started, load, reference, args.quick, bench.adgrad)
    Path(args.output).write_text(text, encoding='utf-8')
    log(f'wrote {args.output}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
