"""The programs the benchmarks run, generated, and the same graphs in PyTorch.

Each workload is a function of its size that returns adgrad program text;
`python benchmarks/workloads.py NAME SIZE > FILE` writes one, so any figure
in BENCHMARKS.md can be reproduced by hand with `adgrad grad -f FILE`.
"""

import sys

VARIABLES = [f'x{i}' for i in range(10)]
FUNCTIONS = ('sin', 'cos', 'tanh', 'sigmoid')  # bounded, so values stay finite at any depth


def _inputs(names):
    return 'input ' + ', '.join(f'{name} = {0.1 * (i + 1):.1f}' for i, name in enumerate(names))


def _pair(i):
    return VARIABLES[i % 10], VARIABLES[(3 * i + 1) % 10]


def sum_of_products(terms):
    """x0*x1 + x1*x4 + ... : `terms` products of two of ten inputs.

    2*terms - 1 operations; 4*terms - 1 tokens in the expression.
    """
    products = ' + '.join('*'.join(_pair(i)) for i in range(terms))
    return f'{_inputs(VARIABLES)}\n{products}\n'


def nesting(depth):
    """sin(cos(tanh(sigmoid(sin(... x ...))))): `depth` unary operations."""
    calls = ''.join(f'{FUNCTIONS[i % 4]}(' for i in range(depth))
    return f'input x = 0.5\n{calls}x{")" * depth}\n'


def block_chain(depth):
    """f(f(...f(x)...)) with f(y) = tanh(0.9*y + 0.1): `depth` inlined blocks,
    3 operations each."""
    return f'input x = 0.5\nf(y) = tanh(0.9*y + 0.1)\n{"f(" * depth}x{")" * depth}\n'


def bindings(lines):
    """a0 = x, then a1 = a0 + 1 ... : `lines` statements, each binding a name
    that the next one uses (issue 12's program of 80,000 binding lines)."""
    body = ''.join(f'a{i} = a{i - 1} + 1\n' for i in range(1, lines))
    return f'{_inputs(["x"])}\na0 = x\n{body}'


def semicolons(count):
    """x = 1;;;...; then x: `count` empty statements (issue 12's 80,000 `;`)."""
    return f'{_inputs(["x"])}\nx = x + 1' + ';' * count + '\nx\n'


# Four statement shapes in turn, (text, tokens, operations), each reading the one before
# and an input: values stay in [-2, 2], so the gradient stays finite at any length.
_STATEMENTS = (('v{i} = tanh(v{a} + x0)', 8, 2), ('v{i} = v{a} * 0.5 - x1 / 4', 9, 3),
               ('v{i} = cos(v{a}) + x2 * 0.25', 10, 3), ('v{i} = sin(v{a}) * x3 + 0.5', 10, 3))


def short_statements(count):
    """v2 = cos(v1) + x2 * 0.25, v3 = sin(v2) * x3 + 0.5, ...: `count` short
    binding statements of four shapes; the last is the output. One operation
    node per operator or function call. (Its new lines, one a statement, are
    tokens to the parser too, but not counted: a million tokens here is
    more work than a million in one expression.)"""
    lines = [_inputs(['v0', 'v1', 'x0', 'x1', 'x2', 'x3'])]
    for i in range(2, 2 + count):
        shape, _, _ = _STATEMENTS[i % 4]
        lines.append(shape.format(i=i, a=i - 1))
    return '\n'.join(lines) + '\n'


SUM_DEPTH = 32   # calls in each chain of block_sums


def block_sums(terms):
    """f(f(...f(x3)...)) + f(f(...f(x4)...)) + ...: a sum of `terms` chains,
    each SUM_DEPTH calls deep, of a block that calls another block."""
    chains = (f'{"f(" * SUM_DEPTH}{VARIABLES[i % 10]}{")" * SUM_DEPTH}' for i in range(terms))
    return (f'{_inputs(VARIABLES)}\nh(y) = 0.9*y + 0.1\nf(y) = tanh(h(y))\n'
            f'{" + ".join(chains)}\n')


WORKLOADS = {'sum_of_products': sum_of_products, 'nesting': nesting, 'block_chain': block_chain,
             'bindings': bindings, 'semicolons': semicolons, 'short_statements': short_statements,
             'block_sums': block_sums}


def operations(name, size):
    """How many operation nodes the workload's graph has."""
    if name == 'short_statements':
        return sum(_STATEMENTS[i % 4][2] for i in range(2, 2 + size))
    return {'sum_of_products': 2 * size - 1, 'nesting': size, 'block_chain': 3 * size,
            'bindings': size, 'semicolons': 1, 'block_sums': size * (3 * SUM_DEPTH + 1) - 1}[name]


def tokens(name, size):
    """How many tokens its expression has (the `input` line and block
    definitions aside; new lines are not counted)."""
    if name == 'short_statements':
        return sum(_STATEMENTS[i % 4][1] for i in range(2, 2 + size))
    return {'sum_of_products': 4 * size - 1, 'nesting': 3 * size + 1,
            'block_chain': 3 * size + 1, 'bindings': 5 * size - 2, 'semicolons': size + 6,
            'block_sums': size * (3 * SUM_DEPTH + 2) - 1}[name]


def size_for(name, count):
    """The size of a workload of about `count` tokens."""
    per = {'short_statements': sum(tokens for _, tokens, _ in _STATEMENTS) / len(_STATEMENTS),
           'block_sums': 3 * SUM_DEPTH + 2}[name]
    return round(count / per)


# ---- the same graphs, built by PyTorch's scalar autograd ----

def torch_graph(name, size, torch):
    """Build the workload's graph in float64 torch scalars; return (output, inputs)."""
    def leaf(value):
        return torch.tensor(value, dtype=torch.float64, requires_grad=True)

    if name == 'sum_of_products':
        xs = [leaf(0.1 * (i + 1)) for i in range(10)]
        index = {n: i for i, n in enumerate(VARIABLES)}
        a, b = _pair(0)
        out = xs[index[a]] * xs[index[b]]
        for i in range(1, size):
            a, b = _pair(i)
            out = out + xs[index[a]] * xs[index[b]]
        return out, xs
    if name == 'nesting':
        functions = {'sin': torch.sin, 'cos': torch.cos, 'tanh': torch.tanh,
                     'sigmoid': torch.sigmoid}
        x = leaf(0.5)
        out = x
        for i in reversed(range(size)):  # innermost call first
            out = functions[FUNCTIONS[i % 4]](out)
        return out, [x]
    raise ValueError(f'no torch form of {name}')


if __name__ == '__main__':
    if len(sys.argv) != 3 or sys.argv[1] not in WORKLOADS:
        sys.exit(f'usage: {sys.argv[0]} {"|".join(WORKLOADS)} SIZE > FILE')
    sys.stdout.write(WORKLOADS[sys.argv[1]](int(sys.argv[2])))
