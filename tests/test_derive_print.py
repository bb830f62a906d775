"""Printed derivatives: adgrad's own text read back by the language, NumPy
code run, LaTeX against golden text. (C, and NumPy at edge points and names
a language reserves: test_derive_code.py.)"""

import math
import os

import pytest

from autodiff_cli import AdgradError, backward, forward, lower
from autodiff_cli.derive.printers import adgrad_text, c_text, latex_text, numpy_text
from autodiff_cli.derive.record import differentiate, nth_derivative
from tests.helpers import numpy_function, scalar_samples
from tests.randexpr import cases, show

SAMPLES = [str(p) for p in scalar_samples(os.path.join(os.path.dirname(__file__), '..', 'samples'))]


def _readable(text):
    """Whether the language reads this text: conditionals print as
    if(c, a, b) with comparisons, which the language may not have yet."""
    try:
        lower(text)
        return True
    except AdgradError:
        return False


def _close(a, b, rel=1e-12, scale=0.0):
    """a and b agree to `rel`, or differ by rounding noise: a few ulps of
    `scale`, the largest intermediate, where a sum cancels (the identities
    a - a = 0, a/a = 1 make exact zeros of what grad leaves as noise)."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= rel * max(abs(a), abs(b)) + 1e-14 * scale + 1e-300


def _grad(graph, point):
    grads = backward(graph, forward(graph, point))
    return {n: grads[i] for n, i in graph.inputs.items()}


def _scale(graph, point):
    """The largest finite value or gradient grad meets at the point: the
    size of its rounding noise, where a derivative cancels to about 0."""
    values = forward(graph, point)
    return max([abs(v) for v in values + backward(graph, values) if math.isfinite(v)], default=0.0)


def _round_trip(graph, point):
    """(name, grad's number, the printed derivative's number read back) per
    variable whose derivative the language can read and grad's is finite."""
    want = _grad(graph, point)
    for name in graph.inputs:
        text = adgrad_text(differentiate(graph, [name]))
        if not _readable(text) or not math.isfinite(want[name]):
            continue
        printed = lower(text)
        got = forward(printed, {n: point[n] for n in printed.inputs})[printed.output]
        yield name, want[name], got, _scale(graph, point)


def test_printed_derivative_read_back_equals_grad_on_random_expressions():
    compared = 0
    for t, point in cases(seed=5, count=400, depth=4):
        graph = lower(show(t))
        for name, want, got, scale in _round_trip(graph, {n: point[n] for n in graph.inputs}):
            assert _close(got, want, scale=scale), (show(t), name, point, got, want)
            compared += 1
    assert compared > 200   # > 300 once the language reads if(c, a, b)


@pytest.mark.parametrize('path', SAMPLES, ids=os.path.basename)
def test_printed_derivative_read_back_equals_grad_on_samples(path):
    graph = lower(open(path).read())
    compared = 0
    for name, want, got, scale in _round_trip(graph, dict(graph.defaults)):
        assert _close(got, want, scale=scale), (name, got, want)
        compared += 1
    assert compared >= 1


def test_several_variables_share_bindings():
    logistic = next(p for p in SAMPLES if p.endswith('logistic.ad'))
    text = adgrad_text(differentiate(lower(open(logistic).read())))
    assert text.count('sigmoid(') == 1
    lines = text.splitlines()
    assert [line.split(' = ')[0] for line in lines if line.startswith('d_')] == \
        ['d_b', 'd_x1', 'd_x2', 'd_y', 'd_w1', 'd_w2']


