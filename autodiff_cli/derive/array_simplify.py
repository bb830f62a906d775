"""The identities a formula over arrays is recorded with, as the Matrix Cookbook
writes its answers (array_formula.py applies them as it makes each node).

What the array rules record is right but long: a column reshaped and
broadcast where the Cookbook writes an outer product, `solve(X.T, d*eye(n))`
where it writes `d*inv(X).T`, `x @ A + A @ x` where it writes `(A + A.T) @ x`.
Each entry takes the tape and the op's arguments and returns what to use
instead, or None to make the node as asked. The elementwise ones run after
simplify.py's scalar identities would, on arguments whose broadcasts are
unwrapped (a broadcast is implicit in an elementwise op).
"""

from .simplify import Ref


# ---- looking at nodes ----

def factors(sizes):
    """(the product of the sizes that are numbers, the symbols in order)."""
    number, symbols = 1, []
    for n in sizes:
        if isinstance(n, str):
            symbols.append(n)
        else:
            number *= n
    return number, symbols


def size_value(sizes):
    """The number of entries of `sizes` (ints and symbols): a float if every
    size is a number, else the tuple of its factors, numbers first."""
    number, symbols = factors(sizes)
    if not symbols:
        return float(number)
    return ((number,) if number != 1 else ()) + tuple(symbols)


def _node(tape, x):
    return tape.nodes[x] if type(x) is Ref else None


def _op(tape, x):
    node = _node(tape, x)
    return node.op if node is not None else 'const'


def _args(tape, x):
    return tape.nodes[x].args


def _static(tape, x):
    return tape.nodes[x].value


def _number(x, value):
    """Whether x is the constant `value` (a Ref is an int: never compare it to a float)."""
    return type(x) is float and x == value


def _same(a, b):
    return type(a) is type(b) and a == b


def constant(tape, x):
    """A recorded constant number as its float; anything else as it is."""
    node = _node(tape, x)
    if node is not None and node.op == 'const' and not getattr(node.value, 'ndim', 0):
        return float(node.value)
    return x


def _rank(tape, x):
    return len(tape.shape(x))


def _is_scalar(tape, x):
    return tape.shape(x) == ()


def _is_eye(tape, x):
    return _op(tape, x) == 'eye'


def unwrap(tape, x):
    """x as an elementwise op sees it: a broadcast (broadcast_to, or a
    reshape that adds leading axes of 1) is the value it broadcasts."""
    while type(x) is Ref:
        node = tape.nodes[x]
        if node.op == 'broadcast_to':
            x = node.args[0]
        elif node.op == 'reshape':
            inner, target = node.args[0], _static(tape, node.args[1])
            shape = tape.shape(inner)
            extra = len(target) - len(shape)
            if extra < 0 or tuple(target[extra:]) != shape or any(n != 1 for n in target[:extra]):
                break
            x = inner
        else:
            break
    return constant(tape, x)


def _column_of(tape, x):
    """v when x is v reshaped to a column (n, 1) from a vector (n,)."""
    if _op(tape, x) == 'reshape':
        inner, target = _args(tape, x)
        shape = tape.shape(inner)
        if len(shape) == 1 and tuple(_static(tape, target)) == shape + (1,):
            return inner
    return None


def _scaled(tape, x):
    """(c, y) when x is c*y for a constant c, else (1.0, x)."""
    if _op(tape, x) == 'mul':
        a, b = (constant(tape, v) for v in _args(tape, x))
        if isinstance(a, float):
            return a, b
    return 1.0, x


def _gate_of_zero(tape, x):
    """(c, y) when x is where(c == 0, 0, y): norm's rule at its origin."""
    if _op(tape, x) not in ('where', 'if'):
        return None
    condition, zero, y = (constant(tape, v) for v in _args(tape, x))
    if not _number(zero, 0.0) or _op(tape, condition) != 'eq':
        return None
    c, value = (constant(tape, v) for v in _args(tape, condition))
    return (c, y) if _number(value, 0.0) else None


# ---- transposes ----

