"""Hostile shapes, values and files for array programs: one error line and
exit 2, never a traceback (issue 27's list, and what the array fuzzer found:
tests/fuzz/arrays.py). A few found cases are not errors at all; those check
their numbers against a hand-derived reference.
"""

import io
import json

import numpy as np
import pytest

from tests.helpers import run_main


def _npy(value, **options):
    out = io.BytesIO()
    np.save(out, value, **options)
    return out.getvalue()


def _run(tmp_path, monkeypatch, argv, files):
    monkeypatch.chdir(tmp_path)
    for name, data in files.items():
        (tmp_path / name).write_bytes(data if isinstance(data, bytes) else data.encode())
    return run_main(argv)


def _one_error(err):
    """One 'adgrad: error:' line, with the source and caret lines if it names a column."""
    lines = err.rstrip('\n').split('\n')
    if len(lines) == 1:
        return lines[0].startswith('adgrad: error: ')
    return len(lines) == 3 and lines[0].startswith('adgrad: error: ') and 'column ' in lines[0] \
        and lines[2].strip() == '^'


BIG = 'sum([' + ', '.join(['1'] * 10 ** 7) + '])\n'
NESTED = 'sum([' + ', '.join(['[' + ', '.join(['1'] * 1000) + ']'] * 1000) + '])\n'

