"""Forward and reverse passes over a graph's tape.

Both are single loops over the tape; results are lists indexed by node id.
Both run over an algebra: NUMBERS computes with floats, and an algebra of
arrays (batch.py) runs the same loops over a whole batch of points at once.
"""

import math

from ..errors import AdgradError, NumericalError
from ..errors import did_you_mean
from .primitives import NUMBERS, PRIMITIVES


def forward(graph, inputs, algebra=NUMBERS):
    """Values of every node, given {variable name: value} for every input.

    At a single point an `if` takes one branch, and the other is not
    evaluated at all (its nodes keep 0.0, and executed() says which ran): so
    its inf or nan, which torch and JAX leak into gradients, never exists.
    Over arrays both branches run, and backward() masks the one not taken.
    """
    require_inputs(graph, inputs)
    values = [0.0] * len(graph.nodes)
    functions = {name: getattr(algebra, name) for name in PRIMITIVES}
    if graph.branches and algebra is NUMBERS:
        _forward_taking_branches(graph, inputs, values, functions)
        return values
    for i, node in enumerate(graph.nodes):
        op, args = node.op, node.args
        if op == 'input':
            values[i] = algebra.coerce(inputs[node.name])
        elif op == 'const':
            values[i] = node.value
        elif len(args) == 1:
            values[i] = functions[op](values[args[0]])
        elif len(args) == 2:
            values[i] = functions[op](values[args[0]], values[args[1]])
        else:
            values[i] = functions[op](*[values[j] for j in args])
    return values


def require_inputs(graph, inputs):
    """An error pointing at the first variable that `inputs` gives no value."""
    missing = [name for name in graph.inputs if name not in inputs]
    if missing:
        node = graph.nodes[graph.inputs[missing[0]]]
        raise AdgradError(f"no value for '{missing[0]}': give it as {missing[0]}=VALUE",
                          graph.source, node.span[0] if node.span else None)


def _forward_taking_branches(graph, inputs, values, functions):
    nodes = graph.nodes
    # Inputs and constants first: an input first named inside a branch is
    # still the whole program's, and a constant condition may be emitted
    # after the branches it chooses between (see lower.conditional).
    for i, node in enumerate(nodes):
        if node.op == 'input':
            values[i] = float(inputs[node.name])
        elif node.op == 'const':
            values[i] = node.value
    for i in _taken(graph, values):
        node = nodes[i]
        if node.args:
            values[i] = functions[node.op](*[values[j] for j in node.args])


def _taken(graph, values):
    """The tape positions a single point runs, in order: at the start of a
    branch its `if` does not take, jump past it. Lazy, so that a condition is
    read only once the nodes before it have their values."""
    skip = _skipper(graph)
    i, count = 0, len(graph.nodes)
    while i < count:
        if i in skip:
            target = max(jump(values) for jump in skip[i])
            if target > i:
                i = target
                continue
        yield i
        i += 1


def _skipper(graph):
    """{tape position: [values -> where to continue]}: at the start of each
    branch, jump past it if its `if` does not take it."""
    starts = {}
    for branch in graph.branches:
        then_jump = lambda values, b=branch: b.else_start if not values[b.condition] else 0
        else_jump = lambda values, b=branch: b.end if values[b.condition] else 0
        # Many branches may start at one place (an `if` first in another's
        # branch, nested to any depth): a flat list, and the loop goes as far
        # as any of them says, with no call depth that grows with the nesting.
        starts.setdefault(branch.then_start, []).append(then_jump)
        starts.setdefault(branch.else_start, []).append(else_jump)
    return starts


def executed(graph, values):
    """Which nodes ran at this point: all but those in a branch not taken.

    The same walk as the forward pass, so it jumps over an untaken branch
    once, however deeply `if`s nest inside it (marking each nested range in
    turn would take time quadratic in the nesting)."""
    if not graph.branches:
        return [True] * len(graph.nodes)
    ran = [node.op == 'input' for node in graph.nodes]
    for i in _taken(graph, values):
        ran[i] = True
    return ran


RULES = {name: row.vjp for name, row in PRIMITIVES.items()}


def pullback(graph, i, g, values, algebra=NUMBERS):
    """What each argument of node i receives when `g` arrives at it: one
    cotangent per argument, None for "no gradient" (see primitives.py).

    The one way to call a derivative rule: backward(), the steps of a picture
    and the derivative transformations all come through here, so a rule's
    conventions hold everywhere at once.
    """
    node = graph.nodes[i]
    return RULES[node.op](algebra, g, values[i], *[values[a] for a in node.args])


