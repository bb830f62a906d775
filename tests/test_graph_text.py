"""Graph.text folds white space with str.split and reads only the ends of a
long span: it must give what blanking comments and line continuations, then
folding with re.sub(r'\\s+', ' '), gives over the span (or over 2 * limit
characters of each end of a long one), elided the same way, for any text
and limit."""

import random
import re

from autodiff_cli.core.graph import Graph, Node

_WHITESPACE = re.compile(r'\s+')


_NOT_TEXT = re.compile(r'#[^\n]*|\\\r?\n')   # comments and line continuations


def fold(text):
    return _WHITESPACE.sub(' ', _NOT_TEXT.sub(' ', text))


def reference(graph, node_id, limit=None):
    node = graph.nodes[node_id]
    if node.span is None:
        return node.name or ''
    start, end = node.span
    if limit is not None and end - start > 4 * limit:
        head = fold(graph.source[start:start + 2 * limit])
        tail = fold(graph.source[end - 2 * limit:end])
        return head[:limit // 2] + '…' + tail[-(limit - limit // 2 - 1):]
    text = fold(graph.source[start:end]).strip()
    if limit is not None and len(text) > limit:
        return text[:limit // 2] + '…' + text[-(limit - limit // 2 - 1):]
    return text


def test_text_is_the_regex_fold_of_the_span():
    rng = random.Random(3)
    pieces = [' ', '  ', '\t', '\n', 'a', 'bc', '\x1c', '\u2028', '\xa0', '+', ' ' * 10,
              '# c d', '#', '\\', '\\\n', '\\\r\n', '\r']
    for _ in range(400):
        source = ''.join(rng.choice(pieces) for _ in range(rng.randint(0, 400)))
        nodes = []
        for _ in range(10):
            a = rng.randint(0, len(source))
            nodes.append(Node('add', (), None, None, (a, rng.randint(a, len(source))), None))
        graph = Graph(nodes, 0, {}, {}, source)
        for i in range(len(nodes)):
            for limit in (None, 1, 2, 3, 5, 8, 11, 20, 40, 120):
                assert graph.text(i, limit) == reference(graph, i, limit), (source, nodes[i], limit)
        for limit in (None, 3, 120):
            assert graph.texts(limit) == [graph.text(i, limit) for i in range(len(nodes))]


def test_a_node_without_a_span_shows_its_name():
    graph = Graph([Node('param', (), 'a')], 0, {}, {}, '')
    assert graph.text(0) == 'a'
