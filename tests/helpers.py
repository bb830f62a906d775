"""Shared test helpers and data: every test module imports from here, never from another test.

`evaluate` goes through the public library API; `same` compares IEEE results;
`CASES` is the one row per primitive that several modules check in their own way
(central differences, mpmath, PyTorch, batches, recorded gradients).
"""

import contextlib
import io
import math
import sys
from typing import NamedTuple

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


# One row per primitive a program may call: the expression and points away from
# its kinks and poles. Adding a primitive means adding its row here.
CASES = {
    'add': ('x + y', [(0.3, -1.7), (2.0, 5.0)]),
    'sub': ('x - y', [(0.3, -1.7), (-2.0, 5.0)]),
    'mul': ('x * y', [(0.3, -1.7), (2.0, 5.0)]),
    'div': ('x / y', [(0.3, -1.7), (2.0, 5.0)]),
    'neg': ('-x', [(0.3,), (-4.0,)]),
    'pos': ('+x', [(0.3,), (-4.0,)]),
    'pow': ('x ^ y', [(1.3, 2.5), (0.7, -1.2), (2.0, 3.0)]),
    'sin': ('sin(x)', [(0.3,), (-2.0,), (10.0,)]),
    'cos': ('cos(x)', [(0.3,), (-2.0,), (10.0,)]),
    'tan': ('tan(x)', [(0.3,), (-1.2,)]),
    'asin': ('asin(x)', [(0.3,), (-0.9,)]),
    'acos': ('acos(x)', [(0.3,), (-0.9,)]),
    'atan': ('atan(x)', [(0.3,), (-7.0,)]),
    'sinh': ('sinh(x)', [(0.3,), (-2.0,)]),
    'cosh': ('cosh(x)', [(0.3,), (-2.0,)]),
    'tanh': ('tanh(x)', [(0.3,), (-2.0,)]),
    'exp': ('exp(x)', [(0.3,), (-2.0,), (5.0,)]),
    'log': ('log(x)', [(0.3,), (20.0,)]),
    'log2': ('log2(x)', [(0.3,), (20.0,)]),
    'log10': ('log10(x)', [(0.3,), (20.0,)]),
    'sqrt': ('sqrt(x)', [(0.3,), (20.0,)]),
    'abs': ('abs(x)', [(0.3,), (-2.0,)]),
    'sigmoid': ('sigmoid(x)', [(0.3,), (-4.0,)]),
    'relu': ('relu(x)', [(0.3,), (-2.0,)]),
    'min': ('min(x, y)', [(0.3, -1.7), (2.0, 5.0)]),
    'max': ('max(x, y)', [(0.3, -1.7), (2.0, 5.0)]),
    'atan2': ('atan2(x, y)', [(0.3, -1.7), (2.0, 5.0), (-1.0, -1.0)]),
    # issue 10's functions (tests/test_functions_reference.py checks their edges)
    'cot': ('cot(x)', [(0.3,), (-2.0,)]),
    'sec': ('sec(x)', [(0.3,), (-2.0,)]),
    'csc': ('csc(x)', [(0.3,), (-2.0,)]),
    'acot': ('acot(x)', [(0.3,), (-7.0,)]),
    'asec': ('asec(x)', [(1.3,), (-7.0,)]),
    'acsc': ('acsc(x)', [(1.3,), (-7.0,)]),
    'coth': ('coth(x)', [(0.3,), (-2.0,)]),
    'sech': ('sech(x)', [(0.3,), (-2.0,)]),
    'csch': ('csch(x)', [(0.3,), (-2.0,)]),
    'asinh': ('asinh(x)', [(0.3,), (-20.0,)]),
    'acosh': ('acosh(x)', [(1.3,), (20.0,)]),
    'atanh': ('atanh(x)', [(0.3,), (-0.9,)]),
    'acoth': ('acoth(x)', [(1.3,), (-7.0,)]),
    'asech': ('asech(x)', [(0.3,), (0.9,)]),
    'acsch': ('acsch(x)', [(0.3,), (-7.0,)]),
    'sinc': ('sinc(x)', [(0.3,), (-2.6,)]),
    'sign': ('sign(x)', [(0.3,), (-2.0,)]),
    'hypot': ('hypot(x, y)', [(0.3, -1.7), (2.0, 5.0)]),
    'cbrt': ('cbrt(x)', [(0.3,), (-8.5,)]),
    'log1p': ('log1p(x)', [(0.3,), (-0.9,), (1e-10,)]),
    'expm1': ('expm1(x)', [(0.3,), (-2.0,), (1e-10,)]),
    'exp2': ('exp2(x)', [(0.3,), (-2.5,)]),
    'softplus': ('softplus(x)', [(0.3,), (-4.0,), (25.0,)]),
    'erf': ('erf(x)', [(0.3,), (-1.5,)]),
    'erfc': ('erfc(x)', [(0.3,), (-1.5,)]),
    'gelu': ('gelu(x)', [(0.3,), (-1.5,)]),
    'silu': ('silu(x)', [(0.3,), (-4.0,)]),
    'floor': ('floor(x)', [(0.3,), (-2.5,)]),
    'ceil': ('ceil(x)', [(0.3,), (-2.5,)]),
    'round': ('round(x)', [(0.3,), (-2.7,)]),
    'clamp': ('clamp(x, y, z)', [(0.5, 0.0, 1.0), (-0.5, 0.0, 1.0), (1.5, 0.0, 1.0), (0.5, 2.0, 1.0)]),
}


