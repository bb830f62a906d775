"""A formula over arrays (array_formula.py) as C99: loops over row-major buffers.

The sizes are `int` parameters, each array a `const double *` in row-major
order, and the value and each derivative are written through `double *`
parameters in their input's shape. Elementwise nodes of one shape fuse into
one loop whose body is the scalar C table's templates (printers.C); every
other array op is a loop written here, or a call of a small static helper
from LOOPS. Text comes only from the tape, as in printers.py.
"""

import re

from ..core.graph import CARRY, FREE, SCAN
from ..core.primitives import ATOM
from ..errors import AdgradError
from . import printers
from .array_formula import declared_shapes, result_shape
from .printers import C, C_HELPERS, Names, c_number, c_safe
from .simplify import Ref

# ---- the helpers: one loop each over flat buffers; an axis of reduction is
# the middle of (outer, len, inner), so one helper serves every axis ----

_REDUCE = '''static void ad_{name}(long outer, long len, long inner, const double *a, double *out)
{{
    for (long o = 0; o < outer; o++)
        for (long i = 0; i < inner; i++) {{
            const double *p = a + o*len*inner + i;
{body}
            out[o*inner + i] = s;
        }}
}}'''
# nan wins, as in NumPy's max: once s is nan, no comparison replaces it
_TOP = '''            double top = p[0];
            for (long l = 1; l < len; l++)
                if (p[l*inner] > top || p[l*inner] != p[l*inner])
                    top = p[l*inner];'''

