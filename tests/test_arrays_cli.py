"""Array programs from the command line: bindings from literals and files,
--data, the output formats, and the one-line errors. Values are checked
against NumPy formulas derived by hand (torch is the reference of
test_arrays_torch.py)."""

import json

import numpy as np
import pytest

A = np.array([[1.0, 2.0], [3.0, 4.0], [0.5, -1.0]])
X = np.array([1.0, -1.0])
B = np.array([0.5, 2.0, -1.0])


def _least_squares(A, x, b):
    r = A @ x - b
    return r @ r, {'A': 2 * np.outer(r, x), 'x': 2 * A.T @ r, 'b': -2 * r}


def _json(run_cli, *argv):
    code, out, err = run_cli(*argv, '--json')
    assert code == 0, err
    return json.loads(out)


def _literal(a):
    return json.dumps(a.tolist())


def test_the_gradient_of_a_least_squares_loss(run_cli):
    out = _json(run_cli, 'grad', 'sum((A @ x - b)^2)', f'A={_literal(A)}', f'x={_literal(X)}',
                f'b={_literal(B)}')
    value, gradient = _least_squares(A, X, B)
    assert out['value'] == pytest.approx(value, rel=1e-14)
    for name, expected in gradient.items():
        np.testing.assert_allclose(out['gradient'][name], expected, rtol=1e-14)
        assert np.shape(out['gradient'][name]) == expected.shape


@pytest.mark.parametrize('ending', ['npy', 'json', 'csv'])
def test_a_matrix_binds_from_a_file(run_cli, tmp_path, ending):
    path = tmp_path / f'A.{ending}'
    if ending == 'npy':
        np.save(path, A)
    elif ending == 'json':
        path.write_text(_literal(A))
    else:
        path.write_text(''.join(','.join(map(repr, row)) + '\n' for row in A.tolist()))
    out = _json(run_cli, 'grad', 'sum((A @ x - b)^2)', f'A=@{path}', f'x={_literal(X)}',
                f'b={_literal(B)}', '--wrt', 'A')
    np.testing.assert_allclose(out['gradient']['A'], _least_squares(A, X, B)[1]['A'], rtol=1e-14)


def test_a_declared_shape_checks_the_value(run_cli):
    code, out, err = run_cli('eval', 'input W[2, 3]\nsum(W)', 'W=[[1, 2], [3, 4]]')
    assert (code, out) == (2, '')
    assert err.splitlines()[0] == ("adgrad: error: 'W' is declared [2,3] but its value is [2,2] "
                                   '(line 1, column 7)')


def test_a_shape_mismatch_points_at_the_operator(run_cli):
    code, out, err = run_cli('grad', 'sum(W @ x)', 'W=[[1, 2, 3], [4, 5, 6]]', 'x=[1, 2, 3, 4]')
    assert (code, out) == (2, '')
    lines = err.splitlines()
    assert lines[0] == ('adgrad: error: cannot multiply W[2,3] by x[4]: sizes 3 and 4 differ '
                        '(column 7)')
    assert lines[2] == '        ^'   # under the @ of '  sum(W @ x)'


def test_grad_of_a_vector_output_is_refused_with_the_way_out(run_cli):
    code, out, err = run_cli('grad', 'A @ x', f'A={_literal(A)}', f'x={_literal(X)}')
    assert (code, out) == (2, '')
    assert 'take sum(...) or mean(...)' in err and 'jacobian' in err


def test_eval_prints_nested_lists(run_cli):
    code, out, _ = run_cli('eval', '[[1, 2], [3, 4]] @ [1, -1]')
    assert (code, out) == (0, '[-1.0, -1.0]\n')


