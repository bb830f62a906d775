"""A block's own copy function (language/copier.py) makes the very tape the
general copy makes, and its source holds nothing of the program's text."""

import io
import math
import os
import re
import tokenize

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from autodiff_cli import backward, forward
from autodiff_cli.language import copier as copier_module
from autodiff_cli.language import lower as lowering
from tests.fuzz import gen

examples = settings(max_examples=int(os.environ.get('ADGRAD_PROPERTY_EXAMPLES', '150')),
                    deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture
def sources(monkeypatch):
    """Every copy function's source, made from the first copy on."""
    made = []

    def spy(source, filename, mode):
        made.append(source)
        return compile(source, filename, mode)
    monkeypatch.setattr(copier_module, 'compile', spy, raising=False)
    monkeypatch.setattr(lowering, 'WARM', 1)
    return made


def general(text, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(lowering, 'WARM', math.inf)
        return lowering.lower(text)


def assert_same_tape(text, monkeypatch):
    fast = lowering.lower(text)
    slow = general(text, monkeypatch)
    assert fast == slow, text
    return fast


PROGRAMS = {
    # a body with constants, a parameter used twice, a global and a binding
    'chain': ('input x = 0.5, w = 2\nf(y) = tanh(0.9*y*y + w)\nf(f(f(f(x))))', 1),
    # two parameters, one unused; a block that returns its parameter or a global
    'shapes': ('input x = 1.5, w = 3\ng(a, b) = a\nh(a) = w\nk(a, b) = b*a - a\n'
               'k(g(x, w), h(x)) + k(x, x)', 3),
    # calls inside a body: each copy names its nested calls afresh
    'nested': ('input x = 0.3\ninner(p) = sin(p)*p\nouter(q) = inner(q) + inner(2*q)\n'
               'outer(outer(x)) * outer(x)', 1),   # inner is copied into outer's body only
    # a declared derivative: the value's body and the partial's are copied
    'custom': ('input x = 0.7\nsq(t) = t*t\ngrad sq(t) = 2*t\nsq(sq(x)) + sq(3)', 2),
    # an if in the body: the general copy, always
    'branch': ('input x = 0.5\nf(y) = if(y > 0, y*2, -y)\nf(f(x)) + f(x - 3)', 0),
}


@pytest.mark.parametrize('name', sorted(PROGRAMS))
def test_a_copy_function_makes_the_same_tape_and_gradient(name, sources, monkeypatch):
    text, functions = PROGRAMS[name]
    graph = assert_same_tape(text, monkeypatch)
    assert len(sources) == functions
    values = forward(graph, graph.defaults)
    grads = backward(graph, values)
    h = 1e-6
    for variable, node_id in graph.inputs.items():
        up, down = dict(graph.defaults), dict(graph.defaults)
        up[variable] += h
        down[variable] -= h
        central = (forward(graph, up)[graph.output] - forward(graph, down)[graph.output]) / (2 * h)
        assert grads[node_id] == pytest.approx(central, rel=1e-6, abs=1e-8), (name, variable)


def test_a_body_gets_its_function_on_its_warm_th_copy(monkeypatch):
    made = []
    real = lowering.copier
    monkeypatch.setattr(lowering, 'copier', lambda *a: made.append(a) or real(*a))
    monkeypatch.setattr(lowering, 'WARM', 3)
    chain = 'input x = 0.5\nf(y) = y + 1\n'
    lowering.lower(chain + 'f(f(x))')
    assert made == []
    graph = lowering.lower(chain + 'f(f(f(f(f(x)))))')
    assert len(made) == 1
    assert forward(graph, graph.defaults)[graph.output] == 5.5


def test_a_body_larger_than_the_limit_keeps_the_general_copy(sources, monkeypatch):
    monkeypatch.setattr(lowering, 'LARGEST', 4)
    # small's body is 4 nodes (2 constants, 2 operations), big's 5
    assert_same_tape('input x = 1\nsmall(y) = y*2 + 1\nbig(y) = (y*2 + 1)*y\n'
                     'big(small(x)) + big(x)', monkeypatch)
    assert len(sources) == 1


# Names a copy function's source may hold: its own, and the numbered ones it makes.
_OWN = {'def', 'make', 'new', 'Node', 'copy', 'target', 'arguments', 'base', 'calls', 'return',
        'None'}


def _names_and_numbers(source):
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    kinds = {tokenize.NAME: [], tokenize.NUMBER: [], tokenize.STRING: []}
    for token in tokens:
        if token.type in kinds:
            kinds[token.type].append(token.string)
    return kinds


@examples
@given(st.randoms(use_true_random=False))
def test_generated_programs_give_the_same_tape_either_way(sources, monkeypatch, rng):
    text, _, _ = gen.program(rng)
    sources.clear()
    assert_same_tape(text, monkeypatch)
    for source in sources:
        kinds = _names_and_numbers(source)
        assert kinds[tokenize.STRING] == []
        assert all(n in _OWN or re.fullmatch(r'[ack][0-9]+', n) for n in kinds[tokenize.NAME])
        assert all(re.fullmatch(r'[0-9]+', n) for n in kinds[tokenize.NUMBER])


def test_no_text_of_the_program_reaches_the_source(sources, monkeypatch):
    text = ('input secret_input = 1.25\nsecret_block(secret_param) = 4.75*secret_param + '
            'secret_input\nsecret_block(secret_block(secret_input))')
    assert_same_tape(text, monkeypatch)
    assert len(sources) == 1
    assert 'secret' not in sources[0] and '4.75' not in sources[0] and '1.25' not in sources[0]
