"""Generators of array programs, and their torch float64 reference.

A program is a tree built for a wanted shape (`make`), so that most trees
are well-shaped; the same tree is printed as adgrad text (`text`) and
computed by torch (`torch_value`). Trees are plain tuples, so that a case
crosses the campaign's pipe to its worker:

    ('var', name) | ('num', text) | ('lit', nested lists) | ('eye', n)
    ('fill', 'zeros' | 'ones', shape) | ('un', f, a) | ('bin', symbol, a, b)
    ('call2', f, a, b) | ('matmul', spelling, a, b) | ('T', spelling, a)
    ('red', f, a, axis, spelling) | ('softmax', a, axis) | ('norm', a, order)
    ('lin', f, a) | ('solve', a, b) | ('outer', a, b) | ('reshape', a, shape)
    ('concat', parts, axis) | ('stack', spelling, parts)
    ('where', spelling, (symbol, a, b), then, else) | ('index', a, key)

With `hostile`, a child's shape is sometimes wrong, an index or an axis out
of range, a size huge: the CLI must then refuse in one line, not crash.
`array_case` makes the cases the campaign runs: kind 'tensor' (a program
torch checks), 'arrays' (hostile programs, bindings and files) and
'array_text' (array programs with syntax near-misses).
"""

import io
import json
import math

UNARY = ('sin', 'cos', 'tanh', 'exp', 'sigmoid', 'atan', 'abs', 'relu', 'sinh', 'cosh', 'log',
         'sqrt', 'asin', 'softplus', 'erf')
REDUCTIONS = ('sum', 'mean', 'prod', 'max', 'min', 'logsumexp')
SYMBOLS = ('+', '-', '*', '/', '^')
COMPARE = ('<', '<=', '>', '>=', '==', '!=')
HOSTILE_VALUES = (math.inf, -math.inf, math.nan, 1e308, -1e308, 0.0, -0.0, 5e-324, 1e-300, 1e300)


# ---- shapes ----

def random_shape(rng, low=0):
    axes = rng.choices([0, 1, 2, 3], [3, 5, 4, 1])[0]
    return tuple(rng.randint(1, 4) for _ in range(max(low, axes)))


def _size(shape):
    n = 1
    for k in shape:
        n *= k
    return n


def _broadcastable(rng, shape):
    """A shape that broadcasts with `shape` to `shape` (a suffix, with some 1s)."""
    keep = rng.randint(0, len(shape))
    tail = list(shape[len(shape) - keep:])
    return tuple(1 if rng.random() < 0.3 else n for n in tail)


