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

from ..core.primitives import COMPARISON, LOGICAL, names_of


class Ref(int):
    """A node of the tape being recorded (its id); floats are constants.
    (Defined here, below record.py, which imports it, so that these rules
    can tell a node from a constant by its type alone.)"""
    __slots__ = ()


def _gated(tape, x):
    """(condition, a, taken) when x is if(c, a, 0) (taken True) or
    if(c, 0, a) (taken False): a derivative that exists on one side only."""
    if not tape.gates:
        return None
    op = tape.op(x)
    if op != 'if' and (op != 'where' or tape.exact):
        return None      # a where's masked product keeps torch's nan when exact (see _pow_vjp)
    c, a, b = tape.args(x)
    if tape.value(b) == 0.0 and tape.value(a) != 0.0:
        return c, a, True
    if tape.value(a) == 0.0 and tape.value(b) != 0.0:
        return c, b, False
    return None


def _gate(tape, gate, inner):
    c, _, taken = gate
    return tape.apply('if', c, inner, 0.0) if taken else tape.apply('if', c, 0.0, inner)


def _under_gates(tape, gate, make):
    """make(g) put under the gates around it: if(c1, if(c2, g, 0), 0) gives
    if(c1, if(c2, make(g), 0), 0). The nested gates are peeled in a loop,
    so a 10,000-deep staircase of ifs does not recurse once per level."""
    gates = [gate]
    while (inner := _gated(tape, gates[-1][1])) is not None:
        gates.append(inner)
    return _regated(tape, gates, make(gates[-1][1]))


def _regated(tape, gates, inner):
    """inner under gates, the first outermost, built from the inside out."""
    for gate in reversed(gates):
        inner = _gate(tape, gate, inner)
    return inner


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
    # An argument is a Ref of a node that is not a constant, or a float
    # (record.py folds constant nodes to their numbers before calling here):
    # so `type(x) is Ref` is tape.value(x) is None, without the calls.
    if tape.gates:
        ga, gb = _gated(tape, a), _gated(tape, b)
        if ga is not None and gb is not None and ga[0] == gb[0]:
            if ga[2] == gb[2]:       # both on one side: if(c, a + b, 0), in a loop for nested pairs
                gates = [ga]
                while True:
                    ia, ib = _gated(tape, ga[1]), _gated(tape, gb[1])
                    if ia is None or ib is None or ia[0] != ib[0] or ia[2] != ib[2]:
                        return _regated(tape, gates, tape.add(ga[1], gb[1]))
                    gates.append(ia)
                    ga, gb = ia, ib
            taken, untaken = (ga, gb) if ga[2] else (gb, ga)
            return tape.apply('if', ga[0], taken[1], untaken[1])   # if(c, a, 0) + if(c, 0, b)
        if gb is not None and not tape.exact and tape.op(a) == 'add':
            rest, last = tape.args(a)                # (x + if(c, 0, a)) + if(c, 0, b):
            gl = _gated(tape, last)                  # the two gates meet, as x + if(c, 0, a + b)
            if gl is not None and gl[0] == gb[0] and gl[2] == gb[2]:
                return tape.add(rest, tape.add(last, b))
    a_node, b_node = type(a) is Ref, type(b) is Ref
    if not b_node and b == 0.0:
        return a
    if not b_node and a_node and not tape.exact:
        met = _constants_meet(tape, a, b)        # (x - 1) + 3 -> x + 2
        if met is not None:
            return met
    if not b_node and b < 0:
        return tape.sub(a, -b)                   # x + -2 -> x - 2, exact
    if not a_node and a == 0.0:
        return b
    nodes = tape.nodes
    if b_node and nodes[b].op == 'neg':
        return tape.sub(a, nodes[b].args[0])     # a + -b -> a - b
    if a_node and nodes[a].op == 'neg':
        return tape.sub(b, nodes[a].args[0])     # -a + b -> b - a
    if not a_node and b_node:
        return tape.add(b, a)                    # constants last: x + 1
    if a_node and b_node and not tape.exact:
        if a == b:
            return tape.mul(2.0, a)              # a + a -> 2*a
        return _like_terms(tape, a, b, 1.0)
    return None


def _scaled(nodes, x):
    """(c, y) when x (a node) is c*y with a constant c, or -(c*y), else (1, x)."""
    node, sign = nodes[x], 1.0
    if node.op == 'neg':               # -(4*t) is -4*t: the rule _mul writes
        x, sign = node.args[0], -1.0
        node = nodes[x]
    if node.op == 'mul':
        c = nodes[node.args[0]]
        if _is_number(c):
            return sign * c.value, node.args[1]
    return sign, x


def _is_number(node):
    # (an array program's constant may be an array, ones(3): not a factor c)
    return node.op == 'const' and not getattr(node.value, 'ndim', 0)


