"""Everything the passes do differently because of `if`: one module for it.

Lowering emits each branch of an `if` as a contiguous stretch of the tape
(graph.Branch). Then:
- at a single point, forward runs only the branch taken (`taken`), so the
  other's inf or nan never exists, and `executed` says which nodes ran;
- over arrays every row runs both branches, and `LiveRows` keeps each row's
  gradient to the branch that row took;
- when recording a derivative both branches are recorded, and
  `MaskedBranches` gates what leaves a branch by its condition.
An algebra names its gate as its `meeting` (for_branches); backward() calls it in its one loop.
"""

def for_branches(gate):
    """An algebra's `meeting`: `gate` for a graph with branches, else plain accumulation."""
    def meeting(graph, values, grads, algebra):
        return gate(graph, values, grads, algebra) if graph.branches else None
    return meeting


def shifted(branch, by, condition=None):
    """The branch moved `by` places along the tape (its condition to `condition`, if given)."""
    return branch._replace(node=branch.node + by,
                           condition=branch.condition + by if condition is None else condition,
                           then_start=branch.then_start + by, else_start=branch.else_start + by,
                           end=branch.end + by)


# ---- a single point: run only the branch taken ----

def forward_taking_branches(graph, inputs, values, functions):
    """forward() at a single point, skipping each branch its `if` does not take."""
    nodes = graph.nodes
    # Inputs and constants first: an input first named inside a branch is
    # still the whole program's, and a constant condition may come after the
    # branches it chooses between (see lower.conditional).
    for i, node in enumerate(nodes):
        if node.op == 'input':
            values[i] = float(inputs[node.name])
        elif node.op == 'const':
            values[i] = node.value
    for i in taken(graph, values):
        node = nodes[i]
        if node.args:
            values[i] = functions[node.op](*[values[j] for j in node.args])


def taken(graph, values):
    """The tape positions a single point runs, in order. Lazy: a condition is
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
        # Many branches may start at one place (nested `if`s): a flat list,
        # and the walk goes as far as any says, with no depth of calls.
        starts.setdefault(branch.then_start, []).append(then_jump)
        starts.setdefault(branch.else_start, []).append(else_jump)
    return starts


def executed(graph, values):
    """Which nodes ran at this point: all but those in a branch not taken."""
    if not graph.branches or any(getattr(values[b.condition], 'ndim', 0)
                                 for b in graph.branches):
        return [True] * len(graph.nodes)   # an array's `if` runs both sides, entry by entry
    ran = [node.op == 'input' for node in graph.nodes]
    for i in taken(graph, values):
        ran[i] = True
    return ran


# ---- gates: how cotangents meet when both branches ran ----

class LiveRows:
    """Over arrays: each row's gradient stays within the branches that row took.

    live[i]: the rows a gradient has reached node i in (True: all, False:
    none, else a boolean array). grads[i] is exact there and anything
    elsewhere (0 * nan in an untaken branch), so other rows are left out
    where gradients meet, adding -0.0, never multiplied away: each row sums
    what its single point sums, in the same order.
    """

    def __init__(self, graph, values, grads, algebra):
        self.nodes, self.values, self.grads = graph.nodes, values, grads
        self.where, self.add = algebra.where, algebra.add
        self.live = [g is not None for g in grads]   # the seeded output: every row

    def __call__(self, i, args, cotangents):
        rows = self.live[i]
        if self.nodes[i].op == 'if':   # each branch: the live rows that take it (nan takes then)
            condition = self.values[args[0]]
            reach = (False, _settle(rows & (condition != 0)), _settle(rows & (condition == 0)))
        else:
            reach = (rows,) * len(args)
        for a, da, rows_a in zip(args, cotangents, reach):
            self.give(a, da, rows_a)

    def give(self, a, da, rows_a):
        """Add to node a's gradient a cotangent exact in the rows `rows_a`."""
        grads, live, where = self.grads, self.live, self.where
        if da is None or rows_a is False:
            return
        before, live_before = grads[a], live[a]
        if before is None:
            grads[a], live[a] = da, rows_a
        elif live_before is rows_a:
            grads[a] = self.add(before, da)
        else:
            if live_before is not True:
                before = where(live_before, before, -0.0)
            if rows_a is not True:
                da = where(rows_a, da, -0.0)
            grads[a], live[a] = self.add(before, da), _union(live_before, rows_a)

    def result(self):
        where = self.where
        return [0.0 if g is None else g if rows is True else where(rows, g, 0.0)
                for g, rows in zip(self.grads, self.live)]


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