class Maker:
    """Trees of a wanted shape over inputs it declares as it goes."""

    def __init__(self, rng, hostile=False):
        self.rng, self.hostile = rng, hostile
        self.inputs = {}   # name -> shape

    def _wrong(self, shape):
        """In a hostile program, now and then, another shape than the one wanted."""
        if self.hostile and self.rng.random() < 0.04:
            return random_shape(self.rng)
        return shape

    def leaf(self, shape):
        rng = self.rng
        r = rng.random()
        if r < 0.6:
            same = [n for n, s in self.inputs.items() if s == shape]
            if same and rng.random() < 0.6:
                return ('var', rng.choice(same))
            if len(self.inputs) < 5:
                name = 'abcdxyzuvw'[len(self.inputs)] if rng.random() < 0.8 else \
                    f'{"WABX"[len(self.inputs) % 4]}{len(self.inputs)}'
                if name not in self.inputs:
                    self.inputs[name] = shape
                    return ('var', name)
        if not shape:
            return ('num', rng.choice(['0.5', '2', '1.5', '3', '0.25', '1e-3', 'pi', '1']))
        if r < 0.7 and len(shape) == 2 and shape[0] == shape[1]:
            return ('eye', shape[0])
        if r < 0.75:
            return ('fill', rng.choice(['zeros', 'ones']), shape)
        return ('lit', literal_values(rng, shape))

    def square(self, n, depth):
        """A well-conditioned n×n matrix: a leaf plus a multiple of the identity."""
        return ('bin', '+', self.make((n, n), 0), ('bin', '*', ('num', str(n + 3)), ('eye', n)))

    def make(self, shape, depth):
        """A tree whose value has `shape`."""
        rng = self.rng
        shape = self._wrong(shape)
        if depth <= 0 or rng.random() < 0.2:
            return self.leaf(shape)
        d = depth - 1
        options = ['un', 'bin', 'bin', 'red', 'matmul', 'where', 'index', 'call2', 'pow']
        if shape:
            options += ['softmax', 'T', 'reshape', 'stack', 'concat']
        if not shape:
            options += ['norm', 'lin', 'red']
        if len(shape) == 2:
            options += ['outer', 'lin2']
        if len(shape) == 1:
            options += ['diag', 'solve']
        if len(shape) == 2 and shape[0] == shape[1]:
            options += ['diag']
        kind = rng.choice(options)
        if kind == 'un':
            return ('un', rng.choice(UNARY), self.make(shape, d))
        if kind == 'pow':
            if rng.random() < 0.5:
                return ('bin', '^', self.make(shape, d), ('num', rng.choice(['2', '3'])))
            base = ('bin', '+', ('num', '1.5'), ('un', 'sigmoid', self.make(shape, d)))
            return ('bin', '^', base, self.make(_broadcastable(rng, shape), d))
        if kind in ('bin', 'call2'):
            a, b = shape, _broadcastable(rng, shape)
            if rng.random() < 0.5:
                a, b = b, a
            if kind == 'call2':
                return ('call2', rng.choice(['max', 'min', 'atan2']), self.make(a, d),
                        self.make(b, d))
            symbol = rng.choice(SYMBOLS[:4])
            right = self.make(b, d)
            if symbol == '/':   # away from 0
                right = ('bin', '+', ('num', '2'), ('un', 'sigmoid', right))
            return ('bin', symbol, self.make(a, d), right)
        if kind == 'red':
            f = rng.choice(REDUCTIONS)
            if len(shape) < 3 and rng.random() < 0.6:
                axis = rng.randint(0, len(shape))
                wider = shape[:axis] + (rng.randint(1, 4),) + shape[axis:]
                spelled = axis - len(wider) if rng.random() < 0.3 else axis
                if self.hostile and rng.random() < 0.1:
                    spelled = rng.choice([len(wider), -len(wider) - 1, 7])
                # max(a, 1) is the larger of a and 1: their axis is named
                spelling = 'kw' if f in ('max', 'min') else rng.choice(['kw', 'pos'])
                return ('red', f, self.make(wider, d), spelled, spelling)
            if shape:
                return ('bin', '*', self.make(shape, d), ('red', f, self.make(random_shape(rng), d),
                                                          None, 'none'))
            return ('red', f, self.make(random_shape(rng), d), None, 'none')
        if kind == 'matmul':
            return self.matmul(shape, d)
        if kind == 'where':
            c = (rng.choice(COMPARE), self.make(shape, d), self.make(_broadcastable(rng, shape), d))
            return ('where', rng.choice(['where', 'if']), c, self.make(shape, d),
                    self.make(_broadcastable(rng, shape), d))
        if kind == 'index':
            return self.index(shape, d)
        if kind == 'softmax':
            axis = rng.randint(-len(shape), len(shape) - 1)
            return ('softmax', self.make(shape, d), axis)
        if kind == 'T':
            inner = shape[:-2] + shape[-1:] + shape[-2:-1] if len(shape) >= 2 else shape
            return ('T', rng.choice(['.T', 'transpose']), self.make(inner, d))
        if kind == 'reshape':
            other = random_shape(rng, 1)
            while _size(other) != _size(shape):
                other = rng.choice([(_size(shape),), (1, _size(shape)), (_size(shape), 1)])
            spelled = list(shape)
            if rng.random() < 0.3:
                spelled[rng.randrange(len(spelled))] = -1
            if self.hostile and rng.random() < 0.1:
                spelled = rng.choice([[0], [-1, -1], [10 ** 6], [2, 0], [-2], [1, 1, 1, 1]])
            return ('reshape', self.make(other, d), tuple(spelled))
        if kind == 'stack':
            parts = [self.make(shape[1:], d) for _ in range(shape[0])]
            return ('stack', rng.choice(['stack', '[]']), parts)
        if kind == 'concat':
            axis = rng.randrange(len(shape))
            if shape[axis] < 2:
                return self.make(shape, d)
            cut = rng.randint(1, shape[axis] - 1)
            left = shape[:axis] + (cut,) + shape[axis + 1:]
            right = shape[:axis] + (shape[axis] - cut,) + shape[axis + 1:]
            spelled = axis - len(shape) if rng.random() < 0.3 else axis
            return ('concat', [self.make(left, d), self.make(right, d)], spelled)
        if kind == 'norm':
            return ('norm', self.make(random_shape(rng, 1), d), rng.choice([None, 1, 2]))
        if kind == 'lin':
            n = rng.randint(1, 4)
            f = rng.choice(['trace', 'det', 'logdet'])
            inner = self.make((n, n), d) if f == 'trace' or self.hostile else self.square(n, d)
            return ('lin', f, inner)
        if kind == 'lin2':
            n = shape[0]
            if shape[0] == shape[1] and rng.random() < 0.5:
                return ('lin', 'inv', self.make((n, n), d) if self.hostile else self.square(n, d))
            return ('solve', self.square(n, d), self.make(shape, d))
        if kind == 'solve':
            return ('solve', self.square(shape[0], d), self.make(shape, d))
        if kind == 'outer':
            return ('outer', self.make(shape[:1], d), self.make(shape[1:], d))
        if kind == 'diag':
            if len(shape) == 2:
                return ('lin', 'diag', self.make(shape[:1], d))
            wide = (shape[0], shape[0] + rng.randint(0, 2))
            return ('lin', 'diag', self.make(wide if rng.random() < 0.5 else wide[::-1], d))
        return self.leaf(shape)

    def matmul(self, shape, d):
        rng = self.rng
        n = rng.randint(1, 4)
        spelling = rng.choice(['@', '@', 'dot', 'matmul'])
        if len(shape) == 0:
            return ('matmul', spelling, self.make((n,), d), self.make((n,), d))
        spelling = spelling if spelling != 'dot' else '@'
        if len(shape) == 1:
            if rng.random() < 0.5:
                return ('matmul', spelling, self.make((shape[0], n), d), self.make((n,), d))
            return ('matmul', spelling, self.make((n,), d), self.make((n, shape[0]), d))
        if len(shape) == 2:
            return ('matmul', spelling, self.make((shape[0], n), d), self.make((n, shape[1]), d))
        left = shape[:1] + (shape[1], n) if rng.random() < 0.7 else (shape[1], n)
        return ('matmul', spelling, self.make(left, d), self.make(shape[:1] + (n, shape[2]), d))

    def index(self, shape, d):
        """shape, as a subscript of a wider array."""
        rng = self.rng
        if len(shape) < 3 and rng.random() < 0.5:   # an integer index drops an axis
            axis = rng.randint(0, min(len(shape), 1))
            size = rng.randint(1, 4)
            wider = shape[:axis] + (size,) + shape[axis:]
            i = rng.randrange(size)
            i = i - size if rng.random() < 0.3 else i
            if self.hostile and rng.random() < 0.15:
                i = rng.choice([size, -size - 1, 10 ** 9])
            key = (i,) if axis == 0 else (('s', None, None, None), i)
            return ('index', self.make(wider, d), key)
        if not shape:
            return self.leaf(shape)
        # a slice of axis 0
        extra = rng.randint(0, 2)
        size = shape[0] + extra
        wider = (size,) + shape[1:]
        start = rng.randint(0, extra)
        if rng.random() < 0.2 and shape[0] > 1:   # backwards: from start + n - 1 down to start
            key = ('s', start + shape[0] - 1 if rng.random() < 0.5 else start + shape[0] - 1 - size,
                   None if start == 0 else start - 1, -1)
        else:
            stop = start + shape[0]
            key = ('s', start if start or rng.random() < 0.5 else None,
                   stop if stop < size or rng.random() < 0.5 else None, None)
        if self.hostile and rng.random() < 0.15:
            key = ('s', rng.choice([None, 5, -9, 10 ** 6]), rng.choice([None, 0, 9, -9]),
                   rng.choice([None, 1, -1, 2]))
        return ('index', self.make(wider, d), (key,) + (('s', None, None, None),) *
                (rng.random() < 0.2 and len(shape) > 1))


