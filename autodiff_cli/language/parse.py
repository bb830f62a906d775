"""Text to syntax tree, by the LALR(1) table of grammar/adgrad.lark.

Lark computes the table from the grammar file (see grammar_table.py); this
module lexes with the grammar's own terminals and drives the table in one
loop, applying the transformer below at each reduction, so no parse tree
is built and nothing recurses with the depth of the input. It does not
import Lark: that and building Lark's parser took most of a short run's
time, and Lark's general driver spent ~10 µs per token.

The syntax tree is plain tuples, each carrying its (start, end) offsets in
the text:

    ('num', start, end, text)            ('var', start, end, name)
    ('op', start, end, op, (children))   ('call', start, end, name, (args))
    ('group', start, end, child)

and statements ('bind', name_token, expr), ('block', name_token, params,
body), ('inputs', [(name_token, expr), ...]) or a bare expression.
"""

import json
import os
import re
import zlib
from typing import NamedTuple

from ..errors import AdgradError

_EMPTY = re.compile(r'(\s|;|#[^\n]*|\\\n)*')
_FRIENDLY = {'NUMBER': 'a number', 'NAME': 'a name', '$END': 'end of input',
             '_NEWLINE': 'a new line'}
_HERE = os.path.dirname(os.path.abspath(__file__))
# Bump when the layout of the table changes, so that an old one is refused.
FORMAT = 2
SHIPPED = os.path.join(_HERE, 'grammar_table.json')


def grammar_text():
    # Inside a wheel the grammar ships in the package; in a source checkout
    # or an editable install it lives at the top level.
    for path in (os.path.join(_HERE, 'adgrad.lark'),
                 os.path.join(os.path.dirname(os.path.dirname(_HERE)), 'grammar', 'adgrad.lark')):
        if os.path.isfile(path):
            with open(path, encoding='utf-8') as f:
                return f.read()
    raise FileNotFoundError('grammar/adgrad.lark is missing from the installation')


class Token(NamedTuple):
    """A name that outlives parsing (a binding's, a block's, an input's),
    with the fields of Lark's Token that lowering uses."""
    type: str
    start_pos: int
    end_pos: int
    value: str

    def __str__(self):
        return self.value


# ---- the transformer: one method per rule alias of the grammar ----
#
# Tokens reach it as plain tuples (TYPE, start, end, text): building one is
# several times cheaper than any object, and a parse makes one per token.
# Syntax nodes also begin (kind, start, end, ...), so c[i][1] and c[i][2]
# are the offsets of any child. Terminal names are upper case and syntax
# kinds lower case, which tells separators from statements.

def _binary(op):
    return lambda self, c: ('op', c[0][1], c[2][2], op, (c[0], c[2]))


def _unary(op):
    return lambda self, c: ('op', c[0][1], c[1][2], op, (c[1],))


class ToSyntax:
    # Every token of a rule arrives (the grammar keeps them all), so that
    # operators and parentheses bring their offsets; each method drops the
    # punctuation it does not need.
    add, sub, mul, div, pow = (_binary(op) for op in ('add', 'sub', 'mul', 'div', 'pow'))
    neg, pos = _unary('neg'), _unary('pos')

    def number(self, c):
        _, start, end, text = c[0]
        return ('num', start, end, text)

    def variable(self, c):
        _, start, end, name = c[0]
        return ('var', start, end, name)

    def call(self, c):
        name, _, args, close = c
        return ('call', name[1], close[2], name[3], args)

    def arguments(self, c):
        return tuple(c[::2])

    def group(self, c):
        return ('group', c[0][1], c[2][2], c[1])

    def binding(self, c):
        return ('bind', Token(*c[0]), c[2])

    def block(self, c):
        return ('block', Token(*c[0]), c[2], c[5])

    def default(self, c):
        return (Token(*c[0]), c[2])

    def inputs(self, c):
        return ('inputs', list(c[1::2]))  # "input" default ("," default)*

    def program(self, c):
        return [s for s in c if not s[0].isupper()]  # drop the separator tokens


# ---- the table ----

def _read_json(path):
    try:
        with open(path, encoding='utf-8') as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def load_table():
    """The parse table, as built from the grammar file as it is now.

    A table built from another text of the grammar is an error, not a slow
    fallback: rebuild it with `python -m autodiff_cli.language.grammar_table`.
    """
    grammar = grammar_text()
    table = _read_json(SHIPPED)
    if not table or table.get('format') != FORMAT:
        raise TableError('the parse table is missing or of an old format')
    if table.get('grammar_crc32') != zlib.crc32(grammar.encode('utf-8')):
        raise TableError('the parse table was built from another version of grammar/adgrad.lark')
    return table


class TableError(Exception):
    """The shipped parse table does not match the grammar: a broken build, not bad input."""

    def __init__(self, why):
        super().__init__(f'{why}; rebuild it with: python -m autodiff_cli.language.grammar_table')


