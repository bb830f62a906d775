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
from typing import Callable, NamedTuple

from . import ieee

LN2 = 0.6931471805599453
LN10 = 2.3025850929940456


class Primitive(NamedTuple):
    name: str
    arity: int
    forward: Callable           # on floats
    array: str                  # its form on arrays, for batches: the function of that name
                                # in arrays.py where NumPy's differs from `forward`, else NumPy's
    vjp: Callable
    symbol: str | None = None   # infix or prefix operator, e.g. '*'; None for calls


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


def _row(name, arity, forward, array, vjp, symbol=None):
    return Primitive(name=name, arity=arity, forward=forward, array=array, vjp=vjp, symbol=symbol)


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
    # ---- two arguments ----
    _row('pow', 2, ieee.power, 'power', _pow_vjp, symbol='^'),
    _row('min', 2, ieee.minimum, 'minimum', _min_vjp),
    _row('max', 2, ieee.maximum, 'maximum', _max_vjp),
    _row('atan2', 2, math.atan2, 'arctan2', _atan2_vjp),
]

# Used by derivative rules, never called by name from a program.
INTERNAL = [
    _row('sign', 1, ieee.sign, 'sign', _no_gradient),
    _row('where', 3, ieee.where, 'where',
         lambda k, g, out, c, a, b: (None, k.where(c, g, 0.0), k.where(c, 0.0, g))),
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
NUMBERS = SimpleNamespace(coerce=float, branches=lambda c, g: (g, None) if c else (None, g),
                          **{name: row.forward for name, row in PRIMITIVES.items()})