def literal_values(rng, shape):
    """Nested lists of small numbers that print exactly."""
    flat = [rng.choice([0.5, -1.0, 2.0, 0.25, -0.75, 1.5, 3.0, -2.5]) for _ in range(_size(shape))]
    return _nest(flat, shape)


def _nest(flat, shape):
    if not shape:
        return flat[0]
    rows = flat
    for n in reversed(shape[1:]):
        rows = [rows[k:k + n] for k in range(0, len(rows), n)]
    return rows


# ---- the tree as adgrad text ----

def _num(x):
    if isinstance(x, list):
        return '[' + ', '.join(_num(v) for v in x) + ']'
    if float(x) != int(x) or abs(x) > 1e15 or math.copysign(1.0, x) < 0 and x == 0:
        return repr(float(x))   # -0.0 too: atan2 tells it from 0
    return str(int(x))


def _key(k):
    if isinstance(k, tuple):
        _, start, stop, step = k
        text = ('' if start is None else str(start)) + ':' + ('' if stop is None else str(stop))
        return text + ('' if step is None else f':{step}')
    return str(k)


def text(tree):
    """The tree as adgrad source, parenthesised wherever precedence could matter."""
    kind = tree[0]
    if kind in ('var', 'num'):
        return tree[1]
    if kind == 'lit':
        return _num(tree[1])
    if kind == 'eye':
        return f'eye({tree[1]})'
    if kind == 'fill':
        return f'{tree[1]}({", ".join(map(str, tree[2]))})'
    if kind == 'un':
        return f'{tree[1]}({text(tree[2])})'
    if kind == 'bin':
        return f'({text(tree[2])} {tree[1]} {text(tree[3])})'
    if kind == 'call2':
        return f'{tree[1]}({text(tree[2])}, {text(tree[3])})'
    if kind == 'matmul':
        if tree[1] == '@':
            return f'({text(tree[2])} @ {text(tree[3])})'
        return f'{tree[1]}({text(tree[2])}, {text(tree[3])})'
    if kind == 'T':
        return f'({text(tree[2])}).T' if tree[1] == '.T' else f'transpose({text(tree[2])})'
    if kind == 'red':
        _, f, a, axis, spelling = tree
        if axis is None:
            return f'{f}({text(a)})'
        return f'{f}({text(a)}, {"axis=" if spelling == "kw" else ""}{axis})'
    if kind == 'softmax':
        return f'softmax({text(tree[1])}, axis={tree[2]})'
    if kind == 'norm':
        return f'norm({text(tree[1])})' if tree[2] is None else f'norm({text(tree[1])}, {tree[2]})'
    if kind == 'lin':
        return f'{tree[1]}({text(tree[2])})'
    if kind in ('solve', 'outer'):
        return f'{kind}({text(tree[1])}, {text(tree[2])})'
    if kind == 'reshape':
        return f'reshape({text(tree[1])}, shape=[{", ".join(map(str, tree[2]))}])'
    if kind == 'concat':
        return f'concat({", ".join(text(p) for p in tree[1])}, axis={tree[2]})'
    if kind == 'stack':
        inner = ', '.join(text(p) for p in tree[2])
        return f'stack({inner})' if tree[1] == 'stack' else f'[{inner}]'
    if kind == 'where':
        symbol, a, b = tree[2]
        return f'{tree[1]}({text(a)} {symbol} {text(b)}, {text(tree[3])}, {text(tree[4])})'
    if kind == 'index':
        return f'({text(tree[1])})[{", ".join(_key(k) for k in tree[2])}]'
    raise ValueError(kind)


