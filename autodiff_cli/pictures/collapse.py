"""The collapsed view: each call of a block drawn as one node, as in the
tutorial's figures 7-10 (x → h(x) → y → f(y) → z).

`collapse()` takes the full scene and folds every top-level block instance
(`layer#3`, with whatever it calls inside) into one Item of kind 'call'. The
call node stands for the instance's result: it keeps that node's id, value
and gradient ∂f/∂result, and its notes give the block's local derivatives
∂result/∂argument, found by a backward walk over the instance's own nodes
through pullback(), the one way to call a rule. An edge from an argument
into the call carries the sum of what flowed into the instance along every
internal use of it, which is the call's whole share of ∂f/∂argument.
"""

import re

from ..core.graph import Graph, Node
from ..core.passes import pullback
from .calls import call_sites
from .scene import Scene, merge_links, node_symbol, results, scene, wrap
from .text import displayable, number
from .text import enclosed


def collapse(graph, values=None, grads=None):
    """The Scene with every top-level block call as one node."""
    full = scene(graph, values, grads)
    graph = displayable(graph)
    nodes = graph.nodes
    owner = [None if node.block is None else node.block.partition('/')[0] for node in nodes]
    members = {}
    for i, instance in enumerate(owner):
        if instance is not None:
            members.setdefault(instance, []).append(i)
    if not members:
        return full
    result = {instance: node_id for node_id, instance in results(graph).items()}
    for instance, ids in members.items():   # a call whose value nothing uses
        result.setdefault(instance, ids[-1])
    stands_for = [i if owner[i] is None else result[owner[i]] for i in range(len(nodes))]

    # one edge per argument of a call
    links = merge_links(full.links, stands_for.__getitem__,
                        merges=lambda link: owner[link.dst] is not None)

    arguments = {}
    for link in links:
        arguments.setdefault(link.dst, []).append(link.src)
    texts, explained = {}, set()
    sites = call_sites(graph)
    items = [item for item in full.items if owner[item.id] is None]
    by_id = {item.id: item for item in full.items}   # an array op's static arguments are none
    for instance, ids in members.items():
        r = result[instance]
        item = by_id[r]
        args = arguments.get(r, [])
        texts[r] = call_text(graph, instance, r, args, texts, full.f, sites.get(instance))
        notes = ()
        # A local derivative is a number where the call maps numbers to a number;
        # of arrays it is a Jacobian, which the call's edges carry instead.
        if values is not None and graph.shapes is None:
            local = local_derivatives(graph, [i for i in ids if i <= r], r, values)
            for k, link in enumerate(links):
                if link.dst == r and link.grad is not None:
                    links[k] = link._replace(local=local.get(link.src, 0.0))
            me = item.symbol if nodes[r].name is not None else texts[r]
            shown = [a for a in args if by_id[a].kind != 'const']
            # The formula once per block, on its first call: the others are the
            # same rule at other numbers, and a slide has room for numbers.
            block = instance.partition('#')[0]
            formulas = [None] * len(shown)
            if block not in explained:
                explained.add(block)
                formulas = call_formulas(graph, [i for i in ids if i <= r], r, shown,
                                         [_name(graph, a, texts, full.f) for a in shown],
                                         item.symbol if nodes[r].name is not None else None)
            notes = tuple(f'∂{wrap(me)}/∂{wrap(_name(graph, a, texts, full.f))} = '
                          + (f'{formula} = ' if formula else '') + number(local.get(a, 0.0))
                          for a, formula in zip(shown, formulas))
        items.append(item._replace(kind='call', title=instance.partition('#')[0],
                                   expr=texts[r], block=None, notes=notes,
                                   symbol=item.symbol if nodes[r].name is not None
                                   else wrap(texts[r])))
    items.sort(key=lambda item: item.id)
    return Scene(items, links, [], full.f, full.output)


