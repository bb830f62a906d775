"""--nodes at speed, with the same bytes: each distinct number is formatted
once, records are tuples with named fields, and node texts taken straight
from the source where nothing folds are what folding gives."""

import math
import random

from hypothesis import given, strategies as st

from autodiff_cli import backward, forward, lower
from autodiff_cli.cli.output import NodeRecord, NodeRows, _Numbers, node_records
from autodiff_cli.core.graph import Graph, Node
from autodiff_cli.core.numbers import number


@given(st.lists(st.one_of(st.floats(), st.integers(-3, 3), st.booleans(),
                          st.sampled_from([0.0, -0.0, math.nan, -math.nan, 1.0, 1]))))
def test_each_number_reads_as_number_gives_it(values):
    shown = _Numbers()
    for x in values + values[::-1]:   # every value met again, in another order
        assert shown[x] == number(x)


def test_a_record_has_named_fields_and_reads_as_before():
    r = NodeRecord(3, 'mul', None, [1, 2], 'x*y', None, 6.0, 1.0)
    assert (r.id, r.op, r.name, r.args, r.expr, r.block, r.value, r.grad) == \
        (3, 'mul', None, [1, 2], 'x*y', None, 6.0, 1.0)
    assert repr(r) == ("NodeRecord(id=3, op='mul', name=None, args=[1, 2], expr='x*y', "
                       "block=None, value=6.0, grad=1.0)")


def test_records_of_a_point_are_its_nodes_in_order():
    graph = lower('y = x*x\nif(x > 0, y + 1, -y)')
    values = forward(graph, {'x': 3.0})
    records = node_records(graph, values, backward(graph, values))
    ran = [r.id for r in records]
    assert ran == sorted(ran) and len(ran) < len(graph.nodes)   # the else branch did not run
    for r in records:
        assert (r.op, r.expr, r.value) == (graph.nodes[r.id].op, graph.text(r.id, 120), values[r.id])
    assert [r.grad for r in node_records(graph, values)] == [None] * len(records)


def test_texts_read_straight_from_the_source_are_the_folded_texts():
    rng = random.Random(5)
    # Mostly single spaces (the fast path), sometimes what folding changes.
    pieces = ['a', 'bc', '(', ')', '+', ' ', ' ', ' ', '  ', '\t', '\n', '#c', '\\\n', '\xa0', 'é']
    weights = [9, 9, 5, 5, 5, 8, 8, 8, 1, 1, 1, 1, 1, 1, 1]
    for _ in range(300):
        source = ''.join(rng.choices(pieces, weights, k=rng.randint(0, 1500)))
        nodes = []
        for _ in range(30):
            a = rng.randint(0, len(source))
            nodes.append(Node('add', (), None, None, (a, rng.randint(a, len(source))), None))
        graph = Graph(nodes, 0, {}, {}, source)
        for limit in (None, 3, 7, 60, 120):
            assert graph.texts(limit) == [graph.text(i, limit) for i in range(len(nodes))]


def test_the_plain_node_lines_are_each_field_and_number_as_before():
    from autodiff_cli.cli.output import Result, plain
    numbers = [0.0, -0.0, 0, False, 1, True, 2.5, 2.5, -7e-300, math.nan, math.inf, -math.inf]
    records = [NodeRecord(i, 'add', None if i % 2 else 'x', [], f'e{i}', 'f#1' if i % 3 else None,
                          v, None if i % 4 == 1 else numbers[-1 - i])
               for i, v in enumerate(numbers)]
    text = ''.join(plain(Result(value=1.0, inputs={}, gradients={}, nodes=NodeRows.of(records)),
                         None))
    expected = ['value\t1.0'] + ['\t'.join(['node', str(r.id), r.op, r.name or '-', r.block or '-',
                                            number(r.value), '-' if r.grad is None else number(r.grad),
                                            r.expr]) for r in records]
    assert text == '\n'.join(expected) + '\n'


def test_plain_node_lines_written_in_parts_are_the_whole_text():
    # More nodes than one part (8,192 lines) holds: the parts join to the
    # lines one by one, with nothing lost or repeated at a seam.
    from autodiff_cli.cli.output import Result, plain
    graph = lower('+'.join(f'sin(x*{k})' for k in range(3000)))
    values = forward(graph, {'x': 0.5})
    nodes = node_records(graph, values, backward(graph, values))
    assert len(nodes) > 8192
    parts = list(plain(Result(value=values[graph.output], inputs={}, gradients={}, nodes=nodes),
                       None))
    assert len(parts) > 2
    expected = [f'value\t{number(values[graph.output])}'] + [
        '\t'.join(['node', str(r.id), r.op, r.name or '-', r.block or '-', number(r.value),
                   '-' if r.grad is None else number(r.grad), r.expr]) for r in nodes]
    assert ''.join(parts) == '\n'.join(expected) + '\n'
    assert [r.id for r in nodes] == list(range(len(graph.nodes)))
    assert nodes[5] == list(nodes)[5] and nodes[-1].id == len(graph.nodes) - 1
    assert nodes == list(nodes) == NodeRows.of(nodes) and nodes != list(nodes)[:-1]
