"""The language people write: rebinding, conditionals, custom derivatives,
the constants as variables, and the aliases. Each against hand-derived
values, a central difference, or the numbers micrograd's own tests assert
(which are PyTorch's)."""

import math
import re

import pytest

from autodiff_cli import AdgradError, backward, forward, lower
from autodiff_cli.core.passes import executed


def run(source, **inputs):
    graph = lower(source)
    values = forward(graph, {**graph.defaults, **inputs})
    grads = backward(graph, values)
    return graph, values[graph.output], {n: grads[i] for n, i in graph.inputs.items()}


def central(source, name, point, h=1e-6):
    up, down = dict(point), dict(point)
    up[name] += h
    down[name] -= h
    return (run(source, **up)[1] - run(source, **down)[1]) / (2 * h)


# ---- micrograd's tests, written as micrograd writes them ----

def test_micrograd_sanity_check():
    source = '''
    input x = -4.0
    z = 2 * x + 2 + x
    q = relu(z) + z * x
    h = relu(z * z)
    y = h + q + q * x
    '''
    _, value, grads = run(source)
    assert value == -20.0 and grads == {'x': 46.0}


def test_micrograd_more_ops():
    source = '''
    input a = -4.0, b = 2.0
    c = a + b
    d = a * b + b**3
    c += c + 1
    c += 1 + c + (-a)
    d += d * 2 + relu(b + a)
    d += 3 * d + relu(b - a)
    e = c - d
    f = e**2
    g = f / 2.0
    g += 10.0 / f
    '''
    graph, value, grads = run(source)
    assert value == pytest.approx(24.70408163265306, abs=1e-12)
    assert grads['a'] == pytest.approx(138.83381924198252, abs=1e-9)
    assert grads['b'] == pytest.approx(645.5772594752186, abs=1e-9)
    assert 'e' in graph.notes[0]   # binding e is allowed, and said


# ---- rebinding ----

def test_rebinding_makes_versions_that_later_uses_see():
    graph, value, grads = run('c = x + 1; c = c * c; c -= x; c', x=3.0)
    assert value == 16.0 - 3.0 and grads == {'x': 2 * 4.0 - 1}
    assert [n.name for n in graph.nodes if n.name] == ['x', 'c', 'c#2', 'c#3']


@pytest.mark.parametrize('op, expected', [('+=', 5.0), ('-=', -1.0), ('*=', 6.0), ('/=', 2 / 3),
                                          ('^=', 8.0)])
def test_compound_assignment(op, expected):
    assert run(f'input x = 2; c = x; c {op} 3', )[1] == pytest.approx(expected)


def test_a_declared_input_can_be_rebound_and_keeps_its_gradient():
    graph, value, grads = run('input x = 3; x = x * x; x + 1')
    assert value == 10.0 and grads == {'x': 6.0}


def test_a_name_used_as_an_input_cannot_be_bound_afterwards():
    with pytest.raises(AdgradError, match="'y' is used before its definition") as caught:
        lower('z = y * 2; y = 3; z')
    assert caught.value.location()[1] == 5


# ---- constants ----

def test_a_bare_e_is_eulers_number_and_a_bound_e_is_a_variable():
    assert run('e')[1] == math.e
    graph, value, grads = run('input e = 2; e * pi')
    assert value == 2 * math.pi and grads == {'e': math.pi}
    assert any("'e'" in note for note in graph.notes)


def test_a_program_of_number_bindings_gets_a_hint():
    graph = lower('a = -4.0; b = 2.0; a*b')
    assert graph.notes == ("'a = -4.0' is a constant, so nothing here is a variable; "
                           "write 'input a = -4.0' to differentiate with respect to it",)


# ---- functions spelled the other ways ----

@pytest.mark.parametrize('source, expected', [
    ('ln(x)', math.log(3.0)),
    ('log(x, 2)', math.log2(3.0)),
    ('max(x, 1, 7, 2)', 7.0),
    ('min(x, 1, 7, 2)', 1.0),
])
def test_aliases_and_variadic_forms(source, expected):
    assert run(source, x=3.0)[1] == pytest.approx(expected, rel=1e-15)


def test_log_base_gradient_matches_a_central_difference():
    _, _, grads = run('log(x, y)', x=3.0, y=5.0)
    for name in grads:
        assert grads[name] == pytest.approx(central('log(x, y)', name, {'x': 3.0, 'y': 5.0}),
                                            rel=1e-7)


def test_stop_gradient_passes_the_value_and_blocks_the_gradient():
    _, value, grads = run('x * stop_gradient(x) + detach(x^2)', x=3.0)
    assert value == 18.0 and grads == {'x': 3.0}


# ---- conditionals ----