def test_nodes_show_each_shape(run_cli):
    code, out, _ = run_cli('grad', 'sum(tanh(W @ x))', 'W=[[1, 2], [3, 4]]', 'x=[1, 0]', '--nodes')
    assert code == 0
    rows = [line.split('\t') for line in out.splitlines() if line.startswith('node')]
    assert [(r[2], r[5]) for r in rows] == [('input', '[2,2]'), ('input', '[2]'),
                                              ('matmul', '[2]'), ('tanh', '[2]'),
                                              ('sum', 'a scalar')]
    tanh_grad = json.loads(rows[2][7])   # ∂f/∂(W @ x) = 1 - tanh^2
    np.testing.assert_allclose(tanh_grad, 1 - np.tanh([1.0, 3.0]) ** 2, rtol=1e-14)


# ---- --data ----

def _data(n=500):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(n)
    return x, 3 * x - 1 + 0.1 * rng.standard_normal(n)


def _write(tmp_path, kind, x, y):
    path = tmp_path / f'd.{kind}'
    if kind == 'csv':
        path.write_text('x,y\n' + ''.join(f'{a!r},{b!r}\n' for a, b in zip(x.tolist(), y.tolist())))
    elif kind == 'jsonl':
        path.write_text(''.join(json.dumps({'y': b, 'x': a}) + '\n'
                                for a, b in zip(x.tolist(), y.tolist())))
    else:
        pa = pytest.importorskip('pyarrow')
        import pyarrow.parquet as pq
        pq.write_table(pa.table({'x': x, 'y': y}), path)
    return path


@pytest.mark.parametrize('kind', ['csv', 'jsonl', 'parquet'])
def test_the_gradient_of_a_data_set_loss(run_cli, tmp_path, kind):
    x, y = _data()
    path = _write(tmp_path, kind, x, y)
    out = _json(run_cli, 'grad', 'mean((w*x + b - y)^2)', '--data', str(path), 'w=0.5', 'b=0')
    r = 0.5 * x - y
    assert out['value'] == pytest.approx(np.mean(r * r), rel=1e-13)
    # the parameters only: the data's columns are no gradient wanted by default
    assert out['gradient'] == pytest.approx({'b': np.mean(2 * r), 'w': np.mean(2 * r * x)},
                                            rel=1e-13)


def test_a_parquet_data_set_gives_its_readers_memory_back_once_read(tmp_path, monkeypatch):
    """pyarrow's pool keeps what the reader freed, under the pass's peak; it
    is asked to give it back once nothing of the reader holds any (asked
    earlier, it keeps what is freed after)."""
    pa = pytest.importorskip('pyarrow')
    from autodiff_cli.table.data import read_data
    x, y = _data(200_000)
    path = _write(tmp_path, 'parquet', x, y)
    pool, live = pa.default_memory_pool(), []

    class Watched:
        def release_unused(self):
            live.append(pa.total_allocated_bytes())
            pool.release_unused()
    monkeypatch.setattr(pa, 'default_memory_pool', Watched)
    columns = read_data(str(path), ['x', 'y'])
    assert live == [0]
    assert np.array_equal(columns['x'], x) and np.array_equal(columns['y'], y)


def test_a_float64_parquet_data_set_is_read_without_pyarrow_compute(tmp_path):
    # pyarrow.compute is a large import, under the pass's peak: it is for a
    # cast, and float64 columns need none. An int32 column still is cast.
    import subprocess
    import sys
    pa = pytest.importorskip('pyarrow')
    import pyarrow.parquet as pq
    x, y = _data(100)
    pq.write_table(pa.table({'x': x, 'y': y}), tmp_path / 'f.parquet')
    pq.write_table(pa.table({'x': x, 'y': pa.array([1, 2] * 50, pa.int32())}),
                   tmp_path / 'i.parquet')
    script = ('import sys; from autodiff_cli.table.data import read_data; '
              'c = read_data(sys.argv[1], ["x", "y"]); '
              'print("pyarrow.compute" in sys.modules, float(c["y"].sum()))')
    said = [subprocess.run([sys.executable, '-c', script, str(tmp_path / name)], check=True,
                           capture_output=True, text=True).stdout.split()
            for name in ('f.parquet', 'i.parquet')]
    assert said == [['False', repr(float(y.sum()))], ['True', '150.0']]