def symmetric(tape, x):
    """Whether x is symmetric by its form: P + P.T, P.T @ P, an identity,
    and scalings, sums and inverses of those."""
    stack, seen = [x], 0
    while stack and seen < 64:
        seen += 1
        y = stack.pop()
        op = _op(tape, y)
        if op == 'eye' or _rank(tape, y) < 2:
            continue
        if op == 'broadcast_to' and _is_scalar(tape, _args(tape, y)[0]):
            continue
        args = _args(tape, y) if type(y) is Ref and op != 'const' else ()
        if op in ('add', 'sub') and len(args) == 2:
            p, q = args
            if _transposed(tape, p) == q or _transposed(tape, q) == p:
                if op == 'sub':
                    return False   # P - P.T is antisymmetric: its transpose is Q.T - Q
                continue
            stack += [p, q]
        elif op == 'matmul' and (_transposed(tape, args[0]) == args[1]
                                 or _transposed(tape, args[1]) == args[0]):
            continue
        elif op in ('mul', 'div') and any(_is_scalar(tape, a) for a in args):
            stack += [a for a in args if not _is_scalar(tape, a)]
        elif op in ('neg', 'inv'):
            stack.append(args[0])
        else:
            return False
    return not stack


def _transposed(tape, x):
    """y when x is y.T, else None."""
    return _args(tape, x)[0] if _op(tape, x) == 'transpose' else None


def _cheap_transpose(tape, x):
    """x.T without a new transpose, where its form gives one; else None."""
    if _rank(tape, x) < 2:
        return x
    inner = _transposed(tape, x)
    if inner is not None:
        return inner
    op = _op(tape, x)
    if op == 'broadcast_to':
        value, shape = _args(tape, x)
        if _is_scalar(tape, value):
            shape = _static(tape, shape)
            return tape.fit(constant(tape, value), shape[:-2] + shape[-1:] + shape[-2:-1])
    if symmetric(tape, x):
        return x
    return None


def _transpose(tape, a):
    cheap = _cheap_transpose(tape, a)
    if cheap is not None:
        return cheap
    op = _op(tape, a)
    if op == 'outer':
        p, q = _args(tape, a)
        return tape.outer(q, p)                         # outer(a, b).T is outer(b, a)
    if op == 'matmul':
        p, q = _args(tape, a)
        tq, tp = _cheap_transpose(tape, q), _cheap_transpose(tape, p)
        if (tq is not None or tp is not None) and _rank(tape, p) == _rank(tape, q) == 2:
            return tape.matmul(tq if tq is not None else tape.transpose(q),
                               tp if tp is not None else tape.transpose(p))
    if op in ('mul', 'div', 'neg', 'add', 'sub'):
        args = [constant(tape, v) for v in _args(tape, a)]
        arrays = [v for v in args if not _is_scalar(tape, v)]
        if any(_rank(tape, v) != _rank(tape, a) for v in arrays):
            return None   # A.T * v: v broadcasts along rows, so (A.T * v).T is A * v[:, None]
        cheap = [_cheap_transpose(tape, v) for v in arrays]
        if len(arrays) == 1 and op in ('mul', 'div', 'neg') or all(c is not None for c in cheap):
            return getattr(tape, op)(*[v if _is_scalar(tape, v) else tape.transpose(v)
                                       for v in args])
    return None


# ---- products ----

def _matmul(tape, a, b):
    if _is_eye(tape, a):
        return b
    if _is_eye(tape, b):
        return a
    for x, y in ((a, b), (b, a)):
        c, rest = _scaled(tape, x)
        if c != 1.0 and _is_eye(tape, rest):
            return tape.mul(c, y)                       # c*I @ y is c*y
    c, rest = _scaled(tape, b)
    if c != 1.0 and not tape.replaying:
        return tape.matmul(tape.mul(c, a), rest)        # a constant on the left: 2*A.T @ r
    ta, tb = _transposed(tape, a), _transposed(tape, b)
    if ta is not None and tb is not None and _rank(tape, a) == _rank(tape, b) == 2:
        return tape.transpose(tape.matmul(tb, ta))      # A.T @ B.T is (B @ A).T
    return None


def _mul(tape, a, b):
    for x, y in ((a, b), (b, a)):
        c, rest = _scaled(tape, x)
        column = _column_of(tape, rest)
        if column is not None and _rank(tape, y) == 1:
            return tape.mul(c, tape.outer(column, y))   # v[:, None] * w is outer(v, w)
    for x, y in ((a, b), (b, a)):
        gate = _gate_of_zero(tape, y)
        if gate is not None:
            c, inner = gate
            k, base = _scaled(tape, x)
            if base == c:    # c*where(c == 0, 0, y) is where(c == 0, 0, c*y)
                gated = tape.where(tape.eq(c, 0.0), 0.0, tape.mul(c, inner))
                return gated if k == 1.0 else tape.mul(k, gated)
        if _op(tape, y) == 'div' and _same(constant(tape, _args(tape, y)[1]), x) \
                and type(x) is Ref:
            return constant(tape, _args(tape, y)[0])    # x*(a/x) is a
    for x, y in ((a, b), (b, a)):
        if type(x) is float and _op(tape, y) == 'matmul' and x != 1.0:
            p, q = _args(tape, y)
            return tape.matmul(tape.mul(x, p), q)       # 2*(A.T @ r) is 2*A.T @ r
    return None


