"""Folding a long chain of identical steps into one node, as the tutorial's
figure 10 writes x → Block 1 → x₁ → Block 2 → x₂ → … → Block n → xₙ.

A run is a chain of nodes that do the same thing (the same block's calls in
the collapsed view, or the same op: tanh(tanh(tanh(…)))), each the only user
of the one before, and each taking the same other arguments (constants, or a
weight they all share; a sum of different terms is not a run). Past LONGEST of them, the first KEEP and the last KEEP are
drawn, and the ones between become one node that says how many it stands
for, the first and last of them, and what the chain rule makes of them: the
product of their local derivatives, ∂(last)/∂(the node before the run). The
numbers are the ones backward() computed; nothing is recomputed here.
"""

from .memory import merged_store
from .scene import merge_links
from .text import number

LONGEST = 12   # a chain this long is drawn whole (samples/deep.ad's ten calls)
KEEP = 2       # drawn at each end of a longer one


def fold(drawn):
    """The Scene with every run longer than LONGEST folded; as is if none."""
    items = {item.id: item for item in drawn.items}
    users, args = {}, {}
    for link in drawn.links:
        users.setdefault(link.src, []).append(link)
        args.setdefault(link.dst, []).append(link)
    runs, seen = [], set()
    for item in drawn.items:
        if item.id in seen or item.kind not in ('op', 'call'):
            continue
        run, shared = [item.id], None
        while True:
            out = users.get(run[-1], [])
            nxt = items.get(out[0].dst) if len(out) == 1 else None
            if nxt is None or nxt.kind != item.kind or nxt.title != item.title \
                    or nxt.block != item.block or nxt.id == drawn.output:
                break
            # What else each step takes is the same for all (a weight, or
            # nothing but constants): a sum of different terms is no chain.
            others = frozenset(a.src for a in args.get(nxt.id, ()) if a.src != run[-1]
                               and items[a.src].kind != 'const')
            if shared is not None and others != shared:
                break
            shared = others
            run.append(nxt.id)
        seen.update(run)
        if len(run) > LONGEST:
            runs.append(run)
    if not runs:
        return drawn
    stands_for, folded = {}, {}
    for run in runs:
        middle = run[KEEP:-KEEP]
        for i in middle:
            stands_for[i] = middle[-1]
        folded[middle[-1]] = middle
    # a value every folded step uses (a weight): one edge, the sum
    links = merge_links(drawn.links, lambda i: stands_for.get(i, i))
    shown = []
    for item in drawn.items:
        if item.id in stands_for and item.id not in folded:
            continue
        if item.id in folded:
            item = _folded(item, [items[i] for i in folded[item.id]], drawn, args, items)
        shown.append(item)
    return drawn._replace(items=shown, links=links)


def _folded(last, members, drawn, args, items):
    """The node standing for `members`: the last one's id, value and gradient,
    and notes that say what the ones folded into it did."""
    first = members[0]
    title = f'{first.title} × {len(members)}'
    expr = ' … '.join(m.expr or m.symbol for m in (first, last))
    notes = []
    if first.value is not None:
        notes.append(f'values {number(first.value)} … {number(last.value)}')
    if first.grad is not None and last.grad is not None:
        notes.append(f'gradients {number(first.grad)} … {number(last.grad)}')
    # ∂last/∂(the node before the run): the product of the local derivatives
    # along the chain, each on the edge into a member from the one before it.
    before = [a for a in args.get(first.id, []) if a.src not in {m.id for m in members}
              and items[a.src].kind not in ('const',)]
    if len(before) == 1:
        product, previous = 1.0, before[0].src
        for member in members:
            step = [a for a in args.get(member.id, []) if a.src == previous]
            if len(step) != 1 or step[0].local is None:
                product = None
                break
            product *= step[0].local
            previous = member.id
        if product is not None:
            notes.append(f'∂{last.symbol}/∂{items[before[0].src].symbol} = {number(product)}')
    stores = [m for m in members if m.store is not None]
    store = merged_store(stores) if stores else last.store
    return last._replace(title=title, expr=expr, notes=tuple(notes), store=store)


def compacted(drawn, merged=False):
    """The Scene a compact picture draws: each sum one node (merge_sums), and
    no box for a constant used once, which its op's expression shows.
    `merged`: every step that has no name of its own and one use is drawn
    as part of that use, so that h[0] = tanh(W[0,0]*x[0] + b[0]) is one node."""
    drawn = merge_sums(drawn, everything=merged)
    items = {item.id: item for item in drawn.items}
    uses = {}
    for link in drawn.links:
        uses.setdefault(link.src, []).append(link.dst)
    hidden = {item.id for item in drawn.items if item.kind == 'const'
              and len(uses.get(item.id, ())) == 1 and items[uses[item.id][0]].expr
              and items[uses[item.id][0]].kind in ('op', 'output')}
    if not hidden:
        return drawn
    return drawn._replace(items=[item for item in drawn.items if item.id not in hidden],
                          links=[link for link in drawn.links if link.src not in hidden])


def merge_sums(drawn, everything=False):
    """The Scene with each sum of several terms as one node, as a textbook
    draws a neuron's weighted sum: a `+` used only by the `+` after it, and
    named by no binding, is drawn as part of it (`everything`: any op so
    used, into any op). Each argument's edge keeps the gradient it carried."""
    stands_for = drawn_as(drawn, everything)
    if not stands_for:
        return drawn
    items = {item.id: item for item in drawn.items}
    links = merge_links(drawn.links, lambda i: stands_for.get(i, i))
    parts = {}   # what a merged node keeps for backward is what its parts kept
    for i, user in stands_for.items():
        parts.setdefault(user, [items[user]]).append(items[i])
    shown = [item if item.id not in parts or all(p.store is None for p in parts[item.id])
             else item._replace(store=merged_store(parts[item.id]))
             for item in drawn.items if item.id not in stands_for]
    return drawn._replace(items=shown, links=links)


def drawn_as(drawn, everything=False):
    """{id: the id of the node that draws it} for each node merge_sums draws
    as part of another (a step of a pass is shown on that node)."""
    items = {item.id: item for item in drawn.items}
    users = {}
    for link in drawn.links:
        users.setdefault(link.src, []).append(link.dst)
    stands_for = {}
    for item in drawn.items:   # tape order: a sum's first part comes first
        out = users.get(item.id, [])
        if len(out) != 1 or (item.title != '+' and not everything) or item.kind != 'op' \
                or not item.symbol.startswith('('):
            continue
        user = items[out[0]]
        if (user.title == '+' or everything) and user.kind in ('op', 'output') \
                and user.block == item.block \
                and user.live == item.live and user.segment == item.segment \
                and (item.store is None or item.store.kind != 'checkpoint'):
            stands_for[item.id] = user.id
    for i in reversed(list(stands_for)):   # each part to the last sum of its chain
        stands_for[i] = stands_for.get(stands_for[i], stands_for[i])
    return stands_for
