"""The table of primitives: each op declared once, with its derivative.

A row gives the op's name, arity, forward function (float64, IEEE results,
see ieee.py), its vector-Jacobian product, how it is written, and the name
of its form over arrays (NumPy's, or arrays.py's where NumPy differs).

A VJP rule is `rule(k, g, out, *args) -> one cotangent per argument`: `g` is
the gradient arriving at the op's output, `out` its forward value and `args`
its inputs. A cotangent of None means "no gradient" (a comparison's, the
condition of a `where`): it is never multiplied, so it cannot turn into nan
through 0 * inf, and the backward pass adds nothing for it. Rules compute only through the algebra `k`, whose methods are
the primitives themselves (`k.mul(g, b)`), so the same rule yields numbers
today (`NUMBERS`) and can yield graph nodes for higher-order derivatives by
passing an algebra that records instead of computes — the way JAX's and
tinygrad's rules are written over their own ops.

Edge points follow PyTorch's derivatives.yaml, formula for formula, so that
results agree with torch float64 autograd to the last few ulps: abs'(0) = 0,
relu'(0) = 0, sqrt'(0) = inf, min/max ties split 0.5/0.5, d/dx x^0 = 0,
d/dy 0^y = 0 for y >= 0.
"""

import math
import operator
from types import SimpleNamespace
from collections import namedtuple

from . import ieee

LN2 = ieee.LN2
LN10 = 2.3025850929940456


# name, arity (-1: any), forward (on floats), array (its form on arrays, for
# batches: the function of that name in arrays.py where NumPy's differs from
# `forward`, else NumPy's), vjp, symbol (infix or prefix operator, e.g. '*';
# None for calls). collections.namedtuple: typing costs start-up time.
Primitive = namedtuple('Primitive', 'name arity forward array vjp symbol jvp',
                       defaults=(None, None))


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
    zero_base = k.mul(k.eq(a, 0.0), k.ge(b, 0.0))
    # Where PyTorch masks matters: inside the product here, so a nan arriving
    # in g still reaches the exponent; outside it for the base.
    d_exponent = k.mul(g, k.where(zero_base, 0.0, k.mul(out, k.log(a))))
    return d_base, d_exponent


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


def _row(name, arity, forward, array, vjp, symbol=None, jvp=None):
    return Primitive(name=name, arity=arity, forward=forward, array=array, vjp=vjp, symbol=symbol,
                     jvp=jvp)


# (operator.add and friends rather than lambdas: derivative rules call them
# through the algebra too, and a C function is half the cost of a call.)
OPERATORS = [
    _row('add', 2, operator.add, 'add', lambda k, g, out, a, b: (g, g), symbol='+'),
    _row('sub', 2, operator.sub, 'subtract', lambda k, g, out, a, b: (g, k.neg(g)), symbol='-'),
    _row('mul', 2, operator.mul, 'multiply',
         lambda k, g, out, a, b: (k.mul(g, b), k.mul(g, a)), symbol='*'),
    _row('div', 2, ieee.div, 'divide',
         lambda k, g, out, a, b: (k.div(g, b), k.neg(k.mul(g, k.div(k.div(a, b), b)))), symbol='/'),
    _row('neg', 1, operator.neg, 'negative', lambda k, g, out, a: (k.neg(g),), symbol='-'),
    _row('pos', 1, lambda a: a, 'positive', lambda k, g, out, a: (g,), symbol='+'),
]

