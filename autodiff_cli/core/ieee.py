"""float64 math that returns inf and nan where C and PyTorch do.

Python's `math` raises on overflow and outside a function's domain, and `/`
raises on a zero divisor. adgrad promises IEEE results instead (`1/0` is
inf, `log(-1)` is nan), so every forward function that can raise is wrapped
here once, and the primitive table uses only these.
"""

import math

inf = math.inf
nan = math.nan


def _is_odd_integer(x):
    return math.isfinite(x) and x % 2 == 1


def div(a, b):
    try:
        return a / b
    except ZeroDivisionError:
        if a != a or a == 0:
            return nan
        return math.copysign(inf, a) * math.copysign(1.0, b)


def power(a, b):
    try:
        return math.pow(a, b)
    except OverflowError:
        return -inf if a < 0 and _is_odd_integer(b) else inf
    except ValueError:
        if a == 0:  # zero to a negative power: C's pole, signed like the zero for odd powers
            return -inf if math.copysign(1.0, a) < 0 and _is_odd_integer(b) else inf
        return nan  # negative base with a non-integer exponent


def exp(x):
    try:
        return math.exp(x)
    except OverflowError:
        return inf


def _outside_domain(fn, at_zero=nan):
    """fn, giving nan where math raises for leaving its domain, and `at_zero`
    where that happens at 0 (the pole of the logarithms)."""
    def wrapped(x):
        try:
            return fn(x)
        except ValueError:
            return at_zero if x == 0 else nan
    return wrapped


log = _outside_domain(math.log, at_zero=-inf)
log2 = _outside_domain(math.log2, at_zero=-inf)
log10 = _outside_domain(math.log10, at_zero=-inf)
sqrt = _outside_domain(math.sqrt)
sin = _outside_domain(math.sin)
cos = _outside_domain(math.cos)
tan = _outside_domain(math.tan)
asin = _outside_domain(math.asin)
acos = _outside_domain(math.acos)


def sinh(x):
    try:
        return math.sinh(x)
    except OverflowError:
        return math.copysign(inf, x)


def cosh(x):
    try:
        return math.cosh(x)
    except OverflowError:
        return inf


def sigmoid(x):
    # PyTorch's formula, so the far tails round the same way.
    return 1.0 / (1.0 + exp(-x))


def relu(x):
    # As torch.relu: nan stays nan and -0.0 stays -0.0 (atan2 can tell).
    return 0.0 if x < 0 else x


def maximum(a, b):
    if a != a or b != b:
        return nan
    return a if a >= b else b


def minimum(a, b):
    if a != a or b != b:
        return nan
    return a if a <= b else b


def sign(x):
    # torch.sgn: zero for zero and for nan.
    return 1.0 if x > 0 else (-1.0 if x < 0 else 0.0)


def where(condition, a, b):
    return a if condition else b


def eq(a, b):
    return 1.0 if a == b else 0.0


def lt(a, b):
    return 1.0 if a < b else 0.0


def ge(a, b):
    return 1.0 if a >= b else 0.0
