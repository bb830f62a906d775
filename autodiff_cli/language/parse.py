"""Text to graph, by the LALR(1) table of grammar/adgrad.lark.

Lark computes the table from the grammar file (grammar_table.py); this
module lexes with the grammar's own terminals and drives the table in one
loop. At each reduction it calls the method of the same name on a builder
(lower.Lowering) with the value stack and the rule's size; the method
replaces the rule's children on top of the stack with the rule's value,
and emits the graph's nodes there and then: there is no
syntax tree, and nothing recurses with the depth of the input. It does not
import Lark: importing it and building its parser took most of a short
run's time, and its general driver is many times slower per token.

Tokens reach the builder as plain tuples (KIND, start, end, text): building
one is several times cheaper than any object, and a parse makes one per
token. The builder unpacks them by name.
"""
import os
import re
import zlib
from itertools import accumulate, chain, compress, repeat
from operator import and_, eq, gt, sub

from ..errors import AdgradError, TableError

_FRIENDLY = {'NUMBER': 'a number', 'NAME': 'a name', '$END': 'end of input',
             '_NEWLINE': 'a new line'}
_HERE = os.path.dirname(os.path.abspath(__file__))
# Bump when the layout of the table changes, so that an old one is refused.
FORMAT = 2
SHIPPED = os.path.join(_HERE, 'grammar_table.json')
FAST_COPY = os.path.join(_HERE, 'shipped_table.py')   # the same, as literals: see grammar_table


def grammar_text():
    # Inside a wheel the grammar ships in the package; in a source checkout
    # or an editable install it lives at the top level.
    for path in (os.path.join(_HERE, 'adgrad.lark'),
                 os.path.join(os.path.dirname(os.path.dirname(_HERE)), 'grammar', 'adgrad.lark')):
        if os.path.isfile(path):
            with open(path, encoding='utf-8') as f:
                return f.read()
    raise FileNotFoundError('grammar/adgrad.lark is missing from the installation')


# ---- the table ----

def _read_table(path):
    """The table in the JSON file at `path`: shipped_table's copy while it
    matches the file's bytes (no json to import, no text to parse), else the
    file parsed."""
    try:
        with open(path, 'rb') as f:
            data = f.read()
    except OSError:
        return None
    from . import shipped_table
    if shipped_table.JSON_CRC32 == zlib.crc32(data):
        return shipped_table.TABLE
    import json
    try:
        return json.loads(data.decode('utf-8'))
    except ValueError:
        return None


def load_table():
    """The parse table, as built from the grammar file as it is now.

    A table built from another text of the grammar is an error, not a slow
    fallback: rebuild it with `python -m autodiff_cli.language.grammar_table`.
    """
    grammar = grammar_text()
    table = _read_table(SHIPPED)
    if not table or table.get('format') != FORMAT:
        raise TableError('the parse table is missing or of an old format')
    if table.get('grammar_crc32') != zlib.crc32(grammar.encode('utf-8')):
        raise TableError('the parse table was built from another version of grammar/adgrad.lark')
    return table


# Kinds the lexer gives pieces of text that are not terminals the table knows.
IGNORED = '<ignored>'        # white space, comments, a new line inside parentheses
UNEXPECTED = '<unexpected>'  # a character that starts no terminal
# The lexer reads a chunk at a time, so its lists stay small; a piece ending
# within _MARGIN of a cut is read again, as it may go on (`1e` then `+5`).
_CHUNK = 1 << 16
_DEPTH = {'LPAR': 1, 'RPAR': -1}   # of parentheses: a new line inside them is white space
_MARGIN = 64


