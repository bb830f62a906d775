"""A gradient check: reverse mode against finite differences, per variable.

Each variable gets its own step, h = 2^-10 · max(1, |x|) (a power of two, so
that x ± h is exact; never smaller than 2^-10, so that a subnormal x still
gets a stencil that means something), and the derivative is the central
difference D(h) = (f(x+h) - f(x-h)) / 2h improved by one Richardson step,
R = (4 D(h/2) - D(h)) / 3, whose error falls as h⁴ instead of h². The
difference |R - D(h/2)| estimates what is left of the truncation error, and
the rounding error of f over h the rest (see _noise: in ulps, not ε·|f|, so
that among subnormals and where f is 0 a rounding is a whole 5e-324); an
agreement within those (or within 1e-6 relative) passes. Where the
differences have not settled at that step, smaller ones are tried; where
they cannot settle (rounding outweighs them, or they never converge) the
check warns.

Finite differences cannot be trusted everywhere, and the check says so
instead of failing: where the function or the gradient is not finite, where
a probe point leaves the domain (the function is finite at x but not at
x ± h), and at a kink or a jump, which is found exactly, not guessed: at some
probe point an `if` takes another branch than at x, or a node takes another
piece than at x. Which nodes have pieces is read off the table of
primitives, not listed by hand (see _kind): an op whose rule passes no
gradient and whose value is locally constant is a step (a comparison,
floor, sign...); one whose rule gives its first argument none but the
others some chooses by that argument (`if`, `where`); one whose rule orders
its arguments (lt, ge, sign: abs, relu, min, max, clamp...) has a kink
where that ordering flips and the flip changes what the rule gives.
"""

import math
from types import SimpleNamespace
from typing import NamedTuple

from ..core.passes import RULES, backward, executed, forward
from ..core.primitives import COMPARISON, NUMBERS, PRIMITIVES, STEP, TENSOR

RTOL = 1e-6
# What a rule can ask about the order of its arguments: <, <=, >, >=, and the steps (sign).
_ORDERINGS = tuple(name for name, row in PRIMITIVES.items()
                   if row.kind == STEP or row.kind == COMPARISON and set(row.symbol) & set('<>'))
_SAMPLES = (0.7, 1.3, 0.4)   # arguments at which no op is at a kink or a tie


class Row(NamedTuple):
    what: str            # 'x', or 'x,y' for a Hessian entry
    ad: float
    fd: float
    abs_error: float
    rel_error: float
    verdict: str         # 'pass', 'FAIL' or 'warn'
    reason: str = ''


class _Noting:
    """The numbers algebra, but each ordering comparison a rule makes is
    noted, and the one numbered `flip` is answered the other way: a rule run
    once per flip shows which of its comparisons decide what it gives."""

    def __init__(self):
        self.seen, self.flip = [], None
        self.algebra = SimpleNamespace(**vars(NUMBERS))
        for name in _ORDERINGS:
            setattr(self.algebra, name, self._noted(getattr(NUMBERS, name)))

    def _noted(self, function):
        def compare(*args):
            result = function(*args)
            if len(self.seen) == self.flip:
                result = 0.0 if result else 1.0
            self.seen.append(result)
            return result
        return compare

    def run(self, rule, args, flip=None):
        self.seen, self.flip = [], flip
        cotangents = rule(self.algebra, 1.0, *args)
        return cotangents, self.seen


_KINDS = {}


def _kind(op):
    """'step', 'choice', 'kink', 'stop' or 'smooth', from the op's row."""
    if op not in _KINDS:
        row = PRIMITIVES[op]
        kind = 'smooth'
        if row.arity > 0 and row.kind != TENSOR and row.forward is not None:   # numbers only
            args = _SAMPLES[:row.arity]
            cotangents, seen = _Noting().run(row.vjp, (row.forward(*args),) + args)
            given = [c is not None and c != 0.0 for c in cotangents]
            if not any(given):
                nudged = row.forward(*[a + 0.01 for a in args])
                kind = 'step' if nudged == row.forward(*args) else 'stop'
            elif not given[0] and any(given[1:]) and cotangents[0] is None:
                kind = 'choice'
            elif seen:
                kind = 'kink'
        _KINDS[op] = kind
    return _KINDS[op]


