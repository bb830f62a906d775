"""The backward pass of an array program, recorded as it runs: the Hessian.

`Trace` is an algebra over arrays that computes each primitive as TENSORS
does (core/tensors.py) and also appends it to a tape of its own, with its
value. Run over it, the one backward loop of passes.py both gives the
gradient and records the gradient's graph. That graph is differentiated again
with the ordinary array algebra, once per entry of the gradient: reverse
over reverse, as torch.autograd.functional.hessian does, so its rules meet
inf, nan and ties as torch's double backward meets them.

The array rules (core/array_rules.py) compute only through the algebra's
primitives, which is what lets a Trace run them. A rule that looks at a value
(det' is 0 where det is; prod's zeros) looks at the value at this point: the
recorded graph is the gradient's at this point, not a formula for all points.
A loop runs over the Trace as over arrays, each iteration recorded: its
slices W[i] and the cotangents they send back to W are nodes too, so the
recording grows with the iterations, as torch's graph of a Python loop does.
"""

import copy

from ..core import loops, tensors
from ..core.graph import Graph, Node
from ..core.passes import backward, forward
from ..core.primitives import PRIMITIVES
from ..errors import AdgradError


class Traced(int):
    """A node of the trace, by id."""
    __slots__ = ()


class Trace:
    """The recording algebra over arrays: each primitive computed and recorded."""

    meeting = tensors.Unbroadcast
    deferred = tensors.Deferred   # computed only for an argument that needs one
    higher_order = True   # a rule takes the form torch takes under create_graph

    def __init__(self, wanted=None):
        self.forms = tensors.algebra()
        self.np = self.forms.np
        self.wanted = wanted
        self.nodes, self.values, self.inputs = [], [], {}

    def value(self, x):
        return self.values[x] if type(x) is Traced else x

    def coerce(self, x):
        """An input's value, as forward() asks of a body's (traced already) or the index's."""
        return x if type(x) is Traced else self.forms.coerce(x)

    # A loop's W[i], and the cotangent W gets from its slices', recorded as any
    # op is (loops.py indexes W, and adds into its cotangent in place, elsewhere).
    def take_slice(self, stacked, t):
        return self.apply('index', stacked, (t,))

    def gather_slices(self, slices, stacked):
        """W's cotangent from {i: W[i]'s}: one stack, zeros where none came."""
        shape = self.shape(stacked)
        zeros = self.np.zeros(shape[1:])
        return self.apply('stack', *[slices.get(i, zeros) for i in range(shape[0])])

    def wanting(self, names):
        """This trace, recording to the same tape, with only `names` wanted."""
        narrowed = copy.copy(self)
        narrowed.wanted = names
        return narrowed

    def shape(self, x):
        return tensors.shape_of(self.value(x))

    def input(self, name, value):
        self.inputs[name] = Traced(len(self.nodes))
        self.nodes.append(Node('input', name=name))
        self.values.append(self.forms.coerce(value))
        return self.inputs[name]

    def apply(self, op, *args):
        """op of args: a plain value where no argument is traced, else a new node."""
        function = getattr(self.forms, op)
        if not any(type(a) is Traced for a in args):
            return function(*args)
        value = function(*[self.value(a) for a in args])
        ids = tuple(a if type(a) is Traced else self._constant(a) for a in args)
        self.nodes.append(Node(op, ids))
        self.values.append(value)
        return Traced(len(self.nodes) - 1)

    def _constant(self, x):
        """A node for a plain argument: a number or array is a constant; an
        axis, a shape or a key (int, tuple, slice, None) a static argument."""
        number = isinstance(x, (float, self.np.ndarray, self.np.floating))
        self.nodes.append(Node('const' if number else 'static', value=x))
        self.values.append(x)
        return len(self.nodes) - 1

    def branches(self, condition, g):
        return self.apply('if', condition, g, 0.0), self.apply('if', condition, 0.0, g)

    def graph(self, output, source=''):
        return Graph(self.nodes, output, dict(self.inputs), {}, source, shapes={})


def _method(name):
    return lambda trace, *args: trace.apply(name, *args)


for _name in PRIMITIVES:
    if _name not in vars(Trace):
        setattr(Trace, _name, _method(_name))


def recorded_gradient(graph, point, names):
    """(the trace, the gradient's node or plain value per name), at `point`."""
    trace = Trace(frozenset(names))
    values = []
    with trace.np.errstate(all='ignore'):   # IEEE results, as evaluation's
        for node in graph.nodes:
            if node.op == 'input':
                values.append(trace.input(node.name, point[node.name]))
            elif node.op == 'loop':   # (before `not args`: a body may read nothing from outside)
                values.append(loops.run(node.value, [values[a] for a in node.args], trace,
                                        forward=forward))
            elif not node.args:
                values.append(node.value)
            elif node.op == 'part':
                values.append(values[node.args[0]].outputs[node.value])
            else:
                values.append(trace.apply(node.op, *[values[a] for a in node.args]))
        grads = backward(graph, values, algebra=trace)
    return trace, [grads[graph.inputs[name]] for name in names]


def array_hessian(graph, point, names):
    """The Hessian of a scalar array program at `point`, as a NumPy matrix:
    each input of `names` flattened row-major, in that order. An AdgradError
    for shapes that do not go together, or an output that is not a scalar."""
    from types import SimpleNamespace

    import numpy as np
    point = {name: tensors.algebra().coerce(value) for name, value in point.items()}
    count = sum(int(np.size(point[name])) for name in names)
    if count * count > tensors.MAX_ENTRIES:   # before recording: 8 bytes an entry, a pass a row
        fewer = ': ask for fewer with --wrt' if len(names) > 1 else ''
        raise AdgradError(f"the Hessian by {', '.join(names)} would have {count:,} × {count:,} "
                          f'entries, past the {tensors.MAX_ENTRIES:,} an array may hold{fewer}')
    graph = tensors.bind_sizes(graph, point)
    shape = tensors.shapes(graph, point)[graph.output]
    if shape:
        raise AdgradError(f'the Hessian needs a scalar output, and this one has shape '
                          f'{tensors.shown(shape)}: take sum(...) or mean(...) of it')
    trace, roots = recorded_gradient(graph, point, names)
    # Reverse over reverse as torch.autograd.functional.hessian: only the first
    # pass makes a graph (create_graph), so the second meets the program's det
    # at a singular matrix with the plain rule's 0, as torch's does.
    second_order = SimpleNamespace(**{**vars(tensors.algebra()), 'wanted': frozenset(names)})
    with np.errstate(all='ignore'):
        sizes = [int(np.size(point[name])) for name in names]
        columns = [trace.inputs[name] for name in names]
        rows = []
        for root, size in zip(roots, sizes):
            if type(root) is not Traced:   # a gradient that does not vary
                rows.extend(np.zeros(sum(sizes)) for _ in range(size))
                continue
            shape = trace.shape(root)
            for entry in range(size):
                seed = np.zeros(shape)
                seed.flat[entry] = 1.0
                second = backward(trace.graph(root), trace.values, algebra=second_order,
                                  seed=seed)
                rows.append(np.concatenate([np.ravel(second[c]) for c in columns]))
    return np.array(rows).reshape(sum(sizes), sum(sizes))


def entry_labels(name, shape):
    """The name of each entry of a value of `shape`, row-major: b, x[0], W[1,2]."""
    import numpy as np
    if not shape:
        return [name]
    return [f"{name}[{','.join(map(str, index))}]" for index in np.ndindex(*shape)]