@pytest.mark.parametrize('source, printed', [
    ('x*1 + 0', 'd_x = 1'),
    ('x^1 + y^0', 'd_x = 1\nd_y = 0'),
    ('0*x + y', 'd_x = 0\nd_y = 1'),
    ('2*(3*x)', 'd_x = 6'),
    ('-(-x)*y', 'd_x = y\nd_y = x'),
    ('x - -y', 'd_x = 1\nd_y = 1'),
    ('sin(x)^2', 'd_x = 2*sin(x)*cos(x)'),
    ('exp(-x^2)', 'd_x = -2*exp(-x^2)*x'),
    ('tan(x)', 'd_x = tan(x)^2 + 1'),
    ('sqrt(x)', 'd_x = 1/(2*sqrt(x))'),
    ('log(x)', 'd_x = 1/x'),
    ('x*y*z', 'd_x = y*z\nd_y = x*z\nd_z = x*y'),
    ('2^x', 'd_x = 0.6931471805599453*2^x'),
    ('(x + 1)^3', 'd_x = 3*(x+1)^2'),
    ('tanh(x)', 't1 = tanh(x)\nd_x = (1-t1)*(t1+1)'),                # a sum of atoms, tight
    ('(x + 1)^2*(y - 2*x)', 't1 = x + 1\nd_y = t1^2\nd_x = 2*(y - 2*x)*t1 - 2*d_y'),
    ('x/y', 'd_x = 1/y\nd_y = -x/y/y'),
    ('min(z - z, -0.5) + x', 'd_z = 0\nd_x = 1'),                   # a - a -> 0
    ('log(x/x) + y', 'd_x = 0\nd_y = 1'),                           # a/a -> 1, then 1/x - 1/x
    ('y*atan(x)', 'd_y = atan(x)\nd_x = y/(x^2 + 1)'),              # y*(1/t) -> y/t
    ('x - 3*x', 'd_x = -2'),
    ('log(y - x*x)', 't1 = y - x^2\nd_y = 1/t1\nd_x = -2*(x/t1)'),   # -a - a -> -(2*a)
    ('x*y + x*y*2 + sin(x)*3 - sin(x)', 'd_x = 2*cos(x) + 3*y\nd_y = 3*x'),   # like terms
    ('(y + x) - x + x*x + x', 'd_y = 1\nd_x = 2*x + 1'),             # (s + x) - x -> s
    ('x*y*2 + 2*y*x', 'd_x = 4*y\nd_y = 4*x'),                       # 2*x*y + 2*y*x -> 4*x*y
    ('x*y*z*2 - z*y*x*2 + w', 'd_x = 0\nd_y = 0\nd_z = 0\nd_w = 1'),
    ('x*((2 - x) + 4)', 'd_x = 6 - 2*x'),                             # (2 - s) + 4 -> 6 - s
])
def test_simplified_text(source, printed):
    assert adgrad_text(differentiate(lower(source))) == printed + '\n'


def test_higher_derivatives_collect_like_terms():
    # -(4*t) - 2*t -> -6*t, and 2*x*cos(x) + 2*cos(x)*x -> 4*x*cos(x); the
    # text still evaluates to the derivative (mpmath's diff, 30 digits)
    import mpmath
    for order, printed in [(2, 't1 = sin(x)\nd2_x = 2*t1 - x^2*t1 + 4*x*cos(x)\n'),
                           (4, 't1 = sin(x)\nd4_x = -6*t1 - t1*(6 - x^2) - 8*x*cos(x)\n')]:
        text = adgrad_text(nth_derivative(lower('x^2*sin(x)'), 'x', order), order)
        assert text == printed
        graph = lower(text)
        got = forward(graph, {'x': 0.7})[graph.output]
        with mpmath.workdps(30):
            want = float(mpmath.diff(lambda t: t**2 * mpmath.sin(t), mpmath.mpf('0.7'), order))
        assert _close(got, want)


def test_a_declared_derivative_is_the_one_printed():
    """A block's `grad` declaration is used, even a deliberately different
    one (cos(x) is not sin(2x)'s derivative), and only the block's value
    reaches the text: its partials are not printed as unused bindings."""
    source = 'f(x) = sin(2*x); grad f(x) = cos(x); f(x)*x'
    text = adgrad_text(differentiate(lower(source)))
    assert text == 'd_x = sin(2*x) + x*cos(x)\n'
    printed = lower(text)
    got = forward(printed, {'x': 0.7})[printed.output]
    assert _close(got, _grad(lower(source), {'x': 0.7})['x'])
    assert 'cos(x)' in c_text(differentiate(lower(source), with_value=True))


