"""Checkpointing (core/checkpoint.py): gradients bit for bit those of the plain
pass, on every sample, on the fuzzer's programs, in batches and over
arrays; less kept, as --memory reports, and the report's own figures."""

import glob
import json
import os
import random
import re

import numpy as np
import pytest

from autodiff_cli import backward, forward, lower
from autodiff_cli.core import checkpoint, loops, tensors
from autodiff_cli.core.batch import run_batch
from autodiff_cli.core.primitives import NUMBERS
from tests.fuzz import arrays as fuzz_arrays, gen
from tests.helpers import run_main

POLICIES = ['none', 'sqrt', 'every:1', 'every:2', 'every:5']   # none: unread values dropped


def bits(x):
    """A float's bits as text: -0.0 and 0.0 differ, every nan is one."""
    return float(x).hex()


def same_bits(a, b):
    return np.array_equal(np.asarray(a).view(np.int64), np.asarray(b).view(np.int64)) or (
        np.shape(a) == np.shape(b) and all(bits(x) == bits(y) for x, y in
                                           zip(np.ravel(a), np.ravel(b))))


def plain_and(graph, inputs, text):
    values = forward(graph, inputs)
    grads = backward(graph, values)
    run = checkpoint.gradients(graph, inputs, NUMBERS, checkpoint.policy(text))
    return grads, run


def test_the_fuzzers_programs_get_the_same_gradients_bit_for_bit():
    checked = 0
    for seed in range(150):
        rng = random.Random(seed)
        text, _, variables = gen.program(rng)
        graph = lower(text)
        at = gen.point(rng, graph.inputs)
        values = forward(graph, at)
        grads = backward(graph, values)
        for pol in POLICIES:
            run = checkpoint.gradients(graph, at, NUMBERS, checkpoint.policy(pol))
            assert bits(run.values[graph.output]) == bits(values[graph.output])
            for name, i in graph.inputs.items():
                assert bits(run.grads[i]) == bits(grads[i]), (seed, pol, text, name)
        checked += len(checkpoint.tape_cuts(graph, checkpoint.policy('every:1'))) > 1
    assert checked > 100   # most of them are cut into segments


@pytest.mark.parametrize('path', sorted(glob.glob('samples/*.ad')))
def test_every_sample_gets_the_same_gradients_bit_for_bit(path):
    graph = lower(open(path).read())
    if graph.shapes is not None:
        pytest.skip('an array program: below')
    inputs = {name: graph.defaults.get(name, 0.75) for name in graph.inputs}
    for pol in POLICIES:
        grads, run = plain_and(graph, inputs, pol)
        assert all(bits(run.grads[i]) == bits(grads[i]) for i in graph.inputs.values()), pol


def test_a_batch_gets_the_same_gradients_bit_for_bit():
    named = 0   # batches with a node not finite: the same one is named
    for seed in range(60):
        rng = random.Random(seed)
        text, _, variables = gen.program(rng)
        graph = lower(text)
        rows = 7
        columns = {v: np.array([gen.point(rng, [v])[v] for _ in range(rows)]) for v in graph.inputs}
        wrt = list(graph.inputs)
        value, gradient, bad = run_batch(graph, columns, rows, wrt)
        named += bad is not None
        for pol in POLICIES:
            value_c, gradient_c, bad_c = run_batch(graph, columns, rows, wrt,
                                                   checkpoint=checkpoint.policy(pol))
            assert same_bits(value, value_c) and bad == bad_c, (seed, pol, text)
            for name in wrt:
                assert same_bits(gradient[name], gradient_c[name]), (seed, pol, text)
    assert named > 5


def test_array_programs_get_the_same_gradients_bit_for_bit():
    k, cut = tensors.algebra(), 0
    for seed in range(40):
        rng = random.Random(seed)
        output, inputs = fuzz_arrays.tensor_program(rng)
        values = {name: np.asarray(fuzz_arrays.value_of(rng, shape), dtype=float)
                  for name, shape in inputs.items()}
        source = fuzz_arrays.text(output)
        source = 'f(p) = p * 2\nloss = ' + source + '\nf(loss) / 2'   # a block call: two units
        graph = lower(source)
        plain = tensors.gradients(graph, tensors.evaluate(graph, values))
        again = {}
        for pol in POLICIES + ['auto']:   # auto's 1 byte: cut as sqrt is
            with np.errstate(all='ignore'):
                run = checkpoint.gradients(graph, values, k, checkpoint.policy(pol, 1))
            for name, i in graph.inputs.items():
                assert same_bits(run.grads[i], plain[i]), (seed, pol, source)
            again[pol] = run.memory.recomputed
        assert again['auto'] == again['sqrt'], source
        cut += again['sqrt'] > 0
    assert cut > 10   # most of them compute something again


