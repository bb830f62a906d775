"""The one number formatter, for every output and every picture.

By default a float is written in its shortest round-trip form, so that
float(text) == x (inf, -inf and nan as Python spells them): tables, plain
text, CSV. With `digits`, it is written as a figure or a narrow table shows
it: integers without a point (12), else that many significant digits (3.142,
1.5e+10).
"""


def number(x, digits=None):
    x = float(x)
    if digits is None or x != x or x in (float('inf'), float('-inf')):
        return repr(x)
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return format(x, f'.{digits}g')
