"""The notebook API, autodiff_cli.Program: the commands' numbers, pictures and text.

The numbers are derived by hand: x*y*z at (2, 3, 4) is 24 with gradient
(y*z, x*z, x*y) = (12, 8, 6) and Hessian [[0, z, y], [z, 0, x], [y, x, 0]];
sin(x)*y at (pi/6, 2) is 1 with gradient (y*cos(x), sin(x)) = (sqrt(3), 1/2);
the tutorial's blocks, z = x^2 + 1 at x = 2, is 5 with dz/dx = 2x = 4;
sum((A@x - b)^2) has the gradient (2 r x^T, 2 A^T r, -2 r) with r = A@x - b.
"""

import html
import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from autodiff_cli import AdgradError, Program
from autodiff_cli.pictures.text import number
from autodiff_cli.errors import CheckFailed, NumericalError
from tests.helpers import run_main

ROOT = Path(__file__).resolve().parent.parent
BLOCKS = (ROOT / 'samples' / 'blocks.ad').read_text(encoding='utf-8')
needs_dot = pytest.mark.skipif(shutil.which('dot') is None, reason='Graphviz is not installed')


def test_grad_gives_the_value_and_the_gradient_by_name():
    result = Program('x*y*z').grad(x=2, y=3, z=4)
    assert result.value == 24.0
    assert result.gradient == {'x': 12.0, 'y': 8.0, 'z': 6.0}
    assert list(result.gradient) == ['x', 'y', 'z'] and result.warnings == []
    assert result.inputs == {'x': 2.0, 'y': 3.0, 'z': 4.0}


def test_values_are_read_as_the_command_line_reads_them():
    result = Program('sin(x)*y').grad(x='pi/6', y=2)
    assert result.value == pytest.approx(1.0, rel=1e-15)
    assert result.gradient['x'] == pytest.approx(math.sqrt(3), rel=1e-15)
    assert result.gradient['y'] == pytest.approx(0.5, rel=1e-15)
    # A dict first holds names that are also options; wrt keeps its order.
    result = Program('color*x').grad({'color': 3}, x=5, wrt='x,color')
    assert list(result.gradient.items()) == [('x', 3.0), ('color', 5.0)]
    assert Program('x*y*z').eval(x=2, y=3, z=4).gradient is None
    third = 1 / 3                                            # every digit reaches the graph
    assert Program('x').grad(x=third).value == third and Program('x').eval(x=1e-320).value == 1e-320


def test_the_programs_defaults_and_blocks_are_the_commands():
    program = Program(BLOCKS)
    assert program.inputs == ['x']
    assert (program.grad().value, program.grad().gradient) == (5.0, {'x': 4.0})
    assert program.grad(x=3).gradient == {'x': 6.0}          # a binding overrides input x = 2
    assert program.grad().gradient == {'x': 4.0}             # and is not kept


def test_loading_is_the_commands_own_notes_and_bindings():
    program = Program('input e = 1\ne*x')
    assert program.notes == ["'e' is this program's own input from here on, "
                             'not the constant e = 2.718281828459045']
    assert program.grad(e=2, x=3).gradient == {'e': 3.0, 'x': 2.0}
    assert program.hessian(e=2, x=3) == [[0.0, 1.0], [1.0, 0.0]]
    cli = run_main(['grad', 'x*y', 'x=1', 'y=2', 'xx=3'])
    assert Program('x*y').grad(x=1, y=2, xx=3).warnings == \
        [cli.err.removeprefix('adgrad: warning: ').rstrip('\n')]


def test_hessian_is_the_hand_derived_matrix():
    assert Program('x*y*z').hessian(x=2, y=3, z=4) == [[0, 4, 3], [4, 0, 2], [3, 2, 0]]


def test_diff_is_the_commands_text():
    program = Program('x^2*sin(x)')
    for lang in ('adgrad', 'numpy', 'c', 'latex'):
        assert program.diff(lang=lang) == run_main(['diff', 'x^2*sin(x)', '--lang', lang]).out
    assert Program('x*y*z').diff() == 'd_x = y*z\nd_y = x*z\nd_z = x*y\n'
    assert Program('sin(x)').diff(order=4) == run_main(['diff', 'sin(x)', '--order', '4']).out