LOOP = """input W[12, 4, 4], b[12, 4], x[4]
s = 0
for i in 0..12 {
    x = tanh(W[i] @ x + b[i])
    s += if(sum(x) > 0, sum(x^2), 0.5*sum(x))
}
loss = s + sum(x)"""


def loop_inputs():
    rng = np.random.default_rng(1)
    return {'W': rng.normal(size=(12, 4, 4)) * 0.6, 'b': rng.normal(size=(12, 4)) * 0.3,
            'x': rng.normal(size=4)}


@pytest.mark.parametrize('pol', POLICIES + ['every:12', 'every:40', 'auto'])
def test_a_loops_checkpoints_give_the_same_gradients_bit_for_bit(pol):
    graph, inputs, k = lower(LOOP), loop_inputs(), tensors.algebra()
    plain = tensors.gradients(graph, tensors.evaluate(graph, inputs))
    with np.errstate(all='ignore'):
        run = checkpoint.gradients(graph, inputs, k, checkpoint.policy(pol, 1000))
    for name, i in graph.inputs.items():
        assert same_bits(run.grads[i], plain[i]), name


@pytest.mark.parametrize('snapshots', [1, 2, 3, 5, 11])
def test_revolve_gives_the_same_gradients_bit_for_bit(snapshots):
    # What auto chooses under a tight limit: revolve's first sweep keeps a
    # few states, and each segment is reversed by the binomial schedule.
    graph, inputs, k = lower(LOOP), loop_inputs(), tensors.algebra()
    count = graph.nodes[graph.loops[0]].value.count
    strides = (loops.revolve_starts(count, snapshots), loops.Revolve(snapshots))
    plain = tensors.gradients(graph, tensors.evaluate(graph, inputs))
    with np.errstate(all='ignore'):
        values = forward(graph, {n: k.coerce(v) for n, v in inputs.items()}, k, strides)
    assert values[graph.loops[0]].strides == strides
    grads = tensors.gradients(graph, values)
    for name, i in graph.inputs.items():
        assert same_bits(grads[i], plain[i]), name


def _fewest_runs_again(n, s, memo={}):
    """The fewest iterations advanced to reverse n with s states held, by
    trying every first split (the recurrence revolve solves in closed form)."""
    if n == 1:
        return 0
    if s == 1:
        return n * (n - 1) // 2
    if (n, s) not in memo:
        memo[n, s] = min(m + _fewest_runs_again(m, s) + _fewest_runs_again(n - m, s - 1)
                         for m in range(1, n))
    return memo[n, s]


def _run_backward(n, strides, monkeypatch):
    """(iterations run, forward's among them, iterations told, states alive
    at each) of backward through n iterations kept as `strides` say, each
    state alive checked to be from no later than the iteration told or its
    output (the values told hold it)."""
    import weakref
    loop = lower(f'input X[3]\nfor i in 0..{n} {{\n    X = tanh(X * 0.9 + 0.1)\n}}\n'
                 'z = sum(X)').nodes[1].value
    k = tensors.algebra()
    runs, states, at, alive = [], weakref.WeakValueDictionary(), {}, []
    real = loops.stepper

    def stepper(*args, **kwargs):
        step, after = real(*args, **kwargs)

        def counted(state, loop_args, t):
            runs.append(t)
            states[id(state[0])], at[id(state[0])] = state[0], t
            return step(state, loop_args, t)

        def registered(values, state):
            state = after(values, state)
            states[id(state[0])], at[id(state[0])] = state[0], runs[-1] + 1
            return state
        return counted, registered
    monkeypatch.setattr(loops, 'stepper', stepper)
    run_ = loops.run(loop, [np.array([0.5, -1.0, 2.0])], k, strides)
    run_.outputs = ()   # (as a pass that owns them lets them go: sweep's release)
    forward_runs, told = len(runs), []
    for t, _ in loops.reversed_values(loop, run_, k):
        told.append(t)
        alive.append(sum(at[i] <= t for i in states.keys()))
        assert max(at[i] for i in states.keys()) <= t + 1, t
    return runs, forward_runs, told, alive


@pytest.mark.parametrize('n,s', [(2, 1), (7, 1), (11, 3), (30, 2), (57, 5), (100, 2), (100, 3),
                                 (120, 7), (45, 9)])