# (argv, files, words the one error line says)
HOSTILE = {
    # empty arrays
    'empty literal': (['eval', 'sum([])'], {}, "unexpected ']'"),
    'empty binding': (['eval', 'sum(x)', 'x=[]'], {}, "in x=: unexpected ']'"),
    'empty .npy': (['eval', 'sum(x)', 'x=@x.npy'], {'x.npy': _npy(np.zeros((2, 0)))}, 'empty'),
    'empty .json': (['eval', 'sum(x)', 'x=@x.json'], {'x.json': '[[]]'}, 'empty'),
    'empty .csv': (['eval', 'sum(x)', 'x=@x.csv'], {'x.csv': ''}, 'x.csv holds an empty array'),
    'empty slice': (['grad', 'sum(x[5:])', 'x=[1, 2, 3]'], {}, 'x[5:] (shape [0]) is empty'),
    'max of an empty slice': (['eval', 'max(x[3:])', 'x=[1, 2, 3]'], {}, 'is empty'),
    'empty constant slice': (['eval', 'logsumexp(ones(3)[:0])'], {}, 'is empty'),
    # ragged literals
    'ragged literal': (['eval', '[[1], [2, 3]]'], {}, 'a ragged array literal'),
    'ragged binding': (['eval', 'sum(x)', 'x=[[1, 2], [3]]'], {}, 'in x=: a ragged array literal'),
    'ragged .json': (['eval', 'sum(x)', 'x=@x.json'], {'x.json': '[[1, 2], [3]]'}, 'ragged'),
    'ragged .csv': (['eval', 'sum(x)', 'x=@x.csv'], {'x.csv': '1,2\n3\n'}, 'cannot read x.csv'),
    # literals too large to type: a file of 10^7 numbers, and 1000 rows of 1000
    '10^7-entry literal': (['eval', '-f', 'big.ad'], {'big.ad': BIG}, 'more than 65536 numbers'),
    '10^6-entry nested literal': (['eval', '-f', 'big.ad'], {'big.ad': NESTED},
                                  'more than 65536 numbers'),
    # @ of scalars, also where a constant is folded as it is read
    '@ of scalars': (['eval', '2 @ 3'], {}, 'both must be arrays'),
    '@ of scalar inputs': (['eval', 'x @ y', 'x=1', 'y=2'], {}, 'both must be arrays'),
    '@ in a default': (['eval', 'input c = 2 @ 3\nc'], {}, 'both must be arrays'),
    '@ in a literal': (['eval', 'sum([1, 2 @ 3])'], {}, 'both must be arrays'),
    '@ in a binding': (['eval', 'x', 'x=[1, 2] @ 3'], {}, 'in x=: cannot multiply'),
    # indices out of range
    'index past the end': (['eval', 'x[3]', 'x=[1, 2, 3]'], {}, 'index 3 is out of range'),
    'index before the start': (['eval', 'x[-4]', 'x=[1, 2, 3]'], {}, 'index -4 is out of range'),
    'huge index': (['eval', 'x[10000000000000000000000]', 'x=[1, 2]'], {}, 'out of range'),
    'column out of range': (['eval', 'A[0, 9]', 'A=[[1, 2], [3, 4]]'], {}, 'index 9'),
    'too many subscripts': (['eval', 'x[0, 0]', 'x=[1, 2]'], {}, 'at most 1 subscripts'),
    'subscript of a scalar': (['eval', 'x[0]', 'x=1'], {}, 'at most 0 subscripts'),
    'subscript in a literal': (['eval', 'sum([[-1][0][0]])'], {}, 'at most 0 subscripts'),
    'axis out of range': (['eval', 'sum(x, axis=1)', 'x=[1, 2]'], {}, 'axis 1 is out of range'),
    # .npy files that are not arrays of numbers
    '.npy of objects': (['eval', 'sum(x)', 'x=@x.npy'],
                        {'x.npy': _npy(np.array([1, 'a', None], dtype=object), allow_pickle=True)},
                        'not a .npy file of numbers'),
    '.npy of strings': (['eval', 'sum(x)', 'x=@x.npy'], {'x.npy': _npy(np.array(['ab']))},
                        'not numbers'),
    'truncated .npy': (['eval', 'sum(x)', 'x=@x.npy'],
                       {'x.npy': _npy(np.arange(6.0).reshape(2, 3))[:100]},
                       'not a .npy file of numbers'),
    'empty file as .npy': (['eval', 'sum(x)', 'x=@x.npy'], {'x.npy': b''}, 'not a .npy file'),
    # four axes, however they come
    '4-D .npy': (['eval', 'sum(x)', 'x=@x.npy'], {'x.npy': _npy(np.zeros((1, 2, 1, 2)))},
                 'holds an array of 4 axes'),
    '4-D literal': (['eval', 'sum([[[[1]]]])'], {}, 'an array literal of 4 axes'),
    '4-D binding': (['eval', 'sum(x)', 'x=[[[[1]]]]'], {}, 'an array literal of 4 axes'),
    '4-D declaration': (['eval', 'input W[2, 3, 4, 5]\n1'], {}, "'W' has 4 axes"),
    '4-D reshape': (['eval', 'sum(reshape(zeros(10), shape=[1, 1, 1, 10]))'], {}, 'has 4 axes'),
    '4-D stack': (['eval', 'sum(stack(x, x))', 'x=@x.npy'], {'x.npy': _npy(np.ones((3, 1, 1)))},
                  'has 4 axes'),
    '600 nested brackets': (['eval', '[' * 600 + '1' + ']' * 600], {}, 'of 4 axes'),
    # sizes that cannot be allocated
    'huge eye': (['eval', 'eye(1e10)'], {}, 'adgrad takes at most'),
    'huge zeros': (['eval', 'sum(zeros(100000, 100000))'], {}, 'would hold 10000000000 entries'),
    'huge outer': (['eval', 'sum(outer(zeros(100000), zeros(100000)))'], {}, 'would hold'),
    # JSON that is not nested lists of numbers
    'deep .json': (['eval', 'sum(x)', 'x=@x.json'], {'x.json': '[' * 100000 + '1' + ']' * 100000},
                   'nested too deeply'),
    'null .json': (['eval', 'sum(x)', 'x=@x.json'], {'x.json': 'null'}, 'must hold a number'),
    'strings .json': (['eval', 'sum(x)', 'x=@x.json'], {'x.json': '["1", "2"]'}, 'must hold'),
    'booleans .json': (['eval', 'sum(x)', 'x=@x.json'], {'x.json': '[true, false]'}, 'must hold'),
    'huge integer .json': (['eval', 'sum(x)', 'x=@x.json'], {'x.json': '[' + '9' * 400 + ']'},
                           'must hold'),
    # declared sizes that are names bind once
    'size names disagree': (['eval', 'input W[m, m]\nsum(W)', 'W=[[1, 2]]'], {},
                            "so m is 2 here, but 'W' made it 1"),
    'size names across inputs': (['eval', 'input W[m, n], v[n]\nsum(W @ v)', 'W=[[1, 2]]',
                                  'v=[1, 2, 3]'], {}, "'v' is declared [n], so n is 3 here, but 'W' made it 2"),
    # a pass per entry (campaign seed 20261206, case 22645: over 5 s, a hang)
    'forward mode over 10^5 entries': (['grad', 'sum(a^2)', 'a=@a.json', '--mode', 'forward'],
                                       {'a.json': json.dumps([1.0] * 10 ** 5)},
                                       'forward mode would take 100000 passes'),
    'a Jacobian of 10^10 entries': (['jacobian', 'softmax(a)', 'a=@a.json'],
                                    {'a.json': json.dumps([1.0] * 10 ** 5)},
                                    'the Jacobian would have 100000 × 100000'),
}


