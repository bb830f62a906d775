"""A function made for one block's body, that appends a copy of it to the tape.

Every call of a block copies the block's body (lower.Template) onto the
tape. The general copy (Lowering.copy) zips the body's columns in C, but it
makes about ten iterator objects per call and steps each of them per node,
which is most of the cost for a small body. A function written for the
body, one tuple display of its nodes with the arguments and the offsets
from `base` in place, makes the same nodes in a third of the time. Writing
and compiling one costs as much as about a hundred copies save, so a body
gets its own function on its WARM-th copy, and only a body of at most
LARGEST nodes (see BENCHMARKS.md for what blocks cost).

The source holds no text of the program: only names made here, integers
(offsets, and ids of the tape's own nodes) and None. Every other object a
node holds (its op, name, value and span) reaches the function as an
argument of the factory that the source defines.
"""

from ..core.graph import Node

WARM = 128      # copies of a body made the general way before it gets its own function
LARGEST = 256   # nodes of the largest body that gets one: compiling grows with it

_new_node = tuple.__new__


def copier(slots, tape_ids, args, ops, names, values, spans, owners, outputs, calls):
    """A function copy(target, arguments, base, calls) -> the ids of the outputs.

    copy appends the body's nodes to `target` as ids base, base + 1, ...;
    `arguments` are the ids of the `slots` parameters, and node k comes from
    the block calls[owners[k]] (of `calls` blocks). A node's args index the
    copy's table of ids: the parameters, the new nodes, then `tape_ids`.
    `outputs` are the template's ids: ~j for the table's j-th, else a tape id.
    """
    count = len(ops)
    objects = {}   # id -> (parameter name, object), for the factory's arguments

    def constant(value):
        if value is None:
            return 'None'
        return objects.setdefault(id(value), (f'k{len(objects)}', value))[0]

    def reference(index):
        if index < slots:
            return f'a{index}'
        if index < slots + count:
            return f'base + {index - slots:d}' if index > slots else 'base'
        return f'{tape_ids[index - slots - count]:d}'

    nodes = []
    for op, refs, name, value, span, owner in zip(ops, args, names, values, spans, owners):
        refs = ''.join(f'{reference(r)}, ' for r in refs)
        fields = ', '.join([constant(op), f'({refs})', constant(name), constant(value),
                            constant(span), f'c{owner:d}'])
        nodes.append(f'            new(Node, ({fields})),\n')
    unpack = ''.join(f'a{i}, ' for i in range(slots))
    returned = ''.join((reference(~r) if r < 0 else f'{r:d}') + ', ' for r in outputs)
    source = (f'def make(new, Node, {"".join(f"{p}, " for p, _ in objects.values())}):\n'
              f'    def copy(target, arguments, base, calls):\n'
              + (f'        {unpack}= arguments\n' if slots else '')
              + f'        {"".join(f"c{i:d}, " for i in range(calls))}= calls\n'
              f'        target += (\n{"".join(nodes)}        )\n'
              f'        return ({returned})\n'
              f'    return copy\n')
    namespace = {}
    exec(compile(source, '<block copy>', 'exec'), namespace)   # noqa: S102 - see the docstring
    return namespace['make'](_new_node, Node, *[value for _, value in objects.values()])
