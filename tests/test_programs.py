"""Programs: statements, bindings, blocks, input defaults, and their errors."""

import math

import pytest

from autodiff_cli import AdgradError, backward, forward, lower

from tests.helpers import evaluate


def run(source, **inputs):
    graph = lower(source)
    values = forward(graph, {**graph.defaults, **inputs})
    return graph, values, backward(graph, values)


@pytest.mark.parametrize('source', [
    'a = x*2; a + 1',
    'a = x*2\na + 1',
    'a = x*2\n\n;\na + 1\n',
    '# doubled, plus one\na = x*2   # the double\na + 1  # output',
    ';; a = x*2 ; ; a + 1 ;',
    'a = x*2\nb = a + 1',
    'f(\n  t\n) = t*2\nf(x\n) + 1',
    'a = x*2 \\\n  + 0\na + 1',
])
def test_separators_comments_and_output(source):
    assert evaluate(source, x=3) == (7.0, {'x': 2.0})


def test_the_last_binding_is_the_output_and_is_named():
    graph, values, _ = run('y = x^2; z = y + 1', x=2)
    assert values[graph.output] == 5.0
    assert graph.nodes[graph.output].name == 'z'
    assert [n.name for n in graph.nodes if n.name] == ['x', 'y', 'z']


def test_a_binding_is_one_node():
    graph = lower('y = x*x; y*y')
    assert [n.op for n in graph.nodes] == ['input', 'mul', 'mul']


def test_binding_an_existing_node_gets_its_own_node():
    graph, values, grads = run('b = x; c = b; c*3', x=2)
    assert [(n.op, n.name) for n in graph.nodes] == [
        ('input', 'x'), ('pos', 'b'), ('pos', 'c'), ('const', None), ('mul', None)]
    assert grads[0] == 3.0


def test_block_instances_are_recorded():
    graph = lower('f(a) = a*a + 1; g(b) = f(b) * 2; f(x) + g(y)')
    blocks = {graph.text(i): n.block for i, n in enumerate(graph.nodes) if n.op != 'input'}
    assert blocks['a*a'] is not None
    assert sorted({n.block for n in graph.nodes if n.block}) == ['f#1', 'g#1', 'g#1/f#2']
    assert graph.nodes[graph.output].block is None


def test_blocks_inline_with_their_own_parameters():
    value, grads = evaluate('f(a, b) = a^2 * b; f(y, x) + f(x, 1)', x=2, y=3)
    assert value == 9 * 2 + 4 and grads == {'x': 9 + 4, 'y': 12}


def central_difference(source, name, point, h=1e-6):
    up, down = dict(point), dict(point)
    up[name] += h
    down[name] -= h
    return (evaluate(source, **up)[0] - evaluate(source, **down)[0]) / (2 * h)


@pytest.mark.parametrize('source', [
    'h(x) = x^2; f(y) = y + 1; z = f(h(x))',
    'sq(t) = t*t; cube(t) = sq(t)*t; cube(sin(x)) + sq(y*x)',
    'soft(a, b) = log(exp(a) + exp(b)); soft(x, y) - soft(y, 2*x)',
    'n(w, a, b) = tanh(w*a + b); n(x, n(y, x, 0.5), y)',
])
def test_gradients_through_blocks_match_central_differences(source):
    point = {'x': 0.7, 'y': -0.4}
    _, grads = evaluate(source, **{k: v for k, v in point.items() if k in lower(source).inputs})
    for name, grad in grads.items():
        assert grad == pytest.approx(central_difference(source, name, point), rel=1e-6, abs=1e-8)


def test_input_defaults_and_undeclared_inputs():
    graph = lower('input x = 2, y = pi/2\nx * sin(y) * z')
    assert graph.defaults == {'x': 2.0, 'y': math.pi / 2}
    assert list(graph.inputs) == ['x', 'y', 'z']
    _, values, _ = run('input x = 2, y = pi/2\nx * sin(y) * z', z=5)
    assert values[-1] == 10.0