@pytest.mark.parametrize('name', sorted(HOSTILE))
def test_a_hostile_array_gets_one_error_line_and_exit_2(tmp_path, monkeypatch, name):
    argv, files, says = HOSTILE[name]
    run = _run(tmp_path, monkeypatch, argv, files)
    assert (run.code, run.out) == (2, ''), run
    assert _one_error(run.err), run.err
    assert 'Traceback' not in run.err and 'internal error' not in run.err
    if says is not None:
        assert says in run.err.split('\n')[0], run.err


def test_a_single_number_in_a_file_is_a_number_for_every_command(tmp_path, monkeypatch):
    """A 0-d .npy or a .json number binds a float, as a number on the command line
    does: the commands of numbers take it (found: check and --format jsonl crashed)."""
    files = {'a.npy': _npy(np.float64(3.0)), 'a.json': '-0.5'}
    run = _run(tmp_path, monkeypatch, ['check', 'a * a', 'a=@a.npy', '--format', 'json'], files)
    assert run.code == 0, run
    check = json.loads(run.out)[0]
    assert (check['ad'], check['verdict']) == (6.0, 'pass')   # (a²)' = 2a at a = 3
    run = _run(tmp_path, monkeypatch, ['grad', 'min(a, 1)', 'a=@a.json', '--format', 'jsonl'], files)
    assert run.code == 0, run
    assert json.loads(run.out) == {'a': -0.5, 'value': -0.5, 'd_a': 1.0}   # min'(a) = 1 for a < 1


def test_nodes_of_an_array_if_show_both_sides(tmp_path, monkeypatch):
    """An `if` over arrays runs both sides entry by entry: --nodes lists every
    node (found: it asked whether the condition array was true, and crashed)."""
    run = _run(tmp_path, monkeypatch, ['grad', 'sum(if(x > 0, x, 2))', 'x=[1, 0]', '--nodes',
                                       '--json'], {})
    assert run.code == 0, run
    out = json.loads(run.out)
    assert out['value'] == 3.0 and out['gradient'] == {'x': [1.0, 0.0]}   # 1 + 2; d/dx only where x > 0
    assert [n['op'] for n in out['nodes']] == ['input', 'const', 'gt', 'const', 'if', 'sum']


def test_nodes_json_of_a_zero_dimensional_value(tmp_path, monkeypatch):
    """logdet's value is a 0-d array: --nodes --json writes it as a number."""
    run = _run(tmp_path, monkeypatch, ['grad', 'logdet(A)', 'A=[[2, 0], [0, 4]]', '--nodes',
                                       '--json'], {})
    assert run.code == 0, run
    out = json.loads(run.out)
    assert out['value'] == pytest.approx(np.log(8.0))
    assert out['gradient']['A'] == [[0.5, 0.0], [0.0, 0.25]]   # A^-T
    assert out['nodes'][-1]['value'] == pytest.approx(np.log(8.0))