# ---- the tree computed by torch ----

def torch_value(tree, env):
    """The tree's value in torch float64, over env {name: tensor}."""
    import torch
    T = torch
    kind = tree[0]

    def v(t):
        return torch_value(t, env)
    if kind == 'var':
        return env[tree[1]]
    if kind == 'num':
        return T.tensor(math.pi if tree[1] == 'pi' else float(tree[1]), dtype=T.float64)
    if kind == 'lit':
        return T.tensor(tree[1], dtype=T.float64)
    if kind == 'eye':
        return T.eye(tree[1], dtype=T.float64)
    if kind == 'fill':
        return getattr(T, tree[1])(tree[2], dtype=T.float64)
    if kind == 'un':
        f, a = tree[1], v(tree[2])
        if f == 'softplus':   # adgrad's: x past 20, as torch's threshold
            return T.nn.functional.softplus(a)
        return getattr(T, f)(a)
    if kind == 'bin':
        a, b = v(tree[2]), v(tree[3])
        return {'+': T.add, '-': T.sub, '*': T.mul, '/': T.div, '^': T.pow}[tree[1]](a, b)
    if kind == 'call2':
        a, b = v(tree[2]), v(tree[3])
        return {'max': T.maximum, 'min': T.minimum, 'atan2': T.atan2}[tree[1]](a, b)
    if kind == 'matmul':
        return T.matmul(v(tree[2]), v(tree[3]))
    if kind == 'T':
        a = v(tree[2])
        return a.mT if a.ndim >= 2 else a
    if kind == 'red':
        _, f, a, axis, _ = tree
        a = v(a)
        dims = tuple(range(a.ndim)) if axis is None else axis
        if f == 'sum':
            return a.sum() if axis is None else a.sum(axis)
        if f == 'mean':
            return a.mean() if axis is None else a.mean(axis)
        if f == 'prod':
            return a.prod() if axis is None else a.prod(axis)
        if f in ('max', 'min'):
            g = T.amax if f == 'max' else T.amin
            return g(a) if axis is None else g(a, axis)
        return T.logsumexp(a, dims) if a.ndim else a
    if kind == 'softmax':
        return T.softmax(v(tree[1]), tree[2])
    if kind == 'norm':
        return T.linalg.vector_norm(v(tree[1]), 1 if tree[2] == 1 else 2)
    if kind == 'lin':
        f, a = tree[1], v(tree[2])
        return {'trace': T.trace, 'det': T.linalg.det, 'logdet': T.logdet,
                'inv': T.linalg.inv, 'diag': T.diag}[f](a)
    if kind == 'solve':
        return T.linalg.solve(v(tree[1]), v(tree[2]))
    if kind == 'outer':
        return T.outer(v(tree[1]), v(tree[2]))
    if kind == 'reshape':
        return T.reshape(v(tree[1]), tree[2])
    if kind == 'concat':
        return T.cat([v(p) for p in tree[1]], tree[2])
    if kind == 'stack':
        return T.stack([v(p) for p in tree[2]])
    if kind == 'where':
        symbol, a, b = tree[2]
        ops = {'<': T.lt, '<=': T.le, '>': T.gt, '>=': T.ge, '==': T.eq, '!=': T.ne}
        c = ops[symbol](v(a), v(b))
        return T.where(c, v(tree[3]), v(tree[4]))
    if kind == 'index':
        key = tuple(slice(k[1], k[2], k[3]) if isinstance(k, tuple) else k for k in tree[2])
        a = v(tree[1])
        if any(isinstance(k, slice) and (k.step or 1) < 0 for k in key):   # torch has no negative steps
            import numpy as np
            index = np.arange(a.shape[0])[key[0]].tolist()
            return a[index][key[1:]] if len(key) > 1 else a[index]
        return a[key]
    raise ValueError(kind)