class _Parser:
    """The table, compiled for the driver loop."""

    def __init__(self, table, transformer):
        self.states = table['states']
        self.start, self.end = table['start'], table['end']
        self.strings = table['strings']
        self.keywords = table['keywords']
        # One regular expression for all terminals, tried in the table's
        # order, each match swallowing the ignored text (white space,
        # comments) before its token; `unexpected` catches any other
        # character, and an empty match at the end of the text ends it.
        ignore = set(table['ignore'])
        patterns = dict(table['terminals'])
        skip = '|'.join(f'(?:{patterns[name]})' for name in table['ignore'])
        alternatives = [f'(?P<{name}>{pattern})'
                        for name, pattern in table['terminals'] if name not in ignore]
        self.lexer = re.compile(f'(?:{skip})*(?:' + '|'.join(alternatives)
                                + r'|(?P<unexpected>[\s\S])|\Z)')
        self.kinds = {index: name for name, index in self.lexer.groupindex.items()}
        self.unexpected = self.lexer.groupindex['unexpected']
        # Per rule: (origin, size, build), where build turns the popped values
        # into the rule's value, or is None for a `?rule` with a single child,
        # which passes its child on unchanged.
        self.rules = []
        for rule in table['rules']:
            size, splice, inline_single = rule['size'], rule['splice'], rule['inline_single']
            if inline_single and size == 1 and not splice:
                build = None
            elif rule['origin'].startswith('_') or splice or inline_single:
                build = _builder(None if rule['origin'].startswith('_')
                                 else getattr(transformer, rule['callback']),
                                 splice, inline_single)
            else:
                build = getattr(transformer, rule['callback'])
            self.rules.append((rule['origin'], size, build))

    def expected(self, actions, reduced):
        """The terminals a syntax error names, as Lark's parser names them."""
        expected = {s for s in actions if s.isupper()}
        if not reduced:
            # The token did not fit the state it was lexed in, and Lark's
            # contextual lexer reports that state's own terminals: no end of
            # input, and no keyword that its regular terminal takes in.
            expected.discard('$END')
            for regular, words in self.keywords.items():
                if regular in expected:
                    expected.difference_update(words.values())
        return expected

    def parse(self, text):
        """The transformer's value for the whole text.

        One loop lexes, shifts and reduces: it is the hot path for machine-made
        programs of 10^6 tokens, so it keeps everything in locals.
        """
        states, rules, keywords, kinds, end_state, unexpected = (
            self.states, self.rules, self.keywords, self.kinds, self.end, self.unexpected)
        state_stack = [self.start]
        value_stack = []
        actions = states[self.start]
        depth = 0  # of parentheses: a new line inside them is white space
        for match in self.lexer.finditer(text):
            index = match.lastindex
            kind = kinds.get(index)
            if kind is None:  # no terminal: only ignored text was left, or nothing
                kind = '$END'
                token = (kind, len(text), len(text), '')
            elif index == unexpected:
                raise _Unexpected(None, match.start(index))
            else:
                start, end = match.span(index)
                token = (kind, start, end, text[start:end])
                # NewlinesInParentheses.process, inline.
                if kind == 'LPAR':
                    depth += 1
                elif kind == 'RPAR':
                    depth = depth - 1 if depth else 0
                elif kind == '_NEWLINE' and depth:
                    continue
                if kind in keywords:
                    # A keyword the parser can take here (or a word that
                    # fits nowhere) is the keyword; otherwise it is a name.
                    keyword = keywords[kind].get(token[3])
                    if keyword is not None and (keyword in actions or kind not in actions):
                        kind = keyword
                        token = (kind, start, end, token[3])
            reduced = False
            while True:
                action = actions.get(kind)
                if action is None:
                    if kind == '$END' and state_stack[-1] == end_state:
                        return value_stack[-1]
                    raise _Unexpected(token, token[1],
                                      self.expected(actions, reduced or kind == '$END'))
                if action >= 0:
                    break
                origin, size, build = rules[~action]
                if build is None:  # a `?rule` passing its one child on
                    del state_stack[-1]
                elif size == 1:
                    value_stack[-1] = build(value_stack[-1:])
                    del state_stack[-1]
                else:
                    children = value_stack[-size:]
                    del value_stack[-size:]
                    del state_stack[-size:]
                    value_stack.append(build(children))
                state = states[state_stack[-1]][origin]
                state_stack.append(state)
                actions = states[state]
                reduced = True
            state_stack.append(action)
            value_stack.append(token)
            actions = states[action]
        raise AssertionError('the lexer ends every text with an empty match')


def _builder(method, splice, inline_single):
    """The reduction of one rule: splice `_rule` children in, then call."""
    def build(children):
        if splice:
            spliced = []
            for i, child in enumerate(children):
                if i in splice:
                    spliced.extend(child)
                else:
                    spliced.append(child)
            children = spliced
        if method is None:  # a `_rule`: its children go to its parent
            return children
        if inline_single and len(children) == 1:
            return children[0]
        return method(children)
    return build


class _Unexpected(Exception):
    def __init__(self, token, pos, expected=()):
        super().__init__(token, pos, expected)
        self.token, self.pos, self.expected = token, pos, expected


_PARSER = None


def _parser():
    global _PARSER
    if _PARSER is None:
        _PARSER = _Parser(load_table(), ToSyntax())
    return _PARSER


def parse(text):
    """Parse a program; raise AdgradError pointing at the first bad token."""
    parser = _parser()
    try:
        return parser.parse(text)
    except _Unexpected as error:
        raise _syntax_error(parser, text, error) from None


def _describe_terminal(parser, name):
    if name in _FRIENDLY:
        return _FRIENDLY[name]
    if name in parser.strings:
        return repr(parser.strings[name])
    return name


def _syntax_error(parser, text, error):
    pos = error.pos
    if error.token is None:
        return AdgradError(f'unexpected character {text[pos]!r}', text, pos)
    kind, _, _, value = error.token
    if kind == '$END':
        if _EMPTY.fullmatch(text):
            return AdgradError('empty program: write an expression, such as x*y')
        pos = len(text.rstrip())
        found = 'end of input'
    else:
        found = 'end of line' if kind == '_NEWLINE' else repr(value)
    expected = sorted({_describe_terminal(parser, t) for t in error.expected if t != '_NEWLINE'})
    hint = f'; expected {", ".join(expected)}' if 0 < len(expected) <= 6 else ''
    return AdgradError(f'unexpected {found}{hint}', text, pos)
