"""Running a generated case in-process, and the properties every run must have.

- the exit code is 0, 1 or 2, never 70 (a bug) nor anything else;
- nothing on stdout when the exit is 2, and no traceback on stderr;
- on exit 1 or 2, one error line on stderr (after any warnings), with the
  source line and its caret when the error has a column;
- for a tensor case (an array program, tests/fuzz/arrays.py): exit 0, and
  the value and every gradient agree with torch float64 autograd;
- an answer within a fixed time;
- for a points case: the same exit code, stdout, stderr and output files
  whether pyarrow reads the CSV or TSV (forced, whatever its size) or
  Python does;
- for a numbers case: the single point, its row of a batch, and the program
  with its blocks inlined give the same value and gradient (a gradient that is
  non-finite on either side of the inlined comparison is not compared: sharing
  against duplication may meet 0*inf differently, as in PyTorch; a batch row
  may differ where the single point computed with NumPy's kernels agrees
  with it, as the README's "A batch row and a single point" says; and the
  inlined program's gradient may differ by the rounding of terms that cancel).
"""

import contextlib
import json
import math
import os
import shutil
import signal
import tempfile

from tests.helpers import run_main, same


class Hang(BaseException):
    """Raised by the alarm; a BaseException so that main() does not map it to an exit code."""


def execute(case, limit):
    """Run each command line of the case in a fresh folder holding its files: [Run]."""
    folder, cwd = tempfile.mkdtemp(prefix='adgrad-fuzz-'), os.getcwd()
    runs = []

    def alarm(*_):
        raise Hang
    previous = signal.signal(signal.SIGALRM, alarm)
    try:
        for name, data in case['files'].items():
            with open(os.path.join(folder, name), 'wb') as f:
                f.write(data)
        os.chdir(folder)
        readers = ('pyarrow', 'python') if case['kind'] == 'points' else (None,)
        for argv in case.get('runs') or [case['argv']]:
            for reader in readers:
                signal.setitimer(signal.ITIMER_REAL, limit)
                try:
                    with _points_read_by(reader):
                        run = run_main(argv, stdin=case.get('stdin', b''))
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                if reader is not None:   # what it wrote with -o, beside stdout
                    run = run._replace(err=run.err + ''.join(
                        f'\n[{name}: {_digest(name)}]' for name in sorted(os.listdir('.'))
                        if name.startswith(('out.', '-out.'))))
                runs.append(run)
    finally:
        signal.signal(signal.SIGALRM, previous)
        os.chdir(cwd)
        shutil.rmtree(folder, ignore_errors=True)
    return runs


@contextlib.contextmanager
def _points_read_by(reader):
    """pyarrow's CSV reader for a file of any size, or Python's alone (None: as it is)."""
    from autodiff_cli.table import sources as points
    saved = points._ARROW_BYTES, points._pyarrow_csv
    if reader == 'pyarrow':
        points._ARROW_BYTES = 0
    elif reader == 'python':
        points._pyarrow_csv = lambda: None
    try:
        yield
    finally:
        points._ARROW_BYTES, points._pyarrow_csv = saved


def _digest(name):
    """A short hash of what the run wrote to `name` (a Parquet file's table),
    and the file removed, so that the other reader's run writes it afresh."""
    import hashlib
    try:
        with open(name, 'rb') as f:
            data = f.read()
        os.unlink(name)
    except OSError as error:
        return type(error).__name__
    if name.endswith('.parquet'):   # the table, not the bytes (which name the writer)
        import io

        import pyarrow.parquet as pq
        data = repr(pq.read_table(io.BytesIO(data)).to_pylist()).encode()
    return hashlib.sha256(data).hexdigest()[:16]


def internal_error(run):
    """The cause of an exit 70, as one line ('' when the run was not one)."""
    if run.code != 70:
        return ''
    line = (run.err.strip().splitlines() or [''])[-1]
    return line.removeprefix('adgrad: internal error: ').split(' (run with')[0]