def test_check_passes_a_true_derivative_and_fails_a_false_declared_one():
    good = Program('x^2*sin(x)').check(x=1.5)
    assert good.ok and [row.what for row in good.rows] == ['x']
    assert good.rows[0].ad == pytest.approx(2 * 1.5 * math.sin(1.5) + 1.5**2 * math.cos(1.5))
    bad = Program('f(x) = x^2; grad f(x) = 3*x; f(x)').check(x=2)
    assert not bad.ok and bad.rows[0].ad == 6.0 and bad.rows[0].fd == pytest.approx(4.0)
    with pytest.raises(CheckFailed):
        bad.raise_for_failure()
    assert '<td>FAIL</td>' in bad._repr_html_()
    second = Program('x*y*z').check(x=2, y=3, z=4, order=2)
    assert second.ok and [row.what for row in second.rows] == \
        ['x', 'y', 'z'] + [f'{a},{b}' for b in 'xyz' for a in 'xyz']   # as the command lists them
    assert [row.ad for row in second.rows[3:]] == [0, 4, 3, 4, 0, 2, 3, 2, 0]


def test_arrays_are_given_as_python_values_or_as_text():
    A, x, b = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1.0, -1.0]), np.array([0.5, 2.0])
    r = A @ x - b                                            # [-1.5, -3]
    program = Program('sum((A @ x - b)^2)')
    result = program.grad(A=A, x=[1, -1], b='[0.5, 2]')
    assert result.value == float(r @ r) == 11.25
    assert set(result.gradient) == {'A', 'b', 'x'}
    assert np.array_equal(result.gradient['A'], 2 * np.outer(r, x))   # [[-3, 3], [-6, 6]]
    assert np.array_equal(result.gradient['x'], 2 * A.T @ r)          # [-21, -30]
    assert np.array_equal(result.gradient['b'], -2 * r)               # [3, 6]
    assert np.array_equal(Program('[[1, 2], [3, 4]] @ x').eval(x=(1, -1)).value, [-1, -1])
    checked = program.check(A=A, x=x, b=b)
    assert checked.ok and [(row.what, row.ad) for row in checked.rows[:4]] == \
        [('A[0,0]', -3.0), ('A[0,1]', 3.0), ('A[1,0]', -6.0), ('A[1,1]', 6.0)]   # 2 r x^T
    cli = run_main(['check', 'sum((A @ x - b)^2)', 'A=[[1, 2], [3, 4]]', 'x=[1, -1]',
                    'b=[0.5, 2]', '--json'])
    assert [row.ad for row in checked.rows] == [row['ad'] for row in json.loads(cli.out)]
    wrong = Program('f(x) = x^2; grad f(x) = 3*x; sum(f(x))').check(x=[1, 2])
    assert not wrong.ok
    assert Program('x*y').grad(x=np.float64(2), y=np.array(3.0)).gradient == {'x': 3.0, 'y': 2.0}


@pytest.mark.parametrize('call, message', [
    (lambda: Program('sum(A)').grad(A=[[1, 2], [3]]), 'an array holds numbers'),
    (lambda: Program('2*x').grad(x='@w.npy'), 'reads a file'),
    (lambda: Program('[1, 2]*x').grad(x=1), 'grad needs a scalar output'),
    (lambda: Program('sum(x)').diff(), 'Program.diff takes programs of numbers only'),
    (lambda: Program('A @ x').render(A=[[1, 2], [3, 4]], x=[1, 2]), 'a gradient needs a single'),
    (lambda: Program('x*y').render(x=1, y=2, unroll=True), 'unroll writes an array program'),

    (lambda: Program('x +'), 'unexpected end of input'),
    (lambda: Program('sinn(x)'), "did you mean 'sin'"),
    (lambda: Program('x*y').grad(x=1), "no value for 'y'"),
    (lambda: Program('x').grad(x={'a': 1}), "bad binding x={'a': 1}"),
    (lambda: Program('x').grad(x='y'), "'y' is a variable"),
    (lambda: Program('x*e').grad(e=1, x=1), "cannot bind the constant 'e'"),
    (lambda: Program('x').grad(x=1, wrt='q'), "'q' is not a variable"),
    (lambda: Program('x').render(x=1, color='red'), "color must be 'plain' or 'magnitude'"),
    (lambda: Program('x*y').diff(order=3), 'one variable'),
    (lambda: Program('x').diff(lang='fortran'), 'lang must be one of'),
    (lambda: Program('x*y').render(x=1, y=2, step=9), 'steps 1 to'),
    (lambda: Program(3), 'a program is text'),
    (lambda: Program('x').render(x=1).data('gif'), "fmt must be 'svg'"),
    (lambda: Program(' + '.join(f'x{i}' for i in range(30))).render(max_nodes=50),
     'the picture has 59 nodes'),
    (lambda: Program(' + '.join(f'x{i}' for i in range(30))).render(step=1, max_nodes=50),
     'the graph has 59 nodes'),
    (lambda: Program('x + y').page(x=1, y=2, max_nodes=2), 'the graph has 3 nodes'),
    (lambda: Program('x').render(x=1, font_scale=20), 'font_scale must be a number'),
    (lambda: Program('x').render(x=1, size=13), 'size must be (width, height)'),
])
def test_bad_input_raises_adgrad_error(call, message):
    with pytest.raises(AdgradError, match=re.escape(message)):
        call()


