"""The computational graph: a tape of nodes in topological order.

A node never changes once made and holds no results: forward and backward
passes return arrays indexed by node id (the node's place on the tape), so
the same graph can be evaluated and differentiated any number of times.
"""

from collections import namedtuple


_NOT_TEXT = None   # comments and `\` line continuations: compiled on first need


def _blank(text):
    """Comments and line continuations out of a node's text: they are not
    what it computes (`x + \\` then `y` is `x + y`)."""
    global _NOT_TEXT
    if '#' not in text and '\\' not in text:
        return text
    if _NOT_TEXT is None:
        import re
        _NOT_TEXT = re.compile(r'#[^\n]*|\\\r?\n')
    return _NOT_TEXT.sub(' ', text)


def _unplain(source, start, end):
    """Whether source[start:end] holds a comment or a line continuation."""
    return source.find('#', start, end) >= 0 or source.find('\\', start, end) >= 0


def _fold(text):
    """White space runs as one space (re.sub(r'\\s+', ' ', text)), in C:
    str.split() splits on exactly the characters that \\s matches, several
    times faster than the regular expression."""
    text = _blank(text)   # first: a blanked comment at either end leaves a space there
    folded = ' '.join(text.split())
    if not folded:
        return ' ' if text else ''
    if text[0].isspace():
        folded = ' ' + folded
    if text[-1].isspace():
        folded += ' '
    return folded


# (collections.namedtuple, not typing.NamedTuple as in printers.py and
# check.py: those are off the path of `eval`, which never imports typing.)

# op:    'input', 'const', 'static' (an axis, an index: a plain value an
#        array op takes), or a primitive's name
# args:  ids of the input nodes, in argument order
# name:  variable, constant or binding name ('c#2' for a binding's second version)
# value: a constant's value
# span:  (start, end) of its source text in Graph.source
# block: block instance path, outermost first: 'f#1/h#2'
Node = namedtuple('Node', 'op args name value span block', defaults=((), None, None, None, None))


# Where the two branches of an `if` node lie on the tape: the `if` node, its
# condition's node, and the `then` branch nodes[then_start:else_start] and the
# `else` branch nodes[else_start:end]. Lowering emits each branch's nodes
# contiguously, so a single point can skip the branch it does not take
# (forward), and a batch can mask it. Input nodes may lie inside a range;
# they belong to the whole graph.
Branch = namedtuple('Branch', 'node condition then_start else_start end')

# A loop node's value (core/loops.py runs it):
# body: the Graph of one iteration, whose input nodes are the slots;
# first, count: the index runs first, first + 1, ..., first + count - 1;
# index: the body id of the index's input node, or None;
# slots: per argument of the loop node, (kind, body id), kind 'carry' (the
#   value before the loop, then the last iteration's), 'free' (the same every
#   iteration) or 'scan' (slice i of a stacked array, i the iteration's index);
# carry: per argument, the body id the next iteration's slot takes, or None;
# outputs: the body ids the loop's parts give after the last iteration;
# names: the names the parts are bound to, in order;
# stacked: the positions in outputs of those whose part stacks every
#   iteration's value instead, row i from the iteration whose index is i (X[i] = ...);
# reverse: whether the index runs down, first + count - 1 to first (`reversed(a..b)`).
Loop = namedtuple('Loop', 'body first count index slots carry outputs names stacked reverse',
                  defaults=((), False))

CARRY, FREE, SCAN = 'carry', 'free', 'scan'