def local_derivatives(graph, ids, result, values):
    """{node outside the instance: ∂result/∂node}, by the chain rule over the
    instance's nodes `ids` (tape order) alone."""
    inside = set(ids)
    local = {result: 1.0}
    for i in reversed(ids):
        g = local.get(i)
        if g is None or not graph.nodes[i].args:
            continue
        for a, flow in zip(graph.nodes[i].args, pullback(graph, i, g, values)):
            if flow is not None:
                local[a] = local.get(a, 0.0) + flow
    return {a: d for a, d in local.items() if a not in inside}


FORMULA_LIMIT = 32    # longest local-derivative formula a call node shows
BODY_LIMIT = 60       # nodes in a call beyond which no formula is sought


def call_formulas(graph, ids, r, args, names, result_name):
    """∂result/∂argument of one call as formulas in the caller's names, such
    as 1.5*((1 - x1)*(x1 + 1)) for x1 = layer(x): the call's own nodes,
    differentiated by derive.record and printed by derive.printers; None for
    an argument whose formula is long or needs a condition. `result_name`
    names the call's value where the formula uses it (tanh's derivative)."""
    if len(ids) > BODY_LIMIT or not args:
        return [None] * len(args)
    from ..derive.printers import ADGRAD, adgrad_number, lay_out
    from ..derive.record import differentiate
    from ..errors import AdgradError
    nodes, at = [], {}
    for k, a in enumerate(args):
        at[a] = k
        nodes.append(Node('input', name=f'p{k}'))
    for i in ids:
        node = graph.nodes[i]
        at[i] = len(nodes)
        if node.op == 'const':
            nodes.append(Node('const', value=node.value))
        elif all(a in at for a in node.args):
            nodes.append(Node(node.op, tuple(at[a] for a in node.args)))
        else:   # an argument that is a constant from outside: no formula for this call
            return [None] * len(args)
    body = Graph(nodes, at[r], {f'p{k}': k for k in range(len(args))}, {}, '')
    try:
        printed = lay_out(differentiate(body, with_value=True), ADGRAD, adgrad_number)
    except AdgradError:
        return [None] * len(args)
    bound = dict(printed.bindings)
    texts = {label: text for label, _, text in printed.results}
    formulas = []
    for k in range(len(args)):
        text = texts.get(f'p{k}')
        for name, value in bound.items():   # shared parts inlined, the value by its name
            if name != 'value':
                text = re.sub(rf'\b{re.escape(name)}\b', f'({value})', text)
        if 'value' in bound:
            if result_name is None:
                formulas.append(None)
                continue
            text = re.sub(r'\bvalue\b', result_name, text)
        text = re.sub(r'\bp(\d+)\b', lambda m: names[int(m.group(1))], text)
        if enclosed(text):
            text = text[1:-1]
        plain = re.fullmatch(r'-?[\d.]+(e[-+]?\d+)?', text)
        formulas.append(None if len(text) > FORMULA_LIMIT or 'if(' in text or plain else text)
    return formulas


def _name(graph, i, texts, f):
    """An argument as the caller names it: its name, else its call or its text."""
    if graph.nodes[i].name is not None:
        return node_symbol(graph, i, f)
    return texts.get(i) or node_symbol(graph, i, f)


CALL_LIMIT = 40


def call_text(graph, instance, r, args, texts, f, site=None):
    """The call as the program wrote it, `y = h(x)`: from its place in the
    source (calls.call_sites) where that is known, else rebuilt from the
    arguments as the caller names them, in order of first use."""
    block = instance.partition('#')[0]
    name = graph.nodes[r].name
    if site is not None:
        text = f'{block}({_short(site.arguments)})'
        return f'{name} = {text}' if name is not None and site.whole else text
    shown = ', '.join(_unwrapped(_name(graph, a, texts, f)) for a in args)
    text = f'{block}({_short(shown)})'
    return f'{name} = {text}' if name is not None else text


def _unwrapped(text):
    """An argument inside a call's parentheses needs none of its own: f(2*y)."""
    return text[1:-1] if enclosed(text) else text


def _short(text):
    text = ' '.join(text.split())
    if len(text) > CALL_LIMIT:
        return text[:CALL_LIMIT // 2] + '…' + text[-(CALL_LIMIT - CALL_LIMIT // 2 - 1):]
    return text
