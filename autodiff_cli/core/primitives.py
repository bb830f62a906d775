r"""The table of primitives: each op declared once, with every form it takes.

A row gives the op's name, arity, kind, its forward function (float64, IEEE
results, see ieee.py), the name of its form over arrays (arrays.py's where
NumPy's differs at an edge, else NumPy's), its vector-Jacobian product, its
JVP where that is not the VJP's, and how it is spelled in adgrad, NumPy, C,
JavaScript and LaTeX. Everything else that lists ops (the printers, the page,
the passes, the checks) is computed from these rows.

A VJP rule is `rule(k, g, out, *args) -> one cotangent per argument`: `g` is
the gradient arriving at the op's output, `out` its forward value and `args`
its inputs. A cotangent of None means "no gradient" (a comparison's, the
condition of a `where`): it is never multiplied, so it cannot turn into nan
through 0 * inf. Rules compute only through the algebra `k`, whose methods
are the primitives themselves, so the same rule yields numbers (`NUMBERS`),
arrays, or recorded nodes for higher-order derivatives, as JAX's and
tinygrad's rules do. `array_vjp` names arrays.py's form of a rule whose
temporaries, over large arrays, weigh as much as the values a backward pass
keeps: the same operations, bit for bit, with fewer arrays in flight.

Edge points follow PyTorch's derivatives.yaml, formula for formula, so that
results agree with torch float64 autograd to the last few ulps: abs'(0) = 0,
relu'(0) = 0, sqrt'(0) = inf, min/max ties split 0.5/0.5, d/dx x^0 = 0,
d/dy 0^y = 0 for y >= 0.

Spellings. A template is (text, precedence, one least precedence per
argument): `$0`, `$1`, `$2` stand for the arguments, and an argument that
binds more loosely than its slot allows is parenthesized. Precedence: 1 sums,
2 products, 3 signs, 4 powers, 5 atoms; conditions sit below sums.
- `text`, adgrad's: a template; a function without one is called by name.
- `numpy`: a template; else the array form, `np.NAME`, or arrays.py's
  function (copied into the generated module where it needs only NumPy).
- `c`: a template; the name of a math.h function; or a helper's C text,
  `static double ad_NAME(...)`, called as ad_NAME. An operator's NumPy and C
  spellings are its adgrad one unless its row says otherwise.
- `js`: an expression in a, b, c (the page's helpers in pictures/page.py),
  or a helper `function ad_NAME(...)`. `latex`: a template, or a command
  such as `\sin`; else `\operatorname{NAME}`. `blocks`: why the op can
  pass no gradient, for --explain.
- NO_FORM says on purpose that a language has none (JavaScript has no erf).
"""

import math
import operator
from functools import partial
from types import SimpleNamespace
from collections import namedtuple

from . import array_rules, ieee

LN2 = ieee.LN2
LN10 = 2.3025850929940456

Primitive = namedtuple('Primitive', 'name arity forward array vjp symbol jvp kind text numpy c js '
                       'latex blocks shape array_vjp')

# The kinds: what an op is, for the passes and printers that treat kinds alike.
ARITHMETIC, FUNCTION, STEP = 'arithmetic', 'function', 'step'
COMPARISON, LOGICAL, SELECT = 'comparison', 'logical', 'select'
STOP, CUSTOM, INTERNAL_KIND = 'stop', 'custom', 'internal'
TENSOR = 'tensor'   # an op of arrays: matrix products, reductions, indexing (see ARRAYS)

ATOM = 5
COMPARE = 0.5
OR, AND, NOT = 0.1, 0.2, 0.3
NO_FORM = ''     # a language that has no spelling for the op, on purpose


def _max_vjp(k, g, out, a, b):
    half = k.div(g, 2.0)
    return (k.where(k.eq(a, b), half, k.where(k.lt(a, b), 0.0, g)),
            k.where(k.eq(a, b), half, k.where(k.lt(b, a), 0.0, g)))


def _min_vjp(k, g, out, a, b):
    half = k.div(g, 2.0)
    return (k.where(k.eq(a, b), half, k.where(k.lt(b, a), 0.0, g)),
            k.where(k.eq(a, b), half, k.where(k.lt(a, b), 0.0, g)))


def _pow_vjp(k, g, out, a, b):
    d_base = k.where(k.eq(b, 0.0), 0.0, k.mul(g, k.mul(b, k.pow(a, k.sub(b, 1.0)))))
    # An algebra that can tell which arguments need a cotangent (arrays', as
    # torch's needs_input_grad) defers the exponent's: x^2's 2 needs none, nor
    # keeps `out` for it. The others compute it at once. (A partial, not a
    # lambda: a closure would make every local here a cell, on every call.)
    defer = getattr(k, 'deferred', None)
    if defer is None:
        return d_base, _pow_exponent(k, g, out, a, b)
    return d_base, defer(partial(_pow_exponent, k, g, out, a, b))


def _pow_exponent(k, g, out, a, b):
    # Where PyTorch masks matters: inside the product here, so a nan arriving
    # in g still reaches the exponent; outside it for the base.
    zero_base = k.mul(k.eq(a, 0.0), k.ge(b, 0.0))
    return k.mul(g, k.where(zero_base, 0.0, k.mul(out, k.log(a))))


def _atan2_vjp(k, g, out, y, x):
    # PyTorch's atan2_backward, operation for operation, so that exact zeros
    # stay exact: recip = 1/(x*x + y*y), masked to 0 where it is not finite
    # (the origin, or where x*x + y*y underflows); then g*x*recip, g*-y*recip.
    denominator = k.add(k.mul(x, x), k.mul(y, y))
    reciprocal = k.div(1.0, denominator)
    reciprocal = k.where(k.eq(denominator, 0.0), 0.0, reciprocal)
    return (k.mul(k.mul(g, x), reciprocal), k.mul(k.mul(g, k.neg(y)), reciprocal))


