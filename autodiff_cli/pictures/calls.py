"""Where each block call is in the program: the call as the caller wrote it.

The tape records, for every node a block call made, its instance path
(`layer#3`, `f#1/h#2`) and a span inside the block's body, not the call's
place in the program. `call_sites()` finds the calls in the source and pairs
them with the top-level instances: the k-th call of `layer` outside any block
body is `layer#k`. It pairs them only where that is sure to be right: as many
calls in the text as instances on the tape, no call of the block made from
inside another block (those share the numbering), and every argument the
tape computed at the call (`x + 1` in `f(x + 1)`) lying inside that call's
parentheses. Otherwise it says nothing, and the pictures rebuild the call
from the arguments' names.
"""

import re
from typing import NamedTuple

_NAME = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')
# A block's definition, or its declared derivative: `f(a, b) =`, `grad f(a) =`.
_DEFINITION = re.compile(r'[ \t]*(?:grad[ \t]+)?[A-Za-z_][A-Za-z0-9_]*[ \t]*\([^()]*\)[ \t]*=(?!=)')
_STATEMENT_END = re.compile(r'[\r\n;]')


class Call(NamedTuple):
    start: int        # the block's name
    end: int          # after the closing parenthesis
    arguments: str    # between the parentheses, as written
    whole: bool       # the call is the whole right-hand side: `y = h(x)`


def _statements(source):
    """(start, end, the block it defines or None) of each statement."""
    at = 0
    for match in _STATEMENT_END.finditer(source + '\n'):
        start, end = at, match.start()
        at = match.end()
        definition = _DEFINITION.match(source, start)
        if definition is None:
            yield start, end, None
        elif not definition.group().lstrip().startswith('grad'):
            yield start, end, _NAME.search(source, start).group()


def _close(source, start, end):
    """The index of the parenthesis closing the one before `start`, or None."""
    depth = 1
    for k in range(start, end):
        depth += (source[k] == '(') - (source[k] == ')')
        if depth == 0:
            return k
    return None


def _calls(source, blocks):
    """{block: [Call, ...]} in source order, after the block's definition and
    outside any block's body."""
    found = {name: [] for name in blocks}
    defined = set()   # before its definition, a name may be a built-in function
    for start, end, block in _statements(source):
        if block is not None:
            defined.add(block)
            continue
        for match in _NAME.finditer(source, start, end):
            name = match.group()
            rest = source[match.end():end].lstrip(' \t')
            if name not in found or name not in defined or not rest.startswith('('):
                continue
            if match.start() > 0 and source[match.start() - 1] in '.#':
                continue
            opening = source.index('(', match.end())
            closing = _close(source, opening + 1, end)
            if closing is None:
                continue
            before = source[start:match.start()]
            after = source[closing + 1:end].strip()
            whole = re.fullmatch(r'\s*[A-Za-z_][A-Za-z0-9_]*\s*[-+*/^]?=\s*', before) is not None \
                and not after
            found[name].append(Call(match.start(), closing + 1,
                                    source[opening + 1:closing], whole))
    return found


def call_sites(graph):
    """{top-level instance path: Call} for the calls that pair surely (see above)."""
    nodes, source = graph.nodes, graph.source
    instances, nested = {}, set()
    for node in nodes:
        if node.block is None:
            continue
        top = node.block.partition('/')[0]
        instances.setdefault(top.partition('#')[0], {}).setdefault(top, None)
        for part in node.block.split('/')[1:]:
            nested.add(part.partition('#')[0])
    if not instances:
        return {}
    calls = _calls(source, [b for b in instances if b not in nested])
    sites = {}
    for block, found in calls.items():
        paths = sorted(instances[block], key=lambda p: int(p.partition('#')[2] or 0))
        if len(found) != len(paths):
            continue
        sites.update(zip(paths, found))
    # Every argument computed at the call lies inside its parentheses.
    for i, node in enumerate(nodes):
        if node.block is None:
            continue
        top = node.block.partition('/')[0]
        for a in node.args:
            outer = nodes[a]
            if outer.block is None and outer.span is not None and outer.name is None \
                    and outer.op not in ('input', 'const') and top in sites:
                call = sites[top]
                if not (call.start <= outer.span[0] and outer.span[1] <= call.end):
                    block = top.partition('#')[0]
                    sites = {p: c for p, c in sites.items() if p.partition('#')[0] != block}
    return sites
