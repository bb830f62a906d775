"""In-process measurements, each run by run.py in a fresh interpreter.

    python benchmarks/child.py phases FILE REPS        adgrad's lower, forward, backward
    python benchmarks/child.py torch NAME SIZE REPS    torch's build + backward
    python benchmarks/child.py numpy-logistic ROWS REPS
    python benchmarks/child.py batch-logistic FILE ROWS REPS

Each prints one JSON object: lists of seconds per repetition, and the
numbers computed, so run.py can check that both sides computed the same.
"""

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def phases(path, reps):
    """Steady state, as the CLI runs: the cycle collector paused throughout
    (resumed, it would re-scan the fresh tape on the first forward, which the
    CLI never pays), and a collection between repetitions, outside the timing."""
    import gc

    from autodiff_cli import backward, forward, lower
    text = Path(path).read_text(encoding='utf-8')
    tokens = sum(1 for _ in _tokens(text))
    result = {'lower': [], 'forward': [], 'backward': [], 'tokens': tokens, 'lower_cpu': []}
    gc.disable()
    for _ in range(reps):
        gc.collect()
        c0 = time.process_time()
        t0 = time.perf_counter()
        graph = lower(text)  # parse + lower
        t1 = time.perf_counter()
        # (CPU seconds too: on a shared machine they leave out the time
        # other processes held the core.)
        result['lower_cpu'].append(time.process_time() - c0)
        values = forward(graph, graph.defaults)
        t2 = time.perf_counter()
        grads = backward(graph, values)
        t3 = time.perf_counter()
        result['lower'].append(t1 - t0)
        result['forward'].append(t2 - t1)
        result['backward'].append(t3 - t2)
        del graph, values, grads  # free before the next repetition
    gc.enable()
    return result


def _tokens(text):
    """The program's tokens, as the grammar's terminals cut them (comments and
    white space aside): what 'per token' divides by."""
    import re
    return re.finditer(r'\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|[A-Za-z_]\w*|\*\*|[<>=!]=|'
                       r'[-+*/^]=|[^\s#]', re.sub(r'#[^\n]*', '', text))


def torch_time(name, size, reps):
    import torch

    from workloads import torch_graph
    torch_graph(name, min(size, 1000), torch)[0].backward()  # warm up
    seconds, value, grads = [], None, None
    for _ in range(reps):
        t0 = time.perf_counter()
        out, leaves = torch_graph(name, size, torch)
        out.backward()
        seconds.append(time.perf_counter() - t0)
        value, grads = out.item(), [leaf.grad.item() for leaf in leaves]
        del out, leaves
    return {'seconds': seconds, 'value': value, 'gradient': grads, 'torch': torch.__version__}


LOGISTIC_WEIGHTS = {'w1': 0.8, 'w2': -0.4, 'b': 0.1}


def logistic_points(rows):
    """Rows of (x1, x2, y), the same every run."""
    import numpy as np
    rng = np.random.default_rng(5)
    return {'x1': rng.normal(size=rows), 'x2': rng.normal(size=rows),
            'y': (rng.random(rows) < 0.5).astype(np.float64)}


def numpy_logistic(rows, reps):
    """The hand-written vectorised gradient of samples/logistic.ad, every input."""
    import numpy as np
    points = logistic_points(rows)
    x1, x2, y = points['x1'], points['x2'], points['y']
    w1, w2, b = LOGISTIC_WEIGHTS['w1'], LOGISTIC_WEIGHTS['w2'], LOGISTIC_WEIGHTS['b']
    seconds = []
    for _ in range(reps):
        t0 = time.perf_counter()
        z = w1 * x1 + w2 * x2 + b
        p = 1.0 / (1.0 + np.exp(-z))
        loss = -(y * np.log(p) + (1 - y) * np.log(1 - p))
        dz = p - y
        grads = {'x1': dz * w1, 'x2': dz * w2, 'y': -z, 'w1': dz * x1, 'w2': dz * x2, 'b': dz}
        seconds.append(time.perf_counter() - t0)
    return {'seconds': seconds, 'value': float(loss.sum()),
            'gradient': {k: float(v.sum()) for k, v in grads.items()}}


def _tune_allocator_as_the_command_line_does():
    """`grad --points` tunes glibc's allocator in cli/ (135ea79 did it inside
    run_batch), so the core is measured as that command runs it, on either tree."""
    try:
        from autodiff_cli.cli.batch import tune_allocator
    except ImportError:
        return
    tune_allocator()


def batch_logistic(path, rows, reps):
    """adgrad's batch core on the same points: autodiff_cli.batch.run_batch,
    the array evaluation behind `grad --points`."""
    from autodiff_cli import lower
    from autodiff_cli.core.batch import run_batch
    _tune_allocator_as_the_command_line_does()
    graph = lower(Path(path).read_text(encoding='utf-8'))
    columns = dict(logistic_points(rows), **LOGISTIC_WEIGHTS)
    names = sorted(graph.inputs)
    seconds = []
    for _ in range(reps):
        t0 = time.perf_counter()
        value, grads = run_batch(graph, columns, rows, wrt=names)[:2]
        seconds.append(time.perf_counter() - t0)
    return {'seconds': seconds, 'value': float(value.sum()),
            'gradient': {k: float(v.sum()) for k, v in grads.items()}}


def main(argv):
    kind, *args = argv
    if kind == 'phases':
        result = phases(args[0], int(args[1]))
    elif kind == 'torch':
        result = torch_time(args[0], int(args[1]), int(args[2]))
    elif kind == 'numpy-logistic':
        result = numpy_logistic(int(args[0]), int(args[1]))
    elif kind == 'batch-logistic':
        result = batch_logistic(args[0], int(args[1]), int(args[2]))
    else:
        raise SystemExit(f'unknown measurement {kind!r}')
    print(json.dumps(result))


if __name__ == '__main__':
    main(sys.argv[1:])