def _tanh_vjp(k, g, out, a):
    # 1 - y*y cancels near saturation and loses the rounding of y*y (3.7e-9
    # relative from torch at |x| ~ 9); torch's kernel fuses it into one
    # rounding. (1 - y)(1 + y) has no cancellation and agrees to an ulp or two.
    return (k.mul(g, k.mul(k.sub(1.0, out), k.add(1.0, out))),)


def _no_gradient(k, g, out, *args):
    return (None,) * len(args)


def _zero_gradient(k, g, out, a):
    # PyTorch's zeros_like(grad) for floor, ceil, round and sign: an exact 0
    # that is not None, so the argument's own rule still runs (sign(sqrt(x))
    # at 0 gives nan, as in torch), yet a nan arriving in g is not passed on.
    return (0.0,)


# ---- issue 10's functions: torch's derivative formulas where torch has the
# op (its FunctionsManual.cpp and derivatives.yaml, step for step); where it
# has none, the accurate formula (checked against mpmath) ----

def _acot_vjp(k, g, out, a):
    # -1/(x^2 + 1) as two divisions by hypot(x, 1): x^2 would overflow past
    # 1.3e154, where the derivative is still a subnormal.
    root = k.hypot(a, 1.0)
    return (k.neg(k.div(k.div(g, root), root)),)


def _asec_vjp(k, g, out, a):
    # 1/(|x| sqrt(x^2 - 1)), as two divisions and two square roots so that
    # it neither cancels near |x| = 1 nor overflows for large |x|.
    magnitude = k.abs(a)
    root = k.mul(k.sqrt(k.sub(magnitude, 1.0)), k.sqrt(k.add(magnitude, 1.0)))
    return (k.div(k.div(g, magnitude), root),)


def _acsc_vjp(k, g, out, a):
    return (k.neg(_asec_vjp(k, g, out, a)[0]),)


def _coth_vjp(k, g, out, a):
    # -1/sinh^2: 1 - coth^2 cancels to 0 where coth rounds to 1 (|x| > 19).
    s = k.sinh(a)
    return (k.neg(k.div(k.div(g, s), s)),)


def _acoth_vjp(k, g, out, a):
    # 1/(1 - x^2) = -1/((|x| - 1)(|x| + 1)): no cancellation near |x| = 1,
    # and -inf at both poles, the limit from the domain |x| > 1.
    magnitude = k.abs(a)
    return (k.neg(k.div(k.div(g, k.sub(magnitude, 1.0)), k.add(magnitude, 1.0))),)


def _asech_vjp(k, g, out, a):
    return (k.neg(k.div(k.div(g, a), k.sqrt(k.mul(k.sub(1.0, a), k.add(1.0, a))))),)


def _acsch_vjp(k, g, out, a):
    return (k.neg(k.div(k.div(g, k.abs(a)), k.hypot(a, 1.0))),)


def _sinc_vjp(k, g, out, a):
    # torch's sinc_backward: (g (pi x cos(pi x) - sin(pi x))) / (pi x^2), and
    # an exact 0 where pi x^2 is 0, whatever g is.
    x_pi = k.mul(a, math.pi)
    x_squared_pi = k.mul(k.mul(a, a), math.pi)
    slope = k.div(k.mul(g, k.sub(k.mul(x_pi, k.cos(x_pi)), k.sin(x_pi))), x_squared_pi)
    return (k.where(k.eq(x_squared_pi, 0.0), 0.0, slope),)


def _softplus_vjp(k, g, out, a):
    # torch's softplus_backward, beta = 1, threshold = 20: g past the
    # threshold, else g z/(z + 1) with z = e^x. Differentiated again, it is
    # torch's too, not the quotient's (which cancels near 20 and meets
    # inf/inf past it): a `custom` node carries softplus_backward's own
    # derivatives from derivatives.yaml, z/(z + 1) (1 past 20) for g and
    # softplus_double_backward's g s (1 - s) masked to x < 20 for x.
    z = k.exp(a)
    past = k.lt(20.0, a)
    slope = k.where(past, g, k.div(k.mul(g, z), k.add(z, 1.0)))
    s = k.sigmoid(a)
    d_g = k.where(past, 1.0, k.div(z, k.add(z, 1.0)))
    d_a = k.mul(k.mul(k.mul(g, k.sub(1.0, s)), s), k.lt(a, 20.0))
    return (k.custom(slope, d_g, d_a, g, a),)


TWO_OVER_SQRT_PI = 1.1283791670955126   # M_2_SQRTPI
GELU_BETA = TWO_OVER_SQRT_PI * ieee.SQRT1_2 * 0.5   # the normal density's 1/sqrt(2 pi), as torch


def _erf_slope(k, a):
    return k.mul(TWO_OVER_SQRT_PI, k.exp(k.neg(k.mul(a, a))))


def _gelu_vjp(k, g, out, a):
    # torch's GeluBackward kernel: g (cdf + x pdf). Differentiated again it is
    # torch's gelu_double_backward, through a custom node as softplus's:
    # g (2 pdf - x^2 pdf), whose x^2 pdf is inf*0 = nan past |x| ~ 1.3e154.
    cdf = k.mul(0.5, k.add(1.0, k.erf(k.mul(a, ieee.SQRT1_2))))
    square = k.mul(a, a)
    pdf = k.mul(GELU_BETA, k.exp(k.mul(square, -0.5)))
    slope = k.add(cdf, k.mul(a, pdf))
    d_a = k.mul(g, k.sub(k.mul(2.0, pdf), k.mul(square, pdf)))
    return (k.custom(k.mul(g, slope), slope, d_a, g, a),)


def _silu_vjp(k, g, out, a):
    # torch's kernel: g s (1 + x (1 - s)), s = 1/(1 + e^-x).
    s = k.sigmoid(a)
    return (k.mul(k.mul(g, s), k.add(1.0, k.mul(a, k.sub(1.0, s)))),)


