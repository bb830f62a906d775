import math

import pytest

from autodiff_cli import backward, forward, lower


def evaluate(expr, **inputs):
    """(value, {variable: gradient}) through the library."""
    graph = lower(expr)
    values = forward(graph, inputs)
    grads = backward(graph, values)
    return values[graph.output], {name: grads[i] for name, i in graph.inputs.items()}


def same(a, b, rel=1e-12, abs_=1e-12):
    """Equal as IEEE results: nan matches nan, inf matches inf of the same sign."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= max(abs_, rel * max(abs(a), abs(b)))


@pytest.fixture
def run_cli(capsys):
    """Run main() in-process: (exit code, stdout, stderr)."""
    from autodiff_cli.cli.main import main

    def run(*argv):
        code = main(list(argv))
        captured = capsys.readouterr()
        return code, captured.out, captured.err
    return run