LOOPS = {
    'matmul': '''static void ad_matmul(long m, long k, long n, const double *a, const double *b,
                      double *out)
{
    for (long i = 0; i < m; i++) {
        for (long j = 0; j < n; j++)
            out[i*n + j] = 0.0;
        for (long l = 0; l < k; l++)
            for (long j = 0; j < n; j++)
                out[i*n + j] += a[i*k + l] * b[l*n + j];
    }
}''',
    'transpose': '''static void ad_transpose(long m, long n, const double *a, double *out)
{
    for (long i = 0; i < m; i++)
        for (long j = 0; j < n; j++)
            out[j*m + i] = a[i*n + j];
}''',
    'outer': '''static void ad_outer(long m, long n, const double *a, const double *b, double *out)
{
    for (long i = 0; i < m; i++)
        for (long j = 0; j < n; j++)
            out[i*n + j] = a[i] * b[j];
}''',
    'sum': _REDUCE.format(name='sum', body='''            double s = 0.0;
            for (long l = 0; l < len; l++)
                s += p[l*inner];'''),
    'mean': _REDUCE.format(name='mean', body='''            double s = 0.0;
            for (long l = 0; l < len; l++)
                s += p[l*inner];
            s /= (double)len;'''),
    'prod': _REDUCE.format(name='prod', body='''            double s = 1.0;
            for (long l = 0; l < len; l++)
                s *= p[l*inner];'''),
    'amax': _REDUCE.format(name='amax', body=_TOP + '\n            const double s = top;'),
    'amin': _REDUCE.format(name='amin', body=_TOP.replace('> top', '< top')
                           + '\n            const double s = top;'),
    # torch's: the largest entry out first, taken as 0 where it is infinite
    'logsumexp': _REDUCE.format(name='logsumexp', body=_TOP + '''
            if (isinf(top))
                top = 0.0;
            double s = 0.0;
            for (long l = 0; l < len; l++)
                s += exp(p[l*inner] - top);
            s = log(s) + top;'''),
    'softmax': '''static void ad_softmax(long outer, long len, long inner, const double *a, double *out)
{
    for (long o = 0; o < outer; o++)
        for (long i = 0; i < inner; i++) {
            const double *p = a + o*len*inner + i;
            double *q = out + o*len*inner + i;
''' + _TOP + '''
            double s = 0.0;
            for (long l = 0; l < len; l++) {
                q[l*inner] = exp(p[l*inner] - top);
                s += q[l*inner];
            }
            for (long l = 0; l < len; l++)
                q[l*inner] /= s;
        }
}''',
    'others_product': '''static void ad_others_product(long outer, long len, long inner, const double *a,
                              double *out)
{
    for (long o = 0; o < outer; o++)
        for (long i = 0; i < inner; i++)
            for (long l = 0; l < len; l++) {
                double s = 1.0;
                for (long r = 0; r < len; r++)
                    if (r != l)
                        s *= a[(o*len + r)*inner + i];
                out[(o*len + l)*inner + i] = s;
            }
}''',
    'norm': '''static void ad_norm(long n, int order, const double *a, double *out)
{
    double s = 0.0;
    for (long i = 0; i < n; i++)
        s += order == 1 ? fabs(a[i]) : a[i] * a[i];
    *out = order == 1 ? s : sqrt(s);
}''',
    'trace': '''static void ad_trace(long m, long n, const double *a, double *out)
{
    double s = 0.0;
    for (long i = 0; i < m && i < n; i++)
        s += a[i*n + i];
    *out = s;
}''',
    'diagflat': '''static void ad_diagflat(long n, const double *a, double *out)
{
    for (long i = 0; i < n; i++)
        for (long j = 0; j < n; j++)
            out[i*n + j] = i == j ? a[i] : 0.0;
}''',
    'diagonal': '''static void ad_diagonal(long m, long n, const double *a, double *out)
{
    for (long i = 0; i < m && i < n; i++)
        out[i] = a[i*n + i];
}''',
    'place': '''static void ad_place(long outer, long len, long inner, long offset, long total,
                     const double *a, double *out)
{
    for (long o = 0; o < outer; o++)
        for (long l = 0; l < len; l++)
            for (long i = 0; i < inner; i++)
                out[(o*total + offset + l)*inner + i] = a[(o*len + l)*inner + i];
}''',
    # LAPACK's getrf, unblocked: the first largest pivot of each column, rows
    # swapped in b (n x k) too, which is then solved in place; the
    # permutation's sign is returned, and a zero pivot left for det to meet.
    'lu': '''static double ad_lu(long n, long k, double *lu, double *b)
{
    double sign = 1.0;
    for (long c = 0; c < n; c++) {
        long p = c;
        for (long r = c + 1; r < n; r++)
            if (fabs(lu[r*n + c]) > fabs(lu[p*n + c]))
                p = r;
        if (p != c) {
            sign = -sign;
            for (long j = 0; j < n; j++) {
                const double t = lu[c*n + j];
                lu[c*n + j] = lu[p*n + j];
                lu[p*n + j] = t;
            }
            for (long j = 0; j < k; j++) {
                const double t = b[c*k + j];
                b[c*k + j] = b[p*k + j];
                b[p*k + j] = t;
            }
        }
        if (lu[c*n + c] == 0.0)
            continue;
        for (long r = c + 1; r < n; r++) {
            const double q = lu[r*n + c] / lu[c*n + c];
            lu[r*n + c] = q;
            for (long j = c + 1; j < n; j++)
                lu[r*n + j] -= q * lu[c*n + j];
            for (long j = 0; j < k; j++)
                b[r*k + j] -= q * b[c*k + j];
        }
    }
    for (long c = n - 1; c >= 0; c--)
        for (long j = 0; j < k; j++) {
            double s = b[c*k + j];
            for (long l = c + 1; l < n; l++)
                s -= lu[c*n + l] * b[l*k + j];
            b[c*k + j] = s / lu[c*n + c];
        }
    return sign;
}''',
    'det': '''static void ad_det(long n, const double *a, double *lu, double *out)
{
    for (long i = 0; i < n*n; i++)
        lu[i] = a[i];
    double d = ad_lu(n, 0, lu, NULL);
    for (long i = 0; i < n; i++)
        d *= lu[i*n + i];
    *out = d;
}''',
    # torch.logdet: log|det| where det >= 0, nan where it is negative
    'logdet': '''static void ad_logdet(long n, const double *a, double *lu, double *out)
{
    for (long i = 0; i < n*n; i++)
        lu[i] = a[i];
    double sign = ad_lu(n, 0, lu, NULL), s = 0.0;
    for (long i = 0; i < n; i++) {
        const double u = lu[i*n + i];
        sign *= u > 0 ? 1.0 : (u < 0 ? -1.0 : 0.0);
        s += log(fabs(u));
    }
    *out = sign < 0 ? NAN : s;
}''',
    'solve': '''static void ad_solve(long n, long k, const double *a, const double *b, double *lu,
                     double *out)
{
    for (long i = 0; i < n*n; i++)
        lu[i] = a[i];
    for (long i = 0; i < n*k; i++)
        out[i] = b ? b[i] : (i / k == i % k ? 1.0 : 0.0);
    ad_lu(n, k, lu, out);
}''',
}
# A helper that calls another needs it first.
_NEEDS = {'det': ('lu',), 'logdet': ('lu',), 'solve': ('lu',)}
_REDUCTIONS = ('sum', 'mean', 'prod', 'amax', 'amin', 'logsumexp', 'softmax', 'others_product')
ELEMENTWISE = frozenset(C) | {'broadcast_to'}


_MATRIX = re.compile(r'[A-Z][0-9]*(_[0-9]*)?')   # (X_, X_1: the names a second X takes)


def _reserved(name):
    # C's words, and its macros' upper case; but a matrix's A or W1, which
    # neither math.h nor stdlib.h defines, keeps its name
    return name == 'value' or c_safe(name) and not _MATRIX.fullmatch(name)


def _product(factors):
    factors = [f for f in factors if f != '1']
    return '*'.join(factors) or '1'


def _parenthesized(text):
    return text if text.replace('_', '').isalnum() else f'({text})'