# ---- values and the files that hold them ----

def value_of(rng, shape, hostile=False):
    """Nested lists (a float for a scalar) of random values, some hostile."""
    flat = []
    for _ in range(_size(shape)):
        if hostile and rng.random() < 0.15:
            flat.append(rng.choice(HOSTILE_VALUES))
        else:
            flat.append(round(rng.uniform(-2, 2), rng.choice([1, 3, 17])))
    return _nest(flat, shape)


def _text_number(x):
    if math.isnan(x):
        return 'nan'
    if math.isinf(x):
        return 'inf' if x > 0 else '-inf'
    return repr(x)


def npy_bytes(value, dtype=None):
    import numpy as np
    out = io.BytesIO()
    np.save(out, np.asarray(value, dtype=dtype), allow_pickle=False)
    return out.getvalue()


def binding(rng, name, value, shape, files):
    """The command-line word that binds `name` to `value`, its file added to `files`."""
    import numpy as np
    shape = np.shape(value)   # a hostile case's value may not have its input's shape
    where = rng.choices(['line', 'npy', 'json', 'csv'], [5, 2, 2, 2])[0]
    finite = all(math.isfinite(x) for x in np.ravel(value))
    if where == 'csv' and not (len(shape) == 1 or len(shape) == 2 and min(shape) > 1):
        where = 'npy'   # a CSV holds a vector or a matrix; one row or column is a vector
    if where == 'line' and not finite:
        where = 'json'   # the command line has no inf or nan in a literal
    if where == 'line':
        return f'{name}={_num(value) if shape else repr(value)}'
    if where == 'npy':
        files[f'{name}.npy'] = npy_bytes(value)
    elif where == 'json':
        files[f'{name}.json'] = json.dumps(value).encode()
    else:
        rows = value if len(shape) == 2 else [value] if rng.random() < 0.5 else [[x] for x in value]
        files[f'{name}.csv'] = ''.join(','.join(_text_number(x) for x in row) + '\n'
                                       for row in rows).encode()
    return f'{name}=@{name}.{where}'