def _factor_pair(nodes, c, x):
    """(c', {p, q}, (p, q)) when c*x is c'*p*q with a constant c', as _mul
    writes x*(2*y) (2*x*y) or 2*(x*y); else None. The set compares two
    products whatever their order."""
    node = nodes[x]
    if node.op != 'mul':
        return None
    first, second = node.args
    inner = nodes[first]
    if inner.op == 'mul' and _is_number(nodes[inner.args[0]]):    # (c'*p)*q
        p = inner.args[1]
        return c * nodes[inner.args[0]].value, frozenset((p, second)), (p, second)
    return c, frozenset((first, second)), (first, second)


def _term(nodes, x):
    """(c, key, rest): x is c times rest, where rest is a node or a pair of
    factors; equal keys are equal rests, a product's factors in either order."""
    c, r = _scaled(nodes, x)
    pair = _factor_pair(nodes, c, r)
    return pair if pair is not None else (c, r, r)


def _times(tape, c, rest):
    """c*rest, a pair's constant on its first factor: 4*x*y, not 4*(x*y)."""
    if type(rest) is tuple:
        return tape.mul(tape.mul(c, rest[0]), rest[1])
    return tape.mul(c, rest)


def _like_terms(tape, a, b, sign):
    """a + sign*b as one product when both are multiples of one node:
    2*x + x -> 3*x, x - 3*x -> -2*x, 2*x*y + 2*y*x -> 4*x*y, and
    (s + x) + x -> s + 2*x. (Not IEEE exact: the sum of n copies rounds n
    times, n*x once.)"""
    nodes = tape.nodes
    (ca, ka, rest), (cb, kb, _) = _term(nodes, a), _term(nodes, b)
    if ka == kb:
        return _times(tape, ca + sign * cb, rest)
    node = nodes[a]
    if node.op != 'add' and node.op != 'sub':
        return None
    first, second = node.args
    if nodes[second].op != 'const':
        ct, kt, rest = _term(nodes, second)          # (s +- ct*r) + sign*cb*r
        if kt == kb:
            total = (ct if node.op == 'add' else -ct) + sign * cb
            if total == 0.0:
                return first
            return tape.add(first, _times(tape, total, rest)) if total > 0 else \
                tape.sub(first, _times(tape, -total, rest))
    if nodes[first].op != 'const':
        cf, kf, rest = _term(nodes, first)           # (cf*r +- t) + sign*cb*r
        if kf == kb:
            total = cf + sign * cb
            if total == 0.0:
                return second if node.op == 'add' else tape.neg(second)
            scaled = _times(tape, total, rest)
            return tape.add(scaled, second) if node.op == 'add' else tape.sub(scaled, second)
    return None


def _constants_meet(tape, a, b):
    """(s +- c1) + b as s + (+-c1 + b), and (c1 - s) + b as (c1 + b) - s,
    for a constant b: one constant, not two."""
    node = tape.nodes[a]
    if node.op in ('add', 'sub'):
        c = tape.value(node.args[1])
        if c is not None:
            return tape.add(node.args[0], (c if node.op == 'add' else -c) + b)
        c = tape.value(node.args[0])
        if c is not None and node.op == 'sub':
            return tape.sub(c + b, node.args[1])
    return None


def _sub(tape, a, b):
    if _is(tape, b, 0.0):
        return a
    if type(a) is Ref and type(b) is Ref and not tape.exact:
        if a == b:
            return 0.0                         # a - a -> 0 (IEEE: inf - inf is nan)
        node = tape.nodes[a]
        if node.op == 'neg' and node.args[0] == b:
            return tape.neg(tape.mul(2.0, b))  # -a - a -> -(2*a), as a + a -> 2*a
        return _like_terms(tape, a, b, -1.0)
    if _is(tape, a, 0.0):
        return tape.neg(b)
    nb = _negated(tape, b)
    if nb is not None:
        return tape.add(a, nb)                 # a - -b -> a + b
    vb = tape.value(b)
    if vb is not None and type(a) is Ref and not tape.exact:
        met = _constants_meet(tape, a, -vb)    # (x + 3) - 1 -> x + 2
        if met is not None:
            return met
    if vb is not None and vb < 0:
        return tape.add(a, -vb)                # a - -2 -> a + 2, exact
    return None