# The functions a program may call by name; `pow` is also the operator ^.
CALLABLE = [
    # ---- one argument ----
    _row('sin', 1, ieee.sin, 'sin', lambda k, g, out, a: (k.mul(g, k.cos(a)),)),
    _row('cos', 1, ieee.cos, 'cos', lambda k, g, out, a: (k.mul(g, k.neg(k.sin(a))),)),
    _row('tan', 1, ieee.tan, 'tan', lambda k, g, out, a: (k.mul(g, k.add(1.0, k.mul(out, out))),)),
    _row('asin', 1, ieee.asin, 'arcsin',
         lambda k, g, out, a: (k.div(g, k.sqrt(k.sub(1.0, k.mul(a, a)))),)),
    _row('acos', 1, ieee.acos, 'arccos',
         lambda k, g, out, a: (k.neg(k.div(g, k.sqrt(k.sub(1.0, k.mul(a, a))))),)),
    _row('atan', 1, math.atan, 'arctan', lambda k, g, out, a: (k.div(g, k.add(k.mul(a, a), 1.0)),)),
    _row('sinh', 1, ieee.sinh, 'sinh', lambda k, g, out, a: (k.mul(g, k.cosh(a)),)),
    _row('cosh', 1, ieee.cosh, 'cosh', lambda k, g, out, a: (k.mul(g, k.sinh(a)),)),
    _row('tanh', 1, math.tanh, 'tanh', _tanh_vjp),
    _row('exp', 1, ieee.exp, 'exp', lambda k, g, out, a: (k.mul(g, out),)),
    _row('log', 1, ieee.log, 'log', lambda k, g, out, a: (k.div(g, a),)),
    _row('log2', 1, ieee.log2, 'log2', lambda k, g, out, a: (k.div(g, k.mul(a, LN2)),)),
    _row('log10', 1, ieee.log10, 'log10', lambda k, g, out, a: (k.div(g, k.mul(a, LN10)),)),
    _row('sqrt', 1, ieee.sqrt, 'sqrt', lambda k, g, out, a: (k.div(g, k.mul(2.0, out)),)),
    _row('abs', 1, abs, 'abs', lambda k, g, out, a: (k.mul(g, k.sign(a)),)),
    _row('sigmoid', 1, ieee.sigmoid, 'sigmoid',
         lambda k, g, out, a: (k.mul(k.mul(g, k.sub(1.0, out)), out),)),
    _row('relu', 1, ieee.relu, 'relu', lambda k, g, out, a: (k.where(k.ge(0.0, out), 0.0, g),)),
    _row('cot', 1, ieee.cot, 'cot', lambda k, g, out, a: (k.neg(k.mul(g, k.add(1.0, k.mul(out, out)))),)),
    _row('sec', 1, ieee.sec, 'sec', lambda k, g, out, a: (k.mul(g, k.mul(out, k.tan(a))),)),
    _row('csc', 1, ieee.csc, 'csc', lambda k, g, out, a: (k.neg(k.mul(g, k.div(out, k.tan(a)))),)),
    _row('acot', 1, ieee.acot, 'acot', _acot_vjp),
    _row('asec', 1, ieee.asec, 'asec', _asec_vjp),
    _row('acsc', 1, ieee.acsc, 'acsc', _acsc_vjp),
    _row('coth', 1, ieee.coth, 'coth', _coth_vjp),
    _row('sech', 1, ieee.sech, 'sech', lambda k, g, out, a: (k.neg(k.mul(g, k.mul(out, k.tanh(a)))),)),
    _row('csch', 1, ieee.csch, 'csch', lambda k, g, out, a: (k.neg(k.mul(g, k.div(out, k.tanh(a)))),)),
    # asinh, acosh, atanh: torch's formulas, whose x^2 cancels within ~1e-8
    # of acosh's and atanh's domain edges and overflows past |x| ~ 1.3e154
    # (the README's Numerics table says so); acoth, asech, acsch have none.
    _row('asinh', 1, ieee.asinh, 'arcsinh',
         lambda k, g, out, a: (k.mul(g, k.div(1.0, k.sqrt(k.add(k.mul(a, a), 1.0)))),)),
    _row('acosh', 1, ieee.acosh, 'arccosh',
         lambda k, g, out, a: (k.mul(g, k.div(1.0, k.sqrt(k.sub(k.mul(a, a), 1.0)))),)),
    _row('atanh', 1, ieee.atanh, 'arctanh',
         lambda k, g, out, a: (k.div(g, k.sub(1.0, k.mul(a, a))),)),
    _row('acoth', 1, ieee.acoth, 'acoth', _acoth_vjp),
    _row('asech', 1, ieee.asech, 'asech', _asech_vjp),
    _row('acsch', 1, ieee.acsch, 'acsch', _acsch_vjp),
    _row('sinc', 1, ieee.sinc, 'sinc', _sinc_vjp),
    _row('sign', 1, ieee.sign, 'sign', _zero_gradient),
    _row('cbrt', 1, ieee.cbrt, 'cbrt', lambda k, g, out, a: (k.div(g, k.mul(3.0, k.mul(out, out))),)),
    _row('log1p', 1, ieee.log1p, 'log1p', lambda k, g, out, a: (k.div(g, k.add(a, 1.0)),)),
    _row('expm1', 1, ieee.expm1, 'expm1', lambda k, g, out, a: (k.mul(g, k.add(out, 1.0)),)),
    _row('exp2', 1, ieee.exp2, 'exp2', lambda k, g, out, a: (k.mul(k.mul(g, out), LN2),)),
    _row('softplus', 1, ieee.softplus, 'softplus', _softplus_vjp),
    _row('erf', 1, ieee.erf, 'erf', lambda k, g, out, a: (k.mul(_erf_slope(k, a), g),)),
    _row('erfc', 1, ieee.erfc, 'erfc', lambda k, g, out, a: (k.mul(k.neg(_erf_slope(k, a)), g),)),
    _row('gelu', 1, ieee.gelu, 'gelu', _gelu_vjp),
    _row('silu', 1, ieee.silu, 'silu', _silu_vjp),
    _row('floor', 1, ieee.floor, 'floor', _zero_gradient),
    _row('ceil', 1, ieee.ceil, 'ceil', _zero_gradient),
    _row('round', 1, ieee.round_half_even, 'rint', _zero_gradient),
    # ---- two arguments ----
    _row('pow', 2, ieee.power, 'power', _pow_vjp, symbol='^'),
    _row('min', 2, ieee.minimum, 'minimum', _min_vjp, jvp=_min_jvp),
    _row('max', 2, ieee.maximum, 'maximum', _max_vjp, jvp=_max_jvp),
    _row('atan2', 2, math.atan2, 'arctan2', _atan2_vjp, jvp=_atan2_jvp),
    _row('hypot', 2, ieee.hypot, 'hypot', _hypot_vjp),
    # ---- three arguments ----
    _row('clamp', 3, ieee.clamp, 'clamp', _clamp_vjp, jvp=_clamp_jvp),
]