class CArrays:
    """One derivative's C text: which nodes fuse into their user's loop,
    which get a buffer of the workspace, and each one's statements."""

    def __init__(self, derivative, declared):
        self.derivative, self.tape = derivative, derivative.tape
        self.declared = declared       # input name -> its shape
        self.lines, self.helpers, self.buffers = [], set(), []
        self.names = Names(_reserved)
        self.sizes = {}
        for shape in declared.values():
            for n in shape:
                if isinstance(n, str) and n not in self.sizes:
                    self.sizes[n] = self.names.claim(n)
        self.variables = {name: self.names.claim(f'{name}_' if _reserved(name) else name)
                          for name in self.tape.inputs}
        self.loop = [self.names.claim(f'i{k}') for k in range(3)]
        self.work = self.names.claim('work')
        self.text = {}      # node -> (C expression, precedence): a scalar, or a fused entry
        self.storage = {}   # node -> the name of its buffer (a pointer)

    # ---- sizes, shapes, indices ----

    def size(self, n):
        return self.sizes[n] if isinstance(n, str) else str(n)

    def count(self, shape):
        """The number of entries of `shape`, its numbers multiplied out."""
        number, symbols = 1, []
        for n in shape:
            if isinstance(n, int):
                number *= n
            else:
                symbols.append(self.sizes[n])
        return _product(([str(number)] if number != 1 else []) + symbols)

    def shape(self, i):
        return self.tape.shape(Ref(i))

    def flat(self, coordinates, shape):
        """The row-major offset of `coordinates` (C texts) in an array of `shape`."""
        terms = []
        for k, c in enumerate(coordinates):
            if c == '0':
                continue
            stride = self.count(shape[k + 1:])
            terms.append(c if stride == '1' else f'{_parenthesized(c)}*{stride}')
        return ' + '.join(terms) or '0'

    def at(self, shape, loop):
        """The offset, in an array of `shape`, of the entry that the loop over
        `loop` reads there under broadcasting (a size 1 is read at 0)."""
        offset = len(loop) - len(shape)
        return self.flat(['0' if n == 1 else self.loop[offset + k] for k, n in enumerate(shape)],
                         shape)

    def loops(self, shape, body, indent=1):
        """Nested loops over `shape`, around the statement `body`."""
        lines = []
        for k, n in enumerate(shape):
            v = self.loop[k]
            lines.append('    ' * (indent + k) + f'for (long {v} = 0; {v} < {self.size(n)}; {v}++)')
        lines.append('    ' * (indent + len(shape)) + body)
        return lines

    def reduction(self, shape, axis):
        """(outer, len, inner) of a reduction of `shape` along `axis` (None: all)."""
        if axis is None:
            return '1', self.count(shape), '1'
        axis %= len(shape)
        return self.count(shape[:axis]), self.size(shape[axis]), self.count(shape[axis + 1:])

    # ---- what each node is in the text ----

    def static(self, i):
        return self.tape.nodes[i].value

    def read(self, a, loop):
        """Node a's entry within a loop over `loop`, as (text, precedence)."""
        a = self.alias.get(a, a)
        if a in self.text:
            return self.text[a]
        return f'{self.storage[a]}[{self.at(self.shape(a), loop)}]', ATOM

    def pointer(self, a):
        """A pointer to node a's entries, for a helper: a scalar is given a name."""
        if a in self.storage:
            return self.storage[a]
        text, _ = self.text[a]
        if not text.isidentifier():
            name = self.names.fresh('t')
            self.lines.append(f'    const double {name} = {text};')
            self.text[a] = (name, ATOM)
            text = name
        return '&' + text

    def buffer(self, i, name=None):
        """A buffer of the workspace for node i, named after its binding."""
        if name is None:
            wanted = self.tape.names.get(i)
            name = self.names.claim(wanted) if wanted else self.names.fresh('t')
            self.buffers.append((name, self.count(self.shape(i))))
        self.storage[i] = name
        return name

    def scalar_out(self, i):
        """A scalar node computed by a helper: a variable it writes through."""
        wanted = self.tape.names.get(i)
        name = self.names.claim(wanted) if wanted else self.names.fresh('t')
        self.lines.append(f'    double {name};')
        self.text[i] = (name, ATOM)
        return '&' + name

    def target(self, i, name):
        """Where node i's entries go: its output parameter, a new buffer, or
        (a scalar) a new variable."""
        if not self.shape(i):
            return self.scalar_out(i)
        return self.buffer(i, name)

    # ---- the walk ----

    def emit(self):
        """The function's statements, node by node in tape order."""
        order = _reached(self.tape.nodes, [r for _, r in self.derivative.results
                                           if type(r) is Ref])
        self.reached = set(order)
        self.plan(order)
        self.walk(order)
        return self.finish()

    def walk(self, order):
        """The statements of the nodes `order` of the tape being written."""
        nodes = self.tape.nodes
        for i in order:
            node = nodes[i]
            op = node.op
            if op in ('static', 'custom', 'part') or i in self.text or i in self.storage:
                continue      # (a part, and a loop body's inputs, are given by their loop)
            if op == 'loop':
                self.op_loop(i, [self.alias.get(a, a) for a in node.args])
            elif op == 'input':
                name = self.variables[node.name]
                if self.shape(i):
                    self.storage[i] = name
                else:
                    self.text[i] = (name, ATOM)
            elif op == 'const':
                self.constant(i, node.value)
            elif op == 'size':
                sizes = self.count(self.static(node.args[0]))
                self.text[i] = (f'(double){_parenthesized(sizes)}', ATOM)
            elif self.is_elementwise(i):
                text = self.entry(i, op, [self.alias.get(a, a) for a in node.args])
                if self.fuses(i):
                    self.text[i] = text
                else:
                    self.elementwise(i, text, self.outputs.get(i))
            else:
                method = getattr(self, 'op_' + op, None)
                if method is None:
                    raise AdgradError(f"--lang c has no loop for '{op}' yet; --lang numpy has")
                method(i, [self.alias.get(a, a) for a in node.args], self.outputs.get(i))

    def plan(self, order):
        """Each node's uses and its last user, and the results that can be
        written straight into their output parameters."""
        nodes = self.tape.nodes
        self.count_uses(order)
        self.results = {}
        for label, ref in self.derivative.results:
            if type(ref) is Ref:
                ref = self.alias.get(ref, ref)
                self.results[ref] = self.results.get(ref, 0) + 1
        self.outputs = {}
        for (label, ref), name in zip(self.derivative.results, self.out_names):
            if type(ref) is Ref and self.results.get(ref) == 1 and not self.uses.get(ref) \
                    and self.shape(ref) and nodes[ref].op not in ('input', 'const', 'part') \
                    and not self.aliasing(ref):
                self.outputs[ref] = name

    def is_elementwise(self, i):
        op = self.tape.nodes[i].op
        return op in ELEMENTWISE or self.fused_reshape(i, op)

    def fuses(self, i):
        """Whether node i is written inside its one user's loop, not stored."""
        user = self.user.get(i)
        return self.uses.get(i) == 1 and i not in self.results and user is not None \
            and self.is_elementwise(user) and self.shape(user) == self.shape(i)

    def aliasing(self, i):
        """Whether node i is its argument's buffer under another shape."""
        op = self.tape.nodes[i].op
        if op == 'reshape':
            return not self.fused_reshape(i, op)
        return op == 'transpose' and not self.transpose_is_a_copy(i)

    def fused_reshape(self, i, op):
        # one entry: a reshape reads as a broadcast does
        return op == 'reshape' and self.count(self.shape(i)) == '1'

    def transpose_is_a_copy(self, i):
        shape = self.shape(i)
        return len(shape) == 2 and 1 not in shape

    def constant(self, i, value):
        if not getattr(value, 'ndim', 0):
            self.text[i] = c_number(float(value))
            return
        name = self.names.fresh('c')
        entries = ', '.join(c_number(float(v))[0] for v in value.ravel().tolist())
        self.lines.append(f'    const double {name}[{value.size}] = {{{entries}}};')
        self.storage[i] = name

    def entry(self, i, op, args):
        """Node i's entry in a loop over its own shape: the C table's template."""
        loop = self.shape(i)
        nodes = self.tape.nodes
        if op in ('broadcast_to', 'reshape'):
            return self.read(args[0], loop)
        texts = [self.read(a, loop) for a in args]
        if op == 'mul' and all(nodes[a].op in printers._COMPARISONS for a in args):
            op = 'and'                      # (a == 0)*(b >= 0) reads as a == 0 and b >= 0
        if op in C_HELPERS:
            self.helpers.add(op)
        if op == 'neg' and texts[0][1] == 2 and not texts[0][0].startswith('-'):
            return '-' + texts[0][0], 2
        template = C[op]
        return printers._fill(template, texts), template.precedence

    def elementwise(self, i, text, output):
        """A loop over node i's shape that writes its entries."""
        shape = self.shape(i)
        if not shape:
            wanted = self.tape.names.get(i)
            name = self.names.claim(wanted) if wanted else self.names.fresh('t')
            self.lines.append(f'    const double {name} = {text[0]};')
            self.text[i] = (name, ATOM)
            return
        name = self.buffer(i, output)
        self.lines += self.loops(shape, f'{name}[{self.at(shape, shape)}] = {text[0]};')

    def finish(self):
        """The results written through their parameters."""
        for (label, ref), name in zip(self.derivative.results, self.out_names):
            shape = self.result_shape(label)
            if type(ref) is not Ref:
                value = c_number(float(ref))[0]
                self.lines += self.loops(shape, f'{name}[{self.at(shape, shape)}] = {value};') \
                    if shape else [f'    *{name} = {value};']
                continue
            ref = self.alias.get(ref, ref)
            if self.storage.get(ref) == name:
                continue
            if not shape:
                self.lines.append(f'    *{name} = {self.read(ref, ())[0]};')
            else:
                entry = self.read(ref, shape)[0]
                self.lines += self.loops(shape, f'{name}[{self.at(shape, shape)}] = {entry};')
        return self.lines

    def result_shape(self, label):
        return result_shape(self.derivative, label)

    # ---- loops (array_loops.py): a C for, its body written as the tape is ----

    def op_loop(self, i, args):
        """Loop node i: its carried values and stacked arrays in buffers of
        the workspace (a number in a variable), its body inside a `for`, and
        its parts those buffers after it."""
        loop, tape = self.tape.nodes[i].value, self.tape
        body, sub = loop.body, tape.bodies[i]
        index = self.names.claim(body.nodes[loop.index].name.split('#')[0]
                                 if loop.index is not None else 'i')
        # what is read after the loop (parts follow their loop node), all else unwritten
        read = {k for k in range(len(loop.outputs)) if i + 1 + k in self.reached}
        carried = {out: j for j, out in enumerate(loop.carry) if out is not None}
        keep, live = _live(loop, read, carried)
        text, storage, state = {}, {}, {}
        for j, (kind, sid) in enumerate(loop.slots):
            a, shape = args[j], sub.shape(Ref(sid))
            if j not in live:
                continue
            if kind == FREE:
                (text if a in self.text else storage)[sid] = self.read_whole(a)
            elif kind == SCAN:
                source = self.pointer(args[j])
                if shape:
                    storage[sid] = f'({source} + (size_t){index}*{self.count(shape)})'
                else:
                    text[sid] = (f'{source}[{index}]', ATOM)
            else:
                state[j] = self.carried(a, shape, body.nodes[sid].name)
                (storage if shape else text)[sid] = state[j] if shape else (state[j], ATOM)
        stacks = {k: self.stack_buffer(loop, k, sub) for k in loop.stacked if k in read}
        # a number the last iteration leaves: a variable outside the loop's scope
        left = {k: self.names.claim(loop.names[k].split('#')[0])
                for k, o in enumerate(loop.outputs)
                if k in read and k not in stacks and o not in carried and not sub.shape(Ref(o))}
        self.lines += [f'    double {name} = 0.0;' for name in left.values()]
        saved = (self.tape, self.text, self.storage, self.lines, self.alias, self.uses,
                 self.user, self.results, self.outputs, self.reached)
        self.tape, self.text, self.storage, self.lines = sub, text, storage, []
        if loop.index is not None:
            self.text[loop.index] = (f'(double){index}', ATOM)
        order = _reached(body.nodes, keep)
        self.reached = set(order)
        self.plan_body(order, keep)
        before = len(self.buffers)
        self.walk(order)
        own = {name for name, _ in self.buffers[before:]}
        # An array the last iteration leaves is read after the loop from a
        # buffer of the body's own; one that is a slot's (a carried x, a slice
        # W[i]) or a constant is copied to one, before the carried values change.
        for k, o in enumerate(loop.outputs):
            if k in read and k not in stacks and k not in left and o not in carried \
                    and self.storage.get(self.alias.get(o, o)) not in own:
                shape = self.shape(o)
                left_array = self.names.claim(loop.names[k].split('#')[0])
                self.buffers.append((left_array, self.count(shape)))
                self.lines += self.loops(shape, f'{left_array}[{self.at(shape, shape)}] = '
                                                f'{self.read(o, shape)[0]};')
                self.storage[self.alias.get(o, o)] = left_array
        self.rows(loop, stacks, index)
        self.lines += [f'    {name} = {self.read(loop.outputs[k], ())[0]};'
                       for k, name in left.items()]
        self.carry_over(loop, state)
        lines, body_storage = self.lines, {o: self.storage.get(self.alias.get(o, o))
                                           for o in loop.outputs}
        (self.tape, self.text, self.storage, self.lines, self.alias, self.uses, self.user,
         self.results, self.outputs, self.reached) = saved
        stop = loop.first + loop.count
        self.lines.append(f'    for (long {index} = {stop - 1}; {index} >= {loop.first}; '
                          f'{index}--) {{' if loop.reverse else
                          f'    for (long {index} = {loop.first}; {index} < {stop}; {index}++) {{')
        self.lines += ['    ' + line for line in lines] + ['    }']
        self.names.taken.discard(index)   # the loop's own: the next may take it
        for k, o in enumerate(loop.outputs):
            part = i + 1 + k
            if k not in read:
                continue
            if k in stacks:
                self.storage[part] = stacks[k]
            elif k in left:
                self.text[part] = (left[k], ATOM)
            elif o not in carried:   # an array the last iteration leaves in a buffer
                self.storage[part] = body_storage[o]
            elif sub.shape(Ref(o)):
                self.storage[part] = state[carried[o]]
            else:
                self.text[part] = (state[carried[o]], ATOM)

    def read_whole(self, a):
        """What node a is, as the tape around a loop holds it: its text or buffer."""
        return self.text[a] if a in self.text else self.storage[a]

    def carried(self, a, shape, name):
        """A variable, or a buffer, for a value a loop carries, starting from node a's."""
        state = self.names.claim(name.split('#')[0].rstrip("'"))
        if not shape:
            self.lines.append(f'    double {state} = {self.read(a, ())[0]};')
            return state
        self.buffers.append((state, self.count(shape)))
        self.lines += self.loops(shape, f'{state}[{self.at(shape, shape)}] = '
                                        f'{self.read(a, shape)[0]};')
        return state

    def stack_buffer(self, loop, k, sub):
        """The buffer of stacked output k: a row per iteration."""
        name = self.names.claim(loop.names[k].split('#')[0])
        self.buffers.append((name, f'{loop.count}*{self.count(sub.shape(Ref(loop.outputs[k])))}'
                             if sub.shape(Ref(loop.outputs[k])) else str(loop.count)))
        return name

    def count_uses(self, order):
        """Each node's uses and its last user in `order`; a declared
        derivative's node is its body's value (alias)."""
        nodes = self.tape.nodes
        self.alias, self.uses, self.user = {}, {}, {}
        for i in order:
            node = nodes[i]
            if node.op == 'custom':
                self.alias[i] = self.alias.get(node.args[0], node.args[0])
                continue
            for a in node.args:
                a = self.alias.get(a, a)
                if nodes[a].op != 'static':
                    self.uses[a] = self.uses.get(a, 0) + 1
                    self.user[a] = i

    def plan_body(self, order, keep):
        """plan() for a loop's body: what it keeps is stored, never fused."""
        self.count_uses(order)
        self.outputs = {}
        self.results = {self.alias.get(o, o): 1 for o in keep}

    def rows(self, loop, stacks, index):
        """Each stacked output's row of this iteration: X[i] = value."""
        for k, name in stacks.items():
            o = loop.outputs[k]
            shape = self.shape(o)
            row = f'{index} - {loop.first}' if loop.first else index
            if not shape:
                self.lines.append(f'    {name}[{row}] = {self.read(o, ())[0]};')
                continue
            start = f'(size_t)({row})*{self.count(shape)}'
            self.lines += self.loops(shape, f'{name}[{start} + {self.at(shape, shape)}] = '
                                            f'{self.read(o, shape)[0]};')

    def carry_over(self, loop, state):
        """The carried values' next ones, all computed before any is replaced."""
        updates = []
        for j, out in enumerate(loop.carry):
            sid = loop.slots[j][1]
            if out is None or out == sid or j not in state:
                continue
            shape = self.shape(out)
            if not shape:
                name = self.names.fresh('t')
                self.lines.append(f'    const double {name} = {self.read(out, ())[0]};')
                updates.append(f'    {state[j]} = {name};')
            else:
                updates += self.loops(shape, f'{state[j]}[{self.at(shape, shape)}] = '
                                             f'{self.read(out, shape)[0]};')
        self.lines += updates

    # ---- the ops of arrays ----

    def call(self, helper, *arguments):
        self.helpers.add(helper)
        for needed in _NEEDS.get(helper, ()):
            self.helpers.add(needed)
        self.lines.append(f"    ad_{helper}({', '.join(arguments)});")

    def op_matmul(self, i, args, output):
        a, b = (self.shape(x) for x in args)
        if len(a) > 2 or len(b) > 2:
            raise AdgradError('--lang c multiplies vectors and matrices, not stacks of them '
                              'yet; --lang numpy does')
        m = self.size(a[0]) if len(a) == 2 else '1'
        n = self.size(b[1]) if len(b) == 2 else '1'
        pointers = [self.pointer(x) for x in args]
        self.call('matmul', m, self.size(a[-1]), n, *pointers, self.target(i, output))

    def op_transpose(self, i, args, output):
        shape = self.shape(args[0])
        if len(shape) > 2:
            raise AdgradError('--lang c transposes matrices, not stacks of them yet; '
                              '--lang numpy does')
        if not self.transpose_is_a_copy(i):     # a vector's, or a row's: the same entries
            self.storage[i] = self.pointer(args[0])
            return
        source = self.pointer(args[0])
        self.call('transpose', *map(self.size, shape), source, self.target(i, output))

    def op_reshape(self, i, args, output):
        self.storage[i] = self.pointer(args[0])    # row-major: the same entries

    def op_outer(self, i, args, output):
        pointers = [self.pointer(x) for x in args]
        self.call('outer', *(self.size(self.shape(x)[0]) for x in args), *pointers,
                  self.target(i, output))

    def reduce(self, op, i, args, output):
        shape, axis = self.shape(args[0]), self.static(args[1])
        source = self.pointer(args[0])
        self.call(op, *self.reduction(shape, axis), source, self.target(i, output))

    def op_norm(self, i, args, output):
        source = self.pointer(args[0])
        self.call('norm', self.count(self.shape(args[0])), str(self.static(args[1])), source,
                  self.target(i, output))

    def op_trace(self, i, args, output):
        source = self.pointer(args[0])
        self.call('trace', *map(self.size, self.shape(args[0])), source, self.target(i, output))

    def op_diag(self, i, args, output):
        shape = self.shape(args[0])
        source = self.pointer(args[0])
        if len(shape) == 1:
            self.call('diagflat', self.size(shape[0]), source, self.target(i, output))
        else:
            self.call('diagonal', *map(self.size, shape), source, self.target(i, output))

    def scratch(self, n):
        name = self.names.fresh('lu')
        self.buffers.append((name, f'{self.size(n)}*{self.size(n)}'))
        return name

    def op_det(self, i, args, output, helper='det'):
        n = self.shape(args[0])[0]
        source = self.pointer(args[0])
        self.call(helper, self.size(n), source, self.scratch(n), self.target(i, output))

    def op_logdet(self, i, args, output):
        self.op_det(i, args, output, 'logdet')

    def op_inv(self, i, args, output):
        n = self.shape(args[0])[0]
        source = self.pointer(args[0])
        self.call('solve', self.size(n), self.size(n), source, 'NULL', self.scratch(n),
                  self.target(i, output))

    def op_solve(self, i, args, output):
        n, b = self.shape(args[0])[0], self.shape(args[1])
        sources = [self.pointer(x) for x in args]
        self.call('solve', self.size(n), self.size(b[1]) if len(b) == 2 else '1', *sources,
                  self.scratch(n), self.target(i, output))

    def op_concat(self, i, args, output):
        axis = self.static(args[-1]) % len(self.shape(i))
        self.place(i, args[:-1], axis, output)

    def op_stack(self, i, args, output):
        self.place(i, args, 0, output)

    def place(self, i, args, axis, output):
        """Each argument's entries at its place along `axis` of node i."""
        shape = self.shape(i)
        outer, total, inner = self.reduction(shape, axis)
        sources = [self.pointer(a) for a in args]
        name = self.target(i, output)
        offset = 0
        for a, source in zip(args, sources):
            part = self.shape(a)
            length = part[axis] if len(part) == len(shape) else 1   # stack adds the axis
            self.call('place', outer, str(length), inner, str(offset), total, source, name)
            offset += length

    def op_eye(self, i, args, output):
        n = self.static(args[0])
        name = self.target(i, output)
        v = self.loop
        self.lines += self.loops((n, n), f'{name}[{v[0]}*{self.size(n)} + {v[1]}] = '
                                          f'{v[0]} == {v[1]} ? 1.0 : 0.0;')

    def keyed(self, shape, key):
        """The coordinates, in an array of `shape`, of the entry that
        key picks at the loop's place over the result's shape."""
        coordinates, k = [], 0
        for axis, n in enumerate(shape):
            part = key[axis] if axis < len(key) else slice(None)
            if not isinstance(part, slice):
                coordinates.append(str(part) if part >= 0 else str(n + part)
                                   if isinstance(n, int) else f'{self.size(n)} - {-part}')
                continue
            v = self.loop[k]
            k += 1
            if part == slice(None):
                coordinates.append(v)
                continue
            start, _, step = part.indices(n)
            coordinates.append(f'{start} + {step}*{v}' if start else
                               (v if step == 1 else f'{step}*{v}'))
        return coordinates

    def op_index(self, i, args, output):
        a, key = args[0], self.static(args[1])
        shape, result = self.shape(a), self.shape(i)
        source = self.pointer(a)
        entry = f'{source}[{self.flat(self.keyed(shape, key), shape)}]'
        if not result:
            name = self.names.fresh('t')
            self.lines.append(f'    const double {name} = {entry};')
            self.text[i] = (name, ATOM)
            return
        name = self.target(i, output)
        self.lines += self.loops(result, f'{name}[{self.at(result, result)}] = {entry};')

    def op_unindex(self, i, args, output):
        g, key, shape = args[0], self.static(args[1]), self.static(args[2])
        name = self.target(i, output)
        self.zero(name, shape)
        picked = _picked(shape, key)
        self.lines += self.loops(picked, f'{name}[{self.flat(self.keyed(shape, key), shape)}] = '
                                         f'{self.read(g, picked)[0]};')

    def op_sum_to(self, i, args, output):
        a, shape = args[0], self.static(args[1])
        source, loop = self.read(a, self.shape(a)), self.shape(a)
        name = self.target(i, output)
        self.zero(name, shape)
        self.lines += self.loops(loop, f'{name}[{self.at(shape, loop)}] += {source[0]};')

    def op_others_product(self, i, args, output):
        self.reduce('others_product', i, args, output)

    def zero(self, name, shape):
        v = self.loop[0]
        self.lines.append(f'    for (long {v} = 0; {v} < {self.count(shape)}; {v}++)')
        self.lines.append(f'        {name}[{v}] = 0.0;')


