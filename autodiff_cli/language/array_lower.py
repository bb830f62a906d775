"""Lowering of the language's arrays: literals, `@`, `.T`, subscripts, shaped
inputs, and the array functions, whose static arguments (an axis, a shape,
an index) are constants of the program, read as the text is.

A mixin of lower.Lowering: the parser calls these methods by rule alias too.
An array op's static argument becomes a 'static' node holding the plain
value; a constant literal folds into one 'const' node holding its array.
"""

from ..core.array_rules import names_a_size, shown
from ..core.graph import Graph

# Numbers in the array literals of one program, counted as they are read
# (lower.arguments counts a long list before its end): a file holding a
# literal of 10^7 numbers is refused at once; a large array comes from a file.
MAX_LITERAL = 2 ** 16


class Keyword:
    """An argument written NAME=value: its name, where it starts, and its value.
    (A plain class: a namedtuple is made by exec, which every start-up would pay for.)"""
    __slots__ = ('name', 'start', 'value')

    def __init__(self, name, start, value):
        self.name, self.start, self.value = name, start, value


# Array functions: (op, how many array arguments, static parameters as
# (name, default) in order; a default of REQUIRED must be given).
REQUIRED = object()
MAX_AXES = 3   # as core.tensors.MAX_AXES, which is not imported here: NumPy's path only
MANY = -1
ARRAY_FUNCTIONS = {
    'sum': ('sum', 1, (('axis', None),)),
    'mean': ('mean', 1, (('axis', None),)),
    'prod': ('prod', 1, (('axis', None),)),
    'logsumexp': ('logsumexp', 1, (('axis', None),)),
    'softmax': ('softmax', 1, (('axis', -1),)),
    'norm': ('norm', 1, (('order', 2),)),
    'trace': ('trace', 1, ()),
    'det': ('det', 1, ()),
    'logdet': ('logdet', 1, ()),
    'inv': ('inv', 1, ()),
    'diag': ('diag', 1, ()),
    'transpose': ('transpose', 1, ()),
    'solve': ('solve', 2, ()),
    'outer': ('outer', 2, ()),
    'dot': ('matmul', 2, ()),
    'matmul': ('matmul', 2, ()),
    'reshape': ('reshape', 1, (('shape', REQUIRED),)),
    'concat': ('concat', MANY, (('axis', 0),)),
    'stack': ('stack', MANY, ()),
    'where': ('if', 3, ()),   # torch.where: both sides computed, unlike if()
}
# max(x) and min(x): a reduction; max(a, b), as before, the larger of the two.
REDUCING = {'max': 'amax', 'min': 'amin'}
CONSTRUCTORS = ('eye', 'zeros', 'ones')
ARRAY_NAMES = (*ARRAY_FUNCTIONS, *CONSTRUCTORS)