# hostile files: (name, bytes) makers
def hostile_file(rng, name):
    import numpy as np
    choice = rng.randrange(24)
    if choice == 0:
        out = io.BytesIO()
        np.save(out, np.array([1, 'a', None], dtype=object), allow_pickle=True)
        return f'{name}.npy', out.getvalue()
    if choice == 1:
        return f'{name}.npy', npy_bytes(np.zeros(rng.choice([(1, 2, 1, 2), (1, 1, 1, 1, 1)])))
    if choice == 2:
        return f'{name}.npy', npy_bytes(np.zeros(rng.choice([(0,), (2, 0), (0, 3, 1)])))
    if choice == 3:
        return f'{name}.npy', npy_bytes([1 + 2j], 'complex128')
    if choice == 4:
        return f'{name}.npy', npy_bytes(['ab'], '<U2')
    if choice == 5:
        return f'{name}.npy', npy_bytes([1.0, 2.0], rng.choice(['>f8', 'f2', 'i8', 'u1', '?', 'f4']))
    if choice == 6:
        data = npy_bytes(np.arange(6.0).reshape(2, 3))
        return f'{name}.npy', data[:rng.randint(0, len(data) - 1)]
    if choice == 7:
        return f'{name}.npy', rng.choice([b'', b'hello', b'\x93NUMPY\x01\x00\xff\xff', b'\x00' * 50])
    if choice == 8:
        return f'{name}.npy', npy_bytes(np.zeros(2, dtype=[('a', 'f8'), ('b', 'i4')]))
    if choice == 9:
        depth = rng.choice([4, 30, 5000, 200000])
        return f'{name}.json', ('[' * depth + '1' + ']' * depth).encode()
    if choice == 10:
        return f'{name}.json', rng.choice([b'[]', b'[[]]', b'[[], []]', b'', b'null', b'true',
                                           b'"1"', b'["1", "2"]', b'[true, false]', b'{"a": 1}',
                                           b'[1, [2]]', b'[[1, 2], [3]]', b'[null, 1]',
                                           b'[NaN, Infinity, -Infinity]', b'[1e999]', b'1',
                                           b'[' + b'9' * 5000 + b']', b'\xff[1]', b'[1,]',
                                           b'[1] [2]', b'\xef\xbb\xbf[1, 2]', b'[1e-400]',
                                           b'[[[[1]]]]', b'[' + b'1,' * 999 + b'1]'])
    if choice == 11:
        return f'{name}.csv', rng.choice([b'', b'\n\n', b'1,2\n3\n', b'a,b\n1,2\n', b'nan,inf\n',
                                          b'1;2\n', b'\xef\xbb\xbf1,2\n', b'1,2,\n', b'#c\n1,2\n',
                                          b'1,2\r3,4\r', b'\x00\x01\n', b'"1","2"\n', b'1e999\n',
                                          b'\xff\n', b',\n', b'1\n\n2\n', b'  \n', b'1 2\n',
                                          b'1,2\n#\n3,4\n', b'--1\n', b'1' * 5000 + b'\n'])
    if choice == 12:
        return f'{name}.tsv', rng.choice([b'1\t2\n', b'1,2\n', b'', b'1\t\n'])
    if choice == 13:
        return rng.choice([f'{name}.txt', f'{name}', f'{name}.NPY', f'{name}.Json', f'{name}.']), \
            b'1,2\n'
    if choice == 14:
        return f'{name}.npy', npy_bytes(np.array(rng.choice(HOSTILE_VALUES)))
    if choice == 15:
        return f'{name}.npy', npy_bytes(np.full((2, 2), rng.choice(HOSTILE_VALUES)))
    if choice == 16:
        return f'{name}.npy', npy_bytes(np.array(['2020-01-01'], dtype='datetime64[D]'))
    if choice == 17:
        arr = np.asfortranarray(np.arange(6.0).reshape(2, 3))
        out = io.BytesIO()
        np.save(out, arr)
        return f'{name}.npy', out.getvalue()
    if choice == 18:
        return f'{name}.npy', npy_bytes(np.array([2 ** 63 - 1, -2 ** 63]), 'i8')
    if choice == 19:
        return f'{name}.json', json.dumps(value_of(rng, random_shape(rng), True)).encode()
    if choice == 20:
        return f'{name}.csv', ''.join(','.join(_text_number(x) for x in row) + '\n' for row in
                                      [value_of(rng, (2,), True) for _ in range(2)]).encode()
    if choice == 21:
        return f'{name}.npy', npy_bytes(np.zeros((1, 1, 1)))
    if choice == 22:
        return f'{name}.json', b'[' + b', '.join(b'1' for _ in range(rng.choice([1, 2, 10 ** 5])))\
            + b']'
    return f'{name}.npy', npy_bytes(value_of(rng, random_shape(rng), True))


