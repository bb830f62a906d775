"""Text to syntax tree, with the Lark grammar in grammar/adgrad.lark.

The parser is LALR and applies the transformer as it reduces, so no parse
tree is built and nothing recurses with the depth of the input. The syntax
tree is plain tuples, each carrying its (start, end) offsets in the text:

    ('num', start, end, text)            ('var', start, end, name)
    ('op', start, end, op, (children))   ('call', start, end, name, (args))
    ('group', start, end, child)

and statements ('bind', name_token, expr), ('block', name_token, params,
body), ('inputs', [(name_token, expr), ...]) or a bare expression.
"""

import difflib
import re
from functools import lru_cache
from importlib import resources
from pathlib import Path

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from .errors import AdgradError

_EMPTY = re.compile(r'(\s|;|#[^\n]*|\\\n)*')
_FRIENDLY = {'NUMBER': 'a number', 'NAME': 'a name', '$END': 'end of input',
             '_NEWLINE': 'a new line'}


def grammar_text():
    packaged = resources.files('autodiff_cli') / 'grammar' / 'adgrad.lark'
    if packaged.is_file():
        return packaged.read_text(encoding='utf-8')
    # A source checkout or editable install: the grammar lives at the top level.
    return (Path(__file__).resolve().parent.parent / 'grammar' / 'adgrad.lark').read_text(
        encoding='utf-8')


def _binary(op):
    return lambda self, c: ('op', c[0][1], c[2][2], op, (c[0], c[2]))


def _unary(op):
    return lambda self, c: ('op', c[0].start_pos, c[1][2], op, (c[1],))


class _ToSyntax(Transformer):
    # keep_all_tokens is on so that operators and parentheses bring their
    # offsets; each method drops the punctuation it does not need.
    add, sub, mul, div, pow = (_binary(op) for op in ('add', 'sub', 'mul', 'div', 'pow'))
    neg, pos = _unary('neg'), _unary('pos')

    def number(self, c):
        return ('num', c[0].start_pos, c[0].end_pos, c[0].value)

    def variable(self, c):
        return ('var', c[0].start_pos, c[0].end_pos, c[0].value)

    def call(self, c):
        name, _, args, close = c
        return ('call', name.start_pos, close.end_pos, name.value, args)

    def arguments(self, c):
        return tuple(c[::2])

    def group(self, c):
        return ('group', c[0].start_pos, c[2].end_pos, c[1])

    def binding(self, c):
        return ('bind', c[0], c[2])

    def block(self, c):
        return ('block', c[0], c[2], c[5])

    def default(self, c):
        return (c[0], c[2])

    def inputs(self, c):
        return ('inputs', [d for d in c if not isinstance(d, Token)])

    def program(self, c):
        return [s for s in c if not isinstance(s, Token)]


class _NewlinesInParentheses:
    """A new line inside parentheses is white space, as in Python."""

    always_accept = ('_NEWLINE',)

    def process(self, stream):
        depth = 0
        for token in stream:
            if token.type == 'LPAR':
                depth += 1
            elif token.type == 'RPAR':
                depth = max(depth - 1, 0)
            elif token.type == '_NEWLINE' and depth:
                continue
            yield token


@lru_cache(maxsize=None)
def _parser():
    return Lark(grammar_text(), start='program', parser='lalr', lexer='contextual',
                keep_all_tokens=True, transformer=_ToSyntax(visit_tokens=False),
                postlex=_NewlinesInParentheses(), maybe_placeholders=False)


def parse(text):
    """Parse a program; raise AdgradError pointing at the first bad token."""
    parser = _parser()
    try:
        return parser.parse(text)
    except UnexpectedInput as error:
        raise _syntax_error(parser, text, error) from None


def _describe_terminal(parser, name):
    if name in _FRIENDLY:
        return _FRIENDLY[name]
    try:
        return repr(parser.get_terminal(name).pattern.value)
    except KeyError:
        return name


def _syntax_error(parser, text, error):
    pos = getattr(error, 'pos_in_stream', None)
    if isinstance(error, UnexpectedCharacters):
        return AdgradError(f'unexpected character {text[pos]!r}', text, pos)
    if isinstance(error, UnexpectedToken):
        token = error.token
        if token.type == '$END':
            if _EMPTY.fullmatch(text):
                return AdgradError('empty program: write an expression, such as x*y')
            pos = len(text.rstrip())
            found = 'end of input'
        else:
            pos = token.start_pos
            found = 'a new line' if token.type == '_NEWLINE' else repr(token.value)
        expected = sorted({_describe_terminal(parser, t) for t in error.expected if t != '_NEWLINE'})
        hint = f'; expected {", ".join(expected)}' if 0 < len(expected) <= 6 else ''
        return AdgradError(f'unexpected {found}{hint}', text, pos)
    return AdgradError(str(error).splitlines()[0], text, pos)


def did_you_mean(name, candidates):
    close = difflib.get_close_matches(name, sorted(candidates), n=1)
    return f"; did you mean '{close[0]}'?" if close else ''