def _hypot_vjp(k, g, out, a, b):
    # torch: g x / hypot and g y / hypot, so nan at the origin as there.
    return (k.div(k.mul(g, a), out), k.div(k.mul(g, b), out))


def _clamp_vjp(k, g, out, x, low, high):
    # torch's clamp_backward_min_max: x gets g from low to high inclusive,
    # `low` where x < low < high, `high` where x > high or high < low; a nan
    # anywhere gives every argument 0.
    inside = k.mul(k.ge(x, low), k.ge(high, x))
    below = k.mul(k.lt(x, low), k.lt(low, high))
    return (k.where(inside, g, 0.0), k.where(below, g, 0.0),
            k.where(k.lt(high, x), g, k.where(k.lt(high, low), g, 0.0)))


# PyTorch's forward-mode formulas where they are not its backward formulas
# with the tangent for the gradient (derivatives.yaml, `result:`): at a tie,
# with a nan, at atan2's origin. A row's `jvp(k, tangents, out, *args)` gets
# one tangent per argument (None for one that has none); every other op's
# tangent comes from its vjp (derive/forward.py).

def _zeros(t):
    return [0.0 if v is None else v for v in t]


def _max_jvp(k, t, out, a, b):
    ta, tb = _zeros(t)
    return k.add(tb, k.mul(k.where(k.eq(a, b), 0.5, k.gt(a, b)), k.sub(ta, tb)))


def _min_jvp(k, t, out, a, b):
    ta, tb = _zeros(t)
    return k.add(tb, k.mul(k.where(k.eq(a, b), 0.5, k.lt(a, b)), k.sub(ta, tb)))


def _atan2_jvp(k, t, out, y, x):
    # (x*ty - y*tx) / (y^2 + x^2), with an argument that has no tangent
    # leaving its term out (so an inf beside it is not multiplied by 0).
    ty, tx = t
    denominator = k.add(k.mul(y, y), k.mul(x, x))
    if tx is None:
        return k.div(k.mul(x, ty), denominator)
    if ty is None:
        return k.div(k.neg(k.mul(y, tx)), denominator)
    return k.div(k.sub(k.mul(x, ty), k.mul(y, tx)), denominator)


def _clamp_jvp(k, t, out, x, low, high):
    # torch's clamp_jvp: high's tangent where low > high, else low's below
    # low, high's above high, x's otherwise (a nan compares false: x's).
    tx, tlow, thigh = _zeros(t)
    return k.where(k.gt(low, high), thigh,
                   k.where(k.lt(x, low), tlow, k.where(k.gt(x, high), thigh, tx)))


def _row(name, arity, forward, array, vjp, symbol=None, jvp=None, kind=FUNCTION, text=None,
         numpy=None, c=None, js=None, latex=None, blocks=None, shape=None, array_vjp=None):
    if blocks is None and kind == STEP:
        blocks = f'{name} is a step: its derivative is 0'
    return Primitive(name, arity, forward, array, vjp, symbol, jvp, kind, text, numpy, c, js,
                     latex, blocks, shape, array_vjp)


def _infix(name, arity, forward, array, vjp, text, js, kind=ARITHMETIC, **forms):
    symbol = text[0].replace('$0', '').replace('$1', '').strip()
    return _row(name, arity, forward, array, vjp, symbol=symbol, kind=kind, text=text, js=js,
                **forms)


def _comparison(name, forward, array, text, js, latex):
    return _infix(name, 2, forward, array, _no_gradient, ('$0 ' + text + ' $1', COMPARE, 1, 1),
                  js, kind=COMPARISON, latex=('$0 ' + latex + ' $1', COMPARE, 1, 1),
                  blocks='a comparison has no gradient')


# (operator.add and friends rather than lambdas: derivative rules call them
# through the algebra too, and a C function is half the cost of a call.)
OPERATORS = [
    _infix('add', 2, operator.add, 'add', lambda k, g, out, a, b: (g, g), ('$0 + $1', 1, 1, 2),
           'a + b'),
    _infix('sub', 2, operator.sub, 'subtract', lambda k, g, out, a, b: (g, k.neg(g)),
           ('$0 - $1', 1, 1, 2), 'a - b'),
    _infix('mul', 2, operator.mul, 'multiply', lambda k, g, out, a, b: (k.mul(g, b), k.mul(g, a)),
           ('$0*$1', 2, 2, 3), 'a * b', latex=('$0 $1', 2, 2, 3)),
    _infix('div', 2, ieee.div, 'divide',
           lambda k, g, out, a, b: (k.div(g, b), k.neg(k.mul(g, k.div(k.div(a, b), b)))),
           ('$0/$1', 2, 2, 3), 'a / b', latex=(r'\frac{$0}{$1}', ATOM, 0, 0)),
    _infix('neg', 1, operator.neg, 'negative', lambda k, g, out, a: (k.neg(g),), ('-$0', 3, 3),
           '-a'),
    _infix('pos', 1, lambda a: a, 'positive', lambda k, g, out, a: (g,), ('+$0', 3, 3), 'a'),
]