def _varies(graph, name):
    """Whether each node depends on the variable `name`: what a rule gives
    any other argument does not move ∂f/∂name."""
    source, varies = graph.inputs[name], []
    for i, node in enumerate(graph.nodes):
        varies.append(i == source or any(varies[a] for a in node.args))
    return varies


def _same(a, b):
    if a is None or b is None:
        return a is b
    return a == b or (a != a and b != b)


def _deciding(graph, i, values, varies, noting):
    """The comparisons in node i's rule that decide what a varying argument
    receives, with their answers: which piece of the op node i is on."""
    node = graph.nodes[i]
    args = (values[i],) + tuple(values[a] for a in node.args)
    rule = RULES[node.op]
    base, seen = noting.run(rule, args)
    seen = list(seen)
    deciding = []
    for j in range(len(seen)):
        flipped, _ = noting.run(rule, args, flip=j)
        if any(varies[a] and not _same(c, d) for a, c, d in zip(node.args, base, flipped)):
            deciding.append((j, seen[j]))
    return tuple(deciding)


def _pieces(graph, values, varies, noting):
    """Which branch every `if` took and which piece every non-smooth node is
    on: equal at two points when no kink or jump lies between them."""
    ran = executed(graph, values)
    pieces, stopped = [tuple(ran)], []
    for i, node in enumerate(graph.nodes):
        if not ran[i] or not varies[i]:
            continue
        kind = _kind(node.op) if node.args else 'smooth'
        if kind == 'step':
            pieces.append((i, values[i] if values[i] == values[i] else 'nan'))
        elif kind == 'choice':
            pieces.append((i, bool(values[node.args[0]])))
        elif kind == 'kink':
            pieces.append((i, _deciding(graph, i, values, varies, noting)))
        elif kind == 'stop':
            stopped.append(values[i])
    return tuple(pieces), tuple(stopped)


def step(x):
    return 2.0 ** -10 * max(1.0, abs(x))


_OFFSETS = (-1.0, -0.5, 0.5, 1.0)   # the stencil, in steps


def _richardson(probes, h):
    """(R, its error estimate) from {offset in steps: value}."""
    wide = (probes[1.0] - probes[-1.0]) / (2 * h)
    narrow = (probes[0.5] - probes[-0.5]) / h
    extrapolated = (4 * narrow - wide) / 3
    return extrapolated, abs(extrapolated - narrow)


def _compare(what, ad, fd, estimate, noise, h, distrust):
    error = abs(ad - fd)
    relative = error / max(abs(ad), abs(fd)) if max(abs(ad), abs(fd)) > 0 else 0.0
    if distrust:
        return Row(what, ad, fd, error, relative, 'warn', distrust)
    if not math.isfinite(ad):
        return Row(what, ad, fd, error, relative, 'warn', 'the derivative is not finite')
    tolerance = max(RTOL * max(abs(ad), abs(fd)), 10 * estimate, 100 * noise / h)
    return Row(what, ad, fd, error, relative, 'pass' if error <= tolerance else 'FAIL')


class _Stencil(NamedTuple):
    h: float
    values: dict         # offset in steps -> every node's value there
    distrust: str        # why differences cannot be trusted here, or ''


def _stencil(graph, point, name, centre, h):
    """Every node's value at x ± h, x ± h/2 along `name`, and whether the
    differences of those values can be trusted."""
    varies = _varies(graph, name)
    values = {d: forward(graph, {**point, name: point[name] + d * h}) for d in _OFFSETS}
    if not math.isfinite(centre[graph.output]):
        return _Stencil(h, values, 'the function is not finite here')
    if any(not math.isfinite(v[graph.output]) for v in values.values()):
        return _Stencil(h, values, 'near a domain edge or an overflow: not finite within ±h')
    noting = _Noting()
    pieces, stopped = _pieces(graph, centre, varies, noting)
    for moved in values.values():
        there, stopped_there = _pieces(graph, moved, varies, noting)
        if there != pieces:
            return _Stencil(h, values, 'a kink or a jump: a branch, comparison or non-smooth '
                                       'operation switches within ±h')
        if stopped_there != stopped:
            return _Stencil(h, values, 'stop_gradient: reverse mode is told to ignore a value '
                                       'that moves within ±h')
    return _Stencil(h, values, '')


