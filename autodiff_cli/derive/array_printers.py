"""A formula over arrays (array_formula.py) printed: adgrad, NumPy, C or LaTeX.

printers.lay_out walks the tape as for numbers, with the primitives' own
templates; `spell` here writes what a template cannot: an array op's static
arguments (an axis left out where it is the default, a key as `A[:, 0]`, a
shape), an array constant, a size. Sizes are the program's own names, checked
by the parser, mangled where a language reserves them. C is array_c.py's.
"""

import copy

from ..core.primitives import ATOM
from ..errors import AdgradError
from . import printers
from .printers import (ADGRAD, ADGRAD_LOOPS, LATEX, PYTHON_LOOPS, Names, adgrad_number,
                       latex_name, lay_out, python_number, python_safe, statements)
from .simplify import Ref

# A reduction's static argument that is its default, left out when printed.
_DEFAULTS = {'sum': None, 'mean': None, 'prod': None, 'amax': None, 'amin': None,
             'logsumexp': None, 'softmax': -1, 'norm': 2}
_NAMES = {'amax': 'max', 'amin': 'min'}
# A loop's stacked rows in NumPy: a list while it runs, an array after it.
NUMPY_LOOPS = PYTHON_LOOPS._replace(stack_row='{0}.append({2})', stack_open='{0} = []',
                                    stack_close='{0} = np.stack({0})',
                                    stack_close_down='{0} = np.stack({0}[::-1])')


def _key_text(key, number):
    parts = []
    for k in key:
        if isinstance(k, slice):
            bounds = ['' if b is None else number(b) for b in (k.start, k.stop)]
            text = ':'.join(bounds)
            parts.append(text + (f':{number(k.step)}' if k.step is not None else ''))
        else:
            parts.append(number(k))
    return ', '.join(parts)


def _sizes(sizes, size):
    return [size(n) for n in sizes]


