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


# ---- issue 10's functions ----
# Where PyTorch has the op, the formula is PyTorch's CPU kernel's, so the
# results agree to the bit; where it has none, the formula is the most
# accurate one within a few ulps of mpmath (tests/test_functions_reference.py).

def cot(x):
    return div(1.0, tan(x))


def sec(x):
    return div(1.0, cos(x))


def csc(x):
    return div(1.0, sin(x))


def acot(x):
    # atan(1/x): values in (-pi/2, pi/2], as mpmath and SymPy; acot(-0.0) = -pi/2.
    return math.atan(div(1.0, x))


def _sqrt_square_minus_one(magnitude):
    # sqrt(x^2 - 1) for x = |x| >= 1 without cancelling near 1 or overflowing.
    return sqrt(magnitude - 1.0) * sqrt(magnitude + 1.0)


def asec(x):
    # acos(1/x) loses half its digits near |x| = 1: the angle whose cosine is
    # 1/x has tangent sqrt(x^2 - 1), with the sign of x on the cosine's side.
    return math.atan2(_sqrt_square_minus_one(abs(x)), sign(x))


def acsc(x):
    return math.atan2(sign(x), _sqrt_square_minus_one(abs(x)))


def coth(x):
    return div(1.0, math.tanh(x))


def sech(x):
    # 1/cosh(x) underflows to 0 where cosh overflows (|x| > 710), while
    # sech(x) = 2 e^-|x| is still a subnormal there.
    c = cosh(x)
    return 2.0 * exp(-abs(x)) if c == inf else 1.0 / c


def csch(x):
    s = sinh(x)
    return math.copysign(2.0 * exp(-abs(x)), x) if abs(s) == inf else div(1.0, s)


asinh = math.asinh
acosh = _outside_domain(math.acosh)


def atanh(x):
    try:
        return math.atanh(x)
    except ValueError:  # C's poles at +-1, nan beyond
        return math.copysign(inf, x) if abs(x) == 1 else nan


def log1p(x):
    try:
        return math.log1p(x)
    except ValueError:  # the pole at -1, nan below
        return -inf if x == -1 else nan


def acoth(x):
    # atanh(1/x) loses digits near |x| = 1; 1/2 log((|x|+1)/(|x|-1)) written
    # with log1p keeps them, and is small and exact for large |x|.
    return math.copysign(0.5 * log1p(div(2.0, abs(x) - 1.0)), x)


# Below this, 1 + sqrt(1 + x^2) is 2 to float64, and 1/x may overflow where
# acsch and asech are still finite (745 at the smallest subnormal).
TINY = 2.0 ** -30
LN2 = 0.6931471805599453


def asech(x):
    # acosh(1/x) = log((1 + sqrt(1 - x^2))/x), written as log1p of the part
    # past 1 so that it keeps its digits near x = 1. Outside (0, 1]: nan.
    if abs(x) < TINY:
        return LN2 - log(x)
    root = sqrt((1.0 - x) * (1.0 + x))
    return log1p(div((1.0 - x) + root, x))


def acsch(x):
    if abs(x) < TINY:
        return math.copysign(LN2 - log(abs(x)), x)
    return math.asinh(1.0 / x)


def sinc(x):
    # torch.sinc: the normalized sin(pi x)/(pi x), 1 at 0, in torch's steps.
    if x == 0:
        return 1.0
    product = math.pi * x
    return div(sin(product), product)


hypot = math.hypot


def _cbrt_fallback(x):  # Python 3.10 has no math.cbrt: one Newton step from pow
    if x == 0 or not math.isfinite(x):
        return x
    y = math.copysign(abs(x) ** (1.0 / 3.0), x)
    return y - (y * y * y - x) / (3.0 * y * y)


cbrt = getattr(math, 'cbrt', _cbrt_fallback)


def expm1(x):
    try:
        return math.expm1(x)
    except OverflowError:
        return inf


_exp2 = getattr(math, 'exp2', lambda x: math.pow(2.0, x))   # Python 3.10 has no exp2


def exp2(x):
    try:
        return _exp2(x)
    except OverflowError:
        return inf


def softplus(x):
    # torch.nn.functional.softplus with beta = 1, threshold = 20: x itself
    # past the threshold, where log1p(exp(x)) equals x to float64 anyway.
    return x if x > 20.0 else log1p(exp(x))


erf = math.erf
erfc = math.erfc

SQRT1_2 = 0.7071067811865476


def gelu(x):
    # torch's exact (erf) form, approximate='none', in its kernel's steps.
    return x * 0.5 * (1.0 + math.erf(x * SQRT1_2))


def silu(x):
    # torch's kernel: x / (1 + e^-x), so silu(-inf) is nan as there.
    return div(x, 1.0 + exp(-x))


def _integral(rounded, x):
    # math.floor and friends return ints, raise on inf and nan, and lose the
    # sign of a zero result (floor(-0.0) and ceil(-0.5) are -0.0 in C).
    if not math.isfinite(x):
        return x
    return math.copysign(float(rounded(x)), x)


def floor(x):
    return _integral(math.floor, x)


def ceil(x):
    return _integral(math.ceil, x)


def round_half_even(x):
    # Python's round() rounds half to even, as torch.round and C's rint.
    return _integral(round, x)


def clamp(x, low, high):
    # torch.clamp with tensor bounds: a nan anywhere gives nan; low > high gives high.
    return minimum(maximum(x, low), high)
