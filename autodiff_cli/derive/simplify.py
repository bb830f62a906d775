"""The identities the recording algebra applies as it makes each node.

Each entry takes the tape and the operation's arguments (Refs or floats, not
all floats: those are folded before) and returns what to use instead, or
None to make the node as asked. Every identity holds for finite numbers;
those marked IEEE below do not hold for inf or nan, and the README says so.
A tape made `exact` (for numbers, as the Hessian's) keeps only the
identities after which the value and every derivative of it are the same
float64 numbers, inf and nan included, up to the sign of a zero: x*1, x+0,
--x, a + -b -> a - b, and the folding of constants.
"""

import math


def _is(tape, x, constant):
    value = tape.value(x)
    return value is not None and value == constant


def _negated(tape, x):
    """y when x is -y (a neg node, or a negative constant), else None."""
    op = tape.op(x)
    if op == 'neg':
        return tape.args(x)[0]
    return None


def _add(tape, a, b):
    if _is(tape, b, 0.0):
        return a
    if _is(tape, a, 0.0):
        return b
    nb = _negated(tape, b)
    if nb is not None:
        return tape.sub(a, nb)                 # a + -b -> a - b
    na = _negated(tape, a)
    if na is not None:
        return tape.sub(b, na)                 # -a + b -> b - a
    if tape.value(a) is not None and tape.value(b) is None:
        return tape.add(b, a)                  # constants last: x + 1
    if a == b and type(a) is type(b) and not tape.exact:
        return tape.mul(2.0, a)                # a + a -> 2*a
    return None


def _sub(tape, a, b):
    if _is(tape, b, 0.0):
        return a
    if _is(tape, a, 0.0):
        return tape.neg(b)
    nb = _negated(tape, b)
    if nb is not None:
        return tape.add(a, nb)                 # a - -b -> a + b
    return None


def _mul(tape, a, b):
    va, vb = tape.value(a), tape.value(b)
    if tape.exact:
        return _mul_exact(tape, a, b, va, vb)
    if va == 0.0 or vb == 0.0:
        return 0.0                             # 0*x -> 0 (IEEE: 0*inf is nan)
    if vb is not None:
        return tape.mul(b, a)                  # the constant factor first: 2*x
    if va == 1.0:
        return b
    if va == -1.0:
        return tape.neg(b)
    na, nb = _negated(tape, a), _negated(tape, b)
    if na is not None:
        return tape.neg(tape.mul(na, b))       # (-a)*b -> -(a*b), exact
    if nb is not None:
        return tape.neg(tape.mul(a, nb))
    if va is not None and va < 0:
        return tape.neg(tape.mul(-va, b))      # -2*x prints as -2*x, reads as -(2*x)
    if va is not None and tape.op(b) == 'mul':
        inner, rest = tape.args(b)
        vi = tape.value(inner)
        if vi is not None:
            return tape.mul(va * vi, rest)     # merged constant factors: 2*(3*x) -> 6*x
        if tape.op(inner) == 'mul' and tape.value(tape.args(inner)[0]) is not None:
            c, first = tape.args(inner)        # 2*(3*x*y) -> 6*x*y
            return tape.mul(tape.mul(va * tape.value(c), first), rest)
    if va is None and tape.op(b) == 'mul' and tape.value(tape.args(b)[0]) is not None:
        c, rest = tape.args(b)
        return tape.mul(tape.mul(c, a), rest)  # x*(2*y) -> 2*x*y: the constant out front
    if va is None and not tape.replaying and tape.op(a) != 'mul' and tape.op(b) != 'mul' and b < a:
        return tape.mul(b, a)                  # y*x -> x*y: one order for one product
    if a == b and va is None and vb is None:
        return tape.pow(a, 2.0)                # x*x -> x^2 (both correctly rounded)
    return None


def _mul_exact(tape, a, b, va, vb):
    if vb == 1.0:
        return a
    if va == 1.0:
        return b
    return None


def _div(tape, a, b):
    vb = tape.value(b)
    if vb == 1.0:
        return a
    if tape.exact:
        return None
    if _is(tape, a, 0.0):
        return 0.0                             # 0/x -> 0 (IEEE: 0/0 is nan)
    if vb is not None and vb != 0 and math.isfinite(vb) and math.frexp(vb)[0] == 0.5:
        return tape.mul(1.0 / vb, a)           # x/2 -> 0.5*x: exact for a power of two
    na, nb = _negated(tape, a), _negated(tape, b)
    if na is not None:
        return tape.neg(tape.div(na, b))
    if nb is not None:
        return tape.neg(tape.div(a, nb))
    va = tape.value(a)
    if va is not None and va < 0:
        return tape.neg(tape.div(-va, b))
    return None


def _neg(tape, a):
    inner = _negated(tape, a)
    if inner is not None:
        return inner                           # --x -> x
    if tape.op(a) == 'sub':
        left, right = tape.args(a)
        return tape.sub(right, left)           # -(a - b) -> b - a, exact
    return None


def _pos(tape, a):
    return a


def _pow(tape, a, b):
    if tape.exact:
        return None        # x^1 -> x keeps the value but drops the rule's where(b == 0)
    vb = tape.value(b)
    if vb == 1.0:
        return a
    if vb == 0.0 or _is(tape, a, 1.0):
        return 1.0                             # x^0 and 1^x are 1 even for nan, as in C
    return None


def _where(tape, c, a, b):
    if a is b or (a == b and type(a) is type(b)
                  and (tape.value(a) is None or math.copysign(1, a) == math.copysign(1, b))):
        return a
    return None


SIMPLIFY = {'add': _add, 'sub': _sub, 'mul': _mul, 'div': _div, 'neg': _neg, 'pos': _pos,
            'pow': _pow, 'where': _where}