class Speller:
    """spell() for one language: `size` writes a size (an int or a symbol)."""

    def __init__(self, tape, language, size=str):
        self.tape, self.language, self.size = tape, language, size
        self.in_body, self.hoisted = False, {}

    def __call__(self, i, node, arguments):
        op = node.op
        if op == 'static':   # written by the op that takes it
            return str(node.value) if isinstance(node.value, int) else '', ATOM
        if op == 'const':
            value = node.value
            return (self.literal(value), ATOM) if getattr(value, 'ndim', 0) else None
        method = getattr(self, 'op_' + op, None)
        if method is not None:
            return method(Ref(i), node, arguments)
        default = _DEFAULTS.get(op, ...)
        if default is not ...:
            return self.reduction(op, node, arguments, default)
        if op in ('concat', 'stack'):
            return self.many(op, node, arguments)
        return None

    def static(self, node_id):
        return self.tape.nodes[node_id].value

    def within(self, loop):
        """This speller for the body of loop node `loop`, over its own tape."""
        inner = copy.copy(self)
        inner.tape, inner.in_body = self.tape.bodies[loop], True
        return inner

    def construct(self, name, sizes):
        """ones(n), zeros(n), eye(n) as text. A loop's body reads no size, so
        there one of a symbolic size is a name bound before the program's
        statements (`hoisted`: {name: its text}), in adgrad's language."""
        text = self.call(name, sizes)[0]
        if not (self.in_body and self.language == 'adgrad'
                and any(n.isidentifier() for n in sizes)):
            return text
        return self.hoist('_'.join([name] + sizes), text)

    def hoist(self, wanted, text):
        """A name for `text`, bound once before the program's statements."""
        for bound, made in self.hoisted.items():
            if made == text:
                return bound
        self.hoisted[wanted] = text
        return wanted

    def number(self, value):
        return str(value)

    def shape_text(self, shape):
        return '[' + ', '.join(_sizes(shape, self.size)) + ']'

    def literal(self, value):
        return self._list(value.tolist())

    def _list(self, rows):
        # at most 3 deep (tensors.MAX_AXES): this recursion is bounded
        if not isinstance(rows, list):
            return self.float_text(rows)
        return '[' + ', '.join(self._list(r) for r in rows) + ']'

    def float_text(self, value):
        return adgrad_number(float(value))[0]

    def call(self, name, texts):
        return f"{name}({', '.join(texts)})", ATOM

    def reduction(self, op, node, arguments, default):
        value = self.static(node.args[1])
        axis = self.number(value)
        if op in _NAMES:   # max(A, 0) is the elementwise maximum: max(A, axis=0) reduces
            axis = f'axis={axis}'
        texts = [arguments[0][0]] + ([] if value == default else [axis])
        return self.call(_NAMES.get(op, op), texts)

    def many(self, op, node, arguments):
        arrays = arguments[:-1] if op == 'concat' else arguments
        texts = [t for t, _ in arrays]
        if op == 'concat':
            texts.append(f'axis={self.static(node.args[-1])}')
        return self.call(op, texts)

    def op_index(self, i, node, arguments):
        text, precedence = arguments[0]
        text = text if precedence >= ATOM else f'({text})'
        return f'{text}[{_key_text(self.static(node.args[1]), self.number)}]', ATOM

    def op_eye(self, i, node, arguments):
        return self.construct('eye', [self.size(self.static(node.args[0]))]), ATOM

    def op_size(self, i, node, arguments):
        factors = _sizes(self.static(node.args[0]), self.size)
        if self.in_body and self.language == 'adgrad':   # n read in a loop: bound before
            return self.hoist('size_' + '_'.join(factors), '*'.join(factors)), ATOM
        return '*'.join(factors), (ATOM if len(factors) == 1 else 2)

    def op_broadcast_to(self, i, node, arguments):
        (text, precedence), sizes = arguments[0], _sizes(self.static(node.args[1]), self.size)
        if text in ('0', '1'):
            return self.construct('zeros' if text == '0' else 'ones', sizes), ATOM
        if precedence < 2:
            text = f'({text})'
        return f"{text}*{self.construct('ones', sizes)}", 2

    def op_reshape(self, i, node, arguments):
        shape = self.static(node.args[1])
        symbols = [n for n in shape if isinstance(n, str)]
        if len(symbols) > 1:
            raise AdgradError('--lang adgrad cannot reshape to two symbolic sizes yet; '
                              '--lang numpy can')
        sizes = ['-1' if isinstance(n, str) else str(n) for n in shape]
        return self.call('reshape', [arguments[0][0], '[' + ', '.join(sizes) + ']'])

    def op_unindex(self, i, node, arguments):
        """g placed at key in zeros of shape, as products with rows of the
        identity: g*eye(n)[k], eye(n)[1:3].T @ g, outer(eye(m)[i], g)."""
        key, shape = (self.static(a) for a in node.args[1:])
        raw, precedence = arguments[0]
        if self.language == 'adgrad' and len(shape) > 2 and len(key) == 1 \
                and isinstance(key[0], int) and sum(isinstance(n, str) for n in shape) <= 1:
            # X[k] of a stack: g's entries after row k's one-hot, in X's shape
            sizes = ['-1' if isinstance(n, str) else str(n) for n in shape]
            flat = self.call('reshape', [raw, '[-1]'])[0]
            row = f"{self.construct('eye', [self.size(shape[0])])}[{key[0]}]"
            return self.call('reshape', [self.call('outer', [row, flat])[0],
                                         '[' + ', '.join(sizes) + ']'])
        if self.language != 'adgrad' or len(shape) > 2:
            raise AdgradError(f'--lang {self.language} has no form yet for the gradient of '
                              'a subscript into a larger array; --lang numpy has')
        g = raw if precedence >= 3 else f'({raw})'        # as @'s right side, or a factor
        rows = []     # per axis: None (every entry), or (an index?, the rows of eye)
        for axis, n in enumerate(shape):
            k = key[axis] if axis < len(key) else slice(None)
            rows.append(None if k == slice(None) else (
                not isinstance(k, slice),
                f"{self.construct('eye', [self.size(n)])}[{_key_text((k,), self.number)}]"))
        if all(r is not None and r[0] for r in rows):       # one entry
            picked = [r[1] for r in rows]
            factor = raw if precedence >= 2 else g
            return f"{factor}*{picked[0] if len(picked) == 1 else self.call('outer', picked)[0]}", 2
        if len(rows) == 2 and any(r is not None and r[0] for r in rows):   # a row or a column
            k = 0 if rows[0] is not None and rows[0][0] else 1
            other = rows[1 - k]
            rest = raw if other is None else f'{other[1]}.T @ {g}'
            pair = [rows[k][1], rest] if k == 0 else [rest, rows[k][1]]
            return self.call('outer', pair)
        if rows[0] is None and (len(rows) == 1 or rows[1] is None):
            return raw, precedence
        left = (raw if precedence >= 2 else g) if rows[0] is None else f'{rows[0][1]}.T @ {g}'
        return (left if len(rows) == 1 or rows[1] is None else f'{left} @ {rows[1][1]}'), 2