def test_data_from_standard_input(tmp_path):
    import subprocess
    import sys
    x, y = _data(50)
    text = _write(tmp_path, 'csv', x, y).read_text()
    done = subprocess.run([sys.executable, '-m', 'autodiff_cli', 'grad', 'mean((w*x - y)^2)',
                           '--data', '-', 'w=2', '--json'], input=text, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)['gradient']['w'] == pytest.approx(np.mean(2 * (2 * x - y) * x),
                                                                     rel=1e-13)


def test_data_that_names_no_variable_is_refused(run_cli, tmp_path):
    path = _write(tmp_path, 'csv', *_data(5))
    code, out, err = run_cli('grad', 'mean((w*u - v)^2)', '--data', str(path), 'w=1', 'u=1', 'v=1')
    assert (code, out) == (2, '')
    assert err == (f"adgrad: error: none of the columns of {path} is a variable of the program "
                   "(theirs: 'x', 'y')\n")


def test_a_column_bound_twice_is_refused(run_cli, tmp_path):
    path = _write(tmp_path, 'csv', *_data(5))
    code, _, err = run_cli('eval', 'mean(x*y)', '--data', str(path), 'x=1')
    assert code == 2 and 'both a column' in err


@pytest.mark.parametrize('command', [
    ['check', 'sum(x^2)', 'x=[1, 2]', '--points', 'p.csv'],
    ['grad', 'sum(x^2)', 'x=[1, 2]', '--explain']])
def test_what_takes_no_arrays_yet_says_so_in_one_line(run_cli, command):
    code, out, err = run_cli(*command)
    assert (code, out) == (2, '')
    assert len(err.splitlines()) == 1 and ('arrays' in err or 'numbers only' in err)


def test_jacobian_picks_the_mode_with_fewer_passes(run_cli):
    three_outputs = _json(run_cli, 'jacobian', '[x*y, x + y, sin(x)]', 'x=1', 'y=2')
    assert three_outputs['mode'] == 'forward'   # 2 inputs, 3 outputs
    assert three_outputs['jacobian'] == {'x': [2.0, 1.0, pytest.approx(np.cos(1.0))],
                                         'y': [1.0, 1.0, 0.0]}
    one_output = _json(run_cli, 'jacobian', '[sum(x^2)]', 'x=[1, 2, 3]')
    assert one_output['mode'] == 'reverse'
    assert one_output['jacobian'] == {'x': [[2.0, 4.0, 6.0]]}


def test_a_tangent_gives_the_directional_derivative(run_cli):
    W, x, t = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), np.array([0.1, 0.2, 0.3]), \
        np.array([1.0, -2.0, 0.5])
    out = _json(run_cli, 'grad', '--mode', 'forward', '--tangent', f'x={_literal(t)}',
                'sum(tanh(W @ x))', f'W={_literal(W)}', f'x={_literal(x)}')
    # d/dε sum(tanh(W (x + ε t))) = (1 - tanh(Wx)^2) · (W t)
    assert out['jvp'] == pytest.approx((1 - np.tanh(W @ x) ** 2) @ (W @ t), rel=1e-13)
    code, _, err = run_cli('grad', '--mode', 'forward', '--tangent', 'x=[1, 0]', 'sum(x)',
                           'x=[1, 2, 3]')
    assert code == 2 and "the tangent of 'x' has shape [2], but 'x' has [3]" in err


