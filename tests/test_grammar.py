"""Precedence and associativity, read off the syntax tree the grammar builds."""

import pytest

from autodiff_cli.errors import AdgradError
from autodiff_cli.language.parse import parse

SYMBOL = {'add': '+', 'sub': '-', 'mul': '*', 'div': '/', 'pow': '^'}


def shape(tree):
    """Fully parenthesised text of a syntax tree (test trees are shallow)."""
    kind = tree[0]
    if kind in ('num', 'var'):
        return tree[3]
    if kind == 'group':
        return shape(tree[3])
    if kind == 'call':
        return f"{tree[3]}({', '.join(shape(a) for a in tree[4])})"
    op, children = tree[3], tree[4]
    if op in ('neg', 'pos'):
        return f"({'-' if op == 'neg' else '+'}{shape(children[0])})"
    return f'({shape(children[0])}{SYMBOL[op]}{shape(children[1])})'


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
    ('pow(a, b+1)', 'pow(a, (b+1))'),
    ('atan2( y ,x )', 'atan2(y, x)'),
])
def test_precedence_and_associativity(text, expected):
    assert shape(parse(text)[-1]) == expected


@pytest.mark.parametrize('text', ['2', '2.5', '.5', '1e-3', '6.02E23', '2.', '1E+5'])
def test_numbers(text):
    assert parse(text)[0][0] == 'num' and float(parse(text)[0][3]) == float(text)


@pytest.mark.parametrize('text', ['x', 'x1', 'learning_rate', '_tmp', 'X_2b'])
def test_identifiers(text):
    assert parse(text)[0] == ('var', 0, len(text), text)


@pytest.mark.parametrize('text, column', [
    ('x*', 3), ('x + * y', 5), ('(x', 3), ('x)', 2), ('2x', 2), ('x @ y', 3), ('f(,)', 3),
])
def test_syntax_errors_point_at_the_column(text, column):
    with pytest.raises(AdgradError) as caught:
        parse(text)
    assert caught.value.location()[1] == column


def test_spans_cover_the_source_text_including_parentheses():
    tree = parse('(x+1)*y')[0]
    assert (tree[1], tree[2]) == (0, 7)