# The functions a program may call by name; `pow` is also the operator ^.
CALLABLE = [
    # ---- one argument ----
    _row('sin', 1, ieee.sin, 'sin', lambda k, g, out, a: (k.mul(g, k.cos(a)),),
         c='sin', js='Math.sin(a)', latex='\\sin'),
    _row('cos', 1, ieee.cos, 'cos', lambda k, g, out, a: (k.mul(g, k.neg(k.sin(a))),),
         c='cos', js='Math.cos(a)', latex='\\cos'),
    _row('tan', 1, ieee.tan, 'tan', lambda k, g, out, a: (k.mul(g, k.add(1.0, k.mul(out, out))),),
         c='tan', js='Math.tan(a)', latex='\\tan'),
    _row('asin', 1, ieee.asin, 'arcsin',
         lambda k, g, out, a: (k.div(g, k.sqrt(k.sub(1.0, k.mul(a, a)))),),
         c='asin', js='Math.asin(a)', latex='\\arcsin'),
    _row('acos', 1, ieee.acos, 'arccos',
         lambda k, g, out, a: (k.neg(k.div(g, k.sqrt(k.sub(1.0, k.mul(a, a))))),),
         c='acos', js='Math.acos(a)', latex='\\arccos'),
    _row('atan', 1, math.atan, 'arctan', lambda k, g, out, a: (k.div(g, k.add(k.mul(a, a), 1.0)),),
         c='atan', js='Math.atan(a)', latex='\\arctan'),
    _row('sinh', 1, ieee.sinh, 'sinh', lambda k, g, out, a: (k.mul(g, k.cosh(a)),),
         c='sinh', js='Math.sinh(a)', latex='\\sinh'),
    _row('cosh', 1, ieee.cosh, 'cosh', lambda k, g, out, a: (k.mul(g, k.sinh(a)),),
         c='cosh', js='Math.cosh(a)', latex='\\cosh'),
    _row('tanh', 1, math.tanh, 'tanh', _tanh_vjp, c='tanh', js='Math.tanh(a)', latex='\\tanh',
         array_vjp='tanh_vjp'),
    _row('exp', 1, ieee.exp, 'exp', lambda k, g, out, a: (k.mul(g, out),),
         c='exp', js='Math.exp(a)', latex=('e^{$0}', 4, 0)),
    _row('log', 1, ieee.log, 'log', lambda k, g, out, a: (k.div(g, a),),
         c='log', js='Math.log(a)', latex='\\log'),
    _row('log2', 1, ieee.log2, 'log2', lambda k, g, out, a: (k.div(g, k.mul(a, LN2)),),
         c='log2', js='Math.log2(a)', latex=(r'\log_{2}\left($0\right)', ATOM, 0)),
    _row('log10', 1, ieee.log10, 'log10', lambda k, g, out, a: (k.div(g, k.mul(a, LN10)),),
         c='log10', js='Math.log10(a)', latex=(r'\log_{10}\left($0\right)', ATOM, 0)),
    _row('sqrt', 1, ieee.sqrt, 'sqrt', lambda k, g, out, a: (k.div(g, k.mul(2.0, out)),),
         c='sqrt', js='Math.sqrt(a)', latex=(r'\sqrt{$0}', ATOM, 0)),
    _row('abs', 1, abs, 'abs', lambda k, g, out, a: (k.mul(g, k.sign(a)),),
         c='fabs', js='Math.abs(a)', latex=(r'\left|$0\right|', ATOM, 0),
         blocks='abs has gradient 0 at 0'),
    _row('sigmoid', 1, ieee.sigmoid, 'sigmoid',
         lambda k, g, out, a: (k.mul(k.mul(g, k.sub(1.0, out)), out),),
         c='static double ad_sigmoid(double a) { return 1.0 / (1.0 + exp(-a)); }',
         js='1 / (1 + Math.exp(-a))', latex=(r'\sigma\left($0\right)', ATOM, 0)),
    _row('relu', 1, ieee.relu, 'relu', lambda k, g, out, a: (k.where(k.ge(0.0, out), 0.0, g),),
         c='static double ad_relu(double a) { return a < 0 ? 0.0 : a; }', js='(a < 0 ? 0 : a)',
         blocks='relu passes no gradient where its input is below 0'),
    _row('cot', 1, ieee.cot, 'cot',
         lambda k, g, out, a: (k.neg(k.mul(g, k.add(1.0, k.mul(out, out)))),),
         c='static double ad_cot(double a) { return 1.0 / tan(a); }', js='1 / Math.tan(a)',
         latex='\\cot'),
    _row('sec', 1, ieee.sec, 'sec', lambda k, g, out, a: (k.mul(g, k.mul(out, k.tan(a))),),
         c='static double ad_sec(double a) { return 1.0 / cos(a); }', js='1 / Math.cos(a)',
         latex='\\sec'),
    _row('csc', 1, ieee.csc, 'csc', lambda k, g, out, a: (k.neg(k.mul(g, k.div(out, k.tan(a)))),),
         c='static double ad_csc(double a) { return 1.0 / sin(a); }', js='1 / Math.sin(a)',
         latex='\\csc'),
    _row('acot', 1, ieee.acot, 'acot', _acot_vjp,
         c='static double ad_acot(double a) { return atan(1.0 / a); }', js='Math.atan(1 / a)'),
    _row('asec', 1, ieee.asec, 'asec', _asec_vjp,
         c='static double ad_asec(double a) { double m = fabs(a); '
           'return atan2(sqrt(m - 1.0) * sqrt(m + 1.0), a > 0 ? 1.0 : (a < 0 ? -1.0 : 0.0)); }',
         js='function ad_asec(a) { var m = Math.abs(a); '
            'return Math.atan2(Math.sqrt(m - 1) * Math.sqrt(m + 1), sign(a)); }'),
    _row('acsc', 1, ieee.acsc, 'acsc', _acsc_vjp,
         c='static double ad_acsc(double a) { double m = fabs(a); '
           'return atan2(a > 0 ? 1.0 : (a < 0 ? -1.0 : 0.0), sqrt(m - 1.0) * sqrt(m + 1.0)); }',
         js='function ad_acsc(a) { var m = Math.abs(a); '
            'return Math.atan2(sign(a), Math.sqrt(m - 1) * Math.sqrt(m + 1)); }'),
    _row('coth', 1, ieee.coth, 'coth', _coth_vjp,
         c='static double ad_coth(double a) { return 1.0 / tanh(a); }', js='1 / Math.tanh(a)',
         latex='\\coth'),
    _row('sech', 1, ieee.sech, 'sech',
         lambda k, g, out, a: (k.neg(k.mul(g, k.mul(out, k.tanh(a)))),),
         c='static double ad_sech(double a) '
           '{ double c = cosh(a); return c == HUGE_VAL ? 2.0 * exp(-fabs(a)) : 1.0 / c; }',
         js='function ad_sech(a) '
            '{ var c = Math.cosh(a); return c === Infinity ? 2 * Math.exp(-Math.abs(a)) : 1 / c; }'),
    _row('csch', 1, ieee.csch, 'csch',
         lambda k, g, out, a: (k.neg(k.mul(g, k.div(out, k.tanh(a)))),),
         c='static double ad_csch(double a) { double s = sinh(a); '
           'return fabs(s) == HUGE_VAL ? copysign(2.0 * exp(-fabs(a)), a) : 1.0 / s; }',
         js='function ad_csch(a) { var s = Math.sinh(a); '
            'return Math.abs(s) === Infinity ? copysign(2 * Math.exp(-Math.abs(a)), a) : 1 / s; }'),
    # asinh, acosh, atanh: torch's formulas, whose x^2 cancels within ~1e-8
    # of acosh's and atanh's domain edges and overflows past |x| ~ 1.3e154
    # (docs/numerics.md says so); acoth, asech, acsch have none.
    _row('asinh', 1, ieee.asinh, 'arcsinh',
         lambda k, g, out, a: (k.mul(g, k.div(1.0, k.sqrt(k.add(k.mul(a, a), 1.0)))),),
         c='asinh', js='Math.asinh(a)'),
    _row('acosh', 1, ieee.acosh, 'arccosh',
         lambda k, g, out, a: (k.mul(g, k.div(1.0, k.sqrt(k.sub(k.mul(a, a), 1.0)))),),
         c='acosh', js='Math.acosh(a)'),
    _row('atanh', 1, ieee.atanh, 'arctanh',
         lambda k, g, out, a: (k.div(g, k.sub(1.0, k.mul(a, a))),), c='atanh', js='Math.atanh(a)'),
    _row('acoth', 1, ieee.acoth, 'acoth', _acoth_vjp,
         c='static double ad_acoth(double a) '
           '{ return copysign(0.5 * log1p(2.0 / (fabs(a) - 1.0)), a); }',
         js='function ad_acoth(a) '
            '{ return copysign(0.5 * Math.log1p(2 / (Math.abs(a) - 1)), a); }'),
    # Below ieee.TINY = 2^-30, 1/x may overflow where asech and acsch are finite.
    _row('asech', 1, ieee.asech, 'asech', _asech_vjp,
         c='static double ad_asech(double a) { double r = sqrt((1.0 - a) * (1.0 + a)); '
           'return fabs(a) < 0x1p-30 ? 0.6931471805599453 - log(a) '
           ': log1p(((1.0 - a) + r) / a); }',
         js='function ad_asech(a) { var r = Math.sqrt((1 - a) * (1 + a)); '
            'return Math.abs(a) < 9.313225746154785e-10 ? 0.6931471805599453 - Math.log(a) '
            ': Math.log1p(((1 - a) + r) / a); }'),
    _row('acsch', 1, ieee.acsch, 'acsch', _acsch_vjp,
         c='static double ad_acsch(double a) { return fabs(a) < 0x1p-30 ? '
           'copysign(0.6931471805599453 - log(fabs(a)), a) : asinh(1.0 / a); }',
         js='function ad_acsch(a) { return Math.abs(a) < 9.313225746154785e-10 ? '
            'copysign(0.6931471805599453 - Math.log(Math.abs(a)), a) : Math.asinh(1 / a); }'),
    _row('sinc', 1, ieee.sinc, 'sinc', _sinc_vjp,
         c='static double ad_sinc(double a) '
           '{ double p = 3.141592653589793 * a; return a == 0 ? 1.0 : sin(p) / p; }',
         js='sinc(a)'),
    _row('sign', 1, ieee.sign, 'sign', _zero_gradient, kind=STEP,
         c='static double ad_sign(double a) { return a > 0 ? 1.0 : (a < 0 ? -1.0 : 0.0); }',
         js='sign(a)', latex=(r'\operatorname{sgn}\left($0\right)', ATOM, 0)),
    _row('cbrt', 1, ieee.cbrt, 'cbrt',
         lambda k, g, out, a: (k.div(g, k.mul(3.0, k.mul(out, out))),),
         c='cbrt', js='Math.cbrt(a)', latex=(r'\sqrt[3]{$0}', ATOM, 0)),
    _row('log1p', 1, ieee.log1p, 'log1p', lambda k, g, out, a: (k.div(g, k.add(a, 1.0)),),
         c='log1p', js='Math.log1p(a)'),
    _row('expm1', 1, ieee.expm1, 'expm1', lambda k, g, out, a: (k.mul(g, k.add(out, 1.0)),),
         c='expm1', js='Math.expm1(a)'),
    _row('exp2', 1, ieee.exp2, 'exp2', lambda k, g, out, a: (k.mul(k.mul(g, out), LN2),),
         c='exp2', js='pow(2, a)'),
    _row('softplus', 1, ieee.softplus, 'softplus', _softplus_vjp,
         c='static double ad_softplus(double a) { return a > 20.0 ? a : log1p(exp(a)); }',
         js='(a > 20 ? a : Math.log1p(Math.exp(a)))'),
    # JavaScript's Math has no erf: the page refuses a program that needs one.
    _row('erf', 1, ieee.erf, 'erf', lambda k, g, out, a: (k.mul(_erf_slope(k, a), g),),
         c='erf', js=NO_FORM),
    _row('erfc', 1, ieee.erfc, 'erfc', lambda k, g, out, a: (k.mul(k.neg(_erf_slope(k, a)), g),),
         c='erfc', js=NO_FORM),
    _row('gelu', 1, ieee.gelu, 'gelu', _gelu_vjp,
         c='static double ad_gelu(double a) '
           '{ return a * 0.5 * (1.0 + erf(a * 0.7071067811865476)); }', js=NO_FORM),
    _row('silu', 1, ieee.silu, 'silu', _silu_vjp,
         c='static double ad_silu(double a) { return a / (1.0 + exp(-a)); }',
         js='a / (1 + Math.exp(-a))'),
    _row('floor', 1, ieee.floor, 'floor', _zero_gradient, kind=STEP, c='floor',
         js='integral(Math.floor(a), a)', latex=(r'\left\lfloor $0 \right\rfloor', ATOM, 0)),
    _row('ceil', 1, ieee.ceil, 'ceil', _zero_gradient, kind=STEP, c='ceil',
         js='integral(Math.ceil(a), a)', latex=(r'\left\lceil $0 \right\rceil', ATOM, 0)),
    _row('round', 1, ieee.round_half_even, 'rint', _zero_gradient, kind=STEP,
         c='static double ad_round(double a) { return nearbyint(a); }',
         js='integral(roundEven(a), a)'),
    # ---- two arguments ----
    _infix('pow', 2, ieee.power, 'power', _pow_vjp, ('$0^$1', 4, ATOM, 3), 'pow(a, b)',
           numpy=('$0**$1', 4, ATOM, 3), c=('pow($0, $1)', ATOM, 0, 0),
           latex=('{$0}^{$1}', 4, ATOM, 0)),
    _row('min', 2, ieee.minimum, 'minimum', _min_vjp, jvp=_min_jvp,
         c='static double ad_min(double a, double b) '
           '{ return a != a || b != b ? NAN : (a <= b ? a : b); }',
         js='minimum(a, b)', latex=(r'\min\left($0, $1\right)', ATOM, 0, 0),
         blocks='min passes the gradient only to the smaller argument'),
    _row('max', 2, ieee.maximum, 'maximum', _max_vjp, jvp=_max_jvp,
         c='static double ad_max(double a, double b) '
           '{ return a != a || b != b ? NAN : (a >= b ? a : b); }',
         js='maximum(a, b)', latex=(r'\max\left($0, $1\right)', ATOM, 0, 0),
         blocks='max passes the gradient only to the larger argument'),
    _row('atan2', 2, math.atan2, 'arctan2', _atan2_vjp, jvp=_atan2_jvp,
         c='atan2', js='Math.atan2(a, b)'),
    _row('hypot', 2, ieee.hypot, 'hypot', _hypot_vjp, c='hypot', js='Math.hypot(a, b)'),
    # ---- three arguments ----
    _row('clamp', 3, ieee.clamp, 'clamp', _clamp_vjp, jvp=_clamp_jvp,
         c='static double ad_clamp(double x, double lo, double hi) '
           '{ double m = x != x || lo != lo ? NAN : (x >= lo ? x : lo); '
           'return m != m || hi != hi ? NAN : (m <= hi ? m : hi); }',
         js='minimum(maximum(a, b), c)',
         blocks='clamp passes no gradient where its input is outside the bounds'),
]