def backward(graph, values, output=None, algebra=NUMBERS):
    """∂output/∂node for every node, by the chain rule in reverse tape order.

    Accumulation goes through the algebra too, so an algebra that records
    instead of computing turns this very loop into a builder of gradient
    graphs (tests/test_higher_order.py differentiates twice that way).

    A node passes gradients on only once one has reached it, as in PyTorch:
    a binding the output never uses, whose local derivative is inf, must not
    turn an input's gradient into nan through 0 * inf. Such nodes get 0, and
    so does an argument whose every rule said None (a comparison's).
    """
    output = graph.output if output is None else output
    if graph.branches and algebra is not NUMBERS:
        if _over_rows(algebra):
            return _backward_live_rows(graph, values, output, algebra)
        return _backward_masking_branches(graph, values, output, algebra)
    nodes = graph.nodes
    grads = [None] * len(nodes)
    grads[output] = 1.0
    rules, k, add = RULES, algebra, algebra.add
    # pullback(), inlined and unrolled by arity: this loop is the hot path of
    # every gradient, and the general call costs 4x on a big sum.
    for i in range(output, -1, -1):
        g, args = grads[i], nodes[i].args
        if g is None or not args:
            continue
        if len(args) == 1:
            a = args[0]
            da = rules[nodes[i].op](k, g, values[i], values[a])[0]
            if da is not None:
                grads[a] = da if grads[a] is None else add(grads[a], da)
        elif len(args) == 2:
            a, b = args
            da, db = rules[nodes[i].op](k, g, values[i], values[a], values[b])
            if da is not None:
                grads[a] = da if grads[a] is None else add(grads[a], da)
            if db is not None:
                grads[b] = db if grads[b] is None else add(grads[b], db)
        else:
            for a, da in zip(args, pullback(graph, i, g, values, algebra)):
                if da is not None:
                    grads[a] = da if grads[a] is None else add(grads[a], da)
    return [0.0 if g is None else g for g in grads]


def _over_rows(algebra):
    """Whether the algebra computes over many points at once (batch.py's
    arrays: an input becomes an array), rather than recording a graph."""
    coerce = getattr(algebra, 'coerce', None)
    return coerce is not None and hasattr(coerce(0.0), 'shape')


def _backward_live_rows(graph, values, output, algebra):
    """backward() over arrays, where both branches of each `if` ran in every row.

    At a single point, a node of an untaken branch gets no gradient at all,
    so it passes none on, and a node outside the branch gets nothing through
    it. Row by row, the same: live[i] says in which rows a gradient has
    reached node i (True for all rows, False for none, else a boolean array).
    grads[i] is exact in those rows and anything at all elsewhere (the `if`
    sends the untaken branch 0, and 0 * nan is nan): those rows are left out
    where a gradient meets another from other rows, after the rules, never
    multiplied away before them. A row left out adds -0.0, the one number
    whose addition changes nothing (0.0 + -0.0 is 0.0, -0.0 + -0.0 is -0.0),
    so each row sums exactly what its single point sums, in the same order;
    and a row no gradient ever reached gets 0.0, as the point does.

    A node reached in the same rows from everywhere (all rows, in a program
    whose `if`s all go one way, or one branch's rows inside that branch) pays
    no mask; only where rows of different branches meet does it cost one.
    """
    nodes = graph.nodes
    grads, live = [None] * len(nodes), [False] * len(nodes)
    grads[output], live[output] = 1.0, True
    where, add = algebra.where, algebra.add
    for i in range(output, -1, -1):
        g, args = grads[i], nodes[i].args
        if g is None or not args:
            continue
        rows = live[i]
        if nodes[i].op == 'if':     # each branch: the live rows that take it (nan takes then)
            condition = values[args[0]]
            reach = (False, _settle(rows & (condition != 0)), _settle(rows & (condition == 0)))
        else:
            reach = (rows,) * len(args)
        for a, da, rows_a in zip(args, pullback(graph, i, g, values, algebra), reach):
            if da is None or rows_a is False:
                continue
            before, live_before = grads[a], live[a]
            if before is None:
                grads[a], live[a] = da, rows_a
            elif live_before is rows_a:
                grads[a] = add(before, da)
            else:
                if live_before is not True:
                    before = where(live_before, before, -0.0)
                if rows_a is not True:
                    da = where(rows_a, da, -0.0)
                grads[a], live[a] = add(before, da), _union(live_before, rows_a)
    return [0.0 if g is None else g if rows is True else where(rows, g, 0.0)
            for g, rows in zip(grads, live)]


def _settle(rows):
    """A row mask as True (every row), False (none) or the boolean array."""
    if getattr(rows, 'ndim', 0) == 0:
        return bool(rows)
    return True if rows.all() else rows if rows.any() else False


def _union(rows, more):
    if rows is True or more is True:
        return True
    both = rows | more
    return True if both.all() else both