class Graph(namedtuple('Graph',
                       'nodes output inputs defaults source branches notes shapes loops held',
                       defaults=((), (), None, (), ()))):
    """nodes: the tape, every node's args before it; output: the output node's
    id; inputs: variable name -> input node id, in order of first use;
    defaults: name -> default from `input`; source: the text spans point into;
    branches: a Branch per `if` node, in tape order; notes: what is worth telling
    the user that is not an error; shapes: None for a program of numbers, else
    name -> the shape its `input` declares (ints, or names the values bind);
    loops: the ids of its `loop` nodes; held: names of inputs held fixed, as
    --data's columns are, whose gradient no picture or table shows."""
    __slots__ = ()

    def text(self, node_id, limit=None):
        """The source text a node computes, white space folded; elided past `limit`."""
        return _text(self.source, self.nodes[node_id], limit, {}, {})

    def texts(self, limit=None):
        """text(i, limit) of every node, in one pass: nodes of a deep
        expression share the ends of their spans, folded once here, and a
        stretch of source with nothing to fold or blank is taken as it is."""
        return list(self.each_text(limit))

    def each_text(self, limit=None):
        """texts(limit), one at a time: --nodes writes 10^5 of them without
        holding them all."""
        source, heads, tails = self.source, {}, {}
        marks = _marks(source)
        count = len(marks)
        long = 4 * limit if limit is not None and limit > 2 else None
        if long is not None:
            half, rest = limit // 2, limit - limit // 2 - 1
        for node in self.nodes:
            if node.span is None:
                yield node.name or ''
                continue
            start, end = node.span
            k = _bisect(marks, start)
            plain = k == count or marks[k] >= end   # no mark from start to end
            if plain and long is not None and end - start > long:
                # its ends as they are: every node of a deep expression
                yield f'{source[start:start + half]}…{source[end - rest:end]}'
            else:
                yield _text(source, node, limit, heads, tails, plain)

    def line(self, node_id):
        """The source line (from 1) a node's text starts on."""
        return self.source.count('\n', 0, self.nodes[node_id].span[0]) + 1

    def label(self, node_id):
        """What a node is: its name, its constant, or its op."""
        node = self.nodes[node_id]
        if node.op in ('input', 'const'):
            return node.name or repr(node.value)
        return node.op


_bisect = None   # bisect.bisect_left, imported on first need


def _marks(source):
    """The sorted places of what folding or blanking changes: white space but
    a single space, '#' and backslashes. A stretch of source with none is
    its own text, found by bisecting these rather than reading it again."""
    global _bisect
    import re
    from bisect import bisect_left as _bisect
    # \s is what str.split() splits on; a space followed by a space starts a run.
    return [m.start() for m in re.finditer(r'[^\S ]|[#\\]| (?= )', source)]


def _text(source, node, limit, heads, tails, plain=False):
    """Graph.text, with the folded ends of long spans kept in `heads` and
    `tails` (by position) for the nodes that share them. `plain` says the
    span holds nothing to fold or blank (each_text() finds out)."""
    if node.span is None:
        return node.name or ''
    start, end = node.span
    if limit is not None and end - start > 4 * limit:
        # Deep expressions have quadratic total text: read only the ends,
        # as much as 2 * limit characters of each where white space folds
        # them shorter than what is shown, else a few more than is shown
        # (folding a prefix gives a prefix of the folded whole).
        half, rest, most = limit // 2, limit - limit // 2 - 1, 2 * limit
        # A comment or line continuation there is blanked as a whole from
        # the 2 * limit characters, as a few would cut it.
        head = heads.get(start)
        if head is None:
            head = None if _unplain(source, start, start + most) else (
                _fold(source[start:start + min(half + 16, most)]))
            if head is None or len(head) < half:
                head = _fold(source[start:start + most])
            head = heads[start] = head[:half]
        tail = tails.get(end)
        if tail is None:
            tail = None if _unplain(source, end - most, end) or not rest else (
                _fold(source[end - min(rest + 16, most):end]))
            if tail is None or len(tail) < rest:
                tail = _fold(source[end - most:end])
            tail = tails[end] = tail[-rest:]
        return head + '…' + tail
    if plain:
        text = source[start:end].strip(' ')   # what folding gives: there are only single spaces
    else:
        text = ' '.join(_blank(source[start:end]).split())
    if limit is not None and len(text) > limit:
        return text[:limit // 2] + '…' + text[-(limit - limit // 2 - 1):]
    return text


def is_array_program(graph, inputs=None):
    """Whether the program has arrays (lowering says so in graph.shapes), or
    a value given for one of its inputs is one."""
    return graph.shapes is not None or inputs is not None and any(
        getattr(v, 'ndim', 0) for v in inputs.values())


def leading_to_inputs(graph, wanted=None):
    """Per node, whether it depends on an input (of the names `wanted`, or
    any): whether a cotangent arriving there can reach a gradient."""
    result = [False] * len(graph.nodes)
    for i, node in enumerate(graph.nodes):
        if node.op == 'input':
            result[i] = wanted is None or node.name in wanted
        elif node.args:
            result[i] = any(result[a] for a in node.args)
    return result