def problems(case, runs):
    """What is wrong with these runs of the case, as short texts ([] when nothing)."""
    found = []
    for run in runs:
        if run.code == 70:
            found.append(f'exit 70: {internal_error(run)}')
        elif run.code not in (0, 1, 2):
            found.append(f'exit {run.code}')
        if run.code == 2 and run.out:
            found.append('stdout on exit 2')
        if 'Traceback' in run.err:
            found.append('traceback on stderr')
        if run.code in (1, 2) and not _one_error(run.err):
            found.append('not one error line: ' + run.err[-300:])
    if not found and case['kind'] == 'numbers':
        found += _disagreements(case, runs)
    if not found and case['kind'] == 'tensor':
        found += _against_torch(case, runs[0])
    if not found and case['kind'] == 'points':
        for fast, slow in zip(runs[0::2], runs[1::2]):
            if (fast.code, fast.out, fast.err) != (slow.code, slow.out, slow.err):
                found.append('readers differ: pyarrow and Python read the points differently')
    return found


def _one_error(err):
    """Whether stderr is warnings and notes, then one error line, then perhaps its source and caret."""
    lines = [line for line in err.rstrip('\n').split('\n')
             if not line.startswith(('adgrad: warning: ', 'adgrad: note: '))]
    if not lines or not lines[0].startswith('adgrad: error: '):
        return False
    if len(lines) == 1:
        return True
    return len(lines) == 3 and 'column ' in lines[0] and lines[1].startswith('  ') and \
        lines[2].strip() == '^'


def _against_torch(case, run):
    """A tensor case's grad --json against torch float64 autograd."""
    import numpy as np
    try:
        import torch
    except ImportError:
        return []
    from tests.fuzz.arrays import torch_value
    if run.code != 0:
        return [f'wrong numbers: exit {run.code} for a well-shaped program: {run.err[-300:]}']
    try:
        got = json.loads(run.out)
    except ValueError:
        return [f'wrong numbers: grad --json wrote no JSON: {run.out[:200]!r}']
    env = {name: torch.tensor(value, dtype=torch.float64, requires_grad=True)
           for name, value in case['values'].items()}
    with np.errstate(all='ignore'):
        value = torch_value(case['tree'], env)
        if case.get('block'):
            value = value * 2 / 2
        names = sorted(env)
        grads = torch.autograd.grad(value, [env[n] for n in names], allow_unused=True) \
            if value.requires_grad else [None] * len(names)
    wrong = []
    want = {'value': value.detach().numpy()}
    want.update({n: (torch.zeros_like(env[n]) if g is None else g).numpy()
                 for n, g in zip(names, grads)})
    have = {'value': got['value'], **got['gradient']}
    for key, expected in want.items():
        if key not in have:
            wrong.append(f'wrong numbers: no gradient for {key}')
            continue
        actual = np.array(_numbers(have[key]), dtype=float)
        if actual.shape != expected.shape:
            wrong.append(f'wrong numbers: {key} has shape {actual.shape}, torch {expected.shape}')
            continue
        if not _close(actual, expected):
            wrong.append(f'wrong numbers: {key} = {actual.tolist()}, torch {expected.tolist()}')
    return wrong


def _numbers(value):
    if isinstance(value, list):
        return [_numbers(v) for v in value]
    return float(value)


def _close(actual, expected, rel=1e-9):
    """Equal within rel, relative to the larger of the entry and the array's
    largest finite entry (terms cancel in sums); where torch gives nan, any
    number will do (adgrad's where and if do not leak nan from the untaken
    side, and torch's may)."""
    import numpy as np
    finite = np.isfinite(expected)
    scale = max([1.0] + [float(np.max(np.abs(expected[finite])))] if finite.any() else [1.0])
    for a, b in zip(actual.ravel(), expected.ravel()):
        if math.isnan(b):
            continue
        if math.isinf(b) or math.isinf(a) or math.isnan(a):
            if not (a == b):
                return False
            continue
        if abs(a - b) > rel * max(abs(b), scale):
            return False
    return True


def _number(x):
    return float(x)   # also the strings 'inf', '-inf' and 'nan' that adgrad writes


