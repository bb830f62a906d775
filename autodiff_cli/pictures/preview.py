"""How a picture shows an array: every entry of a small one (at most SMALL
along each axis), else its shape with its min, max and norm. Numbers are
written as text.number writes them, to four digits. No I/O.
"""

from .text import number

SMALL = 3   # entries along each axis that a node shows in full (up to 3 x 3)


def is_array(x):
    return getattr(x, 'ndim', 0) > 0


def as_scalar(x):
    """A 0-d array as the float it is; anything else as it is."""
    return float(x) if x is not None and getattr(x, 'ndim', None) == 0 else x


def shape_text(shape):
    """A shape as the language declares it: [4,1]."""
    return '[' + ','.join(map(str, shape)) + ']'


def grid(x):
    """The entries of a small array as rows of text (a vector is one row), or
    None where the array is too large or has three axes."""
    if x.ndim > 2 or any(n > SMALL for n in x.shape):
        return None
    rows = x.reshape(1, -1) if x.ndim == 1 else x
    return [[number(float(v)) for v in row] for row in rows.tolist()]


def norm(x):
    """The 2-norm of every entry (inf or nan if an entry is)."""
    import numpy as np
    with np.errstate(all='ignore'):
        return float(np.sqrt(np.sum(np.square(x))))


def summary(x):
    """min, max and norm of a large array: its shape is on the node's title."""
    import numpy as np
    with np.errstate(all='ignore'):
        return f'min {number(float(np.min(x)))}, max {number(float(np.max(x)))}, ' \
               f'norm {number(norm(x))}'


def short(x):
    """A value on one short line, for an edge or a caption: a number, a
    vector of up to SMALL entries in full, else the array's norm."""
    if not is_array(x):
        return number(x)
    if x.size <= SMALL and x.ndim == 1:
        return '[' + ', '.join(number(float(v)) for v in x.tolist()) + ']'
    return f'norm {number(norm(x))}'


def text(x):
    """A value on one line, however large: a number, nested lists, or the summary."""
    if not is_array(x):
        return number(x)
    rows = grid(x)
    if rows is None:
        return f'{shape_text(x.shape)} {summary(x)}'
    inner = ['[' + ', '.join(row) + ']' for row in rows]
    return inner[0] if x.ndim == 1 else '[' + ', '.join(inner) + ']'
