"""`render --unroll`: a small array program as its graph of numbers, every
entry of every array a node of its own, so that a network of matrices can be
drawn neuron by neuron, as a textbook draws it.

`unroll(graph, point)` walks the array tape once and writes each array op as
the scalar ops that compute its entries: a matrix product as sums of
products, a reduction as a chain of adds, softmax and logsumexp as the stable
formulas arrays.py computes. Entries of a named array are named as the
language indexes them (`h[0]`, `W1[2,0]`); every other node's text is its
formula in its arguments' names. The result is an ordinary Graph with its
own source text: every picture, step and page of numbers takes it as is.
"""

from ..core.graph import Graph, Node
from ..core.primitives import PRIMITIVES, TENSOR
from ..errors import UsageError

MOST = 60   # numbers of the unrolled program (inputs and results) past which it is refused
ATOM = 5


class _Numbers:
    """The unrolled tape: its nodes, the source text their spans point into,
    and each node's text and precedence as an argument of the next."""

    def __init__(self, texts=True):
        # The page computes with the nodes and never shows their texts, which
        # grow with a long sum's length: it asks for none.
        self.writes = texts
        self.nodes, self.pieces, self.length = [], [], 0
        self.texts, self.precedence, self.inputs, self.defaults = [], [], {}, {}
        self.constants = {}

    def _add(self, node, text, precedence):
        span = (self.length, self.length + len(text))
        self.pieces.append(text)
        self.length += len(text) + 1            # one line a node
        self.nodes.append(node._replace(span=span))
        self.texts.append(text)
        self.precedence.append(precedence)
        return len(self.nodes) - 1

    def input(self, name, value):
        self.inputs[name] = len(self.nodes)
        self.defaults[name] = float(value)
        return self._add(Node('input', name=name), name, ATOM)

    def const(self, value):
        value = float(value)
        found = self.constants.get(value.hex())
        if found is None:
            from ..derive.printers import adgrad_number
            text, precedence = adgrad_number(value)
            found = self.constants[value.hex()] = self._add(Node('const', value=value), text,
                                                            precedence)
        return found

    def op(self, name, *args):
        from ..derive.printers import written
        text, precedence = written(name, [(self.texts[a], self.precedence[a]) for a in args]) \
            if self.writes else ('', ATOM)
        return self._add(Node(name, tuple(args)), text, precedence)

    def name(self, i, name):
        """Node i is the program's `name` (an entry of a binding): later texts use it."""
        self.nodes[i] = self.nodes[i]._replace(name=name)
        self.texts[i], self.precedence[i] = name, ATOM

    def total(self, ids):
        """ids added left to right: one chain of adds, as a sum is written."""
        result = ids[0]
        for i in ids[1:]:
            result = self.op('add', result, i)
        return result

    def graph(self, output, source):
        return Graph(self.nodes, output, self.inputs, self.defaults, '\n'.join(self.pieces),
                     notes=(f'unrolled from: {" ".join(source.split())[:200]}',))


def unroll(graph, point, most=MOST, option='--unroll'):
    """(the graph of numbers, its point: a value per entry of each input).
    A UsageError, in one line, for a program of numbers, an input without a
    value, past `most` numbers or for an op that has no entry-by-entry form
    here (det, inv, solve); `option` is what the caller calls unrolling."""
    from ..core.graph import is_array_program
    if not is_array_program(graph, point):
        raise UsageError(f'{option} writes an array program entry by entry; this one is of '
                         'numbers already')
    missing = [name for name in graph.inputs if name not in point]
    if missing:
        raise UsageError(f"{option} needs a value for every input, and '{missing[0]}' has "
                         'none: give it as NAME=VALUE')
    numbers, at, _, _ = _unrolled(graph, point, most, _PICTURE)
    return numbers, at


def entries(graph, point, most):
    """For the interactive page: (the graph of numbers, its point, each
    node's entries, each use's entries). Every argument of an array op is
    first copied (pos), entry by entry, so the gradient of a copy is what
    flowed back along that one use, and of a node's entries its own."""
    return _unrolled(graph, point, most, _PAGE, copies=True)