@pytest.mark.parametrize('source, message, column', [
    ('y = x + 1; x = 2', "'x' is used before its definition", 5),
    ('y = x + 1; input x = 2\ny', "'x' is used before its definition", 5),
    ('f(t) = t; f(t) = 2*t; f(1)', "'f' is already defined", 11),
    ('f(t) = f(t); f(1)', "blocks cannot recurse: 'f' calls itself", 8),
    ('f(t) = g(t); g(t) = f(t); f(1)', "block 'g' is used before its definition", 8),
    ('f(a, b) = a*b; f(1)', 'f() takes 2 arguments, got 1', 16),
    ('sin(2, 3)', 'sin() takes 1 argument, got 2', 1),
    ('exp = 2; exp', "'exp' is a built-in function", 1),
    ('f(pi) = 1; f(2)', "'pi' is built in; choose another parameter name", 3),
    ('f(t, t) = t; f(1, 2)', "parameter 't' appears twice", 6),
    ('f(t+1) = 2; f(1)', 'a block parameter must be a name', 3),
    ('c += 1', "'c' has no value to update", 1),
    ('if = 2', "unexpected '='", 4),
    ('f(t) = t; ff(2)', "unknown function 'ff'; did you mean 'f'?", 11),
    ('x + sqr(x)', "unknown function 'sqr'; did you mean 'sqrt'?", 5),
    ('g(t) = h(t); h(t) = t; g(1)', "block 'h' is used before its definition", 8),
    ('x + 1; y = 2', 'only the last statement may be a bare expression', 1),
    ('f(t) = t; f', "'f' is a function; call it as f(...)", 11),
    ('input x = y; x', "the default of 'x' must be a constant expression", 11),
])
def test_program_errors_point_at_the_problem(source, message, column):
    with pytest.raises(AdgradError) as caught:
        lower(source)
    assert caught.value.message.startswith(message)
    assert caught.value.location()[1] == column


@pytest.mark.parametrize('source', ['', '  \n ; \n', '# nothing but a comment\n'])
def test_empty_program(source):
    with pytest.raises(AdgradError, match='empty program'):
        lower(source)


def test_a_program_needs_an_output():
    with pytest.raises(AdgradError, match='no output'):
        lower('f(t) = t*2')


@pytest.mark.parametrize('source', ['y = x + 1; x = 2', 'f(t) = f(t); f(1)', 'f(a,b) = a; f(1)',
                                    'qq(1)', '', 'x; y = 1'])
def test_cli_errors_are_one_line_and_exit_2(run_cli, source):
    code, out, err = run_cli('eval', source, 'x=1')
    assert (code, out) == (2, '') and 'Traceback' not in err
    assert len(err.splitlines()) in (1, 3) and err.startswith('adgrad: error: ')


def test_nodes_report_names_and_block_instances(run_cli):
    import json
    out = run_cli('grad', 'h(t) = t^2; f(u) = u + 1; z = f(h(x))', 'x=2', '--nodes', '--json')[1]
    nodes = json.loads(out)['nodes']
    assert [(n['op'], n['name'], n['block'], n['grad']) for n in nodes] == [
        ('input', 'x', None, 4.0), ('const', None, 'h#1', None),
        ('pow', None, 'h#1', 1.0), ('const', None, 'f#1', None), ('add', 'z', 'f#1', 1.0)]


def test_a_block_applied_ten_thousand_times():
    depth = 10_000
    graph, values, grads = run('f(t) = 0.5*t + 1\n' + 'f(' * depth + 'x' + ')' * depth, x=0.0)
    assert values[graph.output] == pytest.approx(2.0)
    assert grads[graph.inputs['x']] == 0.5 ** depth
    assert len({n.block for n in graph.nodes if n.block}) == depth


def test_ten_thousand_binding_lines():
    lines = ['x0 = x'] + [f'x{i} = x{i - 1} + 1' for i in range(1, 10_000)]
    graph, values, grads = run('\n'.join(lines), x=0.5)
    assert values[graph.output] == 9999.5 and grads[graph.inputs['x']] == 1.0


def test_a_binding_cannot_use_its_own_name():
    with pytest.raises(AdgradError, match="'x' is used before its definition"):
        lower('x = x + 1')


def test_blocks_that_double_are_refused_before_inlining():
    lines = ['f0(t) = t*1.5'] + [f'f{k}(t) = f{k - 1}(f{k - 1}(t))' for k in range(1, 31)]
    with pytest.raises(AdgradError, match=r"calling 'f\d+' here would (grow the graph|make the body)"):
        lower('\n'.join(lines + ['f30(y)']))
    graph = lower('\n'.join(lines[:11] + ['f10(y)']))   # 2^10 multiplications are fine
    assert sum(node.op == 'mul' for node in graph.nodes) == 2 ** 10