def _where(tape, condition, a, b):
    if _is_eye(tape, condition) and _number(b, 0.0):
        return tape.mul(a, condition)                   # the diagonal: a*eye(n)
    if _number(a, 0.0) and _op(tape, condition) == 'eq':
        c, zero = (constant(tape, v) for v in _args(tape, condition))
        if _number(zero, 0.0) and _op(tape, c) == 'norm' and _same(_args(tape, c)[0], b):
            return b                                    # norm(y) == 0 only where y is 0
    return None


def _exp(tape, a):
    # exp(z - logsumexp(z)) is softmax(z): cross-entropy's gradient
    if _op(tape, a) != 'sub':
        return None
    z, total = _args(tape, a)
    total = _keepdims_of(tape, total)
    if _op(tape, total) != 'logsumexp' or _args(tape, total)[0] != z:
        return None
    axis = _static(tape, _args(tape, total)[1])
    if axis is None and _rank(tape, z) != 1:
        return None
    return tape.softmax(z, -1 if axis is None else axis)


def _keepdims_of(tape, x):
    """y when x is y reshaped with an axis of 1 inserted (keepdims), or broadcast from it."""
    while _op(tape, x) in ('reshape', 'broadcast_to'):
        inner = _args(tape, x)[0]
        if _op(tape, x) == 'reshape':
            shape, target = tape.shape(inner), _static(tape, _args(tape, x)[1])
            if [n for n in target if n != 1] != [n for n in shape if n != 1]:
                break
        x = inner
    return x


def _sum_terms(tape, a, b, sign):
    """P @ v + Q @ v as (P + Q) @ v, v @ P as P.T @ v: the Cookbook's (A + A.T) @ x."""
    pa, pb = _product(tape, a), _product(tape, b)
    if pa is None or pb is None:
        return None
    combine = tape.add if sign > 0 else tape.sub
    (p, q), (r, s) = pa, pb
    if (_op(tape, a) == 'outer') != (_op(tape, b) == 'outer'):
        return None
    product = tape.outer if _op(tape, a) == 'outer' else tape.matmul
    if q == s and tape.shape(p) == tape.shape(r):
        if sign > 0 and _transposed(tape, p) is not None and _transposed(tape, r) is None:
            p, r = r, p                                 # A + A.T, the plain one first
        return product(combine(p, r), q)
    if p == r and tape.shape(q) == tape.shape(s):
        return product(p, combine(q, s))
    return None


def _product(tape, x):
    if _op(tape, x) == 'outer':
        return _args(tape, x)
    if _op(tape, x) != 'matmul':
        return None
    p, q = _args(tape, x)
    if _rank(tape, p) == 1 and _rank(tape, q) == 2:
        return tape.transpose(q), p
    return p, q


def _add(tape, a, b):
    return _sum_terms(tape, a, b, 1)


def _sub(tape, a, b):
    return _sum_terms(tape, a, b, -1)


ELEMENTWISE_RULES = {'mul': _mul, 'where': _where, 'if': _where, 'exp': _exp, 'add': _add,
                     'sub': _sub}


# ---- the tensor ops ----

def _reshape(tape, x, shape):
    shape = tuple(shape)
    own = tape.shape(x)
    if own == shape:
        return x
    op = _op(tape, x)
    if op == 'reshape':
        return tape.reshape(_args(tape, x)[0], shape)
    if own == () or op == 'broadcast_to' and _is_scalar(tape, _args(tape, x)[0]):
        return tape.fit(unwrap(tape, x), shape)
    if op == 'matmul':
        m, column = _args(tape, x)
        v = _column_of(tape, column)
        if v is not None and shape == own[:-1]:
            return tape.matmul(m, v)                    # M @ v[:, None], as a vector
        if _op(tape, column) == 'broadcast_to' and tape.shape(column) == (1, 1) \
                and shape == own[:-1] and _rank(tape, m) == 2:
            # M @ [[s]] as a vector is s*M[:, 0]: a layer of one output
            s = constant(tape, _args(tape, column)[0])
            return tape.mul(s, tape.tensor('index', (m, (slice(None), 0))))
    c, rest = _scaled(tape, x)
    extra = len(shape) - len(own)
    # (not when it only adds leading axes of 1: the product would see through
    # them, give c*y again, and fit it to `shape` by this reshape, forever)
    if c != 1.0 and not (extra > 0 and shape[extra:] == own and set(shape[:extra]) == {1}):
        return tape.mul(c, tape.reshape(rest, shape))
    return None