class _Parser:
    """The table, compiled for the driver loop."""

    def __init__(self, table):
        self.states = table['states']
        self.start, self.end = table['start'], table['end']
        self.strings = table['strings']
        self.keywords = table['keywords']
        # One regular expression cuts the text into terminals (ignored ones,
        # then the table's order) or single characters, in C. A piece's kind
        # follows from its text alone, so a dictionary of texts seen says it.
        ignore = list(table['ignore'])
        patterns = dict(table['terminals'])
        order = ignore + [name for name, _ in table['terminals'] if name not in ignore]
        # (grammar_table.build refuses a terminal with a capturing group,
        # which would make findall return groups instead of pieces.)
        self.pieces = re.compile('|'.join(f'(?:{patterns[name]})' for name in order) + r'|[\s\S]')
        # (Any other piece is one character that starts no terminal.)
        self.classifier = re.compile('|'.join(f'(?P<{name}>{patterns[name]})' for name in order)
                                     + r'|(?P<unexpected>[\s\S]*)')
        self.group_kinds = {name: IGNORED if name in ignore else name for name in order}
        self.group_kinds['unexpected'] = UNEXPECTED
        # Every keyword is here, so a text not here is never one.
        words = [word for regular in self.keywords.values() for word in regular]
        self.literal = {text: self.classify(text) for text in [*self.strings.values(), *words]}
        self.keep = {IGNORED: False}
        # Per rule: (origin, size, whether it builds, callback); only a rule that
        # builds calls the builder. A one-child `?rule` passes its child on; the
        # values of `_rules`, lists and the program are dropped, never copied.
        self.rules = []
        for rule in table['rules']:
            origin, size = rule['origin'], rule['size']
            builds = not (rule['inline_single'] and size == 1) and not (
                origin.startswith('_') or origin == 'program')
            self.rules.append((origin, size, builds, rule['callback']))
        # Per rule, where reducing it leads: {state below: {lookahead: (state,
        # its actions, the action there)}}, filled in as parses meet them (climb).
        self.climbs = [{} for _ in self.rules]

    def classify(self, text):
        """The kind of a piece of text: its terminal, IGNORED or UNEXPECTED,
        or (terminal, keyword) for a word that is both (`input` is a NAME)."""
        kind = self.group_kinds[self.classifier.fullmatch(text).lastgroup]
        keyword = self.keywords.get(kind, {}).get(text)
        return kind if keyword is None else (kind, keyword)

    def chunks(self, text):
        """Iterators of the (kind, start, end, text) of each token, chunk by
        chunk, then of ('$END', ...): the parser loops over each, with no
        generator to resume per token."""
        kind_of = _Kinds(self.literal)
        kind_of.fullmatch, kind_of.group_kinds = self.classifier.fullmatch, self.group_kinds
        kind_of = kind_of.__getitem__
        keep, findall = self.keep, self.pieces.findall
        pos, size, length = 0, _CHUNK, len(text)
        depth = 0
        while pos < length:
            endpos = min(length, pos + size)
            texts = findall(text, pos, endpos)
            ends = list(accumulate(map(len, texts), initial=pos))
            if endpos < length:
                count, limit = len(texts), endpos - _MARGIN
                while count and ends[count] > limit:
                    count -= 1
                if not count:   # one piece as long as a chunk: read more at once
                    size *= 2
                    continue
                del texts[count:], ends[count + 1:]
            kinds = list(map(kind_of, texts))
            kept = map(keep.get, kinds, repeat(True))
            after = _depth_after(text, pos, ends[-1], depth)
            if after is not None:
                depth = after
            elif '_NEWLINE' not in kinds:
                depth += kinds.count('LPAR') - kinds.count('RPAR')
            elif depth or 'LPAR' in kinds:
                # The depth before each piece; a new line kept only at 0. (An
                # unmatched ')' drives it below 0 where the parser stops anyway.)
                depths = list(accumulate(map(_DEPTH.get, kinds, repeat(0)), initial=depth))
                inside = map(and_, map(eq, kinds, repeat('_NEWLINE')), map(gt, depths, repeat(0)))
                kept = map(gt, kept, inside)   # kept and not inside
                depth = depths[-1]
            else:   # new lines, all outside parentheses
                depth = -kinds.count('RPAR')
            yield compress(zip(kinds, ends, ends[1:], texts), kept)
            pos, size = ends[-1], _CHUNK
        yield [('$END', length, length, '')]

    def climb(self, rule, below, kind):
        """Where a reduction by `rule` over state `below` leads with `kind` next:
        (state, its actions, the action on `kind` there, or _STUCK).

        That is after every one-child `?rule` or structural reduction that
        `kind` then causes in a row (an operand climbing the precedence
        ladder, a statement joining its list): each replaces only the top
        state, so the driver jumps to where the climb ends. Memoised."""
        origin = self.rules[rule][0]
        top = self.states[below][origin]
        while True:
            action = self.states[top].get(kind)
            if action is None or action >= 0:
                break
            origin, size, builds, _ = self.rules[~action]
            if size != 1 or builds:
                break
            top = self.states[below][origin]
        actions = self.states[top]
        leads = self.climbs[rule].setdefault(below, {})[kind] = (
            top, actions, actions.get(kind, _STUCK))
        return leads

    def expected(self, actions, kind, reduced):
        """The terminals a syntax error names, as Lark's parser names them."""
        expected = {s for s in actions if s.isupper()}
        if not reduced and kind != '_NEWLINE':
            # The token did not fit its state, and Lark's contextual lexer names
            # that state's terminals: no end of input, no keyword of a regular one.
            expected.discard('$END')
            for regular, words in self.keywords.items():
                if regular in expected:
                    expected.difference_update(words.values())
        return expected

    def reducers(self, builder):
        """Per rule, what its reduction does to the value stack: the builder's
        method of the rule's name for a rule that builds, called with the
        stack and the rule's size, which replaces the rule's children on top
        of the stack with its value; else nothing (a one-child rule passes
        its child on, and a one-child structural rule leaves it: nothing reads
        it), or the structural rule's children replaced with None."""
        reducers = []
        for _, size, builds, name in self.rules:
            if builds:
                reducers.append(getattr(builder, name))
            else:
                reducers.append(_leave if size == 1 else _drop)
        return reducers

    def parse(self, text, builder):
        """Drive `builder` through the whole text.

        One loop shifts and reduces, the hot path for programs of 10^6
        tokens, all in locals: a shift is one lookup and three stores; a
        reduction reads its rule and climb, calls its reducer and cuts the
        stack in one slice. A failed lookup (KeyError, or _STUCK) is the rare
        case, a keyword, the end or a syntax error, sorted out in stuck().
        """
        states = self.states
        # A reduce action is ~rule, a negative index: rules[~rule] read from the end.
        rules = [(-1 - size, slice(-size, None) if size else slice(_PAST_END, None),
                  reduce, size, climbs, rule)
                 for rule, ((_, size, _, _), reduce, climbs)
                 in enumerate(zip(self.rules, self.reducers(builder), self.climbs))][::-1]
        state_stack = [self.start]
        value_stack = []
        actions = states[self.start]
        for token in chain.from_iterable(self.chunks(text)):
            kind = token[0]
            try:
                action = actions[kind]
            except KeyError:
                kind, token, action = self.stuck(actions, token, state_stack, False)
                if action is None:
                    return
            while action < 0:
                below, cut, reduce, size, climbs, rule = rules[action]
                under = state_stack[below]
                try:
                    top, actions, action = climbs[under][kind]
                except KeyError:
                    top, actions, action = self.climb(rule, under, kind)
                reduce(value_stack, size)
                if size == 1:   # (a name, a number, a first argument: a store, not a slice)
                    state_stack[-1] = top
                else:
                    state_stack[cut] = (top,)
            try:
                state_stack.append(action)
                value_stack.append(token)
                actions = states[action]
            except IndexError:   # _STUCK after a reduction: the end, or an error
                del state_stack[-1], value_stack[-1]
                self.stuck(actions, token, state_stack, True)
                return
        raise AssertionError('the lexer ends every text with $END')

    def stuck(self, actions, token, state_stack, reduced):
        """A token with no action in this state: a word that is both a name and
        a keyword, resolved here (kind, token, action); the end of a whole
        program (None for the action); or a syntax error, raised. (After a
        reduction the kind is already resolved: only the last two.)"""
        kind = token[0]
        if type(kind) is tuple:
            # A keyword the parser can take here (or a word that fits
            # nowhere) is the keyword; otherwise it is a name.
            regular, keyword = kind
            kind = keyword if keyword in actions or regular not in actions else regular
            token = (kind, *token[1:])
            if kind in actions:
                return kind, token, actions[kind]
        if kind == '$END' and state_stack[-1] == self.end:
            return kind, token, None
        if kind == UNEXPECTED:
            raise _Unexpected(None, token[1])
        raise _Unexpected(token, token[1], self.expected(actions, kind, reduced or kind == '$END'))


