"""A program's inputs from its defaults and the command line's bindings, and
how a node is named in a message: shared by single points and batches, and
apart from computations.py so that a single point's start-up does not load it."""

from ..errors import UsageError


def input_values(graph, bindings, warn):
    """The program's defaults, then the command line's bindings of its inputs;
    a binding of no input is a warning, of a computed name an error."""
    for name in bindings:
        if name not in graph.inputs:
            if any(node.name == name for node in graph.nodes):
                raise UsageError(f"cannot bind '{name}': the program computes it")
            warn(f"'{name}' is not used by the expression")
    values = dict(graph.defaults)
    values.update((k, v) for k, v in bindings.items() if k in graph.inputs)
    return values


def where(graph, i):
    return f'{graph.text(i, 60) or graph.label(i)} (node {i})'