class NumpySpeller(Speller):
    """NumPy's spellings: np.* calls, a shape as a tuple, None as None."""

    def float_text(self, value):
        return python_number(float(value))[0]

    def literal(self, value):
        return f'np.array({self._list(value.tolist())})'

    def shape_text(self, shape):
        sizes = _sizes(shape, self.size)
        return '(' + ', '.join(sizes) + (',)' if len(sizes) == 1 else ')')

    def reduction(self, op, node, arguments, default):
        return None     # the row's template, with its axis

    def __call__(self, i, node, arguments):
        if node.op == 'static':
            value = node.value
            if isinstance(value, tuple) and all(isinstance(n, (int, str)) for n in value) \
                    and value:
                return self.shape_text(value), ATOM
            if value is None or isinstance(value, int):
                return repr(value), ATOM
        return super().__call__(i, node, arguments)

    def many(self, op, node, arguments):
        arrays = arguments[:-1] if op == 'concat' else arguments
        joined = ', '.join(t for t, _ in arrays)
        if op == 'concat':
            return f'np.concatenate([{joined}], axis={self.static(node.args[-1])})', ATOM
        return f'np.stack([{joined}])', ATOM

    def op_eye(self, i, node, arguments):
        return self.call('np.eye', [self.size(self.static(node.args[0]))])

    def op_matmul(self, i, node, arguments):
        # P.T @ B as (B.T @ P).T: the same product, which BLAS runs faster with
        # the long shared axis leading in both (a loss over many rows)
        a, b = node.args
        tape = self.tape
        if tape.nodes[a].op != 'transpose' or len(tape.shape(a)) != 2 \
                or len(tape.shape(b)) != 2 or tape.nodes[b].op == 'transpose':
            return None
        transposed, right = arguments[0][0], arguments[1]
        if not transposed.endswith('.T'):
            return None     # bound to a name: used elsewhere as it is
        left = right[0] if right[1] >= ATOM else f'({right[0]})'
        return f'({left}.T @ {transposed[:-2]}).T', ATOM

    def op_tanh(self, i, node, arguments):
        # NumPy's, as grad's over arrays (tensors.algebra): C's per entry is for batches
        return self.call('np.tanh', [arguments[0][0]])

    def op_broadcast_to(self, i, node, arguments):
        shape = self.shape_text(self.static(node.args[1]))
        return self.call('np.broadcast_to', [arguments[0][0], shape])

    def op_reshape(self, i, node, arguments):
        shape = self.shape_text(self.static(node.args[1]))
        return self.call('np.reshape', [arguments[0][0], shape])

    def op_transpose(self, i, node, arguments):
        text, precedence = arguments[0]
        if len(self.tape.shape(i)) == 2:
            return (text if precedence >= ATOM else f'({text})') + '.T', ATOM
        return self.call('np.swapaxes', [text, '-1', '-2'])

    def op_unindex(self, i, node, arguments):
        key, shape = (self.static(a) for a in node.args[1:])
        return self.call('_unindex', [arguments[0][0], f'np.s_[{_key_text(key, str)}]',
                                      self.shape_text(shape)])