_PAST_END = 1 << 62   # a slice from here on is empty at the end of any list: cutting it appends
_STUCK = 1 << 62      # no action: past the last state, so the shift to it fails (IndexError)


def _depth_after(text, pos, end, depth):
    """The depth of parentheses at `end`, from `depth` at `pos`, where no new
    line between them is inside parentheses (which leaves every new line
    piece a statement's end); None where one may be, or where a comment or
    a `\\` could hold a parenthesis or a new line that is not a piece of
    its own. Counted on the text, in C: comparing every piece's kind with
    'LPAR' costs more than reading the chunk's characters."""
    if text.find('#', pos, end) >= 0 or text.find('\\', pos, end) >= 0:
        return None
    if text.find('\n', pos, end) < 0:
        return depth + text.count('(', pos, end) - text.count(')', pos, end)
    lines = text[pos:end].split('\n')
    depths = list(accumulate(map(sub, map(str.count, lines, repeat('(')),
                                 map(str.count, lines, repeat(')'))), initial=depth))
    # depths[k + 1]: at the end of line k, where its new line is
    return None if max(depths[1:-1]) > 0 else depths[-1]


def _leave(stack, size):
    pass


def _drop(stack, size):
    stack[len(stack) - size:] = (None,)


class _Kinds(dict):
    """The kind of each piece of text seen so far; a piece not seen before
    (never a keyword: those are all known from the start) is classified
    when it is first met."""

    __slots__ = ('fullmatch', 'group_kinds')

    def __missing__(self, piece):
        kind = self.group_kinds[self.fullmatch(piece).lastgroup]
        if len(piece) <= 64:   # a comment, say: not worth keeping
            self[piece] = kind
        return kind


