"""Lowering, the forward and backward loops, and scale."""

import math

from autodiff_cli import backward, forward, lower

from tests.helpers import evaluate


def test_tutorial_product():
    value, grads = evaluate('x*y*z', x=2, y=3, z=4)
    assert value == 24.0
    assert grads == {'x': 12.0, 'y': 8.0, 'z': 6.0}


def test_gradient_at_the_intermediate_node():
    graph = lower('x*y*z')
    values = forward(graph, {'x': 2, 'y': 3, 'z': 4})
    grads = backward(graph, values)
    [product] = [i for i, node in enumerate(graph.nodes) if graph.text(i) == 'x*y']
    assert values[product] == 6.0
    assert grads[product] == 4.0   # ∂f/∂(x*y) = z


def test_tutorial_square_plus_one():
    assert evaluate('x^2 + 1', x=2) == (5.0, {'x': 4.0})


def test_one_input_node_per_variable_and_accumulation():
    graph = lower('x*x')
    assert [node.op for node in graph.nodes] == ['input', 'mul']
    assert graph.nodes[1].args == (0, 0)
    assert evaluate('x*x', x=3) == (9.0, {'x': 6.0})


def test_one_node_per_operation_as_written():
    graph = lower('a - b / c')
    assert [node.op for node in graph.nodes] == ['input', 'input', 'input', 'div', 'sub']


def test_constants_pi_and_e():
    assert evaluate('pi') == (math.pi, {})
    assert evaluate('e^x', x=1) == (math.e, {'x': math.e})


def test_source_text_of_each_node():
    graph = lower('(x + 1) * sin(y)')
    assert [graph.text(i) for i in range(len(graph.nodes))] == [
        'x', '1', 'x + 1', 'y', 'sin(y)', '(x + 1) * sin(y)']


def test_passes_do_not_mutate_the_graph():
    graph = lower('x*y + x')
    values = forward(graph, {'x': 2, 'y': 5})
    # f = x*y + x by hand: df/dx = y + 1 = 6, df/dy = x = 2. A second pass that
    # found state left on the graph would double them.
    for grads in (backward(graph, values), backward(graph, values)):
        assert (grads[graph.inputs['x']], grads[graph.inputs['y']]) == (6.0, 2.0)
    assert forward(graph, {'x': 1, 'y': 1})[graph.output] == 2.0


def test_unused_binding_does_not_poison_gradients():
    # log'(0) = inf on a branch the output ignores must not give 0 * inf = nan.
    value, grads = evaluate('a = log(x); x * 2', x=0)
    assert value == 0.0 and grads == {'x': 2.0}


def test_deep_unary_nesting():
    depth = 100_000
    graph = lower('sin(' * depth + 'x' + ')' * depth)
    values = forward(graph, {'x': 0.5})
    grads = backward(graph, values)
    value, grad = 0.5, 1.0
    for _ in range(depth):
        grad *= math.cos(value)
        value = math.sin(value)
    assert math.isclose(values[graph.output], value, rel_tol=1e-12)
    assert math.isclose(grads[graph.inputs['x']], grad, rel_tol=1e-9)
    assert len(graph.text(graph.output, 40)) <= 40


def test_deep_parenthesised_sum():
    depth = 100_000
    value, grads = evaluate('(' * depth + 'x' + '+1)' * depth, x=1)
    assert value == depth + 1 and grads == {'x': 1.0}


def test_wide_sum():
    terms = 100_000
    graph = lower(' + '.join(f'x{i}' for i in range(terms)))
    values = forward(graph, {f'x{i}': i for i in range(terms)})
    grads = backward(graph, values)
    assert values[graph.output] == terms * (terms - 1) / 2
    assert all(grads[i] == 1.0 for i in graph.inputs.values())


def test_a_comparison_passes_no_gradient_not_a_zero():
    """(log(x) < 1) * 5 at x = 0: a zero sent back through log'(0) = inf would be nan."""
    from autodiff_cli.core.graph import Graph, Node
    nodes = [Node('input', name='x'), Node('log', (0,)), Node('const', value=1.0),
             Node('lt', (1, 2)), Node('const', value=5.0), Node('mul', (3, 4))]
    graph = Graph(nodes, 5, {'x': 0}, {}, '')
    values = forward(graph, {'x': 0.0})
    assert values[5] == 5.0
    assert backward(graph, values)[0] == 0.0


def test_first_nonfinite_is_the_first_inf_or_nan_whatever_the_sum_does():
    from hypothesis import given, strategies as st

    from autodiff_cli.core.passes import first_nonfinite

    @given(st.lists(st.sampled_from([0.0, -1.5, 1e308, -1e308, math.inf, -math.inf, math.nan])))
    def check(values):
        expected = next((i for i, v in enumerate(values) if not math.isfinite(v)), None)
        assert first_nonfinite(values) == expected

    check()
    assert first_nonfinite([1e308, 1e308]) is None          # the sum overflows, no value does
    assert first_nonfinite([1.0, math.inf, -math.inf]) == 1  # the sum is nan


def test_a_recorded_tape_is_freed_when_unused_not_left_to_the_cycle_collector():
    """A tape that referred to itself (its own bound methods in its dict) would
    outlive its last use until a collection, or to the interpreter's exit."""
    import gc
    import weakref

    from autodiff_cli.derive.record import differentiate
    enabled = gc.isenabled()
    gc.disable()
    try:
        derivative = differentiate(lower('if(x > 0, sin(x)*y, y^2)'))
        tape = weakref.ref(derivative.tape)
        del derivative
        assert tape() is None
    finally:
        if enabled:
            gc.enable()