def test_revolve_runs_again_the_fewest_and_holds_its_states(n, s, monkeypatch):
    # Counted as it runs: the iterations run, and the states alive at once
    # (the start's, the checkpoints, the one an iteration runs from).
    strides = (loops.revolve_starts(n, s), loops.Revolve(s))
    runs, forward_runs, told, alive = _run_backward(n, strides, monkeypatch)
    assert forward_runs == n and told == list(range(n - 1, -1, -1))
    assert len(runs) - n == loops.recomputed(n, strides) == _fewest_runs_again(n, s) + 1
    assert max(alive) == min(s, n - 1) + 1


def test_a_segment_run_again_holds_its_checkpoints_and_its_own_states(monkeypatch):
    # every:4 over 10, counting the states up to the iteration told: at 9,
    # the checkpoints at 0, 4, 8 and state 9; at 7, those at 0 and 4 and
    # states 5 to 7 of its segment run again; at 3, state 0 and states 1 to 3.
    runs, forward_runs, told, alive = _run_backward(10, (4,), monkeypatch)
    assert len(runs) - forward_runs == 10 and told == list(range(9, -1, -1))
    assert alive == [4, 3, 5, 4, 3, 2, 4, 3, 2, 1]


def test_a_checkpointed_iteration_lets_each_value_go_once_its_rule_has_run(monkeypatch):
    # Values run again for one backward pass are its own: each goes as soon
    # as backward has passed it (spend), not at the end of the iteration.
    # A plain pass's are kept: they may be swept again, a Jacobian row by row.
    graph, inputs, k = lower(LOOP), loop_inputs(), tensors.algebra()
    told, real = [], loops.reversed_values

    def recorded(*args):
        for t, values in real(*args):
            told.append(values)
            yield t, values
    monkeypatch.setattr(loops, 'reversed_values', recorded)
    body = graph.nodes[graph.loops[0]].value.body
    from autodiff_cli.core.saved import is_placeholder
    for pol in ('none', 'every:3'):
        told.clear()
        with np.errstate(all='ignore'):
            checkpoint.gradients(graph, inputs, k, checkpoint.policy(pol))
        assert len(told) == 12
        if pol == 'none':   # what backward reads of an iteration's own: tanh's output
            read = [i for i, node in enumerate(body.nodes) if node.args and
                    getattr(told[0][i], 'ndim', 0) == 1 and not is_placeholder(told[0][i])]
            assert [body.nodes[i].op for i in read] == ['tanh']
        assert all(is_placeholder(values[i]) == (pol != 'none')
                   for values in told for i in read), pol


def test_the_cotangent_before_a_loop_is_not_held_through_its_backward(monkeypatch):
    # sweep held the last node's cotangent in a local while the loop's hook
    # ran: here X^2's, an array of the loop's output's size, a layer's worth.
    import weakref
    graph = lower('input X[1000]\nfor i in 0..4 {\n    X = tanh(X * 0.5)\n}\nloss = sum(X^2)')
    real, alive = loops.vjp, []

    def watched(loop, run_, cotangents, *args, **kwargs):
        seed = weakref.ref(cotangents[0])
        kwargs['each'] = lambda t, slots: alive.append(seed() is not None)
        return real(loop, run_, cotangents, *args, **kwargs)
    monkeypatch.setattr(loops, 'vjp', watched)
    checkpoint.array_gradients(graph, {'X': np.linspace(-1, 1, 1000)})
    assert alive == [False] * 4


def test_tanh_s_rule_over_arrays_holds_one_array_beside_its_cotangent():
    import tracemalloc

    from autodiff_cli.core import arrays
    rng = np.random.default_rng(0)
    y, g = np.tanh(rng.standard_normal(250_000)), rng.standard_normal(250_000)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        (dx,) = arrays.tanh_vjp(None, g, y, None)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert peak < 1.2 * y.nbytes
    assert same_bits(dx, g * ((1.0 - y) * (1.0 + y)))


@pytest.mark.parametrize('body', ['x = sin(x) + 0.5*x', 'x = x + 0.001*sin(x) * i'])
def test_a_loop_of_numbers_reports_what_python_traces(body):
    # Python's own count of the pass's allocations is the reference: each
    # iteration's list, its places, its new floats and its index. The report
    # counted 136 bytes an iteration where 160 are held.
    import tracemalloc
    graph = lower(f'input x = 0.5\nfor i in 0..20000 {{\n    {body}\n}}\nz = x')
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        run = checkpoint.gradients(graph, {'x': 0.5}, NUMBERS)
        traced = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert abs(run.memory.peak - traced) < 0.03 * traced, (run.memory.peak, traced)


