"""Precedence and associativity, read off the graph that the grammar's reductions build."""

import pytest

from autodiff_cli import lower
from autodiff_cli.core.graph import Node
from autodiff_cli.errors import AdgradError

SYMBOL = {'add': '+', 'sub': '-', 'mul': '*', 'div': '/', 'pow': '^', 'lt': '<', 'le': '<=',
          'gt': '>', 'ge': '>=', 'eq': '==', 'ne': '!=', 'and': ' and ', 'or': ' or '}
PREFIX = {'neg': '-', 'pos': '+', 'not': 'not '}


def shape(graph, i=None):
    """Fully parenthesised text of a node (test graphs are shallow)."""
    node = graph.nodes[graph.output if i is None else i]
    if node.op == 'input':
        return node.name
    if node.op == 'const':
        return graph.source[node.span[0]:node.span[1]]
    args = [shape(graph, a) for a in node.args]
    if node.op in PREFIX:
        return f'({PREFIX[node.op]}{args[0]})'
    if node.op in SYMBOL:
        return f'({args[0]}{SYMBOL[node.op]}{args[1]})'
    return f"{node.op}({', '.join(args)})"


@pytest.mark.parametrize('text, expected', [
    ('-x^2', '(-(x^2))'),
    ('2^3^2', '(2^(3^2))'),
    ('2**3**2', '(2^(3^2))'),
    ('a/b*c', '((a/b)*c)'),
    ('a-b-c', '((a-b)-c)'),
    ('a+b*c', '(a+(b*c))'),
    ('(a+b)*c', '((a+b)*c)'),
    ('x * -y', '(x*(-y))'),
    ('2^-x', '(2^(-x))'),
    ('-2^-x^2', '(-(2^(-(x^2))))'),
    ('--x', '(-(-x))'),
    ('+x - -y', '((+x)-(-y))'),
    ('a*b^c', '(a*(b^c))'),
    ('a^b*c', '((a^b)*c)'),
    ('-a*b', '((-a)*b)'),
    ('a/b/c', '((a/b)/c)'),
    ('a-b+c', '((a-b)+c)'),
    ('sin(x)^2', '(sin(x)^2)'),
    ('pow(a, b+1)', '(a^(b+1))'),
    ('atan2( y ,x )', 'atan2(y, x)'),
    ('a < b + 1', '(a<(b+1))'),
    ('not a == b', '(not (a==b))'),
    ('a or b and c', '(a or (b and c))'),
    ('not a and b', '((not a) and b)'),
    ('a > -b or c <= 2*d', '((a>(-b)) or (c<=(2*d)))'),
    ('if(a > b, a, -b) + 1', '(if((a>b), a, (-b))+1)'),
    ('if(a, if(b, c, d), e)', 'if(a, if(b, c, d), e)'),
])
def test_precedence_and_associativity(text, expected):
    assert shape(lower(text)) == expected


@pytest.mark.parametrize('text', ['2', '2.5', '.5', '1e-3', '6.02E23', '2.', '1E+5'])
def test_numbers(text):
    node = lower(text).nodes[0]
    assert node.op == 'const' and node.value == float(text)


@pytest.mark.parametrize('text', ['x', 'x1', 'learning_rate', '_tmp', 'X_2b'])
def test_identifiers(text):
    assert lower(text).nodes == [Node('input', name=text, span=(0, len(text)))]


@pytest.mark.parametrize('text, column', [
    ('x*', 3), ('x + * y', 5), ('(x', 3), ('x)', 2), ('2x', 2), ('x $ y', 3), ('f(,)', 3),
])
def test_syntax_errors_point_at_the_column(text, column):
    with pytest.raises(AdgradError) as caught:
        lower(text)
    assert caught.value.location()[1] == column


def test_spans_cover_the_source_text_including_parentheses():
    graph = lower('(x+1)*y')
    assert graph.nodes[graph.output].span == (0, 7)
    assert graph.text(graph.output) == '(x+1)*y'


# Python's \d and float() take any script's digits: '١٢' (Arabic-Indic 12), '१' (Devanagari 1),
# '５' (fullwidth 5). The language's numbers are ASCII digits only.
@pytest.mark.parametrize('text, column', [
    ('\u0661\u0662*x', 1), ('x*\u0661\u0662', 3), ('1.\u0665', 3), ('\u0967 + x', 1),
    ('2*\uff15', 3), ('.\u0665', 1),
])
def test_digits_of_other_scripts_are_not_numbers(text, column):
    with pytest.raises(AdgradError, match='unexpected') as caught:
        lower(text)
    assert caught.value.location()[1] == column


def test_a_non_ascii_digit_is_refused_with_a_caret_at_it(run_cli):
    code, out, err = run_cli('eval', '\u0661\u0662*x', 'x=2')
    assert (code, out) == (2, '')
    first, source, caret = err.splitlines()
    assert first.startswith('adgrad: error: ') and "'\u0661'" in first
    assert caret.index('^') == source.index('\u0661')


def test_non_ascii_letters_are_still_not_names():
    # NAME was [A-Za-z_][A-Za-z0-9_]* before the digits changed, and still is.
    for text in ('\u00e9*2', 'x\u00e9'):
        with pytest.raises(AdgradError, match='unexpected'):
            lower(text)