class LatexSpeller(Speller):
    """LaTeX: ⊙ for a product of two arrays, a subscript for an axis."""

    def float_text(self, value):
        return printers.latex_number(float(value))[0]

    def literal(self, value):
        rows = value.tolist() if value.ndim == 2 else [[v] for v in value.tolist()]
        body = r' \\ '.join(' & '.join(self.float_text(v) for v in row) for row in rows)
        return r'\begin{bmatrix} ' + body + r' \end{bmatrix}'

    def call(self, name, texts):
        return rf"\operatorname{{{name}}}\left({', '.join(texts)}\right)", ATOM

    def reduction(self, op, node, arguments, default):
        value = self.static(node.args[1])
        template = LATEX[op]
        if value == default or op == 'norm':
            text = printers._fill(template._replace(text=template.text.replace(', $1', '')),
                                  arguments[:1])
            return text.replace('_{$1}', '_{2}' if value == 2 else '_{1}'), template.precedence
        name = _NAMES.get(op, op)
        return (rf'\operatorname{{{name}}}_{{{value}}}\left({arguments[0][0]}\right)', ATOM)

    def op_mul(self, i, node, arguments):
        shapes = [self.tape.shape(a) for a in node.args]
        if all(shapes):
            texts = [t if p >= 2 else rf'\left({t}\right)' for t, p in arguments]
            return rf'{texts[0]} \odot {texts[1]}', 2
        return None

    def op_index(self, i, node, arguments):
        text, precedence = arguments[0]
        text = text if precedence >= ATOM else rf'\left({text}\right)'
        return rf'{text}_{{{_key_text(self.static(node.args[1]), self.number)}}}', ATOM

    def op_eye(self, i, node, arguments):
        return 'I', ATOM

    def op_broadcast_to(self, i, node, arguments):
        text, precedence = arguments[0]
        return (text if precedence >= 2 else rf'\left({text}\right)') + r' \mathbf{1}', 2

    def op_reshape(self, i, node, arguments):
        return arguments[0]


# ---- the programs ----

def _size_names(tape, reserved):
    """{size symbol: its name in the text}, claimed before anything else."""
    names, sizes = Names(reserved), {}
    for shape in tape.declared.values():
        for n in shape:
            if isinstance(n, str) and n not in sizes:
                sizes[n] = names.claim(n)
    return sizes


def _label(name, order):
    return f'd_{name}' if order == 1 else f'd{order}_{name}'


def adgrad_formula(derivative, graph):
    """A program in adgrad's language: the inputs declared with their shapes
    (and defaults), then the derivatives, `d_x = 2*A.T @ (A @ x - b)`."""
    tape = derivative.tape
    speller = Speller(tape, 'adgrad')
    labels = [_label(label, derivative.order) for label, _ in derivative.results]
    printed = lay_out(derivative, ADGRAD, adgrad_number, labels=labels, spell=speller,
                      reserved=lambda name: name in speller.hoisted, loop_labels=True)
    lines = [declaration(graph, tape, speller)]
    lines += [f'{name} = {text}' for name, text in speller.hoisted.items()]
    lines += statements(printed.bindings, ADGRAD_LOOPS)
    lines += [f'{name} = {text}' for _, name, text in printed.results if name is not None]
    if tape.loops and printed.results[-1][1] is None:
        lines.append(printed.results[-1][2])   # bound before a loop's names: the output
    return '\n'.join(lines) + '\n'


def declaration(graph, tape, speller):
    """`input A[m, n], x[n], w = 0.5`: the program's inputs, as it declares them."""
    parts = []
    for name in graph.inputs:
        shape = tape.declared[name]
        text = name + (speller.shape_text(shape) if shape else '')
        if name in graph.defaults:
            value = graph.defaults[name]
            text += ' = ' + (speller.literal(value) if getattr(value, 'ndim', 0)
                             else adgrad_number(float(value))[0])
        parts.append(text)
    return 'input ' + ', '.join(parts)


