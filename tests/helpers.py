"""Shared test helpers and data: every test module imports from here, never from another test.

`evaluate` goes through the public library API; `same` compares IEEE results;
`CASES` is the one row per primitive that several modules check in their own way
(central differences, mpmath, PyTorch, batches, recorded gradients).
"""

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
    sys.stdout, sys.stderr = _Stream(tty=tty, encoding=encoding), _Stream(encoding=encoding)
    try:
        code = main(list(argv))
        return Run(int(code), sys.stdout.text(), sys.stderr.text())
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