# (text, precedence, slots) of a choice between two values, in each language;
# JavaScript's, as Python's truth: nan is true, -0.0 false.
_CHOICE = dict(kind=SELECT, text=('if($0, $1, $2)', ATOM, 0, 0, 0),
               numpy=('np.where($0, $1, $2)', ATOM, 0, 0, 0), c=('($0 ? $1 : $2)', ATOM, 0, 0, 0),
               js='(a !== 0 ? b : c)',
               latex=(r'\begin{cases} $1 & \text{if } $0 \\ $2 & \text{otherwise} \end{cases}',
                      ATOM, 0, 0, 0))

def _loop_only(*args):
    from ..errors import AdgradError
    raise AdgradError('this does not take loops yet: write the loop out, or use eval or grad')


# Used by derivative rules, never called by name from a program.
INTERNAL = [
    _row('where', 3, ieee.where, 'where',
         lambda k, g, out, c, a, b: (None, k.where(c, g, 0.0), k.where(c, 0.0, g)), **_CHOICE,
         blocks='where passes no gradient to the branch not taken'),
    # The gradients the two branches of an `if` receive, as a pair: (g, None)
    # or (None, g) at a point, row by row over arrays. Never a node of a graph;
    # a row here so that every algebra has it, as it has the primitives.
    _row('branches', 2, lambda c, g: (g, None) if c else (None, g), 'branches', _no_gradient,
         kind=INTERNAL_KIND, text=NO_FORM, numpy=NO_FORM, c=NO_FORM, js=NO_FORM, latex=NO_FORM),
    # A `for` loop and the value of one of its names after it (loops.py):
    # nodes of a graph, which forward and backward run through their loop
    # hooks, never through these rows' functions (no arity: nothing probes them).
    _row('loop', -1, _loop_only, 'loop', _loop_only, kind=INTERNAL_KIND, text=NO_FORM,
         numpy=NO_FORM, c=NO_FORM, js=NO_FORM, latex=NO_FORM, shape=_loop_only),
    _row('part', -1, _loop_only, 'part', _no_gradient, kind=INTERNAL_KIND, text=NO_FORM,
         numpy=NO_FORM, c=NO_FORM, js=NO_FORM, latex=NO_FORM, shape=_loop_only),
]