def numpy_formula(derivative, graph):
    """A Python module: f(A, x, ...) -> (value, {name: gradient}), each
    gradient in its input's shape, the sizes read from the arrays."""
    tape = derivative.tape
    table, helpers = printers.numpy_table()
    sizes = _size_names(tape, python_safe)
    speller = NumpySpeller(tape, 'numpy', size=lambda n: sizes.get(n, str(n)))
    names = Names(python_safe)
    for name in sizes.values():
        names.claim(name)
    labels = ['value'] + [_label(label, derivative.order) for label, _ in derivative.results[1:]]
    printed = lay_out(derivative, table, python_number, labels=labels, spell=speller,
                      variable=lambda n: f'{n}_' if python_safe(n) or n in sizes.values() else n,
                      reserved=lambda n: python_safe(n) or n in sizes.values(),
                      scan='{0}[int({1})]', loop_labels=True)
    used = printers._helpers_used(derivative, helpers)
    lines = ['import numpy as np', '']
    reached = printers._ops(derivative)   # (in loops' bodies too)
    if any(table[op].text.startswith('_arrays.') for op in reached if op in table):
        lines[1:1] = ['', "from autodiff_cli.core import arrays as _arrays  # forms NumPy lacks"]
    for op in used:
        lines += [helpers[op], '']
    parameters = ', '.join(printed.variables.values())
    what = ("the gradient {name: array}, each in its input's shape" if derivative.order == 1
            else "the Hessian's blocks {d2_x_y: array}, each of x's shape then y's")
    lines += ['', f'def f({parameters}):', f'    """The value and {what}."""']
    for original, name in printed.variables.items():
        lines.append(f'    {name} = np.asarray({name}, dtype=np.float64)')
    bound = set()
    for original, name in printed.variables.items():
        for axis, n in enumerate(tape.declared[original]):
            if isinstance(n, str) and n not in bound:
                bound.add(n)
                lines.append(f'    {sizes[n]} = {name}.shape[{axis}]')
    lines.append("    with np.errstate(all='ignore'):")
    lines += statements(printed.bindings, NUMPY_LOOPS, '        ')
    outputs = []
    for (label, ref), (_, name, text) in zip(derivative.results, printed.results):
        outputs.append((label, name or text, ref))
        if name is not None:
            lines.append(f'        {name} = {text}')
    (_, value, _), gradients = outputs[0], outputs[1:]
    from .array_formula import result_shape
    entries = []
    for label, text, ref in gradients:
        shape = result_shape(derivative, label)
        shape_text = speller.shape_text(shape) if shape else '()'
        key = label if derivative.order == 1 else _label(label, 2)   # never the gradient's name
        entries.append(f'{key!r}: np.broadcast_to({text}, {shape_text}).astype(np.float64)')
    lines.append(f"    return float({value}), {{{', '.join(entries)}}}")
    return '\n'.join(lines) + '\n'


def latex_formula(derivative, graph, function):
    """One display line per binding and per derivative, ∂z/∂x named after
    the program's output."""
    tape = derivative.tape
    speller = LatexSpeller(tape, 'latex', size=lambda n: latex_name(n) if isinstance(n, str)
                           else str(n))
    labels = [_label(label, derivative.order) for label, _ in derivative.results]
    printed = lay_out(derivative, LATEX, printers.latex_number, variable=latex_name,
                      labels=labels, display=printers._latex_binding, spell=speller)
    lines = [rf'\[ {name} = {text} \]' for name, text in printed.bindings]
    function = latex_name(function)
    for (label, _), (_, name, text) in zip(derivative.results, printed.results):
        by = [printed.variables.get(v, latex_name(v)) for v in derivative.wrt[label]]
        if derivative.order == 1:
            head = rf'\frac{{\partial {function}}}{{\partial {by[0]}}}'
        elif by[0] == by[-1]:
            head = rf'\frac{{\partial^{{2}} {function}}}{{\partial {by[0]}^{{2}}}}'
        else:
            head = rf'\frac{{\partial^{{2}} {function}}}{{\partial {by[0]} \, \partial {by[1]}}}'
        lines.append(rf'\[ {head} = {text} \]')
    return '\n'.join(lines) + '\n'


def array_derivative_text(graph, names, order=1, lang='adgrad'):
    """`adgrad diff` of an array program: its derivatives as formulas in `lang`."""
    from .array_formula import array_derivative, array_hessian_formula
    code = lang in ('numpy', 'c')
    if graph.loops and (lang == 'latex' or order != 1):
        raise AdgradError('--lang latex does not print array loops: --lang adgrad, numpy and c do'
                          if order == 1 else '--order 2 of an array program with loops is not '
                          'printed: adgrad hessian computes its Hessian')
    if order == 1:
        derivative = array_derivative(graph, names, with_value=code)
    elif order == 2:
        derivative = array_hessian_formula(graph, names, with_value=code)
    else:
        raise AdgradError('--order of an array program is 1 or 2 (of vectors and numbers); '
                          'higher orders take numbers only')
    if lang == 'adgrad':
        return adgrad_formula(derivative, graph)
    if lang == 'numpy':
        return numpy_formula(derivative, graph)
    if lang == 'latex':
        return latex_formula(derivative, graph, printers.output_name(graph))
    from .array_c import c_formula
    return c_formula(derivative, graph)
