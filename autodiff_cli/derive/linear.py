"""The matrix of a linear formula: H from H u, where u is a symbolic vector.

A loop over the nodes that depend on u, in tape order (no recursion): each
gets its coefficient, the array C with node = C @ u (C of the node's shape
then u's). The Hessian formula (array_formula.py) is the coefficient of the
gradient's VJP along u, which is H u.
"""

from ..errors import AdgradError
from .simplify import Ref


def coefficient(tape, expression, u):
    """C with expression = C @ u (C * u for a number u), built on `tape`."""
    nodes = tape.nodes
    vector = tape.shape(u) != ()
    coefficients = {u: tape.np.eye(tape.shape(u)[0]) if vector else 1.0}
    needed, stack = bytearray(len(nodes)), [expression]
    while stack:    # what the expression is made of, not what simplifying left aside
        i = stack.pop()
        if i > u and not needed[i]:
            needed[i] = 1
            stack.extend(nodes[i].args)
    for i in range(u + 1, expression + 1):
        node = nodes[i]
        if not needed[i] or not any(a in coefficients for a in node.args):
            continue
        coefficients[Ref(i)] = _rule(tape, Ref(i), node, coefficients, vector)
    if expression not in coefficients:
        shape = tape.shape(expression) + tape.shape(u)
        return tape.fit(0.0, shape)
    return coefficients[expression]


# Ops linear in their first argument, the others static (an axis, a shape, a key).
_LINEAR = ('sum', 'mean', 'transpose', 'reshape', 'broadcast_to', 'sum_to', 'index', 'unindex',
           'trace', 'diag')


def _rule(tape, i, node, coefficients, vector):
    op, args = node.op, node.args
    parts = [coefficients.get(a) for a in args]
    values = [_value(tape, a) for a in args]
    if op in ('add', 'sub'):
        a, b = parts
        if a is None or b is None:
            raise _affine()
        return tape.add(a, b) if op == 'add' else tape.sub(a, b)
    if op in ('neg', 'pos'):
        return tape.neg(parts[0]) if op == 'neg' else parts[0]
    if op == 'transpose' and len(tape.shape(i)) < 2:
        return parts[0]
    if op in ('mul', 'div') and (parts[1] is None):
        scale = values[1] if op == 'mul' else tape.div(1.0, values[1])
        return _scaled(tape, scale, args[0], parts[0], vector)
    if op == 'mul' and parts[0] is None:
        return _scaled(tape, values[0], args[1], parts[1], vector)
    if op in _LINEAR and not vector and all(p is None for p in parts[1:]):
        # a number u: C has the node's shape, and op(C u) = op(C) u
        return getattr(tape, op)(parts[0], *[tape.nodes[a].value for a in args[1:]])
    if op in ('matmul', 'outer') and not vector and (parts[0] is None) != (parts[1] is None):
        product = getattr(tape, op)     # a number u: (C u) @ b = (C @ b) u, and so outer
        return product(parts[0], values[1]) if parts[1] is None else product(values[0], parts[1])
    if op == 'matmul':
        (a, b), (ca, cb) = args, parts
        if cb is not None and ca is None and len(tape.shape(b)) == 1:
            return tape.matmul(values[0], cb)          # M @ v: M @ C
        if ca is not None and cb is None and len(tape.shape(a)) == 1:
            left = tape.transpose(values[1]) if len(tape.shape(b)) == 2 else values[1]
            return tape.matmul(left, ca)               # v @ M: M.T @ C
    if op == 'sum' and tape.nodes[args[1]].value is None and len(tape.shape(args[0])) == 1:
        return tape.sum(parts[0], 0)
    if op == 'broadcast_to' and tape.shape(args[0]) == tape.shape(i):
        return parts[0]
    raise AdgradError(f"--order 2 has no formula through '{op}' yet; adgrad hessian gives "
                      'its numbers at a point')


def _scaled(tape, scale, x, part, vector):
    """The coefficient of scale * x, where x = part @ u and scale does not depend on u."""
    shape, own = tape.shape(scale), tape.shape(x)
    if shape == () or not vector:
        return tape.mul(scale, part)
    if len(shape) == 1 and own == shape:
        return tape.matmul(tape.diag(scale), part)     # v * (C @ u) is diag(v) @ C @ u
    if len(shape) == 1 and own == ():
        return tape.outer(scale, part)                 # v * (c @ u) is outer(v, c) @ u
    raise AdgradError('--order 2 has no formula for this product of arrays yet; adgrad '
                      'hessian gives its numbers at a point')


def _value(tape, x):
    node = tape.nodes[x]
    return float(node.value) if node.op == 'const' and not getattr(node.value, 'ndim', 0) else x


def _affine():
    return AdgradError('--order 2 met a term of the gradient that is not linear in its '
                       'direction; adgrad hessian gives the numbers at a point')
