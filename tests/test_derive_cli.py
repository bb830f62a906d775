"""adgrad diff, hessian, check and grad --mode forward, through main() in-process."""

import json
import math

import pytest

from autodiff_cli.core import passes
from autodiff_cli.derive.check import check_gradient, check_hessian
from autodiff_cli import lower
from tests.helpers import run_main


def _numbers(out):
    return {line.split('\t')[0]: float(line.split('\t')[1]) for line in out.splitlines()}


@pytest.mark.parametrize('program, point', [
    ('x^2*sin(x)', ['x=1.5']),
    ('tanh(w*x + b)', ['w=0.5', 'x=2', 'b=-1']),
    ('if(x > 0, sqrt(x), 0)', ['x=0']),
    ('if(x > 0, sqrt(x), 0)', ['x=2.25']),
    ('max(x, y)*log(y)', ['x=2', 'y=2']),
])
def test_diff_piped_to_eval_prints_grads_number(program, point):
    names = [p.split('=')[0] for p in point]
    grad = _numbers(run_main(['grad', program, *point]).out)
    for name in names:
        diff = run_main(['diff', program, '--wrt', name])
        assert diff.code == 0, diff.err
        value = run_main(['eval', '-', *point], stdin=diff.out.encode())
        assert value.code == 0, value.err
        assert float(value.out) == pytest.approx(grad[f'd_{name}'], rel=1e-12, abs=1e-300)


@pytest.mark.parametrize('sample', ['mlp_scalar', 'neuron', 'logistic', 'softmax'])
def test_diff_of_a_sample_file_reads_back_at_its_input_defaults(sample):
    # The program's `input` declarations are printed again, so with no values
    # the derivative evaluates where the program does; a value still overrides.
    path = f'samples/{sample}.ad'
    defaults = lower(open(path).read()).defaults
    assert defaults
    grad = _numbers(run_main(['grad', '-f', path]).out)
    for name in defaults:
        diff = run_main(['diff', '-f', path, '--wrt', name])
        assert diff.out.startswith('input ')
        value = run_main(['eval', '-'], stdin=diff.out.encode())
        assert value.code == 0, value.err
        assert float(value.out) == pytest.approx(grad[f'd_{name}'], rel=1e-12, abs=1e-300)
    moved = run_main(['eval', '-', 'w1=2'], stdin=run_main(['diff', '-f', path, '--wrt', 'w1'])
                     .out.encode()) if 'w1' in defaults else None
    if moved is not None:
        regrad = _numbers(run_main(['grad', '-f', path, 'w1=2']).out)
        assert float(moved.out) == pytest.approx(regrad['d_w1'], rel=1e-12, abs=1e-300)


def test_diff_usage_errors():
    assert run_main(['diff', 'x*y', '--order', '3']).code == 2          # which variable?
    assert run_main(['diff', '3 + 4']).code == 2                       # no variables
    assert run_main(['diff', 'x*y', 'x=2']).code == 2                  # no values
    assert run_main(['diff', 'x*y', '--wrt', 'q']).code == 2
    assert run_main(['diff', 'x*y', '--lang', 'fortran']).code == 2


def test_diff_languages():
    for lang in ('adgrad', 'numpy', 'c', 'latex'):
        result = run_main(['diff', 'x^2*y', '--lang', lang])
        assert result.code == 0 and result.out.strip(), lang
    assert run_main(['diff', 'x^3', '--order', '2']).out == 'd2_x = 6*x\n'


def test_hessian_formats():
    plain = run_main(['hessian', 'x^2*y', 'x=3', 'y=2'])
    assert plain.out == '\tx\ty\nx\t4.0\t6.0\ny\t6.0\t0.0\n'
    as_json = json.loads(run_main(['hessian', 'x^2*y', 'x=3', 'y=2', '--json']).out)
    assert as_json == {'variables': ['x', 'y'], 'hessian': [[4.0, 6.0], [6.0, 0.0]]}
    assert run_main(['hessian', 'x^2*y', 'x=3', 'y=2', '--format', 'csv']).out.startswith(',x,y\n')
    table = run_main(['hessian', 'x^2*y', 'x=3', 'y=2'], tty=True)
    assert table.code == 0 and '6' in table.out


def test_hessian_points(tmp_path):
    points = tmp_path / 'p.csv'
    points.write_text('x,y,label\n3,2,a\n1,-1,b\n')
    out = run_main(['hessian', 'x^2*y', '--points', str(points)]).out.splitlines()
    # the row's own columns as they were, as grad --points keeps them
    assert out == ['x,y,label,d2_x_x,d2_x_y,d2_y_x,d2_y_y', '3,2,a,4.0,6.0,6.0,0.0',
                   '1,-1,b,-2.0,2.0,2.0,0.0']


