"""Generators of hostile input, each driven by a random.Random.

The same functions feed hypothesis (through `st.randoms()`, which shrinks)
and the long campaign (`python -m tests.fuzz`, through seeded Randoms), so
both explore the same space:

- `program`: grammar-aware programs (inputs, blocks, bindings, ifs over
  comparisons, an output), together with the same program with every block
  call inlined by hand;
- `mutate`: that text with bytes and tokens inserted, deleted, swapped or
  repeated, including comment, continuation, markup and control characters;
- `command_line`: eval, grad, render, diff, hessian or check with options
  drawn from valid and hostile values;
- `points_file`: CSV, TSV or JSON Lines with quoting, new lines, odd cells,
  huge numbers and columns that clash with the output's;
- array programs, values and files: tests/fuzz/arrays.py.

A case is a dict: argv, stdin (bytes), files ({name: bytes}), and for a
numbers case the runs whose numbers must agree.
"""

import json
import math

VARIABLES = ('x', 'y', 'z')
PARAMETERS = ('p', 'q')
UNARY_FUNCTIONS = ('sin', 'cos', 'tan', 'atan', 'sinh', 'cosh', 'tanh', 'exp', 'log', 'log2',
                   'log10', 'sqrt', 'abs', 'sigmoid', 'relu', 'asin', 'acos')
BINARY_FUNCTIONS = ('pow', 'min', 'max', 'atan2')
OPERATORS = {'+': 1, '-': 1, '*': 2, '/': 2, '^': 4}
COMPARISONS = ('<', '<=', '>', '>=', '==', '!=')   # not chained: both sides are sums
NUMBERS = ('0', '1', '2', '0.5', '3', '.25', '2.', '1e-3', '10', '1.5E2', 'pi', 'e')
POINT_VALUES = (0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, 0.3, -1.7, 1e-8, 10.0, 700.0,
                1e300, math.inf, -math.inf, math.nan)


# ---- expression trees ----
# ('name', text) | ('num', text) | ('op', symbol, left, right) | ('neg', child) |
# ('call', function, args) | ('cmp', symbol, left, right), the last only as an
# if's condition. Printed with only the parentheses precedence needs.

def expression(rng, names, blocks, depth, conditionals=True):
    """A random tree over `names`, calling built-ins and the `blocks` {name: arity},
    and with `conditionals`, ifs over comparisons."""
    if depth <= 0 or rng.random() < 0.25:
        if names and rng.random() < 0.75:
            return ('name', rng.choice(names))
        return ('num', rng.choice(NUMBERS))
    def deeper():
        return expression(rng, names, blocks, depth - 1, conditionals)
    kind = rng.random()
    if kind < 0.45:
        return ('op', rng.choice(list(OPERATORS)), deeper(), deeper())
    if kind < 0.55:
        return ('neg', deeper())
    if kind < 0.6 and conditionals:   # if(c, a, b): c a comparison or any expression
        condition = deeper()
        if rng.random() < 0.7:
            condition = ('cmp', rng.choice(COMPARISONS), condition, deeper())
        return ('call', 'if', (condition, deeper(), deeper()))
    if blocks and kind < 0.8:
        name = rng.choice(sorted(blocks))
        return ('call', name, tuple(deeper() for _ in range(blocks[name])))
    function = rng.choice(UNARY_FUNCTIONS + BINARY_FUNCTIONS)
    arity = 2 if function in BINARY_FUNCTIONS else 1
    return ('call', function, tuple(deeper() for _ in range(arity)))


def _level(tree):
    if tree[0] == 'cmp':
        return 0
    if tree[0] == 'op':
        return OPERATORS[tree[1]]
    return 3 if tree[0] == 'neg' else 5