def _mul(tape, a, b):
    if tape.gates:
        for x, y in ((a, b), (b, a)):
            gate = _gated(tape, x)
            if gate is not None:     # if(c, g, 0)*y -> if(c, g*y, 0): y is never met untaken
                return _under_gates(tape, gate, lambda g, y=y: tape.mul(g, y))
    va = None if type(a) is Ref else a           # a constant's value (see _add)
    vb = None if type(b) is Ref else b
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
    nodes = tape.nodes
    op_a = 'const' if va is not None else nodes[a].op
    op_b = nodes[b].op
    if op_a == 'neg':
        return tape.neg(tape.mul(nodes[a].args[0], b))    # (-a)*b -> -(a*b), exact
    if op_b == 'neg':
        return tape.neg(tape.mul(a, nodes[b].args[0]))
    if va is not None and va < 0:
        return tape.neg(tape.mul(-va, b))      # -2*x prints as -2*x, reads as -(2*x)
    if va is not None and op_b == 'mul':
        inner, rest = nodes[b].args
        vi = tape.value(inner)
        if vi is not None:
            return tape.mul(va * vi, rest)     # merged constant factors: 2*(3*x) -> 6*x
        if tape.op(inner) == 'mul' and tape.value(tape.args(inner)[0]) is not None:
            c, first = tape.args(inner)        # 2*(3*x*y) -> 6*x*y
            return tape.mul(tape.mul(va * tape.value(c), first), rest)
    if op_b == 'div' and tape.value(nodes[b].args[0]) == 1.0:
        return tape.div(a, nodes[b].args[1])   # a*(1/b) -> a/b (rounded once, not twice)
    if va is None and op_b == 'mul' and tape.value(nodes[b].args[0]) is not None:
        c, rest = nodes[b].args
        return tape.mul(tape.mul(c, a), rest)  # x*(2*y) -> 2*x*y: the constant out front
    if va is None and not tape.replaying and op_a != 'mul' and op_b != 'mul' and b < a:
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
    gate = _gated(tape, a)
    if gate is not None:
        return _under_gates(tape, gate, lambda g: tape.div(g, b))
    vb = tape.value(b)
    if vb == 1.0:
        return a
    if tape.exact:
        return None
    if _is(tape, a, 0.0):
        return 0.0                             # 0/x -> 0 (IEEE: 0/0 is nan)
    if a == b and type(a) is Ref and type(b) is Ref:
        return 1.0                             # a/a -> 1 (IEEE: 0/0 and inf/inf are nan)
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
    gate = _gated(tape, a)
    if gate is not None:
        return _under_gates(tape, gate, tape.neg)
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


_LOGIC = frozenset(names_of(COMPARISON, LOGICAL))     # 1.0 or 0.0


def _ne(tape, a, b):
    if tape.value(b) == 0.0 and tape.op(a) in _LOGIC:
        return a                               # (x > 0) != 0 is x > 0: both are 1 or 0
    return None


def _same_condition(tape, c, x, first):
    """x's own choice when x is an if or where on the condition c."""
    if tape.op(x) in ('if', 'where'):
        condition = tape.args(x)[0]
        if condition == c:
            return tape.args(x)[1 if first else 2]
        if tape.op(condition) in ('eq', 'not') and tape.args(condition)[0] == c \
                and (tape.op(condition) == 'not' or tape.value(tape.args(condition)[1]) == 0.0):
            return tape.args(x)[2 if first else 1]     # on (c == 0): the other way round
    return x


def _same(tape, a, b):
    """Whether a and b are one value: one node, or equal constants; of one
    sign too on an exact tape (if(c, 0, -0) is 0 only up to a zero's sign)."""
    if a is b:
        return True
    if type(a) is Ref or type(b) is Ref:
        return a == b and type(a) is type(b)
    return a == b and (not tape.exact or math.copysign(1, a) == math.copysign(1, b))


def _if(tape, c, a, b):
    a2, b2 = _same_condition(tape, c, a, True), _same_condition(tape, c, b, False)
    if (a2 is not a or b2 is not b) and not tape.exact:
        return tape.apply('if', c, a2, b2)    # if(c, if(c, x, y), z) -> if(c, x, z)
    if _same(tape, a, b):
        return a
    return None


def _where(tape, c, a, b):
    if tape.exact:
        return _if(tape, c, a, b)
    a2, b2 = _same_condition(tape, c, a, True), _same_condition(tape, c, b, False)
    if a2 is not a or b2 is not b:
        return tape.apply('where', c, a2, b2)
    for x, other, first in ((a, b, True), (b, a, False)):
        gate = _gated(tape, x)
        if gate is not None and tape.value(other) == 0.0:    # a relu inside a branch
            inner = tape.where(c, gate[1], 0.0) if first else tape.where(c, 0.0, gate[1])
            return _gate(tape, gate, inner)
    if _same(tape, a, b):
        return a
    return None


SIMPLIFY = {'add': _add, 'sub': _sub, 'mul': _mul, 'div': _div, 'neg': _neg, 'pos': _pos,
            'pow': _pow, 'where': _where, 'if': _if, 'ne': _ne}
