"""The derivative rules build graphs as readily as numbers: second derivatives.

An algebra that records each primitive as a node turns backward() into a
builder of the gradient's own graph, which can be evaluated and
differentiated again — the plan for symbolic derivatives and Hessians.
"""

import math

import pytest

from autodiff_cli import backward, forward, lower
from autodiff_cli.core.graph import Node
from autodiff_cli.core.primitives import PRIMITIVES

from tests.helpers import CASES


class Ref:
    """A value that is a node of the tape being recorded."""

    def __init__(self, node_id):
        self.id = node_id


class Recorder:
    def __init__(self, graph):
        self.nodes = list(graph.nodes)

    def _id(self, x):
        if isinstance(x, Ref):
            return x.id
        self.nodes.append(Node('const', value=float(x)))
        return len(self.nodes) - 1

    def __getattr__(self, name):
        if name not in PRIMITIVES:
            raise AttributeError(name)

        def record(*args):
            self.nodes.append(Node(name, tuple(self._id(a) for a in args)))
            return Ref(len(self.nodes) - 1)
        return record


def gradient_graph(graph, wrt):
    """A graph whose output is ∂output/∂wrt, built by backward() itself."""
    recorder = Recorder(graph)
    grads = backward(graph, [Ref(i) for i in range(len(graph.nodes))], algebra=recorder)
    target = recorder._id(grads[graph.inputs[wrt]])
    return graph._replace(nodes=recorder.nodes, output=target)


SOURCE = 'x^3 * y + sin(x*y)'


def hand(x, y):
    """∂f/∂x, and the Hessian row (∂²f/∂x², ∂²f/∂x∂y), derived by hand."""
    return (3 * x**2 * y + y * math.cos(x * y),
            6 * x * y - y**2 * math.sin(x * y),
            3 * x**2 + math.cos(x * y) - x * y * math.sin(x * y))


@pytest.mark.parametrize('x, y', [(0.7, -1.3), (2.0, 0.5), (-1.1, 3.0)])
def test_second_derivatives_through_a_recorded_gradient(x, y):
    d_x = gradient_graph(lower(SOURCE), 'x')
    values = forward(d_x, {'x': x, 'y': y})
    second = backward(d_x, values)
    fx, fxx, fxy = hand(x, y)
    assert values[d_x.output] == pytest.approx(fx, rel=1e-13)
    assert second[d_x.inputs['x']] == pytest.approx(fxx, rel=1e-12)
    assert second[d_x.inputs['y']] == pytest.approx(fxy, rel=1e-12)


def test_recorded_gradient_agrees_with_the_numeric_one_for_every_primitive():
    for op, (expr, points) in sorted(CASES.items()):
        graph = lower(expr)
        names = sorted(graph.inputs)
        for point in points:
            inputs = dict(zip(names, point))
            numeric = backward(graph, forward(graph, inputs))
            for name in names:
                recorded = gradient_graph(graph, name)
                value = forward(recorded, inputs)[recorded.output]
                assert value == pytest.approx(numeric[graph.inputs[name]], rel=1e-15), (op, name)