PIECEWISE = [
    # source, points straddling each branch, derivative by hand
    ('if(x > 0, sqrt(x), 0)', [4.0, -1.0, 0.0], lambda x: 0.5 / math.sqrt(x) if x > 0 else 0.0),
    ('if(x > 0, log(x), -x^2)', [2.0, -3.0, 0.0], lambda x: 1 / x if x > 0 else -2 * x),
    ('huber(r) = if(abs(r) <= 1, 0.5*r^2, abs(r) - 0.5); huber(x)', [0.5, -3.0, 1.0],
     lambda x: x if abs(x) <= 1 else math.copysign(1.0, x)),
    ('if(x < 0, 0.01*x, x)', [-2.0, 3.0], lambda x: 0.01 if x < 0 else 1.0),
    ('if(x >= 1 and x <= 2, 1/(x - 1), if(not x < 2, x, 1/x))', [1.5, 3.0, 0.5, 2.5],
     lambda x: -1 / (x - 1) ** 2 if 1 <= x <= 2 else (1.0 if x >= 2 else -1 / x ** 2)),
]


@pytest.mark.parametrize('source, points, derivative', PIECEWISE)
def test_a_single_point_takes_one_branch_and_leaks_no_nan(source, points, derivative):
    for x in points:
        graph, value, grads = run(source, x=x)
        assert math.isfinite(value), (source, x)
        assert grads['x'] == pytest.approx(derivative(x), rel=1e-12), (source, x)


@pytest.mark.parametrize('source, points, derivative', PIECEWISE)
def test_a_batch_masks_the_untaken_branch_row_by_row(source, points, derivative):
    np = pytest.importorskip('numpy')
    from autodiff_cli.core.batch import run_batch
    graph = lower(source)
    value, gradient, bad = run_batch(graph, {'x': np.array(points)}, len(points), ['x'])
    for k, x in enumerate(points):
        single = run(source, x=x)
        assert value[k] == single[1] and gradient['x'][k] == single[2]['x'], (source, x)


def test_the_graph_that_ran_leaves_out_the_untaken_branch():
    graph = lower('if(x > 0, sqrt(x), log(-x))')
    values = forward(graph, {'x': -2.0})
    ran = executed(graph, values)
    ops = [n.op for n, r in zip(graph.nodes, ran) if r]
    assert 'sqrt' not in ops and 'log' in ops


def test_comparisons_and_logic_pass_no_gradient():
    _, value, grads = run('(log(x) < 1) * 5 + (x > 0 and x != 3) + (not x)', x=0.0)
    assert value == 6.0 and grads == {'x': 0.0}


# ---- a block's own derivative ----

def test_a_declared_derivative_replaces_the_body_s():
    source = 'softplus2(x) = log(1 + exp(x))\ngrad softplus2(x) = sigmoid(x)\nsoftplus2(t)'
    _, value, grads = run(source, t=800.0)   # exp(800) is inf: the body's own derivative is nan
    assert value == math.inf and grads == {'t': 1.0}


def test_out_names_the_output_in_a_derivative():
    source = 'mysig(x) = 1/(1 + exp(-x))\ngrad mysig(x) = out*(1 - out)\nmysig(t)*3'
    _, _, grads = run(source, t=0.3)
    s = 1 / (1 + math.exp(-0.3))
    assert grads['t'] == pytest.approx(3 * s * (1 - s), rel=1e-15)


def test_partials_for_several_parameters_in_order():
    source = 'f(a, b) = a*b\ngrad f(a, b) = (2*b, 3*a)\nf(x, y)'
    _, value, grads = run(source, x=2.0, y=5.0)
    assert value == 10.0 and grads == {'x': 10.0, 'y': 6.0}


def test_straight_through_round_and_clipping():
    st = 'st(x) = x - x + 7\ngrad st(x) = 1\nst(t) * t'
    assert run(st, t=2.0)[2] == {'t': 7.0 + 2.0}
    clip = 'clip(g) = g\ngrad clip(g) = max(-1, min(1, g))\nclip(t)'
    assert run(clip, t=0.5)[2] == {'t': 0.5} and run(clip, t=4.0)[2] == {'t': 1.0}


@pytest.mark.parametrize('source, message', [
    ('grad f(x) = 1', "define the block f first"),
    ('f(x) = x; y = f(2); grad f(x) = 1; y', 'before the first call'),
    ('f(a, b) = a; grad f(a, b) = 1; f(1, 2)', 'one partial derivative for each'),
    ('f(a) = a; grad f(a) = 1; grad f(a) = 2; f(1)', 'already declared'),
])
def test_grad_declaration_errors(source, message):
    with pytest.raises(AdgradError, match=message):
        lower(source)


# ---- through the command line ----

