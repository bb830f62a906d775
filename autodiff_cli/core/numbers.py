"""The one number formatter, for every output and every picture.

By default a float is written in its shortest round-trip form, so that
float(text) == x (inf, -inf and nan as Python spells them): tables, plain
text, CSV. With `digits`, it is written as a figure or a narrow table shows
it: integers without a point (12), else that many significant digits (3.142,
1.5e+10). An array is written as nested lists of such numbers.
"""


def number(x, digits=None):
    if type(x) is not float and getattr(x, 'ndim', 0):
        return array_text(x, digits)
    x = float(x)
    if digits is None or x != x or x in (float('inf'), float('-inf')):
        return repr(x)
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return format(x, f'.{digits}g')


def array_text(value, digits=None):
    """An array as nested lists of number()s: [[1.0, 2.0], [3.0, 4.0]]."""
    if value.ndim == 1:
        return '[' + ', '.join(number(float(v), digits) for v in value) + ']'
    return '[' + ', '.join(array_text(row, digits) for row in value) + ']'


def plain(value):
    """A 0-d array as the float it is, as the writers take numbers; any other value as it is."""
    return float(value) if getattr(value, 'ndim', 1) == 0 else value