def show(tree):
    """The tree as adgrad text, with the parentheses its precedence needs (iterative)."""
    out, stack = [], [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        kind = item[0]
        if kind in ('name', 'num'):
            out.append(item[1])
        elif kind == 'neg':
            child = item[1]
            stack += [')', child, '-('] if _level(child) < 3 else [child, '-']
        elif kind == 'call':
            parts = [')']
            for i, arg in enumerate(reversed(item[2])):
                parts += [arg] if i == 0 else [', ', arg]
            stack += parts + [item[1] + '(']
        elif kind == 'cmp':
            left, right = item[2], item[3]
            stack += [right] if _level(right) >= 1 else [')', right, '(']
            stack += [f' {item[1]} ']
            stack += [left] if _level(left) >= 1 else [')', left, '(']
        else:
            symbol, left, right = item[1], item[2], item[3]
            level = OPERATORS[symbol]
            if symbol == '^':   # right-associative; the exponent may be a unary
                left_ok, right_ok = _level(left) > 4, _level(right) >= 3
            else:
                left_ok, right_ok = _level(left) >= level, _level(right) > level
            stack += ([right] if right_ok else [')', right, '(']) + [f' {symbol} ']
            stack += [left] if left_ok else [')', left, '(']
    return ''.join(out)


def substitute(tree, bodies):
    """The tree with every call of a block in `bodies` {name: (params, body)} inlined."""
    done, stack = {}, [(tree, False)]
    while stack:
        node, expanded = stack.pop()
        key = id(node)
        if key in done:
            continue
        kind = node[0]
        children = (node[2], node[3]) if kind in ('op', 'cmp') else (node[1],) if kind == 'neg' \
            else node[2] if kind == 'call' else ()
        if not expanded and children:
            stack.append((node, True))
            stack.extend((c, False) for c in children)
            continue
        new = [done[id(c)] for c in children]
        if kind in ('op', 'cmp'):
            done[key] = (kind, node[1], new[0], new[1])
        elif kind == 'neg':
            done[key] = ('neg', new[0])
        elif kind == 'call' and node[1] in bodies:
            params, body = bodies[node[1]]
            done[key] = _bind(body, dict(zip(params, new)))
        elif kind == 'call':
            done[key] = ('call', node[1], tuple(new))
        else:
            done[key] = node
    return done[id(tree)]


def _bind(body, args):
    """The (already inlined) body with its parameters replaced by argument trees."""
    if body[0] == 'name':
        return args.get(body[1], body)
    if body[0] == 'num':
        return body
    if body[0] in ('op', 'cmp'):
        return (body[0], body[1], _bind(body[2], args), _bind(body[3], args))
    if body[0] == 'neg':
        return ('neg', _bind(body[1], args))
    return ('call', body[1], tuple(_bind(a, args) for a in body[2]))


def program(rng, conditionals=True):
    """(text, inlined text, variables): a program with blocks, and the same without them
    (with `conditionals`, ifs over comparisons too)."""
    lines, inlined, names, blocks, bodies = [], [], [], {}, {}
    variables = sorted(rng.sample(VARIABLES, rng.randint(1, 3)))
    if rng.random() < 0.3:
        declared = ', '.join(f'{v} = {rng.choice(NUMBERS)}' for v in variables)
        lines.append(f'input {declared}')
        inlined.append(lines[-1])
    names += variables
    for k in range(rng.randint(0, 3)):
        params = PARAMETERS[:rng.randint(1, 2)]
        body = expression(rng, list(params) + names, blocks, rng.randint(1, 3), conditionals)
        name = f'f{k}'
        lines.append(f'{name}({", ".join(params)}) = {show(body)}')
        bodies[name] = (params, substitute(body, bodies))
        blocks[name] = len(params)
    for k in range(rng.randint(0, 3)):
        tree = expression(rng, names, blocks, rng.randint(1, 3), conditionals)
        lines.append(f't{k} = {show(tree)}')
        inlined.append(f't{k} = {show(substitute(tree, bodies))}')
        names.append(f't{k}')
    if rng.random() < 0.8 or not names[len(variables):]:
        tree = expression(rng, names, blocks, rng.randint(1, 4), conditionals)
        lines.append(show(tree))
        inlined.append(show(substitute(tree, bodies)))
    separator = '\n' if rng.random() < 0.8 else '; '
    return separator.join(lines) + '\n', separator.join(inlined) + '\n', variables


def number_text(value):
    return repr(value) if math.isfinite(value) else ('nan' if math.isnan(value) else
                                                     ('inf' if value > 0 else '-inf'))


def point(rng, variables):
    return {v: rng.choice(POINT_VALUES) if rng.random() < 0.7 else rng.uniform(-3, 3)
            for v in variables}


def numbers_case(rng):
    """A program, a point and a batch: single point, batch row and inlined program must agree."""
    text, inlined, variables = program(rng)
    at = point(rng, variables)
    bindings = [f'{v}={number_text(x)}' for v, x in at.items()]
    rows = [point(rng, variables) for _ in range(rng.randint(0, 3))]
    row = rng.randint(0, len(rows))   # not rows.index(at): 0.0 == -0.0 would find another row
    rows.insert(row, at)
    jsonl = ''.join(json.dumps({v: number_text(x) if not math.isfinite(x) else x
                                for v, x in row.items()}) + '\n' for row in rows)
    return {'kind': 'numbers', 'row': row, 'files': {'prog.ad': text.encode(),
                                                                'inlined.ad': inlined.encode(),
                                                                'p.jsonl': jsonl.encode()},
            'runs': [['grad', '-f', 'prog.ad', *bindings, '--json'],
                     ['grad', '-f', 'prog.ad', '--points', 'p.jsonl'],
                     ['grad', '-f', 'inlined.ad', *bindings, '--json']]}


# ---- mutated text ----

HOSTILE = ('#', '#[/]', '\\\n', '\\', '(', ')', ';', '\n', '=', ',', '^', '**', '--', '-', '.',
           'e', 'E9', '1e999', 'input', 'input ', '[/]', '[b]', '<!--<script', '</script>', '\x00',
           '\x01', '\x7f', '\u2028', '\x85', '\ufffe', '\ud800', '\u00e9', '∂', '\t', '\r', '\r\n',
           'f0(', 'f0(x)', 'x', 'pi', 'e', '9' * 40, '0.' + '0' * 30 + '1', 'sin(', ')' * 3,
           '(' * 3, '#' * 30, ' ' * 10, '"', "'", '{', '`', '$', '%', '!', '@', '&', '|')


def mutate(rng, text, tokens=HOSTILE):
    """The text with one to four edits, some inserting `tokens`; bytes that may not be UTF-8 at all."""
    data = text
    for _ in range(rng.randint(1, 4)):
        at = rng.randint(0, len(data))
        edit = rng.random()
        if edit < 0.4:
            data = data[:at] + rng.choice(tokens) + data[at:]
        elif edit < 0.6 and data:
            end = min(len(data), at + rng.randint(1, 8))
            data = data[:at] + data[end:]
        elif edit < 0.75 and data:
            end = min(len(data), at + rng.randint(1, 12))
            data = data[:at] + data[at:end] * rng.randint(2, 40) + data[end:]
        elif edit < 0.85 and len(data) > 2:
            i, j = sorted(rng.sample(range(len(data)), 2))
            data = data[:i] + data[j] + data[i + 1:j] + data[i] + data[j + 1:]
        else:
            data = data[:at] + chr(rng.choice([rng.randint(0, 127), rng.randint(128, 0x10ffff)])) \
                + data[at:]
    raw = data.encode('utf-8', 'surrogatepass')
    if rng.random() < 0.15:
        at = rng.randint(0, len(raw))
        raw = raw[:at] + bytes([rng.choice([0xff, 0xc3, 0x80, 0xfe])]) + raw[at:]
    return raw


# ---- command lines ----

FORMATS = ('table', 'plain', 'json', 'jsonl', 'csv', 'tsv')
ODD_VALUES = ('', '-', '--', '-x', '-5e3', '-1.', ',', ',,', 'x,', 'x,x', ' x', 'x y', '∂', '[/]',
              '\x01', '0', '-1', '1e400', '10000000000000', 'nan', 'inf', '-0', '=', 'x=',
              '=1', 'x=y=2', 'x=1=2', 'value=1', 'd_x=5', 'x=pi/7', 'x=1/0', 'x=sin(', 'TB', 'LR')


def _value(rng, good):
    return rng.choice(good) if rng.random() < 0.7 else rng.choice(ODD_VALUES)


def command_line(rng, variables, program_file='prog.ad', points_file=None):
    """argv for eval, grad, render, diff, hessian or check of `program_file` (read
    from stdin for '-'), with bindings and options; never render or diff when
    there is a points file."""
    command = rng.choices(['eval', 'grad', 'hessian', 'check'] + ([] if points_file else
                                                                 ['render', 'diff']),
                          [10, 20, 3, 3, 10, 3][:6 if not points_file else 4])[0]
    argv = [command]
    source = rng.random()
    argv += ['-f', program_file] if source < 0.6 else [f'-f{program_file}'] if source < 0.65 \
        else ['-']
    for v in variables:
        if rng.random() < 0.8:
            argv.append(f'{v}={number_text(rng.choice(POINT_VALUES))}')
    if rng.random() < 0.1:
        argv.append(rng.choice(ODD_VALUES))
    if command == 'render':
        fmt = rng.choices(['dot', 'text', 'svg'], [10, 10, 1])[0]
        argv += ['--format', _value(rng, [fmt])]
        argv += ['-o', _value(rng, ['-', 'out.' + fmt, '-out.' + fmt])]
        if rng.random() < 0.3:
            argv += ['--pass', _value(rng, ['forward', 'backward'])]
        if rng.random() < 0.2:
            argv += ['--rankdir', _value(rng, ['LR', 'TB'])]
        if rng.random() < 0.2:
            argv += ['--max-nodes', _value(rng, ['5', '100', '2000'])]
        if fmt == 'svg' and rng.random() < 0.2:
            argv += ['--steps', _value(rng, ['steps', '-st'])]
        return argv
    if command == 'diff':
        if rng.random() < 0.3:
            argv += ['--lang', _value(rng, ['adgrad', 'numpy', 'c', 'latex'])]
        if rng.random() < 0.2:
            argv += ['--order', _value(rng, ['1', '2', '3'])]
    if command == 'check' and rng.random() < 0.2:
        argv += ['--order', _value(rng, ['1', '2'])]
    if command in ('diff', 'hessian', 'check') and rng.random() < 0.3:
        argv += ['--wrt', _value(rng, [','.join(rng.sample(variables, len(variables)))])]
    if command in ('hessian', 'check'):
        if rng.random() < 0.5:
            argv += ['--format', _value(rng, ['table', 'plain', 'json', 'csv', 'tsv'])]
        if points_file is not None:
            argv += ['--points', points_file]
    if command in ('diff', 'hessian', 'check'):
        return argv
    if rng.random() < 0.5:
        argv += ['--format', _value(rng, FORMATS + ('table',) * 2)]
    elif rng.random() < 0.2:
        argv.append('--json')
    if command == 'grad' and rng.random() < 0.3:
        argv.append('--nodes')
    if command == 'grad' and rng.random() < 0.3:
        argv += ['--wrt', _value(rng, [','.join(rng.sample(variables, len(variables)))])]
    if rng.random() < 0.1:
        argv.append('--strict')
    if points_file is not None:
        argv += ['--points', points_file]
    if rng.random() < 0.1:
        rest = argv[1:]
        rng.shuffle(rest)
        argv[1:] = rest
    return argv


# ---- points files ----

def _cell(rng, odd):
    """A number, or with probability `odd` an empty or hostile cell."""
    r = rng.random()
    if r >= odd:
        return number_text(rng.choice(POINT_VALUES))
    if r < odd / 4:
        return ''
    return rng.choice(['a', '"a,b"', '"a\nb"', '"a""b"', 'a\u2028b', 'a\x85b', '[/]', '[note] a[i]',
                       '1' + '0' * 400, '1e999', '-', 'NaN', 'Infinity', 'true', '"', ' 1', '1 ',
                       '0x10', '1_000', '\x00', 'x' * 2000, '\ufeff1', '∂'])


def _json_value(rng, odd):
    if rng.random() >= odd:
        value = rng.choice(POINT_VALUES)
        return value if math.isfinite(value) else number_text(value)
    return rng.choice([None, True, False, 'x', '1', [], {}, [1], 10 ** 30, '\ud800', 'nan',
                       'Infinity', 1.5e308, -0.0, 'a\nb', '[/]'])


LABELS = ('a', 'a b', 'a,b', 'a\nb', 'a\r\nb', 'a"b', '[/]', '[note] see a[i]', '[bold]x', 'a\u2028b',
          'a\x85b', 'a\x00b', '\ud800', 'é∂', '=1+2', '<!--<script', 'a\\b', 'y' * 140_000, '')


def _label(rng):
    return rng.choice(LABELS) if rng.random() < 0.5 else f'row{rng.randint(0, 99)}'


def _csv_label(rng, kind):
    text = _label(rng)
    if kind == 'csv' and any(c in text for c in ',"\r\n') or rng.random() < 0.1:
        return '"' + text.replace('"', '""') + '"'
    return text


def points_file(rng, variables):
    """(name, bytes) of a CSV, TSV or JSON Lines file over `variables` and extra columns."""
    extra = rng.choice([[], [], ['label'], ['label'], ['label', 'w'], ['value'], ['d_x'], ['x'], ['']])
    columns = list(variables) + extra
    rows = rng.randint(0, 6)
    kind = rng.choice(['csv', 'tsv', 'jsonl'])
    # Mostly clean files with a few odd cells, so that a fault in writing the
    # output is reached, not only the first bad row's error.
    odd = rng.choice([0.0, 0.05, 0.1, 0.3])
    if kind == 'jsonl':
        lines = []
        for _ in range(rows):
            obj = {c: _json_value(rng, odd) if c in variables else _label(rng)
                   for c in columns if rng.random() < 0.95}
            line = json.dumps(obj, ensure_ascii=rng.random() < 0.5)
            if rng.random() < 0.1:
                line = line.replace('"', "'", 1) if rng.random() < 0.5 else line[:-1]
            lines.append(line)
        if rng.random() < 0.1:
            lines.insert(rng.randint(0, len(lines)), rng.choice(['', '[1]', 'NaN', '{}', '{"x": NaN}']))
        text = '\n'.join(lines) + ('\n' if rng.random() < 0.8 else '')
    else:
        sep = ',' if kind == 'csv' else '\t'
        lines = [sep.join(columns)]
        for _ in range(rows):
            cells = [_cell(rng, odd) if c in variables else _csv_label(rng, kind) for c in columns]
            if rng.random() < 0.1:
                cells = cells[:-1] if cells and rng.random() < 0.5 else cells + ['1']
            lines.append(sep.join(cells))
        ending = rng.choice(['\n', '\r\n', '\r'])
        text = ending.join(lines) + (ending if rng.random() < 0.8 else '')
        if rng.random() < 0.1:
            text = '\ufeff' + text
    return f'p.{kind}', text.encode('utf-8', 'surrogatepass')


# ---- whole cases ----

KINDS = ('program', 'mutated', 'points', 'numbers', 'tensor', 'arrays', 'array_text')


def hostile_case(rng, kinds=KINDS):
    """A case of one of `kinds`: mutated program, odd command line, points, numbers,
    or an array program (tests/fuzz/arrays.py): checked by torch, hostile, or mutated."""
    kind = rng.choice(kinds)
    if kind == 'numbers':
        return numbers_case(rng)
    if kind in ('tensor', 'arrays', 'array_text'):
        from tests.fuzz import arrays
        if kind == 'tensor':
            return arrays.tensor_case(rng)
        return arrays.arrays_case(rng) if kind == 'arrays' else arrays.array_text_case(rng, mutate)
    text, _, variables = program(rng)
    data = mutate(rng, text) if kind == 'mutated' or rng.random() < 0.2 else text.encode()
    points = points_file(rng, variables) if kind == 'points' else None
    argv = command_line(rng, variables, points_file=points[0] if points else None)
    files = {'prog.ad': data}
    if points:
        files[points[0]] = points[1]
    # The program also waits on stdin, for the command lines that read it from '-'.
    return {'kind': kind, 'argv': argv, 'stdin': data, 'files': files}