def check_gradient(graph, point, names=None):
    """One Row per variable: reverse mode against finite differences."""
    names = list(graph.inputs) if names is None else list(names)
    values = forward(graph, point)
    grads = backward(graph, values)
    noise = _noise(graph, values, grads)
    return [_check_variable(graph, point, name, values, grads[graph.inputs[name]], noise)
            for name in names]


def _noise(graph, values, grads):
    """How far rounding may move one evaluation of f: each node's last-place
    error times how much f depends on that node (the running error bound).
    It is what cancellation (x + 1e16) - 1e16 loses, and among subnormals a
    whole 5e-324 however small f is."""
    total = math.ulp(values[graph.output])
    for i, ran in enumerate(executed(graph, values)):
        if ran and graph.nodes[i].args:
            term = abs(grads[i]) * math.ulp(values[i])
            if math.isfinite(term):
                total += term
    return total


def _check_variable(graph, point, name, values, ad, noise):
    """Differences at the step of step(x) and, while they have not settled
    (near a pole or a domain edge f changes on a scale finer than h, and the
    error estimate would then excuse any answer), at steps 16, 256 and 4096
    times smaller: a verdict either way, or a warning that they never did."""
    h = step(point[name])
    for _ in range(4):
        stencil = _stencil(graph, point, name, values, h)
        outputs = {d: v[graph.output] for d, v in stencil.values.items()}
        fd, estimate = _richardson(outputs, h)
        worst = max(noise, *(math.ulp(f) for f in outputs.values()))
        distrust = stencil.distrust or _unsettled(ad, fd, estimate, worst, h)
        if not distrust.startswith(_UNSETTLED):
            break
        h /= 16
    return _compare(name, ad, fd, estimate, worst, h, distrust)


_UNSETTLED = 'finite differences do not settle'


def _unsettled(ad, fd, estimate, noise, h):
    """Why the differences cannot tell a right derivative from one 1% off,
    where they and reverse mode do not already agree to 1e-6; or ''."""
    if not (math.isfinite(fd) and math.isfinite(estimate)):
        return 'finite differences overflow: the function is too large within ±h'
    error, rounding = abs(ad - fd), 100 * noise / h
    if error <= RTOL * max(abs(ad), abs(fd)):
        return ''
    if error <= rounding:
        return ('below what finite differences resolve: rounding in f (subnormal values '
                'or cancellation) outweighs the difference over ±h')
    if 10 * estimate > max(0.01 * abs(fd), rounding):
        return (_UNSETTLED + ': the function changes too fast for the step '
                '(a pole or a domain edge near?)')
    return ''


def check_hessian(graph, point, names=None):
    """One Row per Hessian entry: forward over reverse against finite
    differences of the reverse-mode gradient."""
    from .hessian import hessian
    names = list(graph.inputs) if names is None else list(names)
    matrix = hessian(graph, point, names)
    centre = forward(graph, point)
    rows = []
    for j, column in enumerate(names):
        stencil = _stencil(graph, point, column, centre, step(point[column]))
        probes = {}
        for d, moved in stencil.values.items():
            grads = backward(graph, moved)
            probes[d] = [grads[graph.inputs[n]] for n in names]
        for i, row_name in enumerate(names):
            fd, estimate = _richardson({d: p[i] for d, p in probes.items()}, stencil.h)
            noise = max(math.ulp(p[i]) for p in probes.values())
            distrust = stencil.distrust
            if not distrust and not (math.isfinite(fd) and math.isfinite(estimate)):
                distrust = 'finite differences overflow: the gradient is too large within ±h'
            rows.append(_compare(f'{row_name},{column}', matrix[i][j], fd, estimate,
                                 noise, stencil.h, distrust))
    return rows
