"""Which values the backward pass reads: torch's saved tensors, from the table.

A derivative rule reads some of its node's values: tanh's its output, a
product's both arguments, a sum's none (∂(a + b) = g, g). Only those, the
inputs and constants, and what an `if` tests need keeping for backward;
the rest can go as soon as forward has used them. Which ones a rule reads
is not declared anywhere: `saved` runs the rule once per op and shapes over
values that record where they came from (a probe), as JAX finds a
function's residuals by tracing it.
"""

from functools import lru_cache

from .array_rules import Deferred
from .graph import leading_to_inputs
from .primitives import PRIMITIVES, SELECT, names_of

_CHOICES = frozenset(names_of(SELECT))
OUT = -1   # the node's own output, among the positions a rule reads
_READS = {}   # (op, the shapes of its output and arguments, the needless): positions read


class _Traced:
    """A value in a probe and the positions (OUT, 0, 1, ...) it comes from."""
    __slots__ = ('x', 'origins')

    def __init__(self, x, origins):
        self.x, self.origins = x, origins


def _plain(x):
    return x.x if type(x) is _Traced else x


def _probe(algebra, read):
    """`algebra` whose primitives pass on their arguments' origins; reading
    a value itself (k.value) adds its origins to `read`, its shape does not."""
    from types import SimpleNamespace

    def traced(f):
        def run(*xs):
            origins = frozenset().union(*(x.origins for x in xs if type(x) is _Traced))
            return _Traced(f(*map(_plain, xs)), origins)
        return run

    def value(x):
        if type(x) is _Traced:
            read.update(x.origins)
        return _plain(x)
    fields = dict(vars(algebra))
    fields.update({name: traced(fields[name]) for name in PRIMITIVES if name in fields})
    shape = fields.get('shape')
    if shape is not None:
        fields['shape'] = lambda x: shape(_plain(x))
    fields['value'] = value
    return SimpleNamespace(**fields)


def reads(op, out, args, algebra, static=(), needless=frozenset()):
    """The positions whose values op's rule reads (OUT for its output), given
    one example of its values; every position where the probe cannot tell.
    `static`: the positions of plain arguments (an axis, an index);
    `needless`: those no gradient flows through (a constant), whose
    cotangent an algebra that defers (arrays') never computes."""
    if out is None or any(a is None for k, a in enumerate(args) if k not in static):
        return frozenset([OUT, *range(len(args))])   # a value dropped already: no example
    if not _defers(algebra):
        needless = frozenset()   # every cotangent is computed, and reads
    key = (op, _signature(out), tuple(('static', repr(a)) if k in static else _signature(a)
                                      for k, a in enumerate(args)), needless)
    known = _READS.get(key)
    if known is None:
        known = _READS[key] = _run_probe(op, out, args, algebra, static, needless)
    return known


def _signature(x):
    shape = getattr(x, 'shape', None)
    return () if shape is None else tuple(shape)


def _run_probe(op, out, args, algebra, static, needless):
    everything = frozenset([OUT, *range(len(args))])
    read = set()
    k = _probe(algebra, read)
    traced = [a if j in static else _Traced(a, frozenset([j])) for j, a in enumerate(args)]
    try:
        given = PRIMITIVES[op].vjp(k, _Traced(out, frozenset()), _Traced(out, frozenset([OUT])),
                                   *traced)
        for j, g in enumerate(given):
            if type(g) is Deferred:
                if j in needless:
                    continue
                g = g.compute()
            if type(g) is _Traced:
                read.update(g.origins)
            elif g is not None and not isinstance(g, (float, int)):
                return everything   # computed past the probe: it cannot tell
    except Exception:   # noqa: BLE001 - a rule that branches on a value: keep all
        return everything
    return frozenset(read)


def _defers(algebra):
    """Whether the algebra computes a rule's Deferred cotangent only where needed (arrays')."""
    return getattr(algebra, 'deferred', None) is Deferred


def leads_for(graph, algebra):
    """Per node, whether it leads to an input, where `algebra` defers the
    cotangents of those that do not; else None, as nothing is skipped."""
    return leading_to_inputs(graph) if _defers(algebra) else None


def saved(graph, values, algebra, among=None, keep=None, leads=...):
    """Per node of graph, whether backward needs its value kept: an input, a
    constant, a loop or its part, the output, a condition, or a value some
    rule reads. `values`: one run's, for the probe's shapes; `among`: the
    nodes whose rules to ask (all), adding to `keep` if given; `leads`:
    leads_for(graph, algebra), for a caller that asks segment by segment."""
    nodes = graph.nodes
    if keep is None:
        keep = [not node.args or node.op in ('loop', 'part') for node in nodes]
        keep[graph.output] = True
        for branch in graph.branches:
            keep[branch.condition] = True
    if leads is ...:
        leads = leads_for(graph, algebra)
    np = getattr(algebra, 'np', None)
    quiet = np.errstate(all='ignore') if np is not None else _Nothing()
    with quiet:
        for i in range(len(nodes)) if among is None else among:
            node = nodes[i]
            if keep[i] and node.op in ('loop', 'part') or not node.args:
                continue
            if node.op in _CHOICES:
                keep[node.args[0]] = True
            static = frozenset(j for j, a in enumerate(node.args) if nodes[a].op == 'static')
            needless = frozenset() if leads is None else \
                frozenset(j for j, a in enumerate(node.args) if not leads[a])
            for j in reads(node.op, values[i], [values[a] for a in node.args], algebra, static,
                           needless):
                keep[i if j == OUT else node.args[j]] = True
    return keep


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def placeholder(value):
    """A dropped value's stand-in: None, or over arrays a view of one zero in
    its shape, which backward's meetings can read a shape from; one view per
    shape, shared, as it is read only (a loop drops values every iteration)."""
    shape = getattr(value, 'shape', None)
    if not shape:
        return None
    return _zeros(tuple(shape))


@lru_cache(maxsize=256)
def _zeros(shape):
    import numpy as np
    return np.broadcast_to(np.float64(0.0), shape)


def is_placeholder(value):
    shape = getattr(value, 'shape', None)
    return bool(shape) and value is _zeros(tuple(shape))


def unread(loop, values, algebra):
    """The ids of a loop body's values that backward never reads: all but
    saved()'s, the carried values and the outputs (held on anyway)."""
    keep = saved(loop.body, values, algebra)
    for i in list(loop.outputs) + [c for c in loop.carry if c is not None]:
        keep[i] = True
    return tuple(i for i, k in enumerate(keep) if not k)