def test_check_passes_a_right_gradient_and_fails_a_wrong_one(run_cli, monkeypatch):
    argv = ('check', 'sum(tanh(A.T @ x))', 'A=[[1, 2, 3], [4, 5, 6]]', 'x=[0.1, -0.2]', '--json')
    code, out, err = run_cli(*argv)
    rows = json.loads(out)
    assert code == 0 and {r['verdict'] for r in rows} == {'pass'}
    # every entry of A (6) and of x (2), and 3 random directions each
    assert [r['variable'] for r in rows][:8] == ['A[0,0]', 'A[0,1]', 'A[0,2]', 'A[1,0]',
                                                 'A[1,1]', 'A[1,2]', 'A·r1', 'A·r2']
    from autodiff_cli.core import tensors
    monkeypatch.setitem(tensors.algebra().rules, 'transpose',
                        lambda k, g, out, a: (-g.T,))   # planted, where arrays' rules are
    code, out, err = run_cli(*argv)
    assert code == 1 and 'FAIL' in {r['verdict'] for r in json.loads(out)}
    assert 'checks failed' in err


def test_check_warns_at_a_tie_rather_than_failing(run_cli):
    code, out, err = run_cli('check', 'max(x)', 'x=[1, 3, 3]', '--json')
    rows = {r['variable']: r for r in json.loads(out)}
    assert code == 0
    assert rows['x[0]']['verdict'] == 'pass' and rows['x[1]']['verdict'] == 'warn'
    assert rows['x[1]']['ad'] == 0.5 == pytest.approx(rows['x[1]']['fd'])


def test_a_size_named_in_two_declarations_must_agree(run_cli):
    program = 'input A[m, n], x[n]; sum(A @ x)'
    assert run_cli('eval', program, 'A=[[1, 2], [3, 4]]', 'x=[1, 2]')[:2] == (0, '16.0\n')
    code, out, err = run_cli('eval', program, 'A=[[1, 2], [3, 4]]', 'x=[1, 2, 3]')
    assert (code, out) == (2, '')
    assert err.splitlines()[0] == ("adgrad: error: 'x' is declared [n], so n is 3 here, but 'A' "
                                   'made it 2 (column 16)')


def test_a_table_shows_a_matrix_as_its_rows(run_cli):
    code, out, _ = run_cli('grad', 'sum((A @ x - b)^2)', 'A=[[1, 2], [3, 4]]', 'x=[1, -1]',
                           'b=[0.5, 2]', '--format', 'table')
    assert code == 0
    lines = [line.split() for line in out.splitlines()]
    assert lines[0] == ['f', 'sum((A', '@', 'x', '-', 'b)^2)']
    assert lines[2:4] == [['df/dA', '-3.0', '3.0'], ['-6.0', '6.0']] or \
        lines[2:4] == [['∂f/∂A', '-3.0', '3.0'], ['-6.0', '6.0']]


@pytest.mark.parametrize('argv, message', [
    (['eval', 'max(x[5:9])', 'x=[1, 2]'], 'x[5:9] (shape [0]) is empty'),
    (['eval', 'A[1:, :]', 'A=[[1, 2]]', '--format', 'table'], 'A[1:, :] (shape [0,2]) is empty'),
    (['eval', '[[[[1]]]]'], 'an array literal of 4 axes; adgrad takes at most 3'),
    (['grad', 'sum(zeros(100000, 100000))'], 'zeros(100000, 100000) would hold 10000000000'),
    (['eval', 'sum(eye(1e9))'], 'eye(1000000000) would hold 1000000000000000000 entries'),
])
def test_an_array_too_empty_or_too_large_is_one_line(run_cli, argv, message):
    code, out, err = run_cli(*argv)
    assert (code, out) == (2, '')
    assert message in err.splitlines()[0] and 'internal error' not in err


def test_logdet_of_a_singular_matrix_is_minus_inf_not_an_error(run_cli):
    out = _json(run_cli, 'grad', 'logdet(M)', 'M=[[1, 2], [2, 4]]')
    assert out['value'] == '-inf'
    assert all(abs(v) == float('inf') for row in out['gradient']['M'] for v in
               map(float, row))   # torch's: the cofactors over a zero determinant


def test_nodes_in_json_with_a_scalar_input(run_cli):
    out = _json(run_cli, 'grad', 'sum(x*w)', 'x=[1, 2]', 'w=1', '--nodes')
    assert out['gradient'] == {'w': 3.0, 'x': [1.0, 1.0]}
    assert [n['shape'] for n in out['nodes']][:2] == [[2], []]


