"""Text as pictures show it: numbers to four digits, and source text cleaned
of what no picture can carry. Shared by the scene, the styles and the pages."""

import html
import re


def number(x):
    """A number as a figure shows it: 12, 0.5, 3.142, 1.5e+10, inf, nan."""
    if x != x or x in (float('inf'), float('-inf')):
        return repr(x)
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return format(x, '.4g')


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