def test_a_non_finite_value_is_a_warning_or_under_strict_an_error():
    result = Program('1/x').eval(x=0)
    assert result.value == math.inf and result.warnings == \
        ['1/x (node 2) is inf, the first non-finite value']
    with pytest.raises(NumericalError, match='1/x'):
        Program('1/x').grad(x=0, strict=True)


# ---- pictures ----

@needs_dot
def test_the_result_shows_its_annotated_graph_as_svg():
    svg = Program('x*y*z').grad(x=2, y=3, z=4)._repr_svg_()
    assert svg.lstrip().startswith('<?xml') and '<svg' in svg
    texts = re.findall(r'<text[^>]*>([^<]*)</text>', svg)
    for label in ('x', 'y', 'z', 'x*y', '24', '12', '8', '6', '∂f/∂x = 12'):
        assert any(label == html.unescape(t).strip() or label in html.unescape(t)
                   for t in texts), label
    forward = Program('x*y*z').eval(x=2, y=3, z=4)._repr_svg_()
    assert '24' in forward and '∂f/∂x' not in forward      # eval draws the forward pass


@needs_dot
def test_the_result_shows_the_interactive_page_in_a_frame():
    frame = Program('x*y*z').grad(x=2, y=3, z=4)._repr_html_()
    assert frame.startswith('<iframe srcdoc="') and 'sandbox="allow-scripts"' in frame
    page = html.unescape(re.search(r'srcdoc="([^"]*)"', frame)[1])
    assert page == Program('x*y*z').page(x=2, y=3, z=4)
    assert page == run_main(['render', 'x*y*z', 'x=2', 'y=3', 'z=4', '--format', 'html',
                             '-o', '-']).out
    assert '<svg' in page and 'x*y' in page
    erf = Program('erf(x)').grad(x=1)              # the page cannot compute erf yet
    assert erf._repr_html_() is None and '<svg' in erf._repr_svg_()


def test_without_graphviz_the_reprs_are_none_and_render_says_what_to_install(
        tmp_path, monkeypatch):
    """In Jupyter a _repr_ that raises is a formatter's traceback; None makes
    it show the text repr. `.render()` (and its data) still raises, naming
    an install command for each platform, as the README's table does."""
    monkeypatch.setenv('PATH', str(tmp_path / 'empty'))
    result = Program('x*y').grad(x=2, y=3)
    assert result._repr_svg_() is None and result._repr_html_() is None
    assert Program('x*y')._repr_svg_() is None and result.picture()._repr_svg_() is None
    assert repr(result) == "Result(value=6.0, gradient={'x': 3.0, 'y': 2.0})"
    with pytest.raises(AdgradError) as raised:
        result.picture().data('svg')
    for command in ('sudo apt install graphviz', 'brew install graphviz',
                    'conda install -c conda-forge graphviz', 'winget install graphviz'):
        assert command in str(raised.value)