def _backward_masking_branches(graph, values, output, algebra):
    """backward() over a recording algebra (derive/, pictures/), where both
    branches of each `if` are recorded.

    The `if` rule gates what each branch receives by the condition, but
    inside the branch not taken 0 * inf is nan all the same. So whatever
    leaves a branch for a node outside it (an input, or a node computed
    before the `if`) is recorded masked by that condition: a branch's inf or
    nan never reaches a gradient outside it. (derive/'s printed derivatives
    are these very nodes; arrays go through _backward_live_rows instead.)
    """
    nodes = graph.nodes
    ranges = []     # (start, end, mask) of each branch, in tape order of the `if`s
    for branch in graph.branches:
        taken = algebra.ne(values[branch.condition], 0.0)
        ranges.append((branch.then_start, branch.else_start, taken))
        ranges.append((branch.else_start, branch.end, algebra.eq(taken, 0.0)))
    innermost, outer = _nesting(ranges, len(nodes))
    grads = [None] * len(nodes)
    grads[output] = 1.0
    for i in range(output, -1, -1):
        g = grads[i]
        if g is None or not nodes[i].args:
            continue
        for a, da in zip(nodes[i].args, pullback(graph, i, g, values, algebra)):
            if da is None:
                continue
            # The ranges around node i, innermost first, up to the first that
            # also holds `a` (every range outside that one holds it too).
            r, is_input = innermost[i], nodes[a].op == 'input'
            while r is not None:
                start, end, mask = ranges[r]
                if start <= a < end and not is_input:
                    break
                da = algebra.where(mask, da, 0.0)
                r = outer[r]
            grads[a] = da if grads[a] is None else algebra.add(grads[a], da)
    return [0.0 if g is None else g for g in grads]


def _nesting(ranges, count):
    """(innermost range around each node or None, the range just outside each range).

    Branch ranges nest (lowering emits an `if` whole inside the branch that
    holds it), so the ranges around a node form one chain: walking it costs
    what it masks, where listing every range at every node would take time
    quadratic in the depth of nested `if`s."""
    innermost, outer = [None] * count, [None] * len(ranges)
    order = sorted((r for r, (start, end, _) in enumerate(ranges) if start < end),
                   key=lambda r: (ranges[r][0], -ranges[r][1], -r))
    open_ranges, k = [], 0
    for i in range(count):
        while open_ranges and ranges[open_ranges[-1]][1] <= i:
            open_ranges.pop()
        while k < len(order) and ranges[order[k]][0] == i:
            r = order[k]
            if open_ranges:
                assert ranges[r][1] <= ranges[open_ranges[-1]][1], 'branch ranges must nest'
                outer[r] = open_ranges[-1]
            open_ranges.append(r)
            k += 1
        if open_ranges:
            innermost[i] = open_ranges[-1]
    return innermost, outer


def receives_gradient(graph):
    """Which nodes have a gradient worth showing: as in PyTorch, those the
    output depends on and that depend on some input.

    backward() gives constants numbers too, as the chain rule runs through
    them (∂f/∂2 in x^2); PyTorch computes none for them, and a learner gains
    nothing from ∂loss/∂2 = nan, so tables and pictures leave them out.
    """
    nodes = graph.nodes
    varies = [False] * len(nodes)
    for i, node in enumerate(nodes):
        args = node.args
        if len(args) == 1:     # unrolled by arity: any() costs a generator per node
            varies[i] = varies[args[0]]
        elif len(args) == 2:
            varies[i] = varies[args[0]] or varies[args[1]]
        else:
            varies[i] = node.op == 'input' or any(varies[a] for a in args)
    reached = [False] * len(nodes)
    reached[graph.output] = True
    for i in range(graph.output, -1, -1):
        if reached[i]:
            for a in _gradient_args(nodes[i]):
                reached[a] = True
    return [v and r for v, r in zip(varies, reached)]


# The arguments a gradient can reach through, for ops whose rule answers
# None for some: no comparison's, not an `if`'s condition, and of a block
# with a declared derivative only its arguments, not its body or partials.
_NO_GRADIENT = frozenset(('lt', 'le', 'gt', 'ge', 'eq', 'ne', 'and', 'or', 'not',
                          'stop_gradient'))


def _gradient_args(node):
    op, args = node.op, node.args
    if op in _NO_GRADIENT:
        return ()
    if op == 'if':
        return args[1:]
    if op == 'custom':
        return args[len(args) // 2 + 1:]
    return args


def first_nonfinite(values):
    """Id of the first node whose value is inf or nan, or None."""
    total = sum(values)   # in C, a fifth of the loop's time: finite, the loop is not needed
    if total - total == 0:
        return None
    for i, value in enumerate(values):
        if not math.isfinite(value):
            return i
    return None


def check_names(graph, names):
    """Raise for a name that is not an input of the graph."""
    for name in names:
        if name not in graph.inputs:
            hint = did_you_mean(name, graph.inputs)
            raise AdgradError(f"'{name}' is not a variable of the expression{hint}")


__all__ = ['forward', 'backward', 'pullback', 'executed', 'first_nonfinite', 'check_names', 'NumericalError']