def _custom_vjp(k, g, out, value, *rest):
    """A block with a declared derivative: custom(value, ∂1, …, ∂n, arg1, …, argn).
    The body's nodes get no gradient; each argument gets g times its partial."""
    n = len(rest) // 2
    return (None,) * (n + 1) + tuple(k.mul(g, partial) for partial in rest[:n])


# The language's logic. Comparisons are 1.0 or 0.0 and pass no gradient (None:
# not a zero that could meet an inf). `if` sends g to the branch it took:
# the algebra's `branches` says which (a float condition picks one; over
# arrays each row does, and backward masks the rest).
LOGIC = [
    _comparison('lt', ieee.lt, 'lt', '<', '(a < b ? 1 : 0)', '<'),
    _comparison('le', lambda a, b: 1.0 if a <= b else 0.0, 'le', '<=', '(a <= b ? 1 : 0)',
                r'\leq'),
    _comparison('gt', lambda a, b: 1.0 if a > b else 0.0, 'gt', '>', '(a > b ? 1 : 0)', '>'),
    _comparison('ge', ieee.ge, 'ge', '>=', '(a >= b ? 1 : 0)', r'\geq'),
    _comparison('eq', ieee.eq, 'eq', '==', '(a === b ? 1 : 0)', '='),
    _comparison('ne', lambda a, b: 0.0 if a == b else 1.0, 'ne', '!=', '(a === b ? 0 : 1)',
                r'\neq'),
    # C's -Wparentheses asks for `(a && b) || c`, and -Werror makes it an
    # error: its || parenthesizes both sides.
    _infix('and', 2, lambda a, b: 1.0 if a and b else 0.0, 'logical_and', _no_gradient,
           ('$0 and $1', AND, AND, NOT), '(a !== 0 && b !== 0 ? 1 : 0)', kind=LOGICAL,
           c=('$0 && $1', AND, AND, NOT), latex=(r'$0 \land $1', AND, AND, NOT),
           blocks='a logical operator has no gradient'),
    _infix('or', 2, lambda a, b: 1.0 if a or b else 0.0, 'logical_or', _no_gradient,
           ('$0 or $1', OR, OR, AND), '(a !== 0 || b !== 0 ? 1 : 0)', kind=LOGICAL,
           c=('$0 || $1', OR, NOT, NOT), latex=(r'$0 \lor $1', OR, OR, AND),
           blocks='a logical operator has no gradient'),
    _infix('not', 1, lambda a: 0.0 if a else 1.0, 'logical_not', _no_gradient,
           ('not $0', NOT, NOT), '(a !== 0 ? 0 : 1)', kind=LOGICAL, c=('!$0', 3, 3),
           latex=(r'\lnot $0', NOT, NOT), blocks='a logical operator has no gradient'),
    _row('if', 3, lambda c, a, b: a if c else b, 'select',
         lambda k, g, out, c, a, b: (None, *k.branches(c, g)), **_CHOICE),
    _row('stop_gradient', 1, lambda a: a, 'positive', lambda k, g, out, a: (None,), kind=STOP,
         c=('$0', ATOM, ATOM), js='a'),
    _row('custom', -1, lambda value, *rest: value, 'first', _custom_vjp, kind=CUSTOM,
         text=NO_FORM, numpy=NO_FORM, c=NO_FORM, js='a', latex=NO_FORM,
         shape=lambda value, *rest: value),   # the value's, not all the partials' broadcast
]