def test_logdet_of_a_singular_matrix_is_minus_inf_and_no_crash(tmp_path, monkeypatch):
    """log det of a singular matrix is -inf, its gradient unbounded: the
    cofactors over a zero determinant, ±inf as torch's, a warning, exit 0."""
    run = _run(tmp_path, monkeypatch, ['grad', 'logdet(A)', 'A=[[1, 2], [1, 2]]', '--json'], {})
    assert run.code == 0, run
    out = json.loads(run.out)
    assert out['value'] == '-inf'
    assert all(cell in ('inf', '-inf') for row in out['gradient']['A'] for cell in row)
    assert run.err.startswith('adgrad: warning: ')


def test_size_names_that_agree_are_taken(tmp_path, monkeypatch):
    run = _run(tmp_path, monkeypatch, ['eval', 'input W[m, n], v[n]\nsum(W @ v)',
                                       'W=[[1, 2]]', 'v=[3, 4]'], {})
    assert (run.code, run.out) == (0, '11.0\n')   # 1*3 + 2*4


def test_a_literal_of_many_numbers_is_still_taken(tmp_path, monkeypatch):
    """The limit is on literals too large to type, not on ordinary ones."""
    run = _run(tmp_path, monkeypatch, ['eval', '-f', 'p.ad'],
               {'p.ad': 'sum([' + ', '.join(['1'] * 65536) + '])\n'})
    assert (run.code, run.out) == (0, '65536.0\n')


@pytest.mark.parametrize('expr, point, want', [
    # d/dx log(x) = 1/x where x > 0; the entry at 0 takes the other side: 0
    ('sum(if(x > 0, log(x), 0))', ['x=[1, 0]'], {'x': [1.0, 0.0]}),
    ('sum(where(x > 0, log(x), 0))', ['x=[4, 0]'], {'x': [0.25, 0.0]}),
    ('sum(if(x > 0, sqrt(x), 0) * 2 + x)', ['x=[1, 0]'], {'x': [2.0, 1.0]}),   # 2/(2√1) + 1; 0 + 1
    # a scalar broadcast into both sides: d/ds of [log(1)*s, s] summed is log(1) + 1
    ('sum(if(x > 0, log(x) * s, s))', ['x=[1, 0]', 's=2'], {'s': 1.0, 'x': [2.0, 0.0]}),
    ('sum(if(c > 0, log(x), 0))', ['x=[1, 0]', 'c=[[1, -1], [1, -1]]'],
     {'c': [[0.0, 0.0], [0.0, 0.0]], 'x': [2.0, 0.0]}),
])
def test_an_array_if_leaks_no_nan_from_the_side_not_taken(tmp_path, monkeypatch, expr, point, want):
    """As for scalars (and unlike torch.where), the side an entry did not take
    sends it no gradient, not 0 * inf = nan (found: d_x was [1.0, nan])."""
    run = _run(tmp_path, monkeypatch, ['grad', expr, *point, '--json'], {})
    assert run.code == 0, run
    assert json.loads(run.out)['gradient'] == want


@pytest.mark.parametrize('expr', ['mean(solve(a + 5 * eye(2), b))', 'det(a + 5 * eye(2))'])
def test_solve_and_det_at_an_infinite_matrix_are_nan_not_a_crash(tmp_path, monkeypatch, expr):
    """An inf entry makes LAPACK's LU meet an exact zero pivot in the
    backward solve (found by the fuzzer, campaign seed 20261204A case 4285:
    LinAlgError, exit 70): the value and gradient are nan, with warnings."""
    files = {'a.json': '[[-1.8, Infinity], [-0.0, -1.9]]', 'b.npy': _npy(np.array([[1.2], [-1.9]]))}
    run = _run(tmp_path, monkeypatch, ['grad', expr, 'a=@a.json', 'b=@b.npy', '--json'], files)
    assert run.code == 0, run
    out = json.loads(run.out)
    assert out['value'] == 'nan' and out['gradient']['a'] == [['nan', 'nan'], ['nan', 'nan']]
    assert run.err.startswith('adgrad: warning: ')