# Who unrolls, what it does, and the way out, for the one-line refusals.
_PICTURE = ('--unroll', 'draws', 'draw it as arrays, without --unroll')
_PAGE = ('the interactive page', 'computes', 'draw a picture instead (--format svg)')


def _unrolled(graph, point, most, who, copies=False):
    import numpy as np
    from ..core import tensors
    if graph.loops:   # (a loop's entries would be its every iteration's)
        raise UsageError(f'{who[0]} {who[1]} an array program without loops: {who[2]}')
    values = tensors.evaluate(graph, point)
    count = sum(int(np.size(v)) for node, v in zip(graph.nodes, values) if node.op != 'static')
    if count > most:
        raise UsageError(f'{who[0]} {who[1]} a program of at most {most} numbers, and this '
                         f'one has {count}: {who[2]}')
    tape = _Numbers(texts=not copies)
    entries = [None] * len(graph.nodes)   # each node's entries: an object array of ids
    uses = {}                             # (node, position): the copies of that argument
    for i, node in enumerate(graph.nodes):
        value = values[i]
        if node.op == 'static':
            continue
        if node.op == 'input':
            entries[i] = _each(np.shape(value), lambda k, v=value, n=node.name: tape.input(
                _entry(n, k, np.ndim(v)), np.asarray(v)[k]))
        elif node.op == 'const':
            entries[i] = _each(np.shape(value), lambda k, v=value: tape.const(np.asarray(v)[k]))
        else:
            given = entries
            if copies:
                given = list(entries)
                for position, a in enumerate(node.args):
                    if graph.nodes[a].op != 'static':
                        given[a] = uses[i, position] = _each(
                            np.shape(entries[a]), lambda k, e=entries[a]: tape.op('pos', e[k]))
            start = len(tape.nodes)
            entries[i] = _apply(tape, graph, i, given, values, who)
            if copies:   # a view (x.T, a[0]) is its argument's copies; a constant is no node's
                seen = set()
                for k in np.ndindex(np.shape(entries[i])):
                    e = entries[i][k]
                    if e < start or e in seen:
                        entries[i][k] = e = tape.op('pos', e)
                    seen.add(e)
        if node.name is not None and node.op != 'input':
            shape = np.shape(entries[i])
            for k in np.ndindex(shape):
                if tape.nodes[entries[i][k]].op not in ('input', 'const'):
                    tape.name(entries[i][k], _entry(node.name, k, len(shape)))
    out = entries[graph.output]
    if np.size(out) != 1:
        raise UsageError(f'{who[0]} {who[1]} a program whose output is one number')
    return tape.graph(int(np.ravel(out)[0]), graph.source), dict(tape.defaults), entries, uses


def _entry(name, k, ndim):
    """h[0], W1[2,0]: an entry as the language indexes it; a number keeps its name."""
    return name if ndim == 0 else f'{name}[{",".join(map(str, k))}]'


def _each(shape, make):
    import numpy as np
    result = np.empty(shape, dtype=object)
    for k in np.ndindex(shape):
        result[k] = make(k)
    return result


def _apply(tape, graph, i, entries, values, who=_PICTURE):
    """The entries of node i, from its arguments' entries."""
    import numpy as np
    node = graph.nodes[i]
    row = PRIMITIVES[node.op]
    args = [entries[a] if graph.nodes[a].op != 'static' else graph.nodes[a].value
            for a in node.args]
    if row.kind != TENSOR:   # entry by entry, broadcast as NumPy broadcasts
        spread = np.broadcast_arrays(*[np.asarray(a, dtype=object) for a in args])
        return _each(spread[0].shape, lambda k: tape.op(node.op, *[s[k] for s in spread]))
    form = _TENSOR_FORMS.get(node.op)
    if form is None:
        raise UsageError(f'{who[0]} cannot write {node.op} entry by entry: {who[2]}')
    return np.asarray(form(tape, *args), dtype=object)


# ---- the array ops, entry by entry ----

