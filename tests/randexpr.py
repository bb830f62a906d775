"""Random expressions for differential tests, printed with minimal parentheses.

A tree is ('var', name) | ('num', value) | (op, child) | (op, left, right) |
('call', name, args). `show` prints it the way a person would, with only the
parentheses the precedence rules require, so the tests exercise the
grammar's precedence as well as the numbers.
"""

import random

BINARY = {'add': ('+', 1), 'sub': ('-', 1), 'mul': ('*', 2), 'div': ('/', 2), 'pow': ('^', 4)}
UNARY = {'neg': '-', 'pos': '+'}
FUNCTIONS = {'sin': 1, 'cos': 1, 'tan': 1, 'atan': 1, 'sinh': 1, 'cosh': 1, 'tanh': 1, 'exp': 1,
             'log': 1, 'log2': 1, 'log10': 1, 'sqrt': 1, 'abs': 1, 'sigmoid': 1, 'relu': 1,
             'asin': 1, 'acos': 1, 'pow': 2, 'min': 2, 'max': 2, 'atan2': 2}
VARIABLES = ('x', 'y', 'z')


def tree(rng, depth):
    if depth == 0 or rng.random() < 0.2:
        if rng.random() < 0.7:
            return ('var', rng.choice(VARIABLES))
        return ('num', rng.choice([0.5, 1.0, 2.0, 3.0, 0.25, 1.5, 10.0]))
    kind = rng.random()
    if kind < 0.45:
        return (rng.choice(list(BINARY)), tree(rng, depth - 1), tree(rng, depth - 1))
    if kind < 0.55:
        return (rng.choice(list(UNARY)), tree(rng, depth - 1))
    name = rng.choice(list(FUNCTIONS))
    return ('call', name, tuple(tree(rng, depth - 1) for _ in range(FUNCTIONS[name])))


def _precedence(t):
    if t[0] in BINARY:
        return BINARY[t[0]][1]
    if t[0] in UNARY:
        return 3
    return 5


def show(t):
    kind = t[0]
    if kind == 'var':
        return t[1]
    if kind == 'num':
        return repr(t[1])
    if kind == 'call':
        return f"{t[1]}({', '.join(show(a) for a in t[2])})"
    if kind in UNARY:
        inner = show(t[1])
        return UNARY[kind] + (inner if _precedence(t[1]) >= 3 else f'({inner})')
    symbol, level = BINARY[kind]
    left, right = show(t[1]), show(t[2])
    if kind == 'pow':  # right-associative; the exponent may be a unary
        left_ok, right_ok = _precedence(t[1]) > 4, _precedence(t[2]) >= 3
    else:              # left-associative
        left_ok, right_ok = _precedence(t[1]) >= level, _precedence(t[2]) > level
    return (left if left_ok else f'({left})') + f' {symbol} ' + \
        (right if right_ok else f'({right})')


def variables(t):
    found, stack = set(), [t]
    while stack:
        node = stack.pop()
        if node[0] == 'var':
            found.add(node[1])
        elif node[0] == 'call':
            stack.extend(node[2])
        elif node[0] != 'num':
            stack.extend(node[1:])
    return sorted(found)


def cases(seed, count, depth=4):
    rng = random.Random(seed)
    for _ in range(count):
        t = tree(rng, depth)
        point = {v: rng.choice([rng.uniform(-2, 2), rng.uniform(0.1, 3), 0.0, 1.0, -1.0])
                 for v in VARIABLES}
        yield t, point