class ArrayLowering:
    """The array rules of the grammar, and the calls of array functions."""

    def has_arrays(self):
        """Note that the program has arrays (graph.shapes is then a dict)."""
        if self.shapes is None:
            self.shapes = {}

    # ---- constants read from the program's text ----

    def node_at(self, node_id):
        """The node an id names, on the tape (id >= 0) or in the body being read."""
        return self.nodes[node_id] if node_id >= 0 else self.body.nodes[~node_id]

    def static_value(self, value, what, example='0 or -1'):
        """The value of a constant expression `value` (start, end, id), and its
        nodes dropped where they are the target's last: an axis, a size, an
        index. An AdgradError where the expression depends on a variable."""
        start, _, node_id = value
        needed, stack = set(), [node_id]
        while stack:
            j = stack.pop()
            if j in needed:
                continue
            node = self.node_at(j)
            if node.op in ('input', 'param') or node.op == 'static' and names_a_size(node.value):
                raise self.error(f'{what} must be a constant, such as {example}', start)
            needed.add(j)
            stack.extend(node.args)
        order = sorted(needed, key=lambda j: (j < 0, ~j if j < 0 else j))
        place = {j: k for k, j in enumerate(order)}
        nodes = [self.node_at(j)._replace(args=tuple(place[a] for a in self.node_at(j).args))
                 for j in order]
        from ..core import tensors
        from ..core.passes import forward
        graph = Graph(nodes, place[node_id], {}, {}, self.source)
        tensors.shapes(graph, {})   # 2 @ 3 or [1][0][0] in a constant: refused, with a caret
        k = tensors.algebra()
        with k.np.errstate(all='ignore'):
            result = forward(graph, {}, k)[place[node_id]]
        self.drop_tail({j ^ self.flip for j in needed if (j < 0) == (self.flip == -1)})
        return result

    def is_constant(self, node_id):
        """Whether the expression at node_id uses no variable or parameter."""
        seen, stack = set(), [node_id]
        while stack:
            j = stack.pop()
            node = self.node_at(j)
            if node.op in ('input', 'param') or node.op == 'static' and names_a_size(node.value):
                return False
            if j not in seen:
                seen.add(j)
                stack.extend(node.args)
        return True

    def drop_tail(self, local):
        """Remove the target's last nodes if exactly the set `local` (target positions) ends it."""
        target = self.target
        if local and max(local) == len(target) - 1 and len(local) == len(target) - min(local) \
                and not any(b.node >= min(local) for b in self.current_branches()):
            del target[min(local):]

    def current_branches(self):
        return self.branches if self.body is None else self.body.branches

    def integer(self, value, what, example='0 or -1'):
        number = self.static_value(value, what, example)
        import numpy as np
        if np.ndim(number) != 0 or not np.isfinite(number) or number != int(number):
            shown = float(number) if np.ndim(number) == 0 else number.tolist()
            raise self.error(f'{what} must be a whole number, not {shown!r}', value[0])
        return int(number)

    # ---- literals, operators, subscripts ----

    def array(self, stack, size):
        self.has_arrays()
        (_, start, _, _), elements, (_, _, end, _) = stack[-3:]
        del stack[-2:]
        for element in elements:
            if type(element) is Keyword:
                raise self.error('an array literal holds values, not NAME=value', element.start)
        ids = [node_id for _, _, node_id in elements]
        if all(map(self.is_constant, ids)):
            import numpy as np
            values = [None] * len(ids)
            for k in range(len(ids) - 1, -1, -1):   # the last one's nodes are the tape's last
                node = self.node_at(ids[k])
                values[k] = node.value if node.op == 'const' else \
                    self.static_value(elements[k], 'an element')
            shapes = [np.shape(v) for v in values]
            for k, shape in enumerate(shapes):
                if shape != shapes[0]:
                    raise self.error(f'a ragged array literal: element {k + 1} has shape '
                                     f'{shown(shape)}, element 1 {shown(shapes[0])}',
                                     elements[k][0])
            if len(shapes[0]) >= MAX_AXES:   # checked as it nests: [[[[…]]]] stops at once
                raise self.error(f'an array literal of {len(shapes[0]) + 1} axes; adgrad takes '
                                 f'at most {MAX_AXES}', start)
            self.literal_entries += len(ids) if shapes[0] == () else 0
            if self.literal_entries > MAX_LITERAL:
                self.literal_too_large(elements[-1])
            self.drop_tail({j ^ self.flip for j in ids})
            folded = np.array(values, dtype=np.float64)
            stack[-1] = (start, end, self.emit('const', (), (start, end), value=folded))
            return
        stack[-1] = (start, end, self.emit('stack', tuple(ids), (start, end)))

    def literal_too_large(self, element):
        raise self.error(f'the array literals hold more than {MAX_LITERAL} numbers; bind a '
                         'large array from a file instead, such as W=@w.npy', element[0])

    def index(self, stack, size):
        self.has_arrays()
        (start, _, a), _, subscripts, (_, _, end, _) = stack[-4:]
        del stack[-3:]
        stack[-1] = (start, end, self.subscripted(a, subscripts, (start, end)))

    def name_index(self, stack, size):
        """`x[0]`, `W[i]` of a name: the name is looked up after a constant
        key's nodes are dropped, so that the tape is as `(x)[0]` makes it."""
        self.has_arrays()
        (_, start, name_end, name), _, subscripts, (_, _, end, _) = stack[-4:]
        del stack[-3:]
        if self.loops and not all(type(s) is _Slice or self.is_constant(s[2])
                                  for s in subscripts):
            a = self.look_up(name, start, name_end)   # W[i]: a slice per iteration
            stack[-1] = (start, end, self.subscripted(a, subscripts, (start, end)))
            return
        key = self.key(subscripts)
        a = self.look_up(name, start, name_end)
        static = self.emit('static', (), (start, end), value=key)
        stack[-1] = (start, end, self.emit('index', (a, static), (start, end)))

    def subscripted(self, a, subscripts, span):
        """The node of a[subscripts]: a loop's slice W[i], or an index node."""
        if self.loops:
            scanned = self.loop_slice(a, subscripts, span)
            if scanned is not None:
                return scanned
        static = self.emit('static', (), span, value=self.key(subscripts))
        return self.emit('index', (a, static), span)

    def key(self, subscripts):
        """The constant key of `subscripts`, their nodes dropped from the tape."""
        key = [None] * len(subscripts)
        for k in range(len(subscripts) - 1, -1, -1):   # the last one's nodes are the tape's last
            item = subscripts[k]
            if type(item) is _Slice:
                bounds = [None if v is None else self.integer(v, 'a slice bound')
                          for v in reversed(item.bounds)][::-1]
                if bounds[2] == 0:
                    raise self.error('a slice step cannot be 0', item.start)
                key[k] = slice(*bounds)
            else:
                key[k] = self.integer(item, 'an index')
        return tuple(key)

    def subscripts(self, stack, size):
        self.arguments(stack, size)   # a list, as call arguments are

    def slice(self, stack, size):
        children = stack[-size:]
        del stack[-size:]
        bounds, current, start = [], None, None
        for child in children:
            if len(child) == 4:   # a ':' token
                start = child[1] if start is None else start
                bounds.append(current)
                current = None
            else:
                current = child
                start = child[0] if start is None else start
        bounds.append(current)
        stack.append(_Slice(start, tuple(bounds + [None] * (3 - len(bounds)))))

    def attribute(self, stack, size):
        self.has_arrays()
        (start, _, a), _, (_, name_start, end, name) = stack[-3:]
        del stack[-2:]
        if name != 'T':
            raise self.error(f"unknown attribute '.{name}': arrays have .T, the transpose",
                             name_start)
        stack[-1] = (start, end, self.emit('transpose', (a,), (start, end)))

    def keyword(self, stack, size):
        (_, start, _, name), _, value = stack[-3:]
        del stack[-2:]
        stack[-1] = Keyword(name, start, value)
        self.keywords += 1   # the calls' fast paths are closed until its call takes it

    # ---- sizes read as numbers: n of `input x[n]`, in x / n, ones(n), eye(n) ----

    def is_size(self, name):
        return self.shapes is not None and any(name in shape for shape in self.shapes.values())

    def size_value(self, name, span):
        """The node of a declared size read as a number (the arrays bind it
        when they arrive), or None for a name no declaration gives a size."""
        if not self.is_size(name):
            return None
        if self.loops:   # a body's shapes are checked before any array binds it
            raise self.error(f"a size read as a number goes outside loops: bind it before "
                             f'the loop, as in {name}_ = {name}', span[0])
        return self.emit('size', (self.emit('static', (), span, value=(name,)),), span)

    def not_a_size(self, name, start, what):
        if self.is_size(name):
            raise self.error(f"'{name}' is a size of the declared arrays; choose another name "
                             f'for the {what}', start)

    def size_name(self, value):
        """The name of a size read as a number (`n`), its nodes dropped; None
        for any other expression."""
        node = self.node_at(value[2])
        if node.op != 'size' or len(self.node_at(node.args[0]).value) != 1:
            return None
        name = self.node_at(node.args[0]).value[0]
        self.drop_tail({value[2] ^ self.flip, node.args[0] ^ self.flip})
        return name

    # ---- shaped inputs: input W[2, 3], x[n] = [1, 2] ----

    def sizes(self, stack, size):
        kind, start, _, text = stack[-1]
        if kind == 'NUMBER' and (not text.isdigit() or int(text) == 0):
            raise self.error(f'a size must be a positive whole number, not {text}', start)
        item = int(text) if kind == 'NUMBER' else text
        if size == 1:
            stack[-1] = [item]
        else:
            del stack[-2:]
            stack[-1].append(item)

    def shaped_default(self, stack, size):
        self.has_arrays()
        children = stack[-size:]
        del stack[-size:]
        (_, start, end, name), _, shape, _ = children[:4]
        for n in shape:
            if isinstance(n, str) and (n in self.names or n in self.input_ids):
                raise self.error(f"'{n}' is already a variable; a size needs a name of its own",
                                 start)
        if len(shape) > 3:
            raise self.error(f"'{name}' has {len(shape)} axes; adgrad takes at most 3", start)
        self.shapes[name] = shape = tuple(shape)
        if size == 6:
            stack.extend([children[0], children[4], children[5]])
            self.default(stack, 3)
            return
        self.check_name(name, start, 'input')
        self.declare(name, start, end, None)
        stack.append(None)

    # ---- calls of array functions ----

    def array_call(self, name, arguments, span):
        """The node of a call of an array function, max(x) or a constructor."""
        self.has_arrays()
        start = span[0]
        positional = [a for a in arguments if type(a) is not Keyword]
        keywords = [a for a in arguments if type(a) is Keyword]
        if keywords and arguments.index(keywords[0]) < len(positional):
            raise self.error('a NAME=value argument comes after the others', keywords[0].start)
        if name in CONSTRUCTORS:
            if keywords:
                raise self.error(f'{name}() takes sizes, not NAME=value', keywords[0].start)
            return self.constructor(name, positional, span)
        if name in REDUCING:
            op, count, params = REDUCING[name], 1, (('axis', None),)
        else:
            op, count, params = ARRAY_FUNCTIONS[name]
        if count == MANY:
            arrays, rest = positional, []
            if not arrays:
                raise self.error(f'{name}() takes at least one array', start)
        else:
            arrays, rest = positional[:count], positional[count:]
            if len(arrays) < count:
                raise self.error(f'{name}() takes {count} array argument'
                                 f"{'s' if count > 1 else ''}, got {len(arrays)}", start)
        names = [p for p, _ in params]
        if len(rest) > len(params):
            raise self.error(f'{name}() takes {count + len(params)} arguments at most, '
                             f'got {len(positional)}', rest[len(params)][0])
        given = dict(zip(names, rest))
        for keyword in keywords:
            if keyword.name not in names:
                known = ', '.join(names) or 'none'
                raise self.error(f"{name}() has no parameter '{keyword.name}' (it takes: {known})",
                                 keyword.start)
            if keyword.name in given:
                raise self.error(f"{name}() is given '{keyword.name}' twice", keyword.start)
            given[keyword.name] = keyword.value
        statics = []
        for parameter, default in reversed(params):   # the last one's nodes are the tape's last
            value = given.get(parameter)
            if value is None:
                if default is REQUIRED:
                    raise self.error(f'{name}() needs its {parameter}', start)
                statics.append(default)
            elif parameter == 'shape':
                statics.append(self.shape_value(value))
            else:
                statics.append(self.integer(value, f'the {parameter} of {name}()'))
        ids = [node_id for _, _, node_id in arrays]
        ids += [self.emit('static', (), span, value=v) for v in reversed(statics)]
        return self.emit(op, tuple(ids), span)

    def shape_value(self, value):
        import numpy as np
        shape = np.atleast_1d(self.static_value(value, 'a shape'))
        if shape.ndim != 1 or not np.isfinite(shape).all() or not all(n == int(n) for n in shape):
            raise self.error('a shape is a list of whole numbers, such as [2, 3]', value[0])
        return tuple(int(n) for n in shape)

    def constructor(self, name, positional, span):
        import numpy as np
        sizes = [self.size_name(v) or self.integer(v, f'a size of {name}()')
                 for v in reversed(positional)][::-1]
        if any(isinstance(n, str) for n in sizes):
            return self.symbolic_constructor(name, sizes, span)
        if not 1 <= len(sizes) <= (2 if name == 'eye' else 3) or any(n <= 0 for n in sizes):
            raise self.error(f'{name}() takes {"1 or 2" if name == "eye" else "1 to 3"} '
                             'positive sizes', span[0])
        from ..core.tensors import MAX_ENTRIES
        entries = sizes[0] * (sizes[0] if name == 'eye' and len(sizes) == 1 else 1)
        for n in sizes[1:]:
            entries *= n
        if entries > MAX_ENTRIES:
            raise self.error(f'{name}({", ".join(map(str, sizes))}) would hold {entries} entries; '
                             f'adgrad takes at most {MAX_ENTRIES} in one array', span[0])
        value = np.eye(*sizes) if name == 'eye' else getattr(np, name)(tuple(sizes))
        return self.emit('const', (), span, value=value)


    def symbolic_constructor(self, name, sizes, span):
        """ones(n, 2), zeros(n), eye(n) of a declared size n: a broadcast of
        1 or 0, the identity, whose sizes the arrays bind when they arrive."""
        if name == 'eye':
            if len(sizes) == 2 and sizes[0] != sizes[1] or not isinstance(sizes[0], str):
                raise self.error('eye() of a size name takes that one size, as in eye(n)',
                                 span[0])
            return self.emit('eye', (self.emit('static', (), span, value=sizes[0]),), span)
        if len(sizes) > 3 or any(isinstance(n, int) and n <= 0 for n in sizes):
            raise self.error(f'{name}() takes 1 to 3 positive sizes', span[0])
        one = self.emit('const', (), span, value=float(name == 'ones'))
        return self.emit('broadcast_to', (one, self.emit('static', (), span, value=tuple(sizes))),
                         span)


class _Slice:
    """A subscript start:stop:step, where it starts, and its three bounds (None if left out)."""
    __slots__ = ('start', 'bounds')

    def __init__(self, start, bounds):
        self.start, self.bounds = start, bounds