def test_sqrt_segments_shorten_as_griewank_s_schedule_for_one_repetition():
    # States as large as an iteration: segment j runs again beside the j
    # checkpoints before it, so segments of 14, 13, ..., 1 (14·15/2 = 105)
    # each hold 14, where even segments of ⌈√105⌉ = 11 hold up to 8 + 11
    # (the ninth, beside eight checkpoints; the tenth is 6 long).
    starts = checkpoint.shrinking_starts(105, 1, 1)
    lengths = [b - a for a, b in zip(starts, list(starts[1:]) + [105])]
    assert lengths == list(range(14, 0, -1))
    assert checkpoint.loop_peak(105, (starts,), 1, 1) == 14
    assert checkpoint.loop_peak(105, (11,), 1, 1) == 8 + 11
    # No stride of even segments holds less, whatever the sizes.
    for n, iteration, state in [(100, 1, 1), (1000, 120, 32), (37, 5, 80), (8, 3, 1000),
                                (500, 1000, 1)]:
        starts = checkpoint.shrinking_starts(n, iteration, state)
        assert starts[0] == 0 and list(starts) == sorted(set(starts)) and starts[-1] < n
        best_even = min(checkpoint.loop_peak(n, (k,), iteration, state) for k in range(1, n + 1))
        assert checkpoint.loop_peak(n, (starts,), iteration, state) <= best_even, n


def test_revolve_holds_its_states_and_one_iteration():
    # 100 iterations with 2 states: forward keeps iterations 0 and 86 (the
    # 14 after it reverse with 1 state and 13 repetitions, the 86 before it
    # with 2 and 12), and backward holds one more state to run an iteration
    # from, beside that iteration's values.
    strides = (loops.revolve_starts(100, 2), loops.Revolve(2))
    assert strides[0] == (0, 86, 99)
    assert checkpoint.loop_peak(100, strides, 1000, 1) == 3 + 1000


def test_the_memory_of_a_nested_loop_counts_the_inner_loops_iterations():
    # Plain backward keeps, for each of 16 outer iterations, the inner loop's
    # 12 tanh outputs of 2000 × 8 numbers: 16 · 12 · 128 kB = 24.6 MB at the
    # least. The report counted an inner run as 8 bytes, and said 6.4 MB.
    graph = lower('input X[n, 8], W[16, 8, 8]\nfor i in 0..16 {\n    Y = X\n    Wi = W[i]\n'
                  '    for j in 0..12 {\n        Y = tanh(Y @ Wi + 0.1)\n    }\n    X = X * Y\n}\n'
                  'loss = mean(X^2)')
    rng = np.random.default_rng(0)
    inputs = {'X': rng.standard_normal((2000, 8)), 'W': rng.standard_normal((16, 8, 8)) * 0.3}
    inner = 16 * 12 * 2000 * 8 * 8
    plain = checkpoint.array_gradients(graph, inputs).memory
    assert inner < plain.peak < 1.5 * inner


