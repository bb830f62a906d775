"""Text as pictures show it: numbers to four digits, and source text cleaned
of what no picture can carry. Shared by the scene, the styles and the pages."""

import html
import re

from ..core.numbers import number as _number


def number(x):
    """A number as a figure shows it, to 4 digits: 12, 0.5, 3.142, 1.5e+10, inf, nan."""
    return _number(x, 4)


# Characters XML 1.0 cannot carry (controls, lone surrogates, U+FFFE/U+FFFF):
# one in a label makes dot's SVG unreadable, so each becomes U+FFFD.
_NOT_XML = re.compile('[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]')


def printable(text):
    """Text any picture can carry: XML-invalid characters replaced by U+FFFD."""
    return _NOT_XML.sub('\ufffd', str(text))


def esc(text):
    """Text for an HTML-like DOT label: escaped for XML, and every backslash
    doubled, since dot reads a backslash in a label as an escape."""
    return html.escape(printable(text), quote=True).replace('\\', '\\\\')


# A comment and a line continuation are not part of what a node computes.
_NOT_CODE = re.compile(r'#[^\r\n]*|\\(?=[ \t]*(?:\r\n|\r|\n))')


def displayable(graph):
    """The graph with its source cleaned for display, at the same length so that
    every span still points at its text: comments and line-continuation
    backslashes blanked, characters no picture can carry replaced."""
    source = graph.source
    if '#' in source or '\\' in source:
        source = _NOT_CODE.sub(lambda m: ' ' * len(m.group()), source)
    if _NOT_XML.search(source):
        source = printable(source)
    return graph if source is graph.source else graph._replace(source=source)


_BREAKS = (' = ', ' · ', '  [')   # never inside a symbol: break before any of them
_SUM = ' + '                       # also inside ∂(x + y): break there only outside parentheses


def _terms(text):
    """The caption cut before each ' = ' and ' · ', and each ' + ' outside
    parentheses (an elided symbol, 'log(exp(a…(b - m)))', may leave them
    unbalanced: that only costs a break, never a cut symbol)."""
    chunks, start, depth = [], 0, 0
    for k, char in enumerate(text):
        depth = depth + 1 if char == '(' else max(0, depth - 1) if char == ')' else depth
        if k > start and (text.startswith(_BREAKS, k) or depth == 0 and text.startswith(_SUM, k)):
            chunks.append(text[start:k])
            start = k
    chunks.append(text[start:])
    return chunks


def wrap_terms(text, width, indent=6):
    """Lines of at most `width` characters, broken only between the terms of a
    caption (never inside a number, a symbol or brackets), continuation
    lines indented. A term longer than a line breaks between its words, as
    prose does (a loop's steps); a word longer than a line is left whole."""
    lines, line = [], ''
    for chunk in _terms(text):
        for piece in [chunk] if len(chunk.strip()) <= width - indent else _words(chunk):
            if line.strip() and len(line) + len(piece) > width:
                lines.append(line.rstrip())
                line = ' ' * indent + piece.lstrip()
            else:
                line += piece
    if line.strip() or not lines:
        lines.append(line.rstrip())
    return lines


def _words(text):
    """The text cut before each space outside a pair of brackets (one left
    open by an elided symbol, 'log(exp(a…(b - m)', protects nothing), and
    never after a term's leading ' = ', ' · ' or ' + ', which keeps its word."""
    inside, opened = [0] * (len(text) + 1), []
    for k, char in enumerate(text):
        if char in _OPEN:
            opened.append(k)
        elif char in _CLOSE and opened:
            inside[opened.pop() + 1] += 1
            inside[k] -= 1
    words, start, depth = [], 0, 0
    for k, char in enumerate(text):
        depth += inside[k]
        if k > start and char == ' ' and depth == 0 and text[k - 1] != ' ' \
                and text[start:k].strip() not in _LEADS:
            words.append(text[start:k])
            start = k
    words.append(text[start:])
    return words


_LEADS = ('=', '·', '+', '-')


def enclosed(text):
    """Whether text is one parenthesized whole, '((1 - y)*(y + 1))', not '(a) + (b)'."""
    depth = 0
    for k, char in enumerate(text):
        depth += (char == '(') - (char == ')')
        if depth == 0 and k < len(text) - 1:
            return False
    return text.startswith('(') and depth == 0


_OPEN, _CLOSE = '([', ')]'


def _top_terms(text):
    """The text cut before each ' + ' and ' - ' outside brackets, or None
    where brackets do not balance (an already elided text)."""
    terms, start, depth = [], 0, 0
    for k, char in enumerate(text):
        depth += (char in _OPEN) - (char in _CLOSE)
        if depth < 0:
            return None
        if depth == 0 and k > start and text.startswith((' + ', ' - '), k):
            terms.append(text[start:k])
            start = k
    return terms + [text[start:]] if depth == 0 else None


def _token_cut(text, k, forward):
    """k moved to the nearest place, towards the text's middle, that is no
    part of a name, a number or an index (h[1], 2.5), if one is near."""
    def inside(j):
        depth = sum((c == '[') - (c == ']') for c in text[:j])
        return depth > 0 or 0 < j < len(text) and (text[j - 1].isalnum() or text[j - 1] in '_.') \
            and (text[j].isalnum() or text[j] in '_.[')
    j = k
    while 0 < j < len(text) and inside(j):
        j += 1 if forward else -1
    return j if abs(j - k) <= 8 else k   # a name too long to keep whole is cut


def shortened(text, limit):
    """Text of at most `limit` characters or so: whole terms from each end and
    '…' for those between (a*b + … + e), else cut where no name, number or
    index is split; never a stray bracket of half a term (V[0,1]…] + c)."""
    if len(text) <= limit:
        return text
    terms = _top_terms(text) or []
    head, tail, rest = terms[:1], terms[-1:], terms[1:-1]
    while rest:   # a term from the end, then one from the start, while they fit
        k = -1 if len(tail) <= len(head) else 0
        if len(''.join(head + tail + [rest[k]])) + 4 > limit:
            break
        tail.insert(0, rest.pop()) if k else head.append(rest.pop(0))
    if rest and len(''.join(head + tail)) + 4 <= limit:
        return ''.join(head) + ' + …' + ''.join(tail)
    if len(terms) > 1 and len(terms[0]) + 4 <= limit:   # the first term, and what follows it
        return terms[0] + terms[1][:3] + '…'
    half = limit // 2
    a = _token_cut(text, half, False)
    b = _token_cut(text, len(text) - (limit - half - 1), True)
    return text[:a] + '…' + text[b:]