class _Unexpected(Exception):
    def __init__(self, token, pos, expected=()):
        super().__init__(token, pos, expected)
        self.token, self.pos, self.expected = token, pos, expected


_PARSER = None


def driver():
    """The table driver, built on first use."""
    global _PARSER
    if _PARSER is None:
        _PARSER = _Parser(load_table())
    return _PARSER


def parse(text, builder):
    """Parse a program, calling `builder` at each reduction; raise AdgradError
    pointing at the first token that does not fit."""
    try:
        driver().parse(text, builder)
    except _Unexpected as error:
        raise _syntax_error(driver(), text, error) from None


def _describe_terminal(parser, name):
    if name in _FRIENDLY:
        return _FRIENDLY[name]
    if name in parser.strings:
        return repr(parser.strings[name])
    return name


_LONGEST_HINT = 200


def _syntax_error(parser, text, error):
    from .hints import character_hint, opened, syntax_hint
    pos = error.pos
    if error.token is None:
        hint = character_hint(text, pos)
        return AdgradError(f"unexpected character {text[pos]!r}"
                           f"{hint if len(hint) <= _LONGEST_HINT else ''}", text, pos)
    kind, _, _, value = error.token
    if kind == '$END':
        pos = len(text.rstrip())
        found = 'end of input'
    else:
        found = 'end of line' if kind == '_NEWLINE' else repr(value)
    if any(parser.strings.get(t) == ')' for t in error.expected):
        # At the end, or on a later line than the '(' (a new line inside
        # parentheses is no token, so the next statement is what meets it).
        unclosed = opened(text, error.pos, '(')
        if unclosed and (kind in ('$END', '_NEWLINE') or '\n' in text[unclosed[-1]:error.pos]):
            return AdgradError(f"unexpected {found}: the '(' at {_where(text, unclosed[-1])} is "
                               'not closed', text, pos)
    expected = sorted({_describe_terminal(parser, t) for t in error.expected if t != '_NEWLINE'})
    hint = syntax_hint(parser, text, error.token, error.expected)
    if len(hint) > _LONGEST_HINT:   # it quotes the program: never a page of it
        hint = ''
    if not hint and 0 < len(expected) <= 6:
        hint = f'; expected {", ".join(expected)}'
    return AdgradError(f'unexpected {found}{hint}', text, pos)


def _where(text, pos):
    line = text.count('\n', 0, pos)
    column = pos - (text.rfind('\n', 0, pos) + 1) + 1
    return f'line {line + 1}, column {column}' if '\n' in text.rstrip() else f'column {column}'

