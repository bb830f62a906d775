"""The memory pictures: what the backward pass keeps, and checkpoints.

`annotate()` marks a Scene from a checkpoint.Plan (core/checkpoint.py): each
Item's `store` says whether backward keeps its value ('kept'; with
checkpoints, 'checkpoint') or computes it again ('again'), and how many
bytes; with checkpoints each Item has a `segment`, and a loop's strip says
which iterations keep their state. style.py draws the marks; nothing here
knows how.
"""

from typing import NamedTuple

from ..core.checkpoint import in_last_iteration, readable as size
from ..core.loops import recomputed, segment_spans, segment_starts
from .scene import results

STRIP = 40   # a loop of up to this many iterations draws one mark per iteration


class Store(NamedTuple):
    """What the backward pass does with a drawn node's value."""
    kind: str    # 'kept', 'checkpoint' or 'again'
    bytes: int   # its value's, or the kept values' of a call or a loop
    note: str    # the line the node shows


def annotate(drawn, graph, plan, collapsed=False):
    """The Scene with each Item's store and segment, and the legend's summary."""
    checkpoints = len(set(plan.segment)) > 1 or any(p.strides for p in plan.loops.values())
    cut = len(set(plan.segment)) > 1   # the tape is cut into segments
    members = _members(graph, drawn, collapsed)
    items, kept_count, kept_bytes, again_count = [], 0, 0, 0
    for item in drawn.items:
        ids = members.get(item.id, (item.id,))
        node = graph.nodes[item.id]
        store = None
        if node.op == 'loop' and item.id in plan.loops:
            loop = plan.loops[item.id]
            store, count, again = _loop_store(loop, size)
            kept_count, kept_bytes, again_count = (kept_count + count, kept_bytes + store.bytes,
                                                   again_count + again)
            item = item._replace(strip=_strip(loop))
        elif item.kind != 'const' and not in_last_iteration(
                graph, item.id, lambda j: plan.loops[j].strides if j in plan.loops else ()):
            kept = [i for i in ids if plan.kept[i] and graph.nodes[i].op not in ('const', 'static')]
            again = [i for i in ids if plan.again[i]]
            total = sum(plan.bytes[i] for i in kept)
            kept_count, kept_bytes, again_count = (kept_count + len(kept), kept_bytes + total,
                                                   again_count + len(again))
            if kept and cut and item.kind != 'input' and plan.kept[item.id]:
                store = Store('checkpoint', total, f'checkpoint, {size(total)}')
            elif kept and (not checkpoints or not again):
                computed = [i for i in ids if graph.nodes[i].args]
                note = f'kept, {size(total)}' if len(ids) == 1 else \
                    f'keeps {len(kept)} of {len(computed)} values, {size(total)}'
                store = Store('kept', total, note)
            elif again:
                store = Store('again', sum(plan.bytes[i] for i in again),
                              'computed again')
        items.append(item._replace(store=store, segment=plan.segment[item.id]
                                   if checkpoints and len(set(plan.segment)) > 1 else None))
    if checkpoints:
        summary = (f'{_policy(plan.policy)}: keeps {kept_count:,} values, {size(kept_bytes)}; '
                   f'computes {again_count:,} again, a segment at a time, before its gradients')
    else:
        summary = f'the backward pass keeps {kept_count:,} values, {size(kept_bytes)}'
    segments = _segments(items, drawn.links) if checkpoints and len(set(plan.segment)) > 1 \
        else ()
    return drawn._replace(items=items, segments=segments, memory=summary)


def _segments(items, links):
    """Each segment's label: what it is computed again from, the checkpoints
    of earlier segments its nodes use; the last one's gradients flow first."""
    by_id = {item.id: item for item in items}
    sources = {}
    for link in links:
        src, dst = by_id[link.src], by_id[link.dst]
        if src.segment < dst.segment and src.kind != 'const':
            sources.setdefault(dst.segment, {})[src.symbol] = None
    count = max(item.segment for item in items) + 1
    labels = []
    for k in range(count):
        here = [item.symbol for item in items if item.segment == k and item.kind == 'input']
        names = list(sources.get(k, {})) + here
        label = f'segment {k + 1}: computed again from {", ".join(names)}' if names \
            else f'segment {k + 1}'
        labels.append(label + (' (its gradients flow first)' if k == count - 1 else ''))
    return tuple(labels)


def _members(graph, drawn, collapsed):
    """{drawn id: the node ids it stands for}: a collapsed call's instance."""
    if not collapsed:
        return {}
    owner = [None if node.block is None else node.block.partition('/')[0]
             for node in graph.nodes]
    result = {instance: i for i, instance in results(graph).items()}
    members = {}
    for i, instance in enumerate(owner):
        if instance is not None:
            r = result.get(instance)
            members.setdefault(r if r is not None else i, []).append(i)
    return members


def _loop_store(loop, size):
    """(Store, values kept, values computed again) of a loop node."""
    n = loop.count
    if not loop.strides:
        total = n * loop.iteration
        return (Store('kept', total, f'keeps {loop.kept} of {loop.computed} values an '
                                     f'iteration: {n * loop.kept:,}, {size(total)}'),
                n * loop.kept, 0)
    starts = segment_starts(n, loop.strides[0])
    marks, total = len(starts), len(starts) * loop.state
    where = f'every {loop.strides[0]} iterations' if isinstance(starts, range) else \
        f'at the start of segments of {_lengths(starts, n)}'
    return (Store('checkpoint', total, f'keeps its state {where}: {marks:,}, {size(total)}'),
            marks, recomputed(n, loop.strides) * loop.computed)


def _lengths(starts, n):
    """Shrinking segments' lengths, as people read them: '14 down to 1'."""
    if isinstance(starts, range):
        return f'{starts.step}'
    lengths = [stop - start for start, stop in segment_spans(n, starts)]
    return f'{max(lengths)} down to {min(lengths)}'


def _strip(loop):
    """A line of marks, one per iteration: ■ its state is kept, □ computed
    again (segments apart); past STRIP iterations, one per segment."""
    if not loop.strides:
        return ()
    n = loop.count
    starts = segment_starts(n, loop.strides[0])
    if n <= STRIP:
        cells = ' '.join('■' + '□' * (stop - start - 1) for start, stop in segment_spans(n, starts))
        return (f'iterations: {cells}   (■ state kept, □ computed again)',)
    return (f'segments of {_lengths(starts, n)}: ' + '■' * min(len(starts), STRIP)
            + ('…' if len(starts) > STRIP else ''),)


def _policy(pol):
    return f'every:{pol.every}' if pol.kind == 'every' else pol.kind


def merged_store(items):
    """The Store of one node drawn for several (fold.merge_sums): the values
    its parts keep, or computed again if none is kept."""
    kept = [item.store for item in items if item.store is not None and item.store.kind != 'again']
    if not kept:
        again = [item.store for item in items if item.store is not None]
        return Store('again', sum(s.bytes for s in again), again[0].note)
    total = sum(s.bytes for s in kept)
    kind = 'checkpoint' if any(s.kind == 'checkpoint' for s in kept) else 'kept'
    note = kept[0].note if len(kept) == 1 else \
        f'keeps {len(kept)} of {len(items)} values, {size(total)}'
    return Store(kind, total, note)
