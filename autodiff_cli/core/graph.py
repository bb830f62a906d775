"""The computational graph: a tape of nodes in topological order.

A node never changes once made and holds no results: forward and backward
passes return arrays indexed by node id (the node's place on the tape), so
the same graph can be evaluated and differentiated any number of times.
"""

import re
from typing import NamedTuple

_WHITESPACE = re.compile(r'\s+')


class Node(NamedTuple):
    op: str                       # 'input', 'const', or a primitive's name
    args: tuple = ()              # ids of the input nodes, in argument order
    name: str | None = None       # variable, constant or binding name
    value: float | None = None    # a constant's value
    span: tuple | None = None     # (start, end) of its source text in Graph.source
    block: str | None = None      # block instance path, outermost first: 'f#1/h#2'


class Branch(NamedTuple):
    """Where the two branches of an `if` node lie on the tape.

    Lowering emits each branch's nodes contiguously, so a single point can
    skip the branch it does not take (forward), and a batch can mask it.
    Input nodes may lie inside a range; they belong to the whole graph.
    """
    node: int                     # the `if` node
    condition: int                # its condition's node
    then_start: int               # the `then` branch is nodes[then_start:else_start]
    else_start: int               # the `else` branch is nodes[else_start:end]
    end: int


class Graph(NamedTuple):
    nodes: list                   # the tape: every node's args come before it
    output: int                   # id of the output node
    inputs: dict                  # variable name -> input node id, in order of first use
    defaults: dict                # variable name -> default value from `input` declarations
    source: str                   # the program text that spans point into
    branches: tuple = ()          # a Branch per `if` node, in tape order
    notes: tuple = ()             # things worth telling the user that are not errors

    def text(self, node_id, limit=None):
        """The source text a node computes, white space folded; elided past `limit`."""
        node = self.nodes[node_id]
        if node.span is None:
            return node.name or ''
        start, end = node.span
        if limit is not None and end - start > 4 * limit:
            # Deep expressions have quadratic total text: read only the ends.
            head = _WHITESPACE.sub(' ', self.source[start:start + 2 * limit])
            tail = _WHITESPACE.sub(' ', self.source[end - 2 * limit:end])
            return head[:limit // 2] + '…' + tail[-(limit - limit // 2 - 1):]
        text = _WHITESPACE.sub(' ', self.source[start:end]).strip()
        if limit is not None and len(text) > limit:
            return text[:limit // 2] + '…' + text[-(limit - limit // 2 - 1):]
        return text

    def label(self, node_id):
        """What a node is: its name, its constant, or its op."""
        node = self.nodes[node_id]
        if node.op in ('input', 'const'):
            return node.name or repr(node.value)
        return node.op