def test_hessian_points_keep_json_lines_and_refuse_a_clashing_column(tmp_path):
    points = tmp_path / 'p.jsonl'
    points.write_text('{"x": 3, "y": 2, "tag": [1, "a"]}\n{"x": 1, "y": -1}\n')
    out = run_main(['hessian', 'x^2*y', '--points', str(points)]).out.splitlines()
    assert [json.loads(line) for line in out] == [
        {'x': 3, 'y': 2, 'tag': [1, 'a'], 'd2_x_x': 4.0, 'd2_x_y': 6.0, 'd2_y_x': 6.0, 'd2_y_y': 0.0},
        {'x': 1, 'y': -1, 'd2_x_x': -2.0, 'd2_x_y': 2.0, 'd2_y_x': 2.0, 'd2_y_y': 0.0}]
    clash = run_main(['hessian', 'x^3', '--points', '-'], stdin=b'x,d2_x_x\n1,2\n')
    assert (clash.code, clash.out) == (2, '') and "column 'd2_x_x'" in clash.err


def test_grad_forward_mode_equals_reverse():
    for program, point in (('x*y*z', ['x=2', 'y=3', 'z=4']),
                           ('-f', ['samples/mlp_scalar.ad']), ('-f', ['samples/softmax.ad'])):
        args = [program, *point] if program != '-f' else ['-f', *point]
        reverse = _numbers(run_main(['grad', *args]).out)
        forward = _numbers(run_main(['grad', *args, '--mode', 'forward']).out)
        assert forward == pytest.approx(reverse, rel=1e-14)


def test_grad_forward_mode_nodes_shows_each_pass():
    out = run_main(['grad', 'x*y', 'x=2', 'y=3', '--mode', 'forward', '--nodes']).out
    assert 'pass\tx\t2\tmul\t-\t6.0\t3.0\tx*y' in out.splitlines()
    assert 'pass\ty\t2\tmul\t-\t6.0\t2.0\tx*y' in out.splitlines()
    passes_json = json.loads(run_main(['grad', 'x*y', 'x=2', 'y=3', '--mode', 'forward',
                                       '--nodes', '--json']).out)['passes']
    assert [r['tangent'] for r in passes_json['y']] == [0.0, 1.0, 2.0]


def test_forward_mode_shows_the_tangent_of_a_value_no_output_reads():
    # ∂a/∂x = 2 by hand, though a reaches no output; a loop's final x, which
    # the output does not read, against central differences of its value
    out = run_main(['grad', 'a = x*2; y = x*3; y', 'x=1', '--mode', 'forward', '--nodes']).out
    assert 'pass\tx\t2\tmul\ta\t2.0\t2.0\tx*2' in out.splitlines()
    loop = 'input x = 0.5, y = -0.3\nfor i in 0..4 {\n x = sin(x*y) + 0.5*x\n y = y + cos(x)\n}\n'
    rows = json.loads(run_main(['grad', loop + 'y', '--mode', 'forward', '--nodes',
                                '--json']).out)['passes']['x']
    final_x = next(r['tangent'] for r in rows if r['op'] == 'part' and r['name'] == 'x#3')

    def x_after(x):
        return float(run_main(['eval', loop + 'x', f'x={x!r}']).out)
    h = 1e-6
    assert final_x == pytest.approx((x_after(0.5 + h) - x_after(0.5 - h)) / (2 * h), rel=1e-7)


# ---- check ----

@pytest.mark.parametrize('path', ['samples/product.ad', 'samples/blocks.ad', 'samples/deep.ad',
                                  'samples/neuron.ad', 'samples/logistic.ad',
                                  'samples/softmax.ad', 'samples/mlp_scalar.ad'])
def test_check_passes_on_every_sample(path):
    result = run_main(['check', '-f', path, '--order', '2'])
    assert result.code == 0, result.out + result.err
    assert 'FAIL' not in result.out


def test_check_warns_at_kinks_and_domain_edges():
    for program, point in (('abs(x)', 'x=0'), ('relu(x)*x', 'x=0'), ('sqrt(x)', 'x=0'),
                           ('log(x)', 'x=0'), ('max(x, 1)', 'x=1')):
        result = run_main(['check', program, point])
        assert result.code == 0 and 'warn' in result.out and 'warning' in result.err, program