@pytest.mark.parametrize('source, says', [
    # found by the campaign (seeds 20261204A and B): OverflowError and TypeError, exit 70
    ('ones(1e922)', 'a size of ones() must be a whole number, not inf'),
    ('6 * eye(1e999)', 'a size of eye() must be a whole number, not inf'),
    ('softmax(eye(2), axis=1e999)', 'the axis of softmax() must be a whole number, not inf'),
    ('sum(eye(2), axis=0/0)', 'the axis of sum() must be a whole number, not nan'),
    ('eye(2)[0/0]', 'an index must be a whole number, not nan'),
    ('f(a=p) = p\nf(1)', 'a block parameter must be a name'),
])
def test_an_infinite_size_axis_or_index_and_a_keyword_parameter(tmp_path, monkeypatch, source, says):
    run = _run(tmp_path, monkeypatch, ['eval', source], {})
    assert (run.code, run.out) == (2, ''), run
    assert _one_error(run.err) and says in run.err, run.err


@pytest.mark.parametrize('argv, says', [
    # found by the second campaign (seed 20261204D): TypeError and OverflowError, exit 70
    (['eval', 'max(foo=1, c)', 'c=[1, 2]'], 'a NAME=value argument comes after the others'),
    (['eval', 'f(a, b) = a + b\nf(q=1, c)', 'c=1'], 'f() takes no NAME=value arguments'),
    (['eval', 'reshape(a, shape=[1e999])', 'a=[1]'], 'a shape is a list of whole numbers'),
])
def test_a_keyword_before_a_value_and_an_infinite_shape(tmp_path, monkeypatch, argv, says):
    run = _run(tmp_path, monkeypatch, argv, {})
    assert (run.code, run.out) == (2, ''), run
    assert _one_error(run.err) and says in run.err, run.err


def test_trace_sends_its_gradient_to_the_diagonal_alone(tmp_path, monkeypatch):
    """An infinite cotangent reaches trace's diagonal as inf and leaves the rest
    0, as torch's trace backward does (found: nan off the diagonal, 0 * inf)."""
    run = _run(tmp_path, monkeypatch, ['grad', 'exp(exp(exp(trace(c))))', 'c=[[3, 1], [1, 3]]',
                                       '--json'], {})
    assert run.code == 0, run
    assert json.loads(run.out)['gradient'] == {'c': [['inf', 0.0], [0.0, 'inf']]}


def test_the_1_norm_of_a_nan_entry_sends_it_no_gradient(tmp_path, monkeypatch):
    """norm(x, 1)' is torch's sgn(x), 0 at nan (third campaign, seed 20261204F
    cases 9468 and 19308: nan where torch has -0.0): log(-1) is nan, so its
    entry gets 0 / -1 = -0.0, and log(2)'s gets 1/2."""
    run = _run(tmp_path, monkeypatch, ['grad', 'norm(log(a), 1)', 'a=[-1, 2]', '--json'], {})
    assert run.code == 0, run
    assert json.loads(run.out)['gradient'] == {'a': [-0.0, 0.5]}


def test_a_table_of_a_three_axis_array_shows_it_in_one_cell(tmp_path, monkeypatch):
    """(campaign seed 20261206, case 1897: TypeError, exit 70) A grid has two
    axes: a third is written as nested lists, d/da sum(a * c) = c."""
    run = _run(tmp_path, monkeypatch, ['grad', 'sum(a * [[[2], [7]]])', 'a=[[[-0.5], [0.25]]]',
                                       '--format', 'table'], {})
    assert run.code == 0, run
    assert '[[[2.0], [7.0]]]' in run.out and '0.75' in run.out


def test_logdet_at_an_infinite_matrix_has_torchs_nan_gradient(tmp_path, monkeypatch):
    """(campaign seed 20261206, case 74364: LinAlgError 'SVD did not converge',
    exit 70) torch.logdet's gradient there is nan in every entry."""
    files = {'W.csv': '8,1,8\n6,inf,5\n6,9,1', 'b.json': '[7,0,Infinity]'}
    run = _run(tmp_path, monkeypatch, ['grad', 'logdet(b / (2 + sigmoid(W)))', 'W=@W.csv',
                                       'b=@b.json', '--json'], files)
    assert run.code == 0, run
    gradient = json.loads(run.out)['gradient']
    assert gradient['W'] == [['nan'] * 3] * 3 and gradient['b'] == ['nan'] * 3