for _op in _REDUCTIONS:
    if _op != 'others_product':
        setattr(CArrays, 'op_' + _op,
                lambda self, i, args, output, _op=_op: self.reduce(_op, i, args, output))


def _picked(shape, key):
    """The shape of what `key` picks from an array of `shape` (numbers only
    where a slice is not the whole axis, as the shape rule checked)."""
    result = []
    for axis, n in enumerate(shape):
        part = key[axis] if axis < len(key) else slice(None)
        if isinstance(part, slice):
            result.append(n if part == slice(None) else len(range(*part.indices(n))))
    return tuple(result)


def c_formula(derivative, graph):
    """C99: int f(sizes..., inputs..., double *value, double *d_x, ...), 0 on
    success and -1 where its workspace cannot be had."""
    declared = dict(derivative.tape.declared)
    declared.update({k: v for k, v in declared_shapes(graph).items() if k not in declared})
    writer = CArrays(derivative, declared)
    order = derivative.order
    labels = [label if label == 'value' else (f'd_{label}' if order == 1 else f'd{order}_{label}')
              for label, _ in derivative.results]
    writer.out_names = ['value' if label == 'value' else writer.names.claim(label)
                        for label in labels]
    body = writer.emit()
    sizes = [f'int {name}' for name in writer.sizes.values()]
    inputs = [('const double *' if writer.declared[name] else 'double ') + variable
              for name, variable in writer.variables.items()]
    outputs = [f'double *{name}' for name in writer.out_names]
    shapes = [f'{name}[{writer.count(shape)}]' if shape else f'*{name}'
              for (label, _), name in zip(derivative.results, writer.out_names)
              for shape in [writer.result_shape(label)]][1:]
    what = 'the gradient' if order == 1 else 'the Hessian'
    lines = ['#include <math.h>', '#include <stdlib.h>', '']
    used = [op for op in C_HELPERS if op in writer.helpers]
    lines += [C_HELPERS[op] for op in used]
    loops = [name for name in LOOPS if name in writer.helpers]
    loops.sort(key=lambda name: name != 'lu')     # called by det, logdet, solve: first
    for name in loops:
        lines += [LOOPS[name], '']
    lines += [f"/* The value, and {what} in each input's shape, row-major: {', '.join(shapes)}.",
              '   Returns 0, or -1 where its workspace cannot be allocated. */',
              f"int f({', '.join(sizes + inputs + outputs)})", '{']
    if writer.buffers:
        number = sum(int(e) for _, e in writer.buffers if e.isdigit())
        total = ' + '.join([f'(size_t){e}' for _, e in writer.buffers if not e.isdigit()]
                           + ([str(number)] if number else []))
        # calloc, not malloc: GCC's -O2 -Wall takes a buffer filled in a loop
        # that might not run for one maybe read uninitialized
        lines += [f'    double *const {writer.work} = calloc({total}, sizeof(double));',
                  f'    if ({writer.work} == NULL)', '        return -1;']
        previous = (writer.work, None)
        for name, entries in writer.buffers:
            start = previous[0] if previous[1] is None else f'{previous[0]} + (size_t){previous[1]}'
            lines.append(f'    double *const {name} = {start};')
            previous = (name, entries)
    lines += body
    if writer.buffers:
        lines.append(f'    free({writer.work});')
    lines += ['    return 0;', '}']
    return '\n'.join(lines) + '\n'