# Used by derivative rules, never called by name from a program.
INTERNAL = [
    _row('where', 3, ieee.where, 'where',
         lambda k, g, out, c, a, b: (None, k.where(c, g, 0.0), k.where(c, 0.0, g))),
    # The gradients the two branches of an `if` receive, as a pair: (g, None)
    # or (None, g) at a point, row by row over arrays. Never a node of a graph;
    # a row here so that every algebra has it, as it has the primitives.
    _row('branches', 2, lambda c, g: (g, None) if c else (None, g), 'branches', _no_gradient),
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
    _row('lt', 2, ieee.lt, 'lt', _no_gradient, symbol='<'),
    _row('le', 2, lambda a, b: 1.0 if a <= b else 0.0, 'le', _no_gradient, symbol='<='),
    _row('gt', 2, lambda a, b: 1.0 if a > b else 0.0, 'gt', _no_gradient, symbol='>'),
    _row('ge', 2, ieee.ge, 'ge', _no_gradient, symbol='>='),
    _row('eq', 2, ieee.eq, 'eq', _no_gradient, symbol='=='),
    _row('ne', 2, lambda a, b: 0.0 if a == b else 1.0, 'ne', _no_gradient, symbol='!='),
    _row('and', 2, lambda a, b: 1.0 if a and b else 0.0, 'logical_and', _no_gradient,
         symbol='and'),
    _row('or', 2, lambda a, b: 1.0 if a or b else 0.0, 'logical_or', _no_gradient, symbol='or'),
    _row('not', 1, lambda a: 0.0 if a else 1.0, 'logical_not', _no_gradient, symbol='not'),
    _row('if', 3, lambda c, a, b: a if c else b, 'select',
         lambda k, g, out, c, a, b: (None, *k.branches(c, g))),
    _row('stop_gradient', 1, lambda a: a, 'positive', lambda k, g, out, a: (None,)),
    _row('custom', -1, lambda value, *rest: value, 'first', _custom_vjp),
]

PRIMITIVES = {row.name: row for row in OPERATORS + CALLABLE + INTERNAL + LOGIC}

# The functions a program may call, by name.
FUNCTIONS = {row.name: row for row in CALLABLE + LOGIC[-2:-1]}

CONSTANTS = {'pi': 3.141592653589793, 'e': 2.718281828459045}

# The numeric algebra: derivative rules evaluated to floats.
# A single point takes one branch of each `if`, so no gate is needed (branches.py).
NUMBERS = SimpleNamespace(coerce=float, takes_branches=True, branch_gate=None,
                          **{name: row.forward for name, row in PRIMITIVES.items()})