def _broadcast_to(tape, x, shape):
    shape = tuple(shape)
    own = tape.shape(x)
    if own == shape:
        return x
    if _op(tape, x) == 'broadcast_to':
        return tape.broadcast_to(_args(tape, x)[0], shape)
    extra = len(shape) - len(own)
    if own and shape[extra:] == own and all(n == 1 for n in shape[:extra]):
        return tape.reshape(x, shape)                   # v as a row [1, n]: a reshape
    return None


def _sum_to(tape, x, shape):
    shape = tuple(shape)
    own = tape.shape(x)
    if own == shape:
        return x
    if len(own) < len(shape) or len(own) == len(shape) and all(
            n == 1 or n == m for n, m in zip(own, shape)):
        return tape.fit(x, shape)
    for _ in range(len(own) - len(shape)):
        x = tape.sum(x, 0)
    own = tape.shape(x)
    for axis in range(len(shape) - 1, -1, -1):
        if shape[axis] == 1 and own[axis] != 1:
            x = tape.sum(x, axis)
    return tape.reshape(x, shape)


def _sum(tape, x, axis):
    shape = tape.shape(x)
    if not shape:
        return x
    op = _op(tape, x)
    if axis is not None:
        axis %= len(shape)
        if len(shape) == 1:
            return tape.sum(x, None)                    # sum(v, 0) of a vector is sum(v)
    counted = shape if axis is None else (shape[axis],)
    rest = () if axis is None else shape[:axis] + shape[axis + 1:]
    if op == 'broadcast_to':
        value = constant(tape, _args(tape, x)[0])
        inner = tape.shape(value)
        if inner == () or axis == 0 and len(inner) < len(shape):
            return tape.fit(tape.mul(tape.count(counted), value), rest)
    if op == 'div':
        v, d = (constant(tape, a) for a in _args(tape, x))
        if _same(d, tape.count(counted)) and tape.shape(v) == shape:
            return tape.mean(v, axis)                   # sum(v/n) over n entries
    if op == 'mul':
        c, v = _scaled(tape, x)
        if c != 1.0 and tape.shape(v) == shape:
            return tape.mul(c, tape.sum(v, axis))
    if op == 'neg':
        return tape.neg(tape.sum(_args(tape, x)[0], axis))
    if op == 'transpose' and axis is None:
        return tape.sum(_args(tape, x)[0], None)
    return None


def _solve(tape, a, b):
    if _is_eye(tape, b):
        return tape.inv(a)
    if _op(tape, b) == 'mul':
        first, second = (constant(tape, v) for v in _args(tape, b))
        for scale, other in ((first, second), (second, first)):
            if _is_eye(tape, other) and _is_scalar(tape, scale):
                return tape.mul(scale, tape.inv(a))     # solve(A, d*I) is d*inv(A)
    return None


def _inv(tape, a):
    inner = _transposed(tape, a)
    if inner is not None:
        return tape.transpose(tape.inv(inner))          # inv(X.T) is inv(X).T
    if _op(tape, a) == 'inv':
        return _args(tape, a)[0]
    return None


def _unindex(tape, g, key, shape):
    if size_value(shape) == 1.0:
        return tape.fit(tape.reshape(g, ()) if tape.shape(g) else g, tuple(shape))
    return None


def _index(tape, x, key):
    inner = _transposed(tape, x)
    if inner is not None and len(key) == 2 and key[0] == slice(None) and _rank(tape, x) == 2:
        return tape.tensor('index', (inner, (key[1],)))   # M.T[:, k] is M[k]
    return None


TENSOR_RULES = {'index': _index, 'transpose': _transpose, 'matmul': _matmul, 'reshape': _reshape,
                'broadcast_to': _broadcast_to, 'sum_to': _sum_to, 'sum': _sum, 'solve': _solve,
                'inv': _inv, 'unindex': _unindex}