def test_notes_go_to_stderr_and_e_can_be_bound_where_the_program_declares_it(run_cli):
    code, out, err = run_cli('grad', 'input e = 2; e*x', 'x=1', 'e=3', '--json')
    assert code == 0 and out == '{"value": 3.0, "gradient": {"e": 1.0, "x": 3.0}}\n'
    assert err.startswith("adgrad: note: 'e' is this program's own input")
    code, _, err = run_cli('eval', 'e*x', 'x=1', 'e=3')
    assert code == 2 and "cannot bind the constant 'e'" in err


def test_nodes_show_the_graph_that_ran(run_cli):
    import json
    code, out, err = run_cli('grad', 'if(x > 0, sqrt(x), log(-x))', 'x=-2', '--nodes', '--json')
    assert code == 0 and err == ''
    ops = [n['op'] for n in json.loads(out)['nodes']]
    assert 'log' in ops and 'sqrt' not in ops


def test_a_batch_straddling_both_branches_warns_of_nothing(run_cli, tmp_path):
    points = tmp_path / 'p.csv'
    points.write_text('x\n4\n-1\n0\n-0.0\n1e-300\n')
    code, out, err = run_cli('grad', 'if(x > 0, sqrt(x), 2*x)', '--points', str(points),
                             '--strict')
    assert (code, err) == (0, '')
    rows = [line.split(',') for line in out.splitlines()[1:]]
    assert [float(r[2]) for r in rows] == [0.25, 2.0, 2.0, 2.0, 0.5 / math.sqrt(1e-300)]


def test_an_if_node_shows_its_whole_text():
    graph = lower('x + if(x > 0, 1, 2)*3')
    texts = {n.op: graph.text(i) for i, n in enumerate(graph.nodes)}
    assert texts['if'] == 'if(x > 0, 1, 2)' and texts['mul'] == 'if(x > 0, 1, 2)*3'


def test_a_declared_derivative_s_body_shows_no_gradient():
    """Pictures and --nodes: the body runs forward, but the gradient goes round it."""
    from autodiff_cli.core.passes import receives_gradient
    graph = lower('f(x) = sin(2*x); grad f(x) = 2*cos(2*x); f(t)*3 + (t > 0)')
    shown = receives_gradient(graph)
    ops = {graph.nodes[i].op for i, s in enumerate(shown) if s}
    assert ops == {'input', 'custom', 'mul', 'add', 'gt'}


def test_check_fails_a_wrong_declared_derivative_and_names_the_block(run_cli):
    code, _, err = run_cli('check', 'f(x) = sin(2*x); grad f(x) = cos(x); f(t)', 't=0.3')
    assert code == 1 and "declared for block 'f'" in err
    code, _, err = run_cli('check', 'f(x) = sin(2*x); grad f(x) = 2*cos(2*x); f(t)', 't=0.3')
    assert code == 0


def test_diff_and_hessian_use_a_declared_derivative(run_cli):
    source = 'f(x) = log(1 + exp(x)); grad f(x) = sigmoid(x); f(t)^2'
    code, out, _ = run_cli('hessian', source, 't=0.4', '--json')
    assert code == 0
    import json
    s = 1 / (1 + math.exp(-0.4))
    softplus = math.log1p(math.exp(0.4))
    # d/dt 2 f f' = 2 (f'^2 + f f''), with f' = s and f'' = s (1 - s), the declared one's
    expected = 2 * (s * s + softplus * s * (1 - s))
    assert json.loads(out)['hessian'][0][0] == pytest.approx(expected, rel=1e-12)


def test_a_picture_greys_the_branch_not_taken():
    from autodiff_cli.pictures.render import render
    graph = lower('y = if(x > 0, sqrt(x), log(-x)); y*2')
    values = forward(graph, {'x': -2.0})
    dot = render(graph, values, backward(graph, values)).source
    sqrt_line = next(line for line in dot.splitlines() if '<B>sqrt</B>' in line)
    assert 'not taken at this point' in sqrt_line and 'dashed' in sqrt_line
    log_line = next(line for line in dot.splitlines() if '<B>log</B>' in line)
    assert 'not taken' not in log_line and '0.6931' in log_line
    # the arrows into and out of the branch not taken are greyed and dashed as
    # it is (they were solid blue, as if a value went along them); the legend
    # says what dashed grey means
    sqrt = re.search(r'n(\d+) \[label=<[^\n]*<B>sqrt</B>', dot)[1]
    arrows = re.findall(rf'^\s*n\d+ -> n{sqrt} \[(.*)\]$|^\s*n{sqrt} -> n\d+ \[(.*)\]$', dot, re.M)
    assert len(arrows) == 2
    for attrs in map(''.join, arrows):
        assert 'style=dashed' in attrs and 'color="#57534e"' in attrs, attrs
    assert 'not taken&nbsp;' in dot.split('\tlabel=')[-1]