def _matmul(tape, a, b):
    import numpy as np
    if a.ndim > 2 or b.ndim > 2:
        raise UsageError('--unroll draws matrices and vectors, not stacks of them')
    left = a.reshape(1, -1) if a.ndim == 1 else a
    right = b.reshape(-1, 1) if b.ndim == 1 else b
    product = _each((left.shape[0], right.shape[1]), lambda k: tape.total(
        [tape.op('mul', left[k[0], j], right[j, k[1]]) for j in range(left.shape[1])]))
    shape = a.shape[:-1] + b.shape[1:] if b.ndim == 2 else a.shape[:-1]
    return product.reshape(shape)


def _reduce(combine):
    def form(tape, a, axis):
        return _along(a, axis, lambda ids: combine(tape, list(ids)))
    return form


def _along(a, axis, reduce):
    """reduce(entries) over every entry (axis None) or along one axis."""
    import numpy as np
    if axis is None:
        return np.asarray(reduce(a.ravel().tolist()), dtype=object)
    moved = np.moveaxis(a, axis, -1)
    return _each(moved.shape[:-1], lambda k: reduce(moved[k].tolist()))


def _chain(op):
    return lambda tape, ids: ids[0] if len(ids) == 1 else _fold(tape, op, ids)


def _fold(tape, op, ids):
    result = ids[0]
    for i in ids[1:]:
        result = tape.op(op, result, i)
    return result


def _mean(tape, ids):
    return tape.op('div', tape.total(ids), tape.const(len(ids)))


def _norm(tape, a, order):
    ids = a.ravel().tolist()
    if order == 1:
        return tape.total([tape.op('abs', i) for i in ids])
    return tape.op('sqrt', tape.total([tape.op('mul', i, i) for i in ids]))


def _logsumexp(tape, a, axis):
    def stable(ids):   # the largest out first, as arrays.logsumexp
        top = _fold(tape, 'max', ids)
        return tape.op('add', tape.op('log', tape.total(
            [tape.op('exp', tape.op('sub', i, top)) for i in ids])), top)
    return _along(a, axis, stable)


def _softmax(tape, a, axis):
    import numpy as np
    moved = np.moveaxis(a, -1 if axis is None else axis, -1)
    if axis is None:
        moved = a.reshape(1, -1)
    result = np.empty(moved.shape, dtype=object)
    for k in np.ndindex(moved.shape[:-1]):
        ids = moved[k].tolist()
        top = _fold(tape, 'max', ids)
        e = [tape.op('exp', tape.op('sub', i, top)) for i in ids]
        total = tape.total(e)
        result[k] = np.asarray([tape.op('div', x, total) for x in e], dtype=object)
    return result.reshape(a.shape) if axis is None else np.moveaxis(result, -1, axis)


def _transpose(tape, a):
    import numpy as np
    return np.swapaxes(a, -1, -2) if a.ndim >= 2 else a


def _outer(tape, a, b):
    return _each((a.size, b.size), lambda k: tape.op('mul', a.ravel()[k[0]], b.ravel()[k[1]]))


def _diag(tape, a):
    import numpy as np
    if a.ndim == 2:
        return np.asarray([a[k, k] for k in range(min(a.shape))], dtype=object)
    zero = tape.const(0.0)
    return _each((a.size, a.size), lambda k: a[k[0]] if k[0] == k[1] else zero)


def _concat(tape, *arrays_and_axis):
    import numpy as np
    *arrays, axis = arrays_and_axis
    return np.concatenate(arrays, axis=axis)


def _stack(tape, *arrays):
    import numpy as np
    return np.stack(arrays)


_TENSOR_FORMS = {
    'matmul': _matmul, 'transpose': _transpose, 'outer': _outer,
    'sum': _reduce(lambda tape, ids: tape.total(ids)), 'mean': _reduce(_mean),
    'prod': _reduce(_chain('mul')), 'amax': _reduce(_chain('max')),
    'amin': _reduce(_chain('min')), 'norm': _norm, 'logsumexp': _logsumexp,
    'softmax': _softmax, 'trace': lambda tape, a: tape.total(
        [a[k, k] for k in range(min(a.shape))]),
    'diag': _diag, 'reshape': lambda tape, a, shape: a.reshape(shape),
    'concat': _concat, 'stack': _stack, 'index': lambda tape, a, key: a[key],
}