# ---- arrays: rules in array_rules.py, forms in arrays.py (NumPy, loaded only
# for an array program). `shape` gives the result's shape from the arguments'
# shapes, or raises ShapeError; a static argument (an axis, an index) is a
# constant of the program, passed as its value. ----

def _tensor(name, arity, vjp, shape, jvp, array=None, kind=TENSOR, **forms):
    # numpy, latex: templates for a formula's text (derive/array_printers.py),
    # NumPy's else the array form's; C has none, its loops are written per op.
    forms = {'numpy': None, 'c': NO_FORM, 'js': NO_FORM, 'latex': NO_FORM, **forms}
    return _row(name, arity, None, array or name, vjp, jvp=jvp, kind=kind, shape=shape, **forms)


def _call_form(name, arity):
    return (name + '(' + ', '.join(f'${i}' for i in range(arity)) + ')', ATOM) + (0,) * arity


def _operator_form(name, arity):
    return (rf'\operatorname{{{name}}}\left(' + ', '.join(f'${i}' for i in range(arity))
            + r'\right)', ATOM) + (0,) * arity


_rules = array_rules
_grouped = _rules.grouped_jvp
ARRAYS = [
    _tensor('matmul', 2, _rules.matmul_vjp, _rules.matmul_shape, _rules.matmul_jvp, symbol='@',
            text=('$0 @ $1', 2, 2, 3), numpy=('$0 @ $1', 2, 2, 3), latex=('$0 $1', 2, 2, 3)),
    _tensor('transpose', 1, _rules.transpose_vjp, _rules.transpose_shape, _rules.transpose_jvp,
            text=('$0.T', ATOM, ATOM), numpy=('$0.T', ATOM, ATOM),
            latex=(r'{$0}^\top', ATOM, ATOM)),
    _tensor('outer', 2, _rules.outer_vjp, _rules.outer_shape, _rules.outer_jvp,
            numpy=_call_form('np.outer', 2), latex=(r'$0 {$1}^\top', 2, 2, ATOM)),
    _tensor('sum', 2, _rules.sum_vjp, _rules.reduce_shape, _grouped(_rules.sum_vjp),
            numpy=('np.sum($0, axis=$1)', ATOM, 0, 0), latex=_operator_form('sum', 2)),
    _tensor('mean', 2, _rules.mean_vjp, _rules.reduce_shape, _grouped(_rules.mean_vjp),
            numpy=('np.mean($0, axis=$1)', ATOM, 0, 0), latex=_operator_form('mean', 2)),
    _tensor('prod', 2, _rules.prod_vjp, _rules.reduce_shape, _grouped(_rules.prod_vjp),
            numpy=('np.prod($0, axis=$1)', ATOM, 0, 0), latex=_operator_form('prod', 2)),
    _tensor('amax', 2, _rules.extreme_vjp, _rules.reduce_shape, _grouped(_rules.extreme_vjp),
            text=_call_form('max', 2), numpy=('np.max($0, axis=$1)', ATOM, 0, 0),
            latex=(r'\max\left($0, $1\right)', ATOM, 0, 0)),
    _tensor('amin', 2, _rules.extreme_vjp, _rules.reduce_shape, _grouped(_rules.extreme_vjp),
            text=_call_form('min', 2), numpy=('np.min($0, axis=$1)', ATOM, 0, 0),
            latex=(r'\min\left($0, $1\right)', ATOM, 0, 0)),
    _tensor('norm', 2, _rules.norm_vjp, _rules.norm_shape, _rules.norm_jvp,
            latex=(r'\left\|$0\right\|_{$1}', ATOM, 0, 0)),
    _tensor('logsumexp', 2, _rules.logsumexp_vjp, _rules.reduce_shape,
            _grouped(_rules.logsumexp_vjp), latex=_operator_form('logsumexp', 2)),
    _tensor('softmax', 2, _rules.softmax_vjp, _rules.softmax_shape, _rules.softmax_jvp,
            latex=_operator_form('softmax', 2)),
    _tensor('trace', 1, _rules.trace_vjp, _rules.trace_shape, _rules.trace_jvp,
            numpy=_call_form('np.trace', 1), latex=_operator_form('tr', 1)),
    _tensor('det', 1, _rules.det_vjp, _rules.square_to_scalar, _rules.det_jvp,
            numpy=_call_form('np.linalg.det', 1), latex=(r'\det\left($0\right)', ATOM, 0)),
    _tensor('logdet', 1, _rules.logdet_vjp, _rules.square_to_scalar, _rules.logdet_jvp,
            latex=(r'\log\det\left($0\right)', ATOM, 0)),
    _tensor('inv', 1, _rules.inv_vjp, _rules.inv_shape, _rules.inv_jvp,
            numpy=_call_form('np.linalg.inv', 1), latex=(r'{$0}^{-1}', ATOM, ATOM)),
    _tensor('solve', 2, _rules.solve_vjp, _rules.solve_shape, _rules.solve_jvp,
            numpy=_call_form('np.linalg.solve', 2), latex=(r'{$0}^{-1} $1', 2, ATOM, 3)),
    _tensor('diag', 1, _rules.diag_vjp, _rules.diag_shape, _rules.diag_jvp,
            numpy=_call_form('np.diag', 1), latex=_operator_form('diag', 1)),
    _tensor('reshape', 2, _rules.reshape_vjp, _rules.reshape_shape, _rules.reshape_jvp,
            numpy=('np.reshape($0, $1)', ATOM, 0, 0), latex=('$0', ATOM, ATOM, 0)),
    _tensor('concat', -1, _rules.concat_vjp, _rules.concat_shape, _rules.concat_jvp),
    _tensor('stack', -1, _rules.stack_vjp, _rules.stack_shape, _rules.stack_jvp,
            text=NO_FORM),   # written as a literal, [a, b]
    _tensor('index', 2, _rules.index_vjp, _rules.index_shape, _rules.index_jvp, text=NO_FORM),
]