def test_auto_leaves_a_later_loop_what_an_earlier_one_keeps():
    # Backward runs the second loop while the first one's checkpoints (or all
    # its values) are held. Each loop used to be fitted to the whole limit:
    # here the first kept everything and the pass went far past a limit that
    # sqrt on both loops meets.
    graph = lower('input X[n, 8], W[40, 8, 8], V[40, 8, 8]\nfor i in 0..40 {\n'
                  '    X = tanh(X @ W[i])\n}\nY = X\nfor j in 0..40 {\n    Y = tanh(Y @ V[j])\n}\n'
                  'loss = mean(X^2) + mean(Y^2)')
    rng = np.random.default_rng(0)
    inputs = {'X': rng.standard_normal((2000, 8)), 'W': rng.standard_normal((40, 8, 8)) * 0.3,
              'V': rng.standard_normal((40, 8, 8)) * 0.3}
    plain, sqrt = (checkpoint.array_gradients(graph, inputs, checkpoint.policy(p)).memory.peak
                   for p in ('none', 'sqrt'))
    for limit in (sqrt + (plain - sqrt) // 4, (sqrt + plain) // 2):
        auto = checkpoint.array_gradients(graph, inputs, checkpoint.policy('auto', limit))
        assert auto.memory.peak <= limit, (limit, auto.memory.peak)


def test_a_checkpoint_is_given_back_once_its_segment_has_run_again():
    graph, inputs, k = lower(LOOP), loop_inputs(), tensors.algebra()
    with np.errstate(all='ignore'):
        run = checkpoint.gradients(graph, inputs, k, checkpoint.policy('sqrt'))
    loop_run = run.values[graph.loops[0]]
    assert len(loop_run.strides[0]) > 1 and loop_run.kept == {}


def test_auto_chooses_sqrt_then_revolve_with_the_most_states_that_fit():
    loop = lower('input x = 1\nfor i in 0..10000 {\n    x = sin(x)\n}\nz = x').nodes[1].value
    pol = checkpoint.policy('auto', 10 ** 9)
    assert checkpoint.loop_strides(loop, pol, 200, 32, budget=10 ** 9) == ()   # plain fits
    one = checkpoint.loop_strides(loop, pol, 200, 32, budget=100_000)
    assert len(one) == 1 and checkpoint.loop_peak(10000, one, 200, 32) <= 100_000
    # 10 kB: (s + 1) states of 32 B and an iteration of 200 B, s = 305
    tight = checkpoint.loop_strides(loop, pol, 200, 32, budget=10_000)
    assert tight[1] == loops.Revolve(305) and checkpoint.loop_peak(10000, one, 200, 32) > 10_000
    assert checkpoint.loop_peak(10000, tight, 200, 32) <= 10_000 < \
        checkpoint.loop_peak(10000, (tight[0], loops.Revolve(306)), 200, 32)
    # 50 B fits no state: the fewest whose busiest iteration runs again at
    # most 16 times, C(16 + 5, 5) = 20349 ≥ 10000 > C(16 + 4, 4)
    least = checkpoint.loop_strides(loop, pol, 200, 32, budget=50)
    assert least[1] == loops.Revolve(5) and loops.repetitions(10000, 5) <= 16 < \
        loops.repetitions(10000, 4)


@pytest.mark.parametrize('fmt', ['table', 'plain', 'csv', 'tsv', 'jsonl', 'json'])
def test_checkpointing_writes_what_grad_writes_in_every_format(fmt):
    plain = run_main(['grad', '-f', 'samples/deep_loop.ad', '--format', fmt])
    checkpointed = run_main(['grad', '-f', 'samples/deep_loop.ad', '--format', fmt,
                             '--checkpoint', 'sqrt'])
    assert checkpointed.code == plain.code == 0 and checkpointed.out == plain.out


def test_the_memory_report_is_a_table_under_grads_table():
    run = run_main(['grad', '-f', 'samples/deep_loop.ad', '--format', 'table', '--memory'])
    table = run_main(['grad', '-f', 'samples/deep_loop.ad', '--format', 'table']).out
    assert run.code == 0 and run.out.startswith(table), run.out
    report = run.out[len(table):]
    assert re.search(r'peak +1\.9 kB', report) and 'held by loop for i in 0..10' in report


def test_a_cut_tape_asks_once_which_nodes_lead_to_an_input(monkeypatch):
    # The review: asked again for every segment, over the whole tape, every:10
    # of 2,000 lines took 52 s where it took 0.45. Numbers need no answer.
    from autodiff_cli.core import saved as saved_module
    calls = []
    real = saved_module.leading_to_inputs
    monkeypatch.setattr(saved_module, 'leading_to_inputs',
                        lambda *args: calls.append(1) or real(*args))
    lines = ['input x = 0.5, y = 0.3'] + ['x = sin(x)*0.9 + y^2*0.01'] * 200 + ['x']
    numbers = lower('\n'.join(lines))
    checkpoint.gradients(numbers, {'x': 0.5, 'y': 0.3}, NUMBERS, checkpoint.policy('every:10'))
    assert calls == []
    arrays = lower('\n'.join(['input x[2] = [0.5, 0.1], y[2] = [0.3, 0.2]'] + lines[1:-1]
                             + ['sum(x)']))
    run = checkpoint.array_gradients(arrays, {'x': [0.5, 0.1], 'y': [0.3, 0.2]},
                                     checkpoint.policy('every:10'))
    assert calls == [1] and run.memory.recomputed > 0


def test_auto_meets_a_limit_whenever_some_policy_does():
    # The fuzzing trial's program: auto once kept everything where 104MB was
    # asked, then reported a peak past it; every:1 would have met it. Its
    # choice must count what the report counts (the state at its own size,
    # not the input's view it starts as; the values beside the loop).
    rng = np.random.default_rng(5)
    graph = lower('input W[8, 50, 50], b[8, 50, 20], H[50, 20], s = 0.5\nfor i in 0..8 {\n'
                  '    Z = W[i] @ H + b[i]\n    H = tanh(Z) * sigmoid(Z)\n'
                  '    s = 0.9*s + 0.1*mean(H)\n}\nloss = mean(H^2) + s')
    inputs = {'W': rng.standard_normal((8, 50, 50)), 'b': rng.standard_normal((8, 50, 20)),
              'H': rng.standard_normal((50, 20)), 's': 0.5}
    others = [checkpoint.array_gradients(graph, inputs, checkpoint.policy(text)).memory.peak
              for text in ('none', 'sqrt', 'every:1', 'every:2')]
    met = 0
    for limit in range(min(others) - 20_000, max(others) + 20_000, 2_000):
        auto = checkpoint.array_gradients(graph, inputs, checkpoint.policy('auto', limit))
        if min(others) <= limit:
            assert auto.memory.peak <= limit, limit
            met += 1
    assert met > 20
    # a checkpoint of H is a fresh array of its size, as every:1 holds 8 of them
    every = checkpoint.array_gradients(graph, inputs, checkpoint.policy('every:1')).memory
    # (each: H's data and header, and the number s)
    assert dict(every.holders)['loop for i in 0..8 (line 2)'] == 8 * (50 * 20 * 8 + 120 + 32)


def test_checkpoints_keep_less_and_say_so():
    source = 'input x = 0.5\nfor i in 0..10000 {\n    x = sin(x) + 0.5*x\n}\nz = x'
    graph = lower(source)
    plain = checkpoint.gradients(graph, {'x': 0.5}, NUMBERS)
    sqrt = checkpoint.gradients(graph, {'x': 0.5}, NUMBERS, checkpoint.policy('sqrt'))
    every = checkpoint.gradients(graph, {'x': 0.5}, NUMBERS, checkpoint.policy('every:1'))
    assert plain.grads == sqrt.grads == every.grads
    # Plain keeps two values an iteration: the 0.5, which the product's rule
    # reads (with x), and the sum, carried on. sin's rule reads x, the sum's
    # nothing, so neither sin(x) nor 0.5*x is kept. x and the index are inputs.
    # Outside: x, the loop and z; the loop's output is its last sum, counted there.
    assert plain.memory.values == 2 * 10000 + 3
    assert plain.memory.recomputed == 0
    # sqrt: each segment runs again once, and a segment shorter than the
    # one before it, so it holds less than even segments of √10000 = 100.
    assert sqrt.memory.recomputed == 4 * 10000
    assert 100 + 4 < sqrt.memory.values < 10000
    assert sqrt.memory.peak * 40 < plain.memory.peak
    assert every.memory.values == 10000 + 4
    assert plain.memory.holders[0][0] == 'loop for i in 0..10000 (line 2)'


def test_the_tape_is_cut_at_block_calls_and_evenly_without_them():
    deep = lower(open('samples/deep.ad').read())
    starts = checkpoint.units(deep)
    assert len(starts) >= 10   # a unit per call of layer, and the nodes between
    calls = [deep.nodes[i].block for i in starts if deep.nodes[i].block]
    assert calls[:3] == ['layer#1', 'layer#2', 'layer#3']
    assert checkpoint.tape_cuts(deep, checkpoint.policy('every:3')) == starts[::3]
    flat = lower('input x = 1\n' + 'x = sin(x)\n' * 100)
    assert checkpoint.units(flat) == list(range(len(flat.nodes)))
    # 101 nodes: segments of ⌈√101⌉ = 11
    assert checkpoint.tape_cuts(flat, checkpoint.policy('sqrt')) == list(range(0, 101, 11))


def test_grad_checkpoint_prints_the_plain_numbers_and_memory_in_json():
    plain = run_main(['grad', '-f', 'samples/deep_loop.ad', '--json'])
    for pol in ('sqrt', 'every:1', 'every:3'):
        run = run_main(['grad', '-f', 'samples/deep_loop.ad', '--checkpoint', pol, '--json'])
        assert run.code == 0 and run.out == plain.out, run.err
    run = run_main(['grad', '-f', 'samples/deep_loop.ad', '--checkpoint', 'sqrt', '--memory',
                    '--json'])
    memory = json.loads(run.out)['memory']
    assert memory['checkpoint'] == 'sqrt' and memory['values'] < memory['recomputed']
    assert memory['held_most'][0]['what'].startswith('loop for i in 0..10')
    text = run_main(['grad', '-f', 'samples/deep_loop.ad', '--memory']).out
    assert 'memory\tcheckpoint\tnone\n' in text and 'memory\tpeak\t' in text


@pytest.mark.parametrize('argv, message', [
    (['--checkpoint', 'every:0'], "unknown --checkpoint 'every:0'"),
    (['--checkpoint', 'auto'], '--checkpoint auto needs --memory-limit'),
    (['--memory-limit', '12XB'], "a memory size such as 200MB or 1.5GB, not '12XB'"),
    (['--checkpoint', 'sqrt', '--memory-limit', '1GB'], '--memory-limit goes with --checkpoint auto'),
    (['--checkpoint', 'sqrt', '--nodes'], '--nodes shows every value'),
    (['--checkpoint', ''], "unknown --checkpoint ''"),   # was read as no option at all
    (['--memory-limit', ''], "a memory size such as 200MB or 1.5GB, not ''"),
    (['--memory', '--format', 'csv'], '--memory writes plain, table or json, not csv'),
])
def test_bad_checkpoint_options_are_one_line_usage_errors(argv, message):
    run = run_main(['grad', '-f', 'samples/deep_loop.ad', *argv])
    assert run.code == 2 and run.out == '' and message in run.err
    assert len(run.err.splitlines()) == 1


def test_a_memory_limit_that_cannot_be_met_says_so_with_the_numbers():
    """--memory-limit is the whole process's: where the process and the pass's
    peak pass it, a warning says by how much; the gradients are the same."""
    import re
    plain = run_main(['grad', '-f', 'samples/deep_loop.ad', '--json'])
    over = run_main(['grad', '-f', 'samples/deep_loop.ad', '--memory-limit', '1MB', '--json'])
    assert over.code == 0 and over.out == plain.out
    said = re.fullmatch(r'adgrad: warning: --memory-limit 1\.0 MB is not met: the process held '
                        r'([0-9.]+) MB before the pass besides its inputs, and the pass peaks '
                        r'at [0-9.]+ k?B with them \(its gradients alone [0-9.]+ k?B\)\n',
                        over.err)
    assert said, over.err
    with open('/proc/self/statm') as f:   # this process ran it: about what it holds now
        now = int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE') / 1e6
    assert 0.5 * now < float(said[1]) < 2 * now
    roomy = run_main(['grad', '-f', 'samples/deep_loop.ad', '--memory-limit', '100GB', '--json'])
    assert roomy.code == 0 and roomy.out == plain.out and roomy.err == ''


def test_auto_cuts_a_tape_without_loops_only_when_it_does_not_fit():
    # deep.ad's layers are block calls: auto keeps all of them under a roomy
    # limit, and cuts the calls into √n segments under a tight one.
    graph = lower(open('samples/deep.ad').read())
    inputs = {name: graph.defaults.get(name, 0.75) for name in graph.inputs}
    grads = backward(graph, forward(graph, inputs))
    roomy = checkpoint.gradients(graph, inputs, NUMBERS, checkpoint.policy('auto', 10 ** 9))
    tight = checkpoint.gradients(graph, inputs, NUMBERS, checkpoint.policy('auto', 100))
    sqrt = checkpoint.gradients(graph, inputs, NUMBERS, checkpoint.policy('sqrt'))
    assert roomy.memory.recomputed == 0 and not graph.loops
    assert tight.memory.recomputed == sqrt.memory.recomputed > 0
    assert tight.memory.bytes < roomy.memory.bytes
    for i in graph.inputs.values():
        assert bits(tight.grads[i]) == bits(roomy.grads[i]) == bits(grads[i])


def test_an_array_programs_points_get_the_same_numbers_checkpointed(tmp_path):
    # --points over an array program: the command line's W stays fixed while
    # s varies, a loop with an `if` in its body; a row where log(s) is nan
    # is named as the plain pass names it (checkpoints dropped the values).
    program = tmp_path / 'p.ad'
    program.write_text('input W[4, 3, 3], s = 1\nx = [1, 2, 3] * s\nfor i in 0..4 {\n'
                       '    x = tanh(W[i] @ x)\n    x = if(s > 0.5, x * s, x)\n}\n'
                       'loss = sum(x^2) + log(s)\n')
    np.save(tmp_path / 'W.npy', np.random.default_rng(5).normal(size=(4, 3, 3)))
    (tmp_path / 's.csv').write_text('s\n0.25\n1\n-1\n2\n0.75\n')
    argv = ['grad', '-f', str(program), '--points', str(tmp_path / 's.csv'),
            f'W=@{tmp_path / "W.npy"}']
    plain = run_main(argv)
    assert plain.code == 0 and 'log(s) (node' in plain.err and len(plain.out.splitlines()) == 6
    for pol in ('sqrt', 'every:1', 'every:3'):
        run = run_main(argv + ['--checkpoint', pol])
        assert (run.code, run.out, run.err) == (plain.code, plain.out, plain.err), pol


@pytest.mark.parametrize('words', [['--checkpoint', 'sqrt'], ['--checkpoint', 'every:1'],
                                   ['--memory-limit', '1kB']])
def test_a_size_name_read_as_a_number_is_bound_when_checkpointed(words):
    # eye(n) and /n: the sizes the inputs give, as the plain pass binds them
    source = 'input A[n, n], x[n]\ny = (A + eye(n)) @ x / n\nsum(tanh(y)^2)'
    argv = ['grad', source, 'A=[[1, 2], [3, 4]]', 'x=[0.5, -1]', '--json']
    plain = run_main(argv)
    run = run_main(argv + words)
    assert plain.code == run.code == 0, run.err
    assert run.out == plain.out


@pytest.mark.parametrize('words, message', [
    (['--memory'], '--memory reports one point: leave out --points'),
    (['--memory-limit', '1kB'], '--memory-limit measures the process at one point'),
    (['--checkpoint', 'auto', '--memory-limit', '1kB'], '--memory-limit measures the process'),
])
def test_what_measures_one_point_says_so_with_points_by_the_option_given(tmp_path, words,
                                                                          message):
    (tmp_path / 'x.csv').write_text('x\n1\n2\n')
    run = run_main(['grad', '-f', 'samples/deep_loop.ad', '--points', str(tmp_path / 'x.csv'),
                    *words])
    assert run.code == 2 and run.err.startswith(f'adgrad: error: {message}'), run.err
    assert run.err.count('\n') == 1


def test_an_input_counts_the_memory_it_views_once(tmp_path):
    # np.load gives a reshaped view of its own buffer: the report counted it as
    # a header (120 B) while the pass held all of W. Bound from a file or
    # written out, W is the same bytes; a broadcast number is a number, and
    # a column of a wider table its own share.
    W = np.arange(24.0).reshape(2, 3, 4) / 10
    np.save(tmp_path / 'W.npy', W)
    program = ('input x[3], W[2, 3, 4]\nfor i in 0..2 {\n    x = tanh(x @ W[i])[0:3]\n}\n'
               'loss = sum(x^2)\n')
    (tmp_path / 'p.ad').write_text(program)
    held = []
    for binding in (f'W=@{tmp_path / "W.npy"}', 'W=' + json.dumps(W.tolist())):
        run = run_main(['grad', '-f', str(tmp_path / 'p.ad'), 'x=[0.1, 0.2, 0.3]', binding,
                        '--memory', '--json'])
        assert run.code == 0, run.err
        held.append({h['what']: h['bytes'] for h in json.loads(run.out)['memory']['held_most']})
    assert held[0]['input W'] == held[1]['input W'] == checkpoint.ARRAY_BYTES + W.nbytes
    assert checkpoint.input_bytes(np.broadcast_to(2.0, (1000,))) == checkpoint.ARRAY_BYTES + 8
    table = np.ones((100, 5))
    assert checkpoint.input_bytes(table[:, 1]) == checkpoint.ARRAY_BYTES + 800


def test_values_a_loop_drops_share_one_stand_in_per_shape():
    # A dropped value's stand-in is read for its shape only: one read-only
    # view per shape serves every iteration (a new one was 112 bytes and a
    # microsecond each), and the report counts its place in the list alone.
    from autodiff_cli.core.saved import is_placeholder, placeholder
    graph = lower('input x[3], A[3, 3]\nfor i in 0..50 {\n    x = tanh(A @ x) + 0.1*x\n}\n'
                  'loss = sum(x^2)\n')
    inputs = {'x': np.array([0.1, 0.2, 0.3]), 'A': np.eye(3) / 2}
    run = checkpoint.array_gradients(graph, inputs, backward_pass=False)
    kept = run.values[graph.loops[0]].kept
    stand_ins = {id(v) for values in kept for v in values if is_placeholder(v)}
    assert len(stand_ins) == 1 and sum(map(is_placeholder, kept[0])) >= 1
    assert placeholder(np.ones((2, 4))) is placeholder(np.zeros((2, 4)))
    assert not is_placeholder(np.zeros(3)) and checkpoint.value_bytes(placeholder(np.ones(3))) == 8