@pytest.mark.parametrize('header', ['x[0],x[00],x[1]', 'x[0],x[-1]', 'x[0],x[٣]'])
def test_data_columns_of_entries_are_named_plainly(run_cli, tmp_path, header):
    path = tmp_path / 'd.csv'
    path.write_text(header + '\n1,2,3\n'[:len(header.split(',')) * 2 + 1] + '\n')
    code, out, err = run_cli('eval', 'sum(x)', '--data', str(path))
    assert (code, out) == (2, '')
    assert 'no sign, no leading zero' in err


def test_check_takes_each_entrys_own_step(run_cli, monkeypatch):
    """At x = 1000 a step by the largest entry is too coarse for sin; by each
    entry's own size, a 0.2% error in the rule is caught."""
    argv = ('check', 'sum(sin(x))', 'x=[1000, 0.5]', '--json')
    code, out, _ = run_cli(*argv)
    assert code == 0 and {r['verdict'] for r in json.loads(out)} == {'pass'}
    from autodiff_cli.core import tensors
    rules = tensors.algebra().rules
    right = rules['sin']
    monkeypatch.setitem(rules, 'sin', lambda k, g, o, a: (right(k, g, o, a)[0] * 1.002,))
    assert run_cli(*argv)[0] == 1


def test_jacobian_over_a_data_set(run_cli, tmp_path):
    x, y = _data(40)
    path = _write(tmp_path, 'csv', x, y)
    out = _json(run_cli, 'jacobian', '[mean(w*x - y), mean((w*x - y)^2)]', '--data', str(path),
                'w=0.5')
    assert list(out['jacobian']) == ['w']   # the data's columns get none
    assert out['jacobian']['w'] == pytest.approx([np.mean(x), np.mean(2 * (0.5 * x - y) * x)],
                                                 rel=1e-13)


def test_running_out_of_memory_is_one_line_not_an_internal_error(run_cli, monkeypatch):
    from autodiff_cli.core import tensors

    def exhausted(graph, inputs):
        raise MemoryError()
    monkeypatch.setattr(tensors, 'evaluate', exhausted)
    code, out, err = run_cli('eval', 'sum(x)', 'x=[1, 2]')
    assert (code, out) == (2, '')
    assert err.startswith('adgrad: error: out of memory') and len(err.splitlines()) == 1


def test_an_array_binding_may_hold_inf_and_nan_as_a_number_binding_may(run_cli):
    out = _json(run_cli, 'grad', 'sum(x^2)', 'x=[1, inf, -inf, nan]')
    assert out['gradient']['x'] == [2.0, 'inf', '-inf', 'nan']   # 2x, entry by entry
    code, _, err = run_cli('eval', 'sum(x)', 'x=[1, inf')
    assert code == 2 and err.startswith('adgrad: error: in x=: unexpected end of input')


# ---- a declared size read as a number ----

@pytest.mark.parametrize('source, point, value, gradient', [
    ('input x[n]; sum(x) / n', {'x': [1.0, 2.0, 6.0]}, 3.0, {'x': [1 / 3] * 3}),
    ('input X[n, m]; sum(X * ones(n, m) + eye(n) @ X) + m',
     {'X': [[1.0, 2.0, 0.5], [3.0, 4.0, -1.0]]}, 2 * 9.5 + 3, {'X': [[2.0] * 3] * 2}),
    ('input x[n]; f(a) = a * ones(n); sum(f(2) * x) + sum(zeros(n, 2) + 1)',
     {'x': [1.0, -2.0]}, -2.0 + 4, {'x': [2.0, 2.0]}),
])
def test_a_size_reads_as_the_number_the_arrays_bring(run_cli, source, point, value, gradient):
    got = _json(run_cli, 'grad', source, *[f'{k}={json.dumps(v)}' for k, v in point.items()])
    assert got['value'] == pytest.approx(value, rel=1e-15)
    for name, expected in gradient.items():
        np.testing.assert_allclose(got['gradient'][name], expected, rtol=1e-15)