# ---- the command line, in-process ----

class Run(NamedTuple):
    code: int
    out: str
    err: str


class _Stream(io.TextIOWrapper):
    """A text stream over bytes, like a pipe's: not a terminal unless told."""

    def __init__(self, data=b'', tty=False, encoding='utf-8', errors='strict'):
        # Like sys.std*: universal newlines in, '\n' written as it is.
        super().__init__(io.BytesIO(data), encoding=encoding, errors=errors,
                         newline=None if data else '')
        self._tty = tty

    def isatty(self):
        return self._tty

    def text(self):
        self.flush()
        return self.buffer.getvalue().decode(self.encoding, 'replace')


def numpy_function(text):
    """f from the text of `adgrad diff --lang numpy` (generated from graph nodes only)."""
    namespace = {}
    exec(compile(text, '<generated>', 'exec'), namespace)
    return namespace['f']


@contextlib.contextmanager
def numpy_kernels():
    """The scalar path (NUMBERS: one branch of an `if` taken, the other never
    run) with every primitive computed by its array form on a one-row array:
    a single point as a batch row computes it, libm aside. NumPy's kernels
    can be an ulp from C's (its tanh; most functions on AVX-512 CPUs), which
    a program can grow without bound, so a batch row is compared with this."""
    import numpy as np

    from autodiff_cli.core.batch import _arrays
    from autodiff_cli.core.primitives import NUMBERS, PRIMITIVES
    _, arrays = _arrays()

    def at_a_point(function):
        def call(*args):
            return float(np.asarray(function(*(np.array([a], dtype=np.float64) for a in args)))
                         .reshape(-1)[0])
        return call

    saved = vars(NUMBERS).copy()
    try:
        for name in PRIMITIVES:
            if name not in ('if', 'branches'):   # the scalar control flow stays
                setattr(NUMBERS, name, at_a_point(getattr(arrays, name)))
        with np.errstate(all='ignore'):
            yield
    finally:
        vars(NUMBERS).update(saved)


def run_main(argv, stdin=b'', tty=False, encoding='utf-8'):
    """main(argv) with its own stdin, stdout and stderr: Run(code, out, err).

    sys.std* are swapped, not captured, so a test needs no fixture and the
    fuzzer can call it in a loop; `tty` makes stdout claim to be a terminal.
    """
    from autodiff_cli.cli.main import main

    saved = sys.stdin, sys.stdout, sys.stderr
    # stdin as Python opens it in UTF-8 mode or the C locale: bad bytes become
    # lone surrogates instead of failing on read, the harder case for adgrad.
    sys.stdin = _Stream(stdin, errors='surrogateescape')
    # stderr escapes what it cannot encode, as Python's own always does.
    sys.stdout = _Stream(tty=tty, encoding=encoding)
    sys.stderr = _Stream(encoding=encoding, errors='backslashreplace')
    try:
        code = main(list(argv))
        return Run(int(code), sys.stdout.text(), sys.stderr.text())
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved


# ---- a graph printed back as adgrad text ----

_INFIX = {'add': '+', 'sub': '-', 'mul': '*', 'div': '/', 'pow': '^'}
_PREFIX = {'neg': '-', 'pos': '+'}
_CONSTANTS = ('pi', 'e')


def _is_binding(node):
    return node.name is not None and node.op != 'input' and node.name not in _CONSTANTS


def print_graph(graph):
    """The graph as an adgrad program: every operation in explicit parentheses.

    Named bindings become binding lines in tape order, a node used twice
    without a name (a block's parameter) gets a binding `_nI`, and `input`
    defaults come first. Blocks are gone, inlined as the graph has them, and
    so are nodes nothing uses (the arguments of unused parameters).
    """
    uses = [0] * len(graph.nodes)
    for node in graph.nodes:
        for arg in node.args:
            uses[arg] += 1
    bound, text, lines = {}, [''] * len(graph.nodes), []
    if graph.defaults:
        lines.append('input ' + ', '.join(f'{n} = {v!r}' for n, v in graph.defaults.items()))
    for i, node in enumerate(graph.nodes):
        args = [bound.get(a, text[a]) for a in node.args]
        if node.op == 'input' or node.name in _CONSTANTS:
            text[i] = node.name
        elif node.op == 'const':
            text[i] = repr(node.value)
        elif node.op in _INFIX:
            text[i] = f'({args[0]} {_INFIX[node.op]} {args[1]})'
        elif node.op in _PREFIX:
            text[i] = f'({_PREFIX[node.op]}{args[0]})'
        else:
            text[i] = f'{node.op}({", ".join(args)})'
        name = node.name if _is_binding(node) else f'_n{i}' if uses[i] > 1 and node.args else None
        if name:
            lines.append(f'{name} = {text[i]}')
            bound[i] = name
    lines.append(bound.get(graph.output, text[graph.output]))
    return '\n'.join(lines) + '\n'


def structure(graph):
    """The graph as a canonical tape: the nodes its bindings and output reach, numbered
    in post-order from those roots, so that two graphs compare equal when they compute
    the same things from the same inputs, whatever order their nodes were made in."""
    nodes = graph.nodes
    roots = [i for i, n in enumerate(nodes) if _is_binding(n) and not n.name.startswith('_n')]
    number, canonical = {}, []

    def leaf(i):
        # A constant has no identity: each use is its own leaf, however the parser
        # happened to share it (a block parameter bound to a literal).
        return nodes[i].op == 'const' and not _is_binding(nodes[i])

    def emit(i, args=()):
        node = nodes[i]
        name = node.name if node.op == 'input' or _is_binding(node) else None
        canonical.append((node.op, tuple(args), None if name and name.startswith('_n') else name,
                          None if node.value is None else repr(node.value)))
        return len(canonical) - 1

    for root in roots + [graph.output]:
        stack = [(root, False)]
        while stack:
            i, expanded = stack.pop()
            if i in number:
                continue
            if not expanded:
                stack.append((i, True))
                stack.extend((a, False) for a in reversed(nodes[i].args)
                             if a not in number and not leaf(a))
                continue
            number[i] = emit(i, [emit(a) if leaf(a) else number[a] for a in nodes[i].args])
    return canonical, number[graph.output], dict(graph.defaults)


def scalar_samples(folder, loops=True):
    """The samples in `folder` that are programs of numbers, sorted: what
    render, diff and the pictures take (array programs are refused there);
    without `loops`, those with no loop too."""
    from pathlib import Path

    from autodiff_cli.language.lower import lower
    graphs = {path: lower(path.read_text(encoding='utf-8'))
              for path in sorted(Path(folder).glob('*.ad'))}
    return [path for path, graph in graphs.items()
            if graph.shapes is None and (loops or not graph.loops)]