class MaskedBranches:
    """When recording: what leaves a branch for a node outside it is gated by
    that branch's condition, so a branch's inf or nan (0 * inf in the branch
    not taken) never reaches a gradient outside it. On an exact tape each
    cotangent is gated as it leaves and summed in backward()'s order; else a
    range holds what leaves it until the loop is past it (`due`, `release`)
    and gates the sum once, so nested branches print as a person nests them,
    in size linear in the depth (and an `if` hands its branches g ungated)."""

    def __init__(self, graph, values, grads, algebra):
        self.nodes, self.grads, self.algebra = graph.nodes, grads, algebra
        self.ranges = []     # (start, end, (condition, taken)) of each branch, in tape order of the `if`s
        for branch in graph.branches:
            # Both sides gate on the `if`'s own condition node, as its rule
            # does, the else side as if(c, 0, da): gates of one condition meet.
            condition = values[branch.condition]
            self.ranges.append((branch.then_start, branch.else_start, (condition, True)))
            self.ranges.append((branch.else_start, branch.end, (condition, False)))
        self.innermost, self.outer, outer_first = _nesting(self.ranges, len(graph.nodes))
        # An `if`, the branch's own choice: simplify.py pushes a `where` (a
        # relu's) inside an `if`, and so keeps the outer branch's gate outermost.
        self.choose = getattr(algebra, 'if')
        self.held = None if getattr(algebra, 'exact', False) else {}
        self.due = {}        # tape position -> the ranges to release before reading it, innermost first
        self.entering = {}   # `if` node -> its (then, else) ranges, whose values it hands on ungated
        if self.held is not None:
            for r in reversed(outer_first):
                self.due.setdefault(self.ranges[r][0] - 1, []).append(r)
            for k, branch in enumerate(graph.branches):
                self.entering[branch.node] = (2 * k, 2 * k + 1)

    def _holds(self, r, a):
        start, end, _ = self.ranges[r]
        return start <= a < end and self.nodes[a].op != 'input'

    def __call__(self, i, args, cotangents):
        grads, algebra, held = self.grads, self.algebra, self.held
        if i in self.entering:
            g = grads[i]
            cotangents = [None] + [g if da is not None and self._holds(r, a) else da
                                   for a, da, r in zip(args[1:], cotangents[1:], self.entering[i])]
        for a, da in zip(args, cotangents):
            if da is None:
                continue
            # The ranges around node i, innermost first, up to the first that
            # also holds `a` (every range outside that one holds it too).
            r = self.innermost[i]
            if held is not None:
                if r is not None and not self._holds(r, a):
                    self._hold(r, a, da)
                    continue
            else:
                while r is not None and not self._holds(r, a):
                    da = self._gated(r, da)
                    r = self.outer[r]
            grads[a] = da if grads[a] is None else algebra.add(grads[a], da)

    def _gated(self, r, da):
        condition, taken = self.ranges[r][2]
        return self.choose(condition, da, 0.0) if taken else self.choose(condition, 0.0, da)

    def _hold(self, r, a, da):
        pending = self.held.setdefault(r, {})
        pending[a] = da if a not in pending else self.algebra.add(pending[a], da)

    def release(self, position):
        """Gate and pass on what the ranges due before `position` hold."""
        grads, add = self.grads, self.algebra.add
        for r in self.due[position]:
            outer = self.outer[r]
            for a, da in self.held.pop(r, {}).items():
                da = self._gated(r, da)
                if outer is not None and not self._holds(outer, a):
                    self._hold(outer, a, da)
                else:
                    grads[a] = da if grads[a] is None else add(grads[a], da)

    def result(self):
        if -1 in self.due:      # ranges that start the tape: the loop never passes them
            self.release(-1)
        return [0.0 if g is None else g for g in self.grads]


def _nesting(ranges, count):
    """(innermost range around each node or None, the range just outside each
    range, the non-empty ranges outermost first where they start together).

    Branch ranges nest, so the ranges around a node form one chain: walking
    it costs what it masks, not the depth of the nesting at every node."""
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
    return innermost, outer, order
