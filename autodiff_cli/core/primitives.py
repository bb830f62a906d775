"""The table of primitives: each op declared once, with its derivative.

A row gives the op's name, arity, forward function (float64, IEEE results,
see ieee.py), its vector-Jacobian product, how it is written, and the name
of its form over arrays (NumPy's, or arrays.py's where NumPy differs).

A VJP rule is `rule(k, g, out, *args) -> one cotangent per argument`: `g` is
the gradient arriving at the op's output, `out` its forward value and `args`
its inputs. Rules compute only through the algebra `k`, whose methods are
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
    callable: bool = False      # callable by name in the language, e.g. sin(x)


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
    # PyTorch masks the origin (and where y*y + x*x underflows) to a zero gradient.
    denominator = k.add(k.mul(y, y), k.mul(x, x))
    reciprocal = k.div(1.0, denominator)
    at_origin = k.eq(denominator, 0.0)
    return (k.mul(g, k.where(at_origin, 0.0, k.mul(x, reciprocal))),
            k.mul(g, k.where(at_origin, 0.0, k.mul(k.neg(y), reciprocal))))


def _zero(k, g, out, *args):
    return (0.0,) * len(args)


_ROWS = [
    # ---- operators ----
    # (operator.add and friends rather than lambdas: derivative rules call them
    # through the algebra too, and a C function is half the cost of a call.)
    Primitive('add', 2, operator.add, 'add', lambda k, g, out, a, b: (g, g), '+'),
    Primitive('sub', 2, operator.sub, 'subtract', lambda k, g, out, a, b: (g, k.neg(g)), '-'),
    Primitive('mul', 2, operator.mul, 'multiply',
              lambda k, g, out, a, b: (k.mul(g, b), k.mul(g, a)), '*'),
    Primitive('div', 2, ieee.div, 'divide',
              lambda k, g, out, a, b: (k.div(g, b), k.neg(k.mul(g, k.div(k.div(a, b), b)))), '/'),
    Primitive('neg', 1, operator.neg, 'negative', lambda k, g, out, a: (k.neg(g),), '-'),
    Primitive('pos', 1, lambda a: a, 'positive', lambda k, g, out, a: (g,), '+'),
    Primitive('pow', 2, ieee.power, 'power', _pow_vjp, '^', callable=True),

    # ---- one-argument functions ----
    Primitive('sin', 1, ieee.sin, 'sin', lambda k, g, out, a: (k.mul(g, k.cos(a)),), callable=True),
    Primitive('cos', 1, ieee.cos, 'cos',
              lambda k, g, out, a: (k.mul(g, k.neg(k.sin(a))),), callable=True),
    Primitive('tan', 1, ieee.tan, 'tan',
              lambda k, g, out, a: (k.mul(g, k.add(1.0, k.mul(out, out))),), callable=True),
    Primitive('asin', 1, ieee.asin, 'arcsin',
              lambda k, g, out, a: (k.div(g, k.sqrt(k.sub(1.0, k.mul(a, a)))),), callable=True),
    Primitive('acos', 1, ieee.acos, 'arccos',
              lambda k, g, out, a: (k.neg(k.div(g, k.sqrt(k.sub(1.0, k.mul(a, a))))),),
              callable=True),
    Primitive('atan', 1, math.atan, 'arctan',
              lambda k, g, out, a: (k.div(g, k.add(k.mul(a, a), 1.0)),), callable=True),
    Primitive('sinh', 1, ieee.sinh, 'sinh',
              lambda k, g, out, a: (k.mul(g, k.cosh(a)),), callable=True),
    Primitive('cosh', 1, ieee.cosh, 'cosh',
              lambda k, g, out, a: (k.mul(g, k.sinh(a)),), callable=True),
    Primitive('tanh', 1, math.tanh, 'tanh',
              lambda k, g, out, a: (k.mul(g, k.sub(1.0, k.mul(out, out))),), callable=True),
    Primitive('exp', 1, ieee.exp, 'exp', lambda k, g, out, a: (k.mul(g, out),), callable=True),
    Primitive('log', 1, ieee.log, 'log', lambda k, g, out, a: (k.div(g, a),), callable=True),
    Primitive('log2', 1, ieee.log2, 'log2',
              lambda k, g, out, a: (k.div(g, k.mul(a, LN2)),), callable=True),
    Primitive('log10', 1, ieee.log10, 'log10',
              lambda k, g, out, a: (k.div(g, k.mul(a, LN10)),), callable=True),
    Primitive('sqrt', 1, ieee.sqrt, 'sqrt',
              lambda k, g, out, a: (k.div(g, k.mul(2.0, out)),), callable=True),
    Primitive('abs', 1, abs, 'abs', lambda k, g, out, a: (k.mul(g, k.sign(a)),), callable=True),
    Primitive('sigmoid', 1, ieee.sigmoid, 'sigmoid',
              lambda k, g, out, a: (k.mul(k.mul(g, k.sub(1.0, out)), out),), callable=True),
    Primitive('relu', 1, ieee.relu, 'relu', lambda k, g, out, a: (k.where(k.ge(0.0, out), 0.0, g),),
              callable=True),

    # ---- two-argument functions ----
    Primitive('min', 2, ieee.minimum, 'minimum', _min_vjp, callable=True),
    Primitive('max', 2, ieee.maximum, 'maximum', _max_vjp, callable=True),
    Primitive('atan2', 2, math.atan2, 'arctan2', _atan2_vjp, callable=True),

    # ---- internal: used by derivative rules, not callable from the language ----
    Primitive('sign', 1, ieee.sign, 'sign', _zero),
    Primitive('eq', 2, ieee.eq, 'eq', _zero),
    Primitive('lt', 2, ieee.lt, 'lt', _zero),
    Primitive('ge', 2, ieee.ge, 'ge', _zero),
    Primitive('where', 3, ieee.where, 'where',
              lambda k, g, out, c, a, b: (0.0, k.where(c, g, 0.0), k.where(c, 0.0, g))),
]

PRIMITIVES = {row.name: row for row in _ROWS}

# The functions a program may call, by name.
FUNCTIONS = {row.name: row for row in _ROWS if row.callable}

CONSTANTS = {'pi': 3.141592653589793, 'e': 2.718281828459045}

# The numeric algebra: derivative rules evaluated to floats.
NUMBERS = SimpleNamespace(coerce=float, **{row.name: row.forward for row in _ROWS})