def _live(loop, read, carried):
    """What a loop's body computes (the parts `read` after it, the next
    values of the slots it reads) and the slots it reads: a carried value
    read by nothing but its own next value is not written at all."""
    live = {carried[loop.outputs[k]] for k in read if loop.outputs[k] in carried}
    while True:
        keep = [loop.outputs[k] for k in sorted(read)] + [loop.carry[j] for j in sorted(live)
                                                          if loop.carry[j] is not None]
        order = set(_reached(loop.body.nodes, keep))
        more = {j for j, (kind, sid) in enumerate(loop.slots) if sid in order} - live
        if not more:
            return keep, live
        live |= more


def _reached(nodes, roots):
    """Ids of the nodes `roots` depend on, in tape order: as record.reachable,
    but a loop depends on the arguments of the slots its read parts need
    only, so that C declares nothing it never reads (-Wall -Werror). (It
    and _live recurse once per nested loop: MAX_NESTING deep at most.)"""
    needed = bytearray(len(nodes))
    for r in roots:
        needed[r] = 1
    for i in range(len(nodes) - 1, -1, -1):   # (arguments come before their node)
        if not needed[i]:
            continue
        node = nodes[i]
        if node.op == 'loop':
            loop = node.value
            read = {k for k in range(len(loop.outputs)) if needed[i + 1 + k]}
            carried = {out: j for j, out in enumerate(loop.carry) if out is not None}
            _, live = _live(loop, read, carried)
            args = [node.args[j] for j in sorted(live)]
        else:   # (a declared derivative's node is its body's value)
            args = node.args[:1] if node.op == 'custom' else node.args
        for a in args:
            needed[a] = 1
    return [i for i in range(len(nodes)) if needed[i]]