# ---- cases ----

ARRAY_TOKENS = ('[', ']', '[]', '[[', ']]', ':', '::', '@', '@@', '.T', '.', '.t', 'axis=', '=',
                ',', ',,', 'T', '[0]', '[-1]', '[:,', '[1:', '[::-1]', 'eye(', 'zeros(',
                'input W[2, 3]\n', 'input x[n]\n', 'x[n', 'sum(', 'axis', '1e999', '-',
                '(', ')', ';', '\n', 'shape=[', 'reshape(', '@x', 'x.T.T', '[1,2]', '..', '.5',
                '9' * 30, 'input ', '#')


def tensor_program(rng, hostile=False):
    """(tree, inputs {name: shape}, output tree): a program with a scalar output."""
    maker = Maker(rng, hostile)
    shape = random_shape(rng)
    tree = maker.make(shape, rng.randint(1, 4))
    output = tree if not shape else ('red', rng.choice(['sum', 'mean']), tree, None, 'none')
    if rng.random() < 0.2 and shape:   # weight every entry differently
        output = ('red', 'sum', ('bin', '*', tree, ('lit', value_of(rng, shape))), None, 'none')
    return output, maker.inputs


def program_text(rng, output, inputs, values, files, hostile=False):
    """(source, binding words): the output's text, after `input` lines for some inputs."""
    declared, words = [], []
    for name in sorted(inputs):
        shape = inputs[name]
        r = rng.random()
        if r < 0.15 and shape:
            # a size that is a name stands for one size in the whole program
            sizes = [str(n) if rng.random() < 0.6 else f'n{n}' for n in shape]
            if hostile and rng.random() < 0.3:
                sizes = [str(rng.choice([1, 2, 5])) for _ in range(rng.randint(1, 4))]
            declared.append(f'{name}[{", ".join(sizes)}]')
            words.append(binding(rng, name, values[name], shape, files))
        elif r < 0.3 and all(math.isfinite(x) for x in _flat(values[name])):
            if shape and rng.random() < 0.5:
                declared.append(f'{name}[{", ".join(map(str, shape))}] = {_num(values[name])}')
            else:
                declared.append(f'{name} = {_num(values[name])}')
        else:
            words.append(binding(rng, name, values[name], shape, files))
    lines = [f'input {", ".join(declared)}'] if declared else []
    body = text(output)
    if rng.random() < 0.3 and len(body) < 400:   # an intermediate, and a block
        lines += ['f(p) = p * 2', f'loss = {body}', 'f(loss) / 2']
    else:
        lines.append(body)
    return ('\n' if rng.random() < 0.8 else '; ').join(lines) + '\n', words


def _flat(value):
    import numpy as np
    return np.ravel(np.array(value, dtype=float)).tolist()


def tensor_case(rng):
    """A well-shaped program that torch checks: grad --json must agree."""
    output, inputs = tensor_program(rng)
    values = {name: value_of(rng, shape) for name, shape in inputs.items()}
    files = {}
    source, words = program_text(rng, output, inputs, values, files)
    files['prog.ad'] = source.encode()
    argv = ['grad', '-f', 'prog.ad', *words, '--json']
    return {'kind': 'tensor', 'argv': argv, 'files': files, 'tree': output, 'inputs': inputs,
            'values': values, 'block': 'f(loss)' in source}


def _command(rng, argv_tail):
    command = rng.choices(['grad', 'eval', 'hessian', 'check', 'diff', 'render'],
                          [10, 6, 1, 1, 1, 1])[0]
    argv = [command] + argv_tail
    options = {'grad': ['--json', '--nodes', '--format=plain', '--format=table', '--format=csv',
                        '--format=tsv', '--format=jsonl', '--strict', '--wrt=a', '--wrt=x,a',
                        '--mode=forward', '--explain', '--points=p.csv', '-o', 'out.csv'],
               'eval': ['--json', '--nodes', '--format=plain', '--format=table', '--strict',
                        '--points=p.csv', '--format=csv']}.get(command, ['--json'])
    for _ in range(rng.choice([0, 0, 1, 1, 2])):
        argv.append(rng.choice(options))
    return argv