def test_no_internal_op_in_printed_text():
    for source in ('abs(x)', 'relu(x)', 'max(x, y)', 'min(x, y)', 'x^y', 'atan2(y, x)',
                   'clamp(x, 0, 1)', 'softplus(x)'):
        text = adgrad_text(differentiate(lower(source)))
        for internal in ('where(', 'eq(', 'lt(', 'ge('):
            assert internal not in text, (source, text)


def test_size_is_linear_in_depth():
    def program(depth):
        lines = ['e0 = x'] + [f'e{i} = sin(e{i - 1}) + x*e{i - 1}' for i in range(1, depth + 1)]
        return '\n'.join(lines)
    small = len(adgrad_text(differentiate(lower(program(500)))))
    large = len(adgrad_text(differentiate(lower(program(2000)))))
    assert 3.6 < large / small < 4.4


def test_higher_order_keeps_sharing():
    sizes = [len(nth_derivative(lower('sin(x)*exp(x)*log(x)'), 'x', k).reachable())
             for k in range(1, 5)]
    assert sizes[-1] < 40 * sizes[0]


# ---- NumPy ----

def test_numpy_code_returns_value_and_gradient_over_arrays():
    np = pytest.importorskip('numpy')
    for t, point in cases(seed=9, count=150, depth=4):
        graph = lower(show(t))
        names = list(graph.inputs)
        if not names:
            continue
        f = numpy_function(numpy_text(differentiate(graph, with_value=True)))
        rng = np.random.default_rng(1)
        columns = {n: np.concatenate([[point[n]], rng.uniform(-2, 2, 7)]) for n in names}
        value, gradient = f(**columns)
        assert value.shape == (8,) and set(gradient) == set(names)
        for row in range(8):
            at = {n: float(columns[n][row]) for n in names}
            values = forward(graph, at)
            want = _grad(graph, at)
            if math.isfinite(values[graph.output]):
                assert _close(float(value[row]), values[graph.output]), show(t)
            for n in names:
                if math.isfinite(want[n]):
                    assert _close(float(gradient[n][row]), want[n], scale=_scale(graph, at)), \
                        (show(t), n, at)


def test_numpy_scalars_and_broadcasting():
    pytest.importorskip('numpy')
    f = numpy_function(numpy_text(differentiate(lower('x*y + 2'), with_value=True)))
    value, gradient = f(2.0, [1.0, 2.0, 3.0])
    assert value.tolist() == [4.0, 6.0, 8.0]
    assert gradient['x'].tolist() == [1.0, 2.0, 3.0] and gradient['y'].tolist() == [2.0] * 3


# ---- LaTeX ----

@pytest.mark.parametrize('source, golden', [
    ('x^2*sin(x)', r'\[ \frac{\partial f}{\partial x} = {x}^{2} \cos\left(x\right) + 2 \sin\left(x\right) x \]'),
    ('sqrt(x)', r'\[ \frac{\partial f}{\partial x} = \frac{1}{2 \sqrt{x}} \]'),
    ('exp(-x^2)', r'\[ \frac{\partial f}{\partial x} = -2 e^{-{x}^{2}} x \]'),
    ('log(x)/x', r'\[ \frac{\partial f}{\partial x} = \frac{\frac{1}{x}}{x} - \frac{\frac{\log\left(x\right)}{x}}{x} \]'),
    ('atan(alpha*x1)', r'\[ t_{1} = {\left(\alpha x_{1}\right)}^{2} + 1 \]' '\n'
                       r'\[ \frac{\partial f}{\partial \alpha} = \frac{x_{1}}{t_{1}} \]' '\n'
                       r'\[ \frac{\partial f}{\partial x_{1}} = \frac{\alpha}{t_{1}} \]'),
    ('abs(x)', r'\[ \frac{\partial f}{\partial x} = \operatorname{sgn}\left(x\right) \]'),
])
def test_latex_golden(source, golden):
    assert latex_text(differentiate(lower(source))) == golden + '\n'


def test_latex_higher_order_head():
    text = latex_text(nth_derivative(lower('x^4'), 'x', 2), order=2)
    assert text == r'\[ \frac{\partial^{2} f}{\partial x^{2}} = 12 {x}^{2} \]' + '\n'