@pytest.mark.parametrize('source, message, column', [
    ('input x[n]; n = 2; x', "'n' is a size of the declared arrays; choose another name for "
                             'the binding', 13),
    ('input x[n], n = 2; x', "'n' is a size of the declared arrays; choose another name for "
                             'the input', 13),
    ('input n = 2, x[n]; x', "'n' is already a variable; a size needs a name of its own", 14),
    ('input x[n], y = n; x', "the default of 'y' must be a constant expression", 17),
    ('input x[n]; x[n - 1]', 'an index must be a constant, such as 0 or -1', 15),
    ('input x[n]; eye(n, 3)', 'eye() of a size name takes that one size, as in eye(n)', 13),
    ('input x[n]; ones(2*n)', 'a size of ones() must be a constant, such as 0 or -1', 18),
    ('input x[n]; s = 0; for i in 0..2 { s = s + n }; s', 'a size read as a number goes '
     'outside loops: bind it before the loop, as in n_ = n', 44),
])
def test_a_size_is_no_variable_nor_a_constant(run_cli, source, message, column):
    code, out, err = run_cli('eval', source, 'x=[1, 2]')
    assert (code, out) == (2, '')
    assert err.splitlines()[0] == f'adgrad: error: {message} (column {column})'


def test_a_large_gradient_is_written_as_json_a_part_at_a_time_with_the_same_bytes():
    # json_parts streams an array past STREAMED entries row by row: the
    # bytes json.dumps writes of json_number's nested lists, inf and nan too.
    import json

    from autodiff_cli.cli.output import Result, json_parts
    from autodiff_cli.table.formats import STREAMED, json_number
    rng = np.random.default_rng(3)
    cube = rng.standard_normal((3, 70, 90))
    cube[1, 5, 7], cube[2, 0, 0], cube[0, 0, 1] = np.inf, np.nan, -0.0
    gradients = {'W': cube, 'b': rng.standard_normal(STREAMED + 5) * 1e300, 'c': 2.0,
                 'e': np.zeros((0, 3)), 'm': np.full((130, 130), -np.inf)}
    result = Result(rng.standard_normal((200, 100)), {}, gradients)
    parts = list(json_parts(result, ', "memory": {}'))
    want = json.dumps({'value': json_number(result.value),
                       'gradient': {k: json_number(v) for k, v in gradients.items()}},
                      allow_nan=False, ensure_ascii=False)
    assert ''.join(parts) == want[:-1] + ', "memory": {}}\n'
    assert len(parts) > 10 and max(map(len, parts)) < 2 ** 17   # never the whole text at once


def test_a_large_gradient_is_written_as_plain_text_a_part_at_a_time_with_the_same_bytes():
    # The plain writer streams as json_parts does: number()'s nested lists
    # (inf and nan as Python spells them), never the whole text at once.
    from autodiff_cli.cli.output import Result, plain
    from autodiff_cli.core.numbers import number
    from autodiff_cli.table.formats import STREAMED
    rng = np.random.default_rng(4)
    cube = rng.standard_normal((3, 70, 90))
    cube[1, 5, 7], cube[2, 0, 0], cube[0, 0, 1] = np.inf, np.nan, -0.0
    gradients = {'W': cube, 'b': rng.standard_normal(STREAMED + 5) * 1e300, 'c': 2.0,
                 'm': np.full((130, 130), -np.inf)}
    result = Result(rng.standard_normal((200, 100)), {}, gradients)
    parts = list(plain(result, None))
    want = f'value\t{number(result.value)}\n' + ''.join(
        f'd_{name}\t{number(g)}\n' for name, g in gradients.items())
    assert ''.join(parts) == want
    assert len(parts) > 10 and max(map(len, parts)) < 2 ** 17