def arrays_case(rng):
    """A hostile array program: odd shapes, values, files and commands."""
    output, inputs = tensor_program(rng, hostile=True)
    if rng.random() < 0.3 and output[0] == 'red' and output[3] is None:
        output = output[2]   # a non-scalar output, which grad refuses
    values = {name: value_of(rng, inputs[name] if rng.random() < 0.9 else random_shape(rng),
                             hostile=True) for name in inputs}
    files = {'p.csv': b'a,x\n1,2\n'}
    source, words = program_text(rng, output, inputs, values, files, hostile=True)
    for k in range(len(words)):
        if rng.random() < 0.08:
            name = words[k].split('=')[0]
            file_name, data = hostile_file(rng, name)
            files[file_name] = data
            words[k] = f'{name}=@{file_name}'
        elif rng.random() < 0.03:
            name = words[k].split('=')[0]
            words[k] = name + '=' + rng.choice(['[]', '[[]]', '[1,', '[1,2]]', '[[1],[2,3]]',
                                                 '[1 2]', '[inf]', '[nan]', '[1e999]', '@',
                                                 '@missing.npy', '[x]', '[[[[1]]]]', '[1,2]@[3,4]',
                                                 '[1,2].T', '[1,2][5]', 'eye(2)', 'zeros(300,300)',
                                                 'zeros(99999,99999)',
                                                 '[' + ','.join(['1'] * 1000) + ']', '[1;2]',
                                                 '[1,,2]', '[,]', '[1:2]', '[axis=1]'])
    if rng.random() < 0.05:
        source = rng.choice(['eye(10000000000)', 'zeros(100000, 100000)', 'ones(99999, 99999, 9)',
                             'sum(eye(3000))', 'sum(zeros(1000, 1000) @ zeros(1000, 1000))',
                             'outer(zeros(100000), zeros(100000))', '[[[[1]]]]',
                             'sum(reshape(zeros(10), shape=[1, 1, 1, 10]))',
                             'sum(zeros(2)[5:])', 'max(zeros(3)[3:])', 'prod(x[9:])',
                             'softmax(ones(2)[2:])', 'det(eye(2)[0:0, 0:0])',
                             'sum(x[1:0])', 'mean(zeros(2)[2:])', 'logsumexp(ones(3)[:0])',
                             'norm(ones(3)[3:])', 'zeros(3)[3:] @ zeros(3)[3:]',
                             'reshape(zeros(2)[2:], shape=[-1])', 'sum(stack(x))',
                             'input W[m, m]\nsum(W)', 'input W[m, n], v[n]\nsum(W @ v)',
                             'input W[2, 2, 2, 2]\nsum(W)', 'sum(x, axis=1e30)',
                             'x[10000000000000000000000]', 'x[1e300]', 'x[-0.5]',
                             'sum(x[::10000000000000000000000])', '[' * 600 + '1' + ']' * 600,
                             '(' * 400 + 'x' + ')' * 400, 'x' + '.T' * 5000,
                             'x' + '[0]' * 300, 'sum(concat(x, x, x, axis=0))',
                             'trace(eye(2)) @ 2', 'norm(x, 0)', 'norm(x, -1)',
                             'sum(x, axis=-0)', 'stack(eye(2), eye(3))']) + '\n'
        if 'x' in source and 'x' not in inputs:
            words.append(binding(rng, 'x', value_of(rng, (3,)), (3,), files))
    files['prog.ad'] = source.encode()
    argv = _command(rng, ['-f', 'prog.ad', *words])
    return {'kind': 'arrays', 'argv': argv, 'files': files, 'stdin': source.encode()}


def array_text_case(rng, mutate):
    """An array program with syntax near-misses (gen.mutate with array tokens)."""
    output, inputs = tensor_program(rng)
    values = {name: value_of(rng, shape) for name, shape in inputs.items()}
    files = {}
    source, words = program_text(rng, output, inputs, values, files)
    data = mutate(rng, source, ARRAY_TOKENS)
    files['prog.ad'] = data
    argv = _command(rng, ['-f', 'prog.ad', *words])
    return {'kind': 'array_text', 'argv': argv, 'files': files, 'stdin': data}


def big_literal(n):
    """A program of one n-entry literal, as text."""
    return 'sum([' + ', '.join('1' for _ in range(n)) + '])\n'