# The adjoints the array rules are written with, so that a recorded gradient
# can be differentiated again (the Hessian); the language has no name for them.
ADJOINTS = [
    _tensor('broadcast_to', 2, _rules.broadcast_to_vjp, _rules.broadcast_to_shape,
            _rules.broadcast_to_jvp, text=NO_FORM,
            numpy=('np.broadcast_to($0, $1)', ATOM, 0, 0), latex=('$0', ATOM, ATOM, 0)),
    _tensor('sum_to', 2, _rules.sum_to_vjp, _rules.sum_to_shape, _rules.sum_to_jvp,
            text=NO_FORM),
    _tensor('unindex', 3, _rules.unindex_vjp, _rules.unindex_shape, _rules.unindex_jvp,
            text=NO_FORM),
    _tensor('others_product', 2, _rules.others_product_vjp, _rules.same_shape,
            _rules.others_product_jvp, text=NO_FORM),
    _tensor('minor_det', 1, _rules.minor_det_vjp, _rules.square_to_scalar,
            _rules.minor_det_jvp, array='det', text=NO_FORM),
]

# Constants of a derivative formula over symbolic shapes (derive/array_formula.py),
# and of a program that reads a declared size as a number (`x / n`, `eye(n)`):
# the identity matrix of a size, and a size as a number.
FORMULA_CONSTANTS = [
    _tensor('eye', 1, _no_gradient, lambda n: (n, n), None, kind=INTERNAL_KIND,
            text=('eye($0)', ATOM, 0), numpy=('np.eye($0)', ATOM, 0), latex=('I', ATOM, 0)),
    _tensor('size', 1, _no_gradient, lambda sizes: (), None, kind=INTERNAL_KIND,
            text=('$0', 2, 0), numpy=('$0', 2, 0), latex=('$0', 2, 0)),
]

PRIMITIVES = {row.name: row for row in OPERATORS + CALLABLE + INTERNAL + LOGIC + ARRAYS + ADJOINTS
              + FORMULA_CONSTANTS}

# The functions a program may call, by name.
FUNCTIONS = {row.name: row for row in CALLABLE + LOGIC[-2:-1]}

CONSTANTS = {'pi': 3.141592653589793, 'e': 2.718281828459045}


def names_of(*kinds):
    """The ops of the given kinds, in table order."""
    return tuple(name for name, row in PRIMITIVES.items() if row.kind in kinds)


# The numeric algebra: derivative rules evaluated to floats.
# A single point takes one branch of each `if`, so no gate is needed (branches.py).
NUMBERS = SimpleNamespace(coerce=float, takes_branches=True, meeting=None, deferred=None,
                          **{name: row.forward for name, row in PRIMITIVES.items()})