def test_check_fails_with_exit_1_on_a_wrong_rule(monkeypatch):
    # A deliberately wrong derivative: sin' = 2 cos, until a program can
    # declare its own (grad f(x) = ...).
    monkeypatch.setitem(passes.RULES, 'sin',
                        lambda k, g, out, a: (k.mul(2.0, k.mul(g, k.cos(a))),))
    result = run_main(['check', 'sin(x)*y', 'x=0.5', 'y=2'])
    assert result.code == 1
    assert 'FAIL' in result.out and '∂f/∂x' in result.err
    rows = {r.what: r.verdict for r in check_gradient(lower('sin(x)*y'), {'x': 0.5, 'y': 2.0})}
    assert rows == {'x': 'FAIL', 'y': 'pass'}
    second = {r.what: r.verdict for r in check_hessian(lower('x^3*y'), {'x': 0.5, 'y': 2.0})}
    assert set(second.values()) == {'pass'}


def test_check_fails_on_a_wrong_declared_derivative():
    program = 'f(x) = sin(2*x)\ngrad f(x) = cos(x)\nf(x)'
    result = run_main(['check', program, 'x=0.3'])
    assert result.code == 1 and 'FAIL' in result.out


def test_check_many_points(tmp_path):
    points = tmp_path / 'p.jsonl'
    points.write_text('{"x": 0.5}\n{"x": 2}\n{"x": -1}\n')
    result = run_main(['check', 'x^3 + exp(x)', '--points', str(points), '--format', 'csv'])
    lines = result.out.splitlines()
    assert result.code == 0 and len(lines) == 4 and all(',pass,' in line for line in lines[1:])


def test_check_json_is_strict():
    out = json.loads(run_main(['check', 'log(x)', 'x=0', '--json']).out)
    assert out[0]['verdict'] == 'warn' and out[0]['ad'] == 'inf'
    assert not math.isnan(out[0]['point'])


def test_hessian_points_at_the_missing_variable():
    run = run_main(['hessian', 'x*q', 'x=1'])
    assert (run.code, run.out) == (2, '')
    assert run.err == ("adgrad: error: no value for 'q': give it as q=VALUE (column 3)\n"
                       '  x*q\n    ^\n')


def test_hessian_points_as_a_table(tmp_path):
    points = tmp_path / 'p.csv'
    points.write_text('x,y,label\n3,2,a\n')
    run = run_main(['hessian', 'x^2*y', '--points', str(points), '--format', 'table'])
    assert run.code == 0
    rows = [[c.strip() for c in line.split('│')[1:-1]] for line in run.out.splitlines()
            if line.startswith('│')]
    assert rows == [['3', '2', 'a', '4.0', '6.0', '6.0', '0.0']]


def test_order_2_by_several_variables_gives_the_mixed_partials():
    """diff --order 2 --wrt x,y: d2_x_x, d2_x_y, d2_y_y, each SymPy's at a point,
    through the NumPy code; its keys say they are second derivatives."""
    import sympy
    from .helpers import numpy_function
    text = 'x^3*y + sin(x*y)'
    out = run_main(['diff', text, '--order', '2', '--lang', 'numpy'])
    assert out.code == 0, out.err
    value, seconds = numpy_function(out.out)(0.7, -1.3)
    x, y = sympy.symbols('x y')
    f = x**3 * y + sympy.sin(x * y)
    expected = {f'd2_{a}_{b}': float(sympy.diff(f, a, b).subs({x: 0.7, y: -1.3}))
                for a, b in ((x, x), (x, y), (y, y))}
    assert seconds.keys() == expected.keys()
    for key, want in expected.items():
        assert float(seconds[key]) == pytest.approx(want, rel=1e-13), key
    text_out = run_main(['diff', text, '--order', '2']).out
    assert [line.split(' = ')[0] for line in text_out.splitlines()][-3:] == list(expected)


def test_second_derivatives_are_not_called_the_gradient():
    c = run_main(['diff', 'x^3*y', '--order', '2', '--lang', 'c']).out
    assert 'gradient' not in c and 'd2[0] = d2/dx2, d2[1] = d2/dx dy' in c and 'double *d2' in c
    latex = run_main(['diff', 'x^3*y', '--order', '2', '--lang', 'latex']).out
    assert r'\frac{\partial^{2} f}{\partial x \, \partial y} = 3 {x}^{2}' in latex


def test_latex_names_the_programs_own_output():
    out = run_main(['diff', '-f', 'samples/blocks.ad', '--lang', 'latex']).out
    assert out.startswith(r'\[ \frac{\partial z}{\partial x}')
    assert r'\partial f}' in run_main(['diff', 'x^2', '--lang', 'latex']).out