@needs_dot
@pytest.mark.parametrize('program, argv, options', [
    ('x*y*z', ['x=2', 'y=3', 'z=4'], {}),
    ('x*y*z', ['x=2', 'y=3', 'z=4', '--pass', 'forward'], {'mode': 'forward'}),
    ('x*y*z', ['x=2', 'y=3', 'z=4', '--step', '5'], {'step': 5}),
    (BLOCKS, ['--collapse', 'blocks', '--color', 'magnitude'],
     {'collapse': 'blocks', 'color': 'magnitude'}),
    ((ROOT / 'samples' / 'deep.ad').read_text(), ['--collapse', 'blocks'], {'collapse': 'blocks'}),
    ((ROOT / 'samples' / 'softmax.ad').read_text(), [], {}),   # too wide: turned top to bottom
])
def test_render_draws_the_commands_picture(program, argv, options):
    values = dict(word.split('=') for word in argv if '=' in word)
    picture = Program(program).render(**values, **options)
    svg = run_main(['render', program, *argv, '-o', '-'])
    assert svg.code == 0 and picture.data('svg').decode('utf-8') == svg.out


MLP = ROOT / 'samples' / 'mlp.ad'


@needs_dot
@pytest.mark.parametrize('options, argv', [
    ({}, []), ({'collapse': 'blocks'}, ['--collapse', 'blocks']), ({'unroll': True}, ['--unroll']),
    ({'step': 4}, ['--step', '4']), ({'mode': 'forward', 'c': -0.3}, ['--pass', 'forward', 'c=-0.3']),
], ids=['arrays', 'collapsed', 'unrolled', 'step', 'forward'])
def test_an_array_program_renders_as_the_command_does(options, argv):
    picture = Program(MLP.read_text()).render(**options)
    svg = run_main(['render', '-f', str(MLP), *argv, '-o', '-'])
    assert svg.code == 0 and picture.data('svg').decode('utf-8') == svg.out


@needs_dot
def test_an_array_programs_result_shows_its_picture_and_its_page():
    """Jupyter's reprs of an array program: the picture of its tensors, and the
    page with a slider for each input that is a number (c and target)."""
    program = Program(MLP.read_text())
    result = program.grad(c=-0.3)
    svg = result._repr_svg_()
    assert svg == run_main(['render', '-f', str(MLP), 'c=-0.3', '-o', '-']).out
    texts = [html.unescape(t) for t in re.findall(r'<text[^>]*>([^<]*)</text>', svg)]
    assert 'W1 \xa0[4,1]' in texts                    # dot writes two spaces so
    assert f'[{number(result.gradient["x"][0])}]' in texts   # compact: value │ gradient
    page = html.unescape(re.search(r'srcdoc="([^"]*)"', result._repr_html_())[1])
    assert page == run_main(['render', '-f', str(MLP), 'c=-0.3', '--format', 'html',
                             '-o', '-']).out
    assert re.findall(r'<label for="n\d+"><code>(\w+)</code>', page) == ['target', 'c']
    assert program._repr_svg_() == run_main(['render', '-f', str(MLP), '-o', '-']).out


@needs_dot
def test_a_program_shows_its_structure_and_a_png_is_drawn_for_a_slide():
    svg = Program('tanh(w*x + b)')._repr_svg_()
    assert 'w*x' in svg and '∂f' not in svg
    png = Program('x*y*z').render(x=2, y=3, z=4).data('png')
    assert png[:8] == b'\x89PNG\r\n\x1a\n'
    width, height = int.from_bytes(png[16:20], 'big'), int.from_bytes(png[20:24], 'big')
    assert width <= 1920 and height <= 1080


def test_the_library_takes_what_the_commands_take_at_order_2():
    # mixed partials as `adgrad diff --order 2` prints them; d2/dxdy of x^3*y is 3x^2
    text = Program('x^3*y').diff(order=2)
    assert text == run_main(['diff', 'x^3*y', '--order', '2']).out
    assert 'd2_x_y = 3*x^2' in text
    # an array program's Hessian checked against finite differences, as `check --order 2`
    quadratic = Program('x @ M @ x').check(x=[1.0, -2.0], M=[[2.0, 1.0], [0.5, 3.0]], order=2)
    assert quadratic.ok and quadratic.rows
    declared = Program('f(x) = sum(x^2); grad f(x) = 3*x; f(x)')
    assert not declared.check(x=[1.0, 2.0], order=2).ok   # its gradient's rows fail
    # the Hessian of a block's declared gradient 3*x is 3I, whatever its body's
    assert declared.hessian(x=[1.0, 2.0]) == [[3.0, 0.0], [0.0, 3.0]]