def _disagreements(case, runs):
    codes = [run.code for run in runs]
    if len(set(codes)) > 1:
        return [f'wrong numbers: exit codes {codes} for one point, a batch and the inlined program']
    if codes[0] != 0:
        return []
    single, inlined = json.loads(runs[0].out), json.loads(runs[2].out)
    row = json.loads(runs[1].out.splitlines()[case['row']])
    batch = {'value': row['value'],
             'gradient': {k[2:]: v for k, v in row.items() if k.startswith('d_')}}
    wrong = []
    for name, other in (('batch row', batch), ('inlined program', inlined)):
        for key in ['value'] + sorted(single['gradient']):
            a = _number(single['value'] if key == 'value' else single['gradient'][key])
            got = other['value'] if key == 'value' else other['gradient'].get(key)
            if got is None and name == 'inlined program':
                got = 0.0   # inlining dropped the variable with an unused argument: ∂ is 0
            b = math.nan if got is None else _number(got)
            if name == 'inlined program' and key != 'value' and not (math.isfinite(a)
                                                                     and math.isfinite(b)):
                # A block shares its argument's node where the inlined twin duplicates
                # it, so backward meets 0*inf on a different path: inf against nan,
                # as PyTorch gives for the same two programs. Values, and gradients
                # finite on both sides, are still compared strictly.
                continue
            if not same(a, b, rel=1e-9, abs_=1e-9):
                if name == 'batch row' and _as_numpy_computes(case, key, b):
                    continue
                if name == 'inlined program' and key != 'value' and \
                        abs(a - b) <= max(_cancelling(case, 'prog.ad', key),
                                          _cancelling(case, 'inlined.ad', key)):
                    continue
                wrong.append(f'wrong numbers: {name} gives {key} = {b!r}, the single point {a!r}')
    return wrong


def _program_and_point(case, program):
    """The case's program (a file name of it) lowered, and its point as floats."""
    from autodiff_cli import lower
    row = json.loads(case['files']['p.jsonl'].decode().splitlines()[case['row']])
    return lower(case['files'][program].decode()), {k: float(v) for k, v in row.items()}


def _cancelling(case, program, name):
    """The rounding left when the terms that reach variable `name` cancel:
    n·ε·Σ|term| for n terms (pictures mark a gradient below it ≈0). A block
    shares its argument where the inlined copy computes it twice, so with
    f(p) = p/p the point's terms cancel exactly (0) and the copy's leave
    7e-9 of terms of 1e8; both are 0 within rounding."""
    from autodiff_cli import backward, forward
    from autodiff_cli.core.passes import executed, pullback
    graph, point = _program_and_point(case, program)
    if name not in graph.inputs:
        return 0.0
    values = forward(graph, point)
    grads = backward(graph, values)
    target, terms = graph.inputs[name], []
    for j, ran in enumerate(executed(graph, values)):
        node = graph.nodes[j]
        if ran and target in node.args and grads[j] is not None:
            terms += [t for a, t in zip(node.args, pullback(graph, j, grads[j], values))
                      if a == target and t is not None and math.isfinite(t)]
    return len(terms) * 2.0 ** -52 * sum(abs(t) for t in terms)


def _as_numpy_computes(case, key, got):
    """Whether the single point, computed with NumPy's kernels instead of C's
    libm (helpers.numpy_kernels), gives the batch row's number: then the two
    differ by an ulp of a kernel that the program grew (sinh(z) - z at
    z = 1e-8 is 0 with NumPy's sinh on AVX-512, 1.6e-24 with C's), which the
    README says, not by a wrong derivative or a masking bug."""
    from autodiff_cli import backward, forward
    from tests.helpers import numpy_kernels
    graph, point = _program_and_point(case, 'prog.ad')
    with numpy_kernels():
        values = forward(graph, point)
        grads = backward(graph, values)
    want = values[graph.output] if key == 'value' else grads[graph.inputs[key]]
    return same(float(want), got, rel=1e-9, abs_=1e-9)
