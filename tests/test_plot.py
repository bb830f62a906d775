"""adgrad plot: the sampled numbers against hand-derived derivatives, the gaps
at jumps and poles, the picture's bytes, and the command line's errors."""

import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from autodiff_cli.language.lower import lower

pytest.importorskip('matplotlib')

from autodiff_cli.pictures.curves import sample_curve, sample_grid

ROOT = Path(__file__).resolve().parent.parent


# ---- the numbers ----

def test_the_samples_are_f_and_its_derivatives_derived_by_hand():
    curve = sample_curve(lower('x^2*sin(x)'), 'x', -3, 3, 601, order=2)
    x = curve.x
    assert len(x) == 601 and x[0] == -3 and x[-1] == 3
    f, d1, d2 = curve.curves
    np.testing.assert_allclose(f, x**2 * np.sin(x), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(d1, 2*x*np.sin(x) + x**2*np.cos(x), rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(d2, 2*np.sin(x) + 4*x*np.cos(x) - x**2*np.sin(x),
                               rtol=1e-13, atol=1e-13)


def test_other_variables_are_held_at_their_values():
    curve = sample_curve(lower('sin(a*x) + b'), 'x', -1, 2, 50, fixed={'a': 2.0, 'b': 0.5},
                         order=2)
    x, (f, d1, d2) = curve.x, curve.curves
    np.testing.assert_allclose(f, np.sin(2*x) + 0.5, rtol=1e-15)
    np.testing.assert_allclose(d1, 2*np.cos(2*x), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(d2, -4*np.sin(2*x), rtol=1e-14, atol=1e-15)


def test_a_constant_derivative_gives_a_zero_second():
    curve = sample_curve(lower('3*x + 1'), 'x', 0, 1, 11, order=2)
    assert curve.curves[1].tolist() == [3.0] * 11 and curve.curves[2].tolist() == [0.0] * 11


def test_a_smooth_curve_has_no_gaps_even_where_it_is_steep():
    for expr in ('x^2*sin(x)', 'tanh(1000*x)', 'exp(x)', 'sqrt(x^2 + 1e-6)'):
        curve = sample_curve(lower(expr), 'x', -3, 3, 1000, order=2)
        assert len(curve.x) == 1000, expr
        assert all(np.isfinite(c).all() for c in curve.curves), expr


def _gaps(x, values):
    """The x of each NaN that has finite values on both sides."""
    nan = np.flatnonzero(np.isnan(values))
    return [x[i] for i in nan if 0 < i < len(x) - 1
            and np.isfinite(values[i - 1]) and np.isfinite(values[i + 1])]


def test_a_jump_is_a_gap_found_to_the_spacing_of_doubles():
    curve = sample_curve(lower('floor(x)'), 'x', -3, 3, 1000)
    # The jump at 3 lies between the last two samples, 2.997 and 3.
    np.testing.assert_allclose(_gaps(curve.x, curve.curves[0]), [-2, -1, 0, 1, 2, 3], atol=1e-13)


def test_a_pole_is_a_gap_not_a_spike_and_a_kink_only_in_the_derivative():
    curve = sample_curve(lower('1/x'), 'x', -3, 3, 1000, order=2)
    x, (f, _, d2) = curve.x, curve.curves
    assert np.isnan(f[np.abs(x) < 1e-10]).any()
    # No line joins the two branches: every segment lies on one side.
    finite = np.isfinite(f[:-1]) & np.isfinite(f[1:])
    assert not (finite & (np.sign(f[:-1]) != np.sign(f[1:]))).any()
    assert np.nanmin(f) < -1e9   # up to the pole from the left, far past any view
    finite = np.isfinite(d2[:-1]) & np.isfinite(d2[1:])
    assert not (finite & (np.sign(d2[:-1]) != np.sign(d2[1:]))).any()   # 2/x^3 too
    kink = sample_curve(lower('abs(x)'), 'x', -3, 3, 1000)
    assert np.isfinite(kink.curves[0]).all()   # continuous: no gap in f
    # f′ jumps from -1 to 1, by its own value at 0 (0): a gap on each side of it.
    gaps = _gaps(kink.x, kink.curves[1])
    assert gaps and np.abs(gaps).max() < 1e-13
    tangent = sample_curve(lower('tan(x)'), 'x', -3, 3, 1000)
    # Beside a pole's end the next interval looks like a jump too, off the view.
    np.testing.assert_allclose(np.unique(np.round(_gaps(tangent.x, tangent.curves[0]), 9)),
                               [-np.pi/2, np.pi/2], atol=1e-9)


def test_where_f_is_not_finite_the_curve_is_nan():
    curve = sample_curve(lower('log(x)'), 'x', -3, 3, 1000)
    f = curve.curves[0]
    assert np.isnan(f[curve.x < 0]).all() and np.isfinite(f[curve.x > 1e-300]).all()


def test_the_grid_is_f_and_its_gradient():
    grid = sample_grid(lower('(1-x)^2 + 100*(y-x^2)^2'), ['x', 'y'], [(-2, 2), (-1, 3)], 41)
    gx, gy = np.meshgrid(grid.x, grid.y)
    np.testing.assert_allclose(grid.f, (1-gx)**2 + 100*(gy-gx**2)**2, rtol=1e-14)
    np.testing.assert_allclose(grid.dx, -2*(1-gx) - 400*gx*(gy-gx**2), rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(grid.dy, 200*(gy-gx**2), rtol=1e-13, atol=1e-12)
    domain = sample_grid(lower('log(x*y)'), ['x', 'y'], [(-1, 1), (-1, 1)], 4)
    outside = np.multiply.outer(domain.y, domain.x) <= 0
    assert np.isnan(domain.dx[outside]).all() and np.isfinite(domain.dx[~outside]).all()
    centred = sample_grid(lower('x*y'), ['x', 'y'], [(0, 1), (0, 2)], 4, centred=True)
    assert centred.x.tolist() == [0.125, 0.375, 0.625, 0.875]
    assert centred.y.tolist() == [0.25, 0.75, 1.25, 1.75]


# ---- the picture ----

def _png_size(data):
    assert data[:8] == b'\x89PNG\r\n\x1a\n'
    length, kind = struct.unpack('>I4s', data[8:16])
    assert kind == b'IHDR' and length == 13
    assert zlib.crc32(data[12:29]) == struct.unpack('>I', data[29:33])[0]
    return struct.unpack('>II', data[16:24])


def test_a_png_is_written_and_is_a_valid_image_of_the_expected_size(run_cli, tmp_path):
    from matplotlib.image import imread
    out = tmp_path / 'f.png'
    assert run_cli('plot', 'x^2*sin(x)', 'x=-3..3', '--at', 'x=1', '-o', str(out)) == (0, '', '')
    data = out.read_bytes()
    assert _png_size(data) == (960, 600)
    image = imread(str(out))
    assert image.shape[:2] == (600, 960)
    assert len(np.unique(image.reshape(-1, image.shape[2]), axis=0)) > 10   # not blank


@pytest.mark.parametrize('ending', ['png', 'svg', 'pdf'])
def test_the_same_input_gives_the_same_bytes(run_cli, tmp_path, ending):
    made = []
    for n in range(2):
        out = tmp_path / f'{n}.{ending}'
        assert run_cli('plot', '(1-x)^2 + 100*(y-x^2)^2', 'x=-2..2', 'y=-1..3',
                       '--samples', '60', '-o', str(out))[0] == 0
        made.append(out.read_bytes())
    assert made[0] == made[1]
    assert made[0][:5] == {'png': b'\x89PNG\r', 'svg': b'<?xml', 'pdf': b'%PDF-'}[ending]


def test_the_same_bytes_in_another_process(tmp_path):
    """Hash salts and dates are what differ between processes, not within one:
    two processes each write PNG, SVG and PDF."""
    script = ('import sys\nfrom autodiff_cli.cli.main import main\n'
              'for ending in ("png", "svg", "pdf"):\n'
              '    assert main(["plot", "x^3 - x*y", "x=-2..2", "y=-1..1", "--samples", "30",'
              ' "-o", f"{sys.argv[1]}.{ending}"]) == 0\n')
    for n in range(2):
        done = subprocess.run([sys.executable, '-c', script, str(tmp_path / str(n))],
                              check=False, capture_output=True, text=True, cwd=ROOT)
        assert done.returncode == 0, done.stderr
    for ending in ('png', 'svg', 'pdf'):
        first, second = (tmp_path / f'{n}.{ending}' for n in range(2))
        assert first.read_bytes() == second.read_bytes(), ending
        assert b'Date' not in first.read_bytes(), ending


def test_the_format_goes_to_a_pipe_when_there_is_no_file():
    for words, start in ((['--format', 'svg'], b'<?xml'), ([], b'\x89PNG')):
        done = subprocess.run([sys.executable, '-m', 'autodiff_cli', 'plot', 'x^2', 'x=-1..1',
                               '--samples', '10', *words], check=False, capture_output=True, cwd=ROOT)
        assert (done.returncode, done.stderr) == (0, b'') and done.stdout.startswith(start)


def test_a_path_is_drawn_from_its_columns(run_cli, tmp_path):
    trace = tmp_path / 'trace.csv'
    trace.write_text('iteration,x,y,f,grad_norm\n0,-1.2,1,24.2,232.9\n1,1,1,0,0\n')
    out = tmp_path / 'p.png'
    assert run_cli('plot', '(1-x)^2 + 100*(y-x^2)^2', 'x=-2..2', 'y=-1..3', '--path',
                   str(trace), '--samples', '40', '-o', str(out))[0] == 0
    assert _png_size(out.read_bytes()) == (960, 600)
    assert run_cli('plot', 'x^2', 'x=-2..2', '--path', str(trace), '-o', str(out))[0] == 0
    code, _, err = run_cli('plot', 'x*z', 'x=-2..2', 'z=-1..1', '--path', str(trace),
                           '-o', str(out))
    assert code == 2 and err.startswith("adgrad: error: --path ") and "no column 'z'" in err


# ---- the command line ----

@pytest.mark.parametrize('args, message', [
    (['x^2', '-o', 'f.png'], 'give one range to draw curves'),
    (['x*y*z', 'x=0..1', 'y=0..1', 'z=0..1', '-o', 'f.png'], 'give one range'),
    (['x^2', 'x=3..-3', '-o', 'f.png'], "bad range 'x=3..-3'"),
    (['x^2', 'x=0..inf', '-o', 'f.png'], "bad range 'x=0..inf'"),
    (['x^2', 'x=0..1', 'x=2', '-o', 'f.png'], "'x' has a range and a value"),
    (['x^2', 'y=0..1', '-o', 'f.png'], "'y' is not a variable"),
    (['x^2', 'x=0..1', '-o', 'f.gif'], "cannot tell the format from '.gif'"),
    (['x*y', 'x=0..1', '-o', 'f.png'], "no value for 'y'"),
    (['x*y', 'x=0..1', 'y=0..1', '--order', '2', '-o', 'f.png'], '--order is for one range'),
    (['x^2', 'x=0..1', '--at', 'y=1', '-o', 'f.png'], "--at 'y=1'"),
    (['x^2', 'x=0..1', '--samples', '1', '-o', 'f.png'], "'1' is not a whole number"),
    (['x*y', 'x=0..1', 'y=0..1', '--samples', '2001', '-o', 'f.png'], 'at most 2,000 per side'),
    (['sum(w*x)', 'x=0..1', 'w=[1, 2]', '-o', 'f.png'], 'take programs of numbers only'),
])
def test_bad_usage_is_one_line_and_exit_2(run_cli, tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli('plot', *args)
    assert (code, out) == (2, ''), err
    assert err.startswith('adgrad: error: ') and message in err, err
    assert not list(tmp_path.iterdir())


def test_a_terminal_gets_a_notice_not_binary():
    from types import SimpleNamespace

    from autodiff_cli.cli.plot import _destination
    from autodiff_cli.errors import UsageError
    terminal = SimpleNamespace(stdout_isatty=True)
    with pytest.raises(UsageError, match='a plot is a picture, not text: give -o FILE.png'):
        _destination(SimpleNamespace(output=None, format=None), terminal)
    with pytest.raises(UsageError, match='will not write PNG to a terminal'):
        _destination(SimpleNamespace(output='-', format=None), terminal)
    pipe = SimpleNamespace(stdout_isatty=False)
    assert _destination(SimpleNamespace(output=None, format=None), pipe) == ('png', '-')
    assert _destination(SimpleNamespace(output='a.PDF', format=None), pipe) == ('pdf', 'a.PDF')
    assert _destination(SimpleNamespace(output='a.x', format='svg'), pipe) == ('svg', 'a.x')


def test_without_matplotlib_one_line_names_the_extra(run_cli, monkeypatch, tmp_path):
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, 'find_spec',
                        lambda name, *a: None if name == 'matplotlib' else real(name, *a))
    code, out, err = run_cli('plot', 'x^2', 'x=0..1', '-o', str(tmp_path / 'f.png'))
    assert (code, out) == (2, '')
    assert err == ("adgrad: error: adgrad plot needs matplotlib, adgrad's plot extra: "
                   "pip install matplotlib\n")


def test_the_title_names_the_output_and_the_values_held():
    from autodiff_cli.cli.plot import _title
    blocks = lower((ROOT / 'samples' / 'blocks.ad').read_text())
    assert _title(blocks, {}, 'samples/blocks.ad') == 'blocks.ad: z = f(…)'   # not f's body
    assert _title(lower('sin(a*x)  # a wave'), {'a': 2.0}) == 'f = sin(a*x)   (a = 2)'
    assert _title(lower('loss = (w - 3)^2; loss'), {}) == 'loss = (w - 3)^2'


@pytest.mark.parametrize('text, x, y', [('x^2 + y^2', (-2, 2), (-2, 2)),
                                        ('(1-x)^2 + 100*(y-x^2)^2', (-2, 2), (-1, 3)),
                                        ('sin(x)*cos(y)/1000', (-3, 3), (-3, 3))])
def test_the_colour_bars_levels_are_readable_numbers(text, x, y):
    """The bar labelled its quantile levels as they fell, 0.0001768, 1.114,
    2.227: rounded, each has at most two significant digits, and the bar
    still holds every value and a level per band."""
    from autodiff_cli.pictures.plot import _levels
    grid = sample_grid(lower(text), ('x', 'y'), (x, y), 120)
    levels = _levels(grid.f)
    assert all(float(f'{v:.2g}') == v for v in levels), levels
    assert np.all(np.diff(levels) > 0) and len(levels) >= 12
    assert levels[0] <= np.nanmin(grid.f) and levels[-1] >= np.nanmax(grid.f)