def test_a_block_may_take_a_built_in_s_name_and_declare_its_derivative():
    """The issue's own spelling: softplus is built in, and a program may still
    define it, with its own derivative; later calls are the program's block."""
    source = 'softplus(x) = log(1 + exp(x))\ngrad softplus(x) = sigmoid(x)\nsoftplus(t)'
    graph, value, grads = run(source, t=800.0)
    assert value == math.inf and grads == {'t': 1.0}
    assert any("'softplus' is this program's own block" in note for note in graph.notes)
    assert run('sin(t) = 2*t; sin(x)', x=3.0)[1:] == (6.0, {'x': 2.0})
    with pytest.raises(AdgradError, match="'exp' is a built-in function"):
        lower('exp = 2; exp')


# ---- the size of blocks' stored bodies (issue 12) ----

def _chain(length):
    """f0(a) = a + 1, fN(a) = fN-1(a) + 1, then f{length-1}(x) = x + length:
    each body stores its callee's inlined, so the bodies hold ~length^2 nodes."""
    lines = ['f0(a) = a + 1'] + [f'f{n}(a) = f{n - 1}(a) + 1' for n in range(1, length)]
    return '\n'.join(lines + [f'f{length - 1}(x)'])


def test_a_chain_of_blocks_under_the_bodies_limit_runs():
    _, value, grads = run(_chain(300), x=2.0)   # 90,000 stored nodes
    assert value == 302.0 and grads == {'x': 1.0}


def test_a_chain_of_blocks_past_the_bodies_limit_is_refused_at_the_call(monkeypatch):
    from autodiff_cli.language import lower as lowering
    monkeypatch.setattr(lowering, 'MAX_STORED', 1_000)
    # fN's body is its slot and 2N + 2 nodes: f0..f29 store 3*30 + 29*30 = 960,
    # so f30's call of f29 (61 more) is the first to pass 1,000.
    source = _chain(100)
    with pytest.raises(AdgradError, match="calling 'f29' here would make the program's "
                                          'blocks more than 1,000') as e:
        lower(source)
    assert e.value.pos == source.index('f29(a) + 1')


def test_the_real_bodies_limit_refuses_a_long_chain_before_it_grows():
    from autodiff_cli.language.lower import MAX_STORED
    length = 2_000   # 4 million stored nodes if nothing counted them
    assert length * length > 2 * MAX_STORED
    with pytest.raises(AdgradError, match=f'more than {MAX_STORED:,} nodes'):
        lower(_chain(length))


def test_written_bodies_count_toward_the_bodies_limit(monkeypatch):
    from autodiff_cli.language import lower as lowering
    monkeypatch.setattr(lowering, 'MAX_STORED', 100)
    body = ' + '.join(['a'] * 41)   # 41 nodes with its parameter's slot
    source = f'f(a) = {body}\ng(a) = {body}\nh(a) = {body}\nh(x)'
    with pytest.raises(AdgradError, match="the program's blocks hold more than 100 nodes") as e:
        lower(source)
    assert source.index('h(a)') < e.value.pos < source.index('h(x)')


def test_stored_bodies_count_toward_the_graph_s_limit(monkeypatch):
    from autodiff_cli.language import lower as lowering
    body = ' + '.join(['a'] * 30)   # 30 stored nodes
    source = f'f(a) = {body}\nf(x) + 1'   # x, the 29 copied, 1 and + on the tape: 62 in all
    monkeypatch.setattr(lowering, 'MAX_NODES', 62)
    assert lower(source).output == 31
    monkeypatch.setattr(lowering, 'MAX_NODES', 61)
    with pytest.raises(AdgradError, match='more than 61 nodes'):
        lower(source)


@pytest.mark.parametrize('source, message, column', [
    ('x + (y', "unexpected end of input: the '(' at column 5 is not closed", 6),
    ('sin(x*(y + 1)', "unexpected end of input: the '(' at column 4 is not closed", 13),
    # a '(' in a comment is no parenthesis; the error names the line of the open one
    ('# (note\ny = (x + 1\n', "unexpected end of input: the '(' at line 2, column 5 is not closed",
     18),
    # a new line inside parentheses is no token: the next statement meets it
    ('a = (x + 1\n# (comment\nb = a*2\n', "unexpected 'b': the '(' at line 1, column 5 is not "
     'closed', 22),
    # 100,000 deep: the innermost '(' is named (and nothing recursed)
    ('x + (' * 100_000 + 'x', f"unexpected end of input: the '(' at column {500_000} is not "
     'closed', 500_001),
])
def test_an_unclosed_parenthesis_is_named(source, message, column):
    with pytest.raises(AdgradError) as caught:
        lower(source)
    assert str(caught.value).startswith(message) and caught.value.pos == column
