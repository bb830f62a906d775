"""A recorded derivative printed as text: adgrad's own language, NumPy, C or LaTeX.

Each language is a table from op to template, built from the spellings on
the primitives' rows (core/primitives.py says how a template reads). An
argument whose own precedence is below the one its slot asks for is put in
parentheses, so parentheses appear exactly where re-reading the text needs
them to rebuild the same tree.

The printed text comes only from the graph's nodes: ops through these
tables, numbers through `repr` of a float, and names that the parser already
validated, changed (mangled) where the target language reserves them. No text
a user typed is copied into the output.

A node used more than once is bound once to a name (`t1 = ...`), and so is
one whose text grows past a line, so that the output's size stays linear in
the graph's: nothing is ever printed twice.
"""

import keyword
import re
from typing import NamedTuple

from ..core.graph import CARRY, FREE, SCAN
from ..core.primitives import ARITHMETIC, ATOM, COMPARISON, LOGICAL, PRIMITIVES, names_of
from ..errors import AdgradError
from .record import Ref, reachable

INLINE = 80          # characters: a longer subexpression is bound to a name
_SLOT = re.compile(r'\$(\d)')
_IDENTIFIER = re.compile(r'[a-z][a-z0-9]*')


class Template(NamedTuple):
    text: str
    precedence: float
    slots: tuple      # the least precedence each argument may have unparenthesized


def _t(text, precedence=ATOM, *slots):
    return Template(text, precedence, slots)


def _call(name, arity, left='(', right=')'):
    return _t(name + left + ', '.join(f'${i}' for i in range(arity)) + right, ATOM, *[0] * arity)


def _table(spelling):
    """{op: Template} of one language; `spelling(row)` is a row's form in it:
    a (text, precedence, *slots) tuple or a Template, or NO_FORM/None for none."""
    table = {}
    for name, row in PRIMITIVES.items():
        form = spelling(row)
        if form:
            table[name] = form if isinstance(form, Template) else _t(*form)
    return table


def _operator(row):
    """An operator's spelling, where a language writes it as adgrad does."""
    return row.text if row.kind in (ARITHMETIC, COMPARISON) else None


def _adgrad(row):
    return _call(row.name, row.arity) if row.text is None else row.text


# Rows whose C is a helper of their own, called as ad_NAME.
C_HELPERS = {name: row.c for name, row in PRIMITIVES.items()
             if isinstance(row.c, str) and row.c.startswith('static double')}


def _c(row):
    if row.c is None:
        return _operator(row)
    if row.name in C_HELPERS:
        return _call('ad_' + row.name, row.arity)
    return _call(row.c, row.arity) if isinstance(row.c, str) and row.c else row.c


def _latex(row):
    if row.latex is None:
        if row.kind in (ARITHMETIC, COMPARISON, LOGICAL):
            return row.text
        return _call(rf'\operatorname{{{row.name}}}', row.arity, r'\left(', r'\right)')
    if isinstance(row.latex, str) and row.latex:
        return _call(row.latex, row.arity, r'\left(', r'\right)')
    return row.latex


ADGRAD = _table(_adgrad)
C = _table(_c)
LATEX = _table(_latex)

# NumPy: IEEE results under np.errstate. An op takes the array form its row
# names: NumPy's function, or arrays.py's, whose text is copied into the
# generated module where it needs nothing but NumPy.


def numpy_table():
    """{op: Template} for --lang numpy, and {op: helper source} for the ops
    whose array form (arrays.py's, needing only NumPy) is copied into the module."""
    import dis
    import inspect

    from ..core import arrays
    helpers = {}

    def spelling(row):
        if row.numpy is not None or row.kind == ARITHMETIC:
            return row.numpy if row.numpy is not None else row.text
        function = getattr(arrays, row.array, None)
        if function is None:
            return _call('np.' + row.array, row.arity)
        globals_read = {i.argval for i in dis.get_instructions(function) if i.opname == 'LOAD_GLOBAL'}
        if globals_read <= {'np'}:
            source = inspect.getsource(function).rstrip()
            helpers[row.name] = source.replace(f'def {row.array}(', f'def _{row.array}(', 1)
            return _call('_' + row.array, row.arity)
        return _call('_arrays.' + row.array, row.arity)
    return _table(spelling), helpers


_COMPARISONS = names_of(COMPARISON, LOGICAL)
_BY_SYMBOL = {PRIMITIVES[name].symbol: name for name in names_of(COMPARISON)}
# 0 >= x is printed as x <= 0: each ordering and its mirror image
_MIRRORED = {name: _BY_SYMBOL[symbol.translate(str.maketrans('<>', '><'))]
             for symbol, name in _BY_SYMBOL.items() if set(symbol) & set('<>')}


def written(op, arguments, table=ADGRAD):
    """(text, precedence) of `op` applied to arguments given as (text,
    precedence) pairs, as `table` writes it: parenthesized where needed."""
    template = table[op]
    return _fill(template, arguments), template.precedence


def _fill(template, texts):
    """The template with each slot replaced by its argument, parenthesized
    where the argument binds more loosely than the slot allows."""
    parts = []
    for i, (text, precedence) in enumerate(texts):
        if precedence < template.slots[i]:
            if precedence == 1:
                text = _tight(text)
            text = f'({text})' if template.text != LATEX['pow'].text else rf'\left({text}\right)'
        elif template.slots[i] >= 3 and text.startswith('-') and template.text.startswith('-'):
            text = f'({text})'                      # never `--x`
        parts.append(text)
    pieces = _PIECES.get(template.text)
    if pieces is None:
        pieces = _PIECES[template.text] = [int(p) if k % 2 else p
                                           for k, p in enumerate(_SLOT.split(template.text))]
    return ''.join([p if type(p) is str else parts[p] for p in pieces])


_PIECES = {}     # template text -> its literal pieces and slot numbers, alternating


def _tight(text):
    """A sum of atoms put in parentheses, without the spaces around its signs:
    `(1-t)*(t+1)`, as one writes it by hand; the spaces are kept for the sum
    around it, and inside parentheses for a sum with a product or a power
    in it (`(-(y-1)/t1 - y/p)`), where they show which sign binds last."""
    depth, signs = 0, []
    for k, c in enumerate(text):
        if c == '(':
            depth += 1
        elif c == ')':
            depth -= 1
        elif depth == 0:
            if c in '*/^@' or c == '.' and text[k + 1:k + 2] == 'T':   # @ and .T: of arrays
                return text
            # ` + ` or ` - `, not before a sign (`a - -1` keeps its spaces)
            if c in '+-' and text[k - 1:k] == text[k + 1:k + 2] == ' ' \
                    and text[k + 2:k + 3] not in '+-':
                signs.append(k)
    for k in reversed(signs):
        text = text[:k - 1] + text[k] + text[k + 2:]
    return text


# ---- numbers and names, per language ----

def _plain_number(value):
    if value == int(value) and abs(value) < 2 ** 53:
        return str(int(value))
    return repr(value)


def adgrad_number(value):
    if value != value:
        return '0/0', 2
    if value in (float('inf'), float('-inf')):
        return ('1/0' if value > 0 else '-1/0'), 2
    if value == 0 and str(value).startswith('-'):
        return '-0', 3
    text = _plain_number(value)
    return text, (3 if value < 0 else ATOM)


def python_number(value):
    if value != value:
        return 'np.nan', ATOM
    if value in (float('inf'), float('-inf')):
        return ('np.inf' if value > 0 else '-np.inf'), (ATOM if value > 0 else 3)
    return repr(value), (3 if str(value).startswith('-') else ATOM)


def c_number(value):
    if value != value:
        return 'NAN', ATOM
    if value in (float('inf'), float('-inf')):
        return ('HUGE_VAL' if value > 0 else '-HUGE_VAL'), (ATOM if value > 0 else 3)
    return repr(value), (3 if str(value).startswith('-') else ATOM)


def latex_number(value):
    if value != value:
        return r'\mathrm{NaN}', ATOM
    if value in (float('inf'), float('-inf')):
        return (r'\infty' if value > 0 else r'-\infty'), (ATOM if value > 0 else 3)
    text = _plain_number(value)
    if 'e' in text:
        mantissa, exponent = text.split('e')
        power = f'10^{{{int(exponent)}}}'
        text = power if mantissa in ('1', '1.0') else rf'{mantissa} \cdot {power}'
        return text, (3 if value < 0 else 2)
    return text, (3 if value < 0 else ATOM)


_GREEK = {'alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta', 'iota', 'kappa',
          'lambda', 'mu', 'nu', 'xi', 'pi', 'rho', 'sigma', 'tau', 'upsilon', 'phi', 'chi',
          'psi', 'omega', 'Gamma', 'Delta', 'Theta', 'Lambda', 'Xi', 'Pi', 'Sigma', 'Phi',
          'Psi', 'Omega'}
_SUBSCRIPTED = re.compile(r'([A-Za-z]+)_?(\d+)')


def latex_name(name):
    match = _SUBSCRIPTED.fullmatch(name)
    if match and (len(match.group(1)) == 1 or match.group(1) in _GREEK):
        return f'{latex_name(match.group(1))}_{{{match.group(2)}}}'
    if name in _GREEK:
        return '\\' + name
    if len(name) == 1:
        return name
    return r'\mathit{' + name.replace('_', r'\_') + '}'


_PYTHON_RESERVED = set(keyword.kwlist) | set(keyword.softkwlist) | set(dir(__builtins__)) | {
    'np', 'f', 'value', 'shape', 'grad'}
_C_RESERVED = set('''auto break case char const continue default do double else enum extern float
for goto if inline int long register restrict return short signed sizeof static struct switch
typedef union unsigned void volatile while bool true false alignas alignof constexpr nullptr
static_assert thread_local typeof typeof_unqual complex imaginary asm fortran main errno f value
grad acos asin atan atan2 cos sin tan acosh asinh atanh cosh sinh tanh exp exp2 expm1 frexp ilogb
ldexp log log10 log1p log2 logb modf scalbn scalbln cbrt fabs hypot pow sqrt erf erfc lgamma
tgamma ceil floor nearbyint rint lrint llrint round lround llround trunc fmod remainder remquo
copysign nan nextafter nexttoward fdim fmax fmin fma fpclassify isfinite isinf isnan isnormal
signbit isgreater isgreaterequal isless islessequal islessgreater isunordered j0 j1 jn y0 y1 yn
gamma signgam drem finite significand scalb'''.split())


def python_safe(name):
    return name in _PYTHON_RESERVED or name.startswith('_')


def c_safe(name):
    base = name[:-1] if name[-1:] in ('f', 'l') else name
    return (name in _C_RESERVED or base in _C_RESERVED or name.startswith(('_', 'ad_'))
            or name.upper() == name)


class Names:
    """Names that cannot collide: with each other, with the language's own
    words, or with the variables."""

    def __init__(self, reserved=lambda name: False):
        self.taken, self.reserved, self.counter = set(), reserved, 0
        self.labels = set()   # the results' names (d_x): kept for them

    def claim(self, wanted, label=False):
        if label and wanted in self.labels:
            self.labels.discard(wanted)
            self.taken.add(wanted)
            return wanted
        if self.reserved(wanted):
            wanted = 'v_' + wanted.lstrip('_')   # a suffix cannot make _X or NAN safe
        name, n = wanted, 1
        while name in self.taken or self.reserved(name) or name in self.labels:
            n += 1
            name = f'{wanted}_' if n == 2 else f'{wanted}_{n - 1}'
        self.taken.add(name)
        return name

    def fresh(self, prefix='t'):
        while True:
            self.counter += 1
            name = f'{prefix}{self.counter}'
            if name not in self.taken and not self.reserved(name) and name not in self.labels:
                self.taken.add(name)
                return name


# ---- the walk: which node gets a name, and each node's text ----

class Printed(NamedTuple):
    bindings: list        # (name, text) in order of definition, or a LoopLines
    results: list         # (label, name in the text, text) per result
    variables: dict       # variable name -> its name in the text


class Assign(NamedTuple):
    """A name given a new value: one a loop carries, or binds for after it."""
    name: str
    text: str


class LoopLines(NamedTuple):
    """A loop as statements: `for index in first..stop` (down from stop - 1
    if `reverse`), the names it carries with their starting texts (bound
    just before it), the names its body binds for after it, and its body,
    ending with the carried names' new values (Assign)."""
    index: str
    first: int
    stop: int
    carried: list
    declared: list
    body: list
    reverse: bool = False
    stacks: tuple = ()    # the names of the arrays it stacks (X[i] = ...)


class Stacked(NamedTuple):
    """A loop's row of a stacked array: X[i] = text."""
    name: str
    index: str
    text: str


def lay_out(derivative, table, number, variable=lambda n: n, reserved=lambda n: False,
            labels=None, fresh='t', display=lambda name: name, spell=None, mutable=None,
            scan='{0}[{1}]', loop_labels=False):
    """Text for each result of a Derivative: shared and long subexpressions
    bound to names, the rest inlined. One loop over the tape, no recursion
    but once per nested loop (LoopLines). `spell(i, node, arguments)`, if
    given, writes a node the table cannot (an array op's static arguments):
    (text, precedence), or None. `mutable`: the variables a loop may carry
    under their own name (None: all). `scan` writes a loop's slice W[i]
    (the stacked array's text, the index). `loop_labels`: a result a loop
    leaves (d_W, stacked) is named by its label there, not bound again."""
    tape = derivative.tape
    nodes = tape.nodes
    order = derivative.reachable()
    uses = _uses(nodes, order)
    names = Names(reserved)
    variables = {}
    for name in tape.inputs:
        variables[name] = names.claim(variable(name))
    labels = labels or [label for label, _ in derivative.results]
    # (kept for the results: a loop's own d_x, say, is not the result)
    names.labels = {label for label in labels if not reserved(label)} - set(variables.values())
    result_of = {}
    for (label, ref), wanted in zip(derivative.results, labels):
        if isinstance(ref, Ref) and nodes[ref].op not in ('input', 'const', 'part') \
                and ref not in result_of:
            result_of[ref] = wanted
    texts, bindings = [None] * len(nodes), []
    for name, ref in tape.inputs.items():
        texts[ref] = (variables[name], ATOM)
    program_names = {ref: n for ref, n in tape.names.items() if ref in uses or ref in result_of}
    walk = _Walk(table, number, names, spell, display, fresh, mutable,
                 {ref for _, ref in derivative.results if isinstance(ref, Ref)}, scan)
    # a loop's part that is a result is named by its label where the loop binds it
    walk.labels = {ref: wanted for (_, ref), wanted in zip(derivative.results, labels)
                   if isinstance(ref, Ref) and nodes[ref].op == 'part'} if loop_labels else {}
    walk.run(nodes, order, uses, texts, bindings, result_of, program_names)
    results = []
    for (label, ref), wanted in zip(derivative.results, labels):
        text = texts[ref][0] if isinstance(ref, Ref) else number(ref)[0]
        if isinstance(ref, Ref) and ref in result_of and uses.get(ref, 0) and result_of[ref] == wanted:
            results.append((label, None, text))       # already bound under its own name
        elif ref in walk.labels and text == display(wanted):
            results.append((label, None, text))       # a loop's, which it leaves so named
        else:
            results.append((label, display(names.claim(wanted, label=True)), text))
    return Printed(bindings, results, variables)


def _uses(nodes, order):
    """How many arguments of the nodes `order` read each node (a declared
    derivative's node read as its body's value)."""
    uses, body = {}, {}
    for i in order:
        node = nodes[i]
        if node.op == 'custom':
            body[i] = body.get(node.args[0], node.args[0])
            continue
        for a in node.args:
            a = body.get(a, a)
            uses[a] = uses.get(a, 0) + 1
    return uses


class _Walk:
    """lay_out's walk over a tape, and over each loop's body in turn."""

    def __init__(self, table, number, names, spell, display, fresh, mutable, results, scan):
        self.table, self.number, self.names, self.spell = table, number, names, spell
        self.display, self.fresh, self.mutable, self.results = display, fresh, mutable, results
        self.scan, self.labels = scan, {}

    def run(self, nodes, order, uses, texts, bindings, result_of, program_names, body=False):
        """Each node's (text, precedence) into texts; the names bound, in
        order, onto bindings. In a loop's body (`body`) every result is bound,
        as an Assign. The ids bound to a name."""
        bound = set()
        for i in order:
            node = nodes[i]
            op, args = node.op, node.args
            if op == 'input' or op == 'part':   # (a part's text is its loop's)
                continue
            if op == 'loop':
                self.loop(nodes, i, texts, uses, set(order), bindings, not body)
                continue
            special = self.spell(i, node, [texts[a] for a in args]) if self.spell else None
            if op == 'const' or op == 'static':
                texts[i] = special or self.number(node.value)
                continue
            if op == 'custom':                 # a declared derivative's value is its body's
                texts[i] = texts[args[0]]
                continue
            text, precedence = _written(nodes, node, [texts[a] for a in args], self.table,
                                        special)
            used = uses.get(i, 0)
            if used == 0 and i in result_of and not body:
                texts[i] = (text, precedence)             # printed last, under its label
            elif (used >= 2 and not (special is not None and text.isidentifier())
                  or len(text) > INLINE or i in result_of):    # a size, n, is never bound
                wanted = result_of.get(i) or program_names.get(i)
                name = self.display(self.names.claim(wanted, label=not body) if wanted else
                                    self.names.fresh(self.fresh))
                bindings.append(Assign(name, text) if body and i in result_of else (name, text))
                texts[i] = (name, ATOM)
                bound.add(i)
            else:
                texts[i] = (text, precedence)
        return bound

    def loop(self, nodes, i, texts, uses, reached, bindings, top):
        """Loop node i as a LoopLines onto bindings (after the names its body
        reads, bound before it), and its parts' texts: the names it leaves."""
        loop, args = nodes[i].value, nodes[i].args
        body = loop.body.nodes
        parts = range(i + 1, i + 1 + len(loop.outputs))
        needed = [k for k, p in enumerate(parts) if p in reached]
        slot_of = {}                  # a carried value's next value -> its slot
        for s, out in enumerate(loop.carry):
            if out is not None:
                slot_of.setdefault(out, s)
        live = {slot_of[loop.outputs[k]] for k in needed if loop.outputs[k] in slot_of}
        leaving = [loop.outputs[k] for k in needed if loop.outputs[k] not in slot_of]
        while True:   # a carried value is needed where a needed one reads it
            order = reachable(body, leaving + [loop.carry[s] for s in live])
            seen = set(order)
            more = {s for s, (kind, sid) in enumerate(loop.slots)
                    if kind == CARRY and sid in seen} - live
            if not more:
                break
            live |= more
        claim, display = self.names.claim, self.display
        inner = [None] * len(body)
        own = claim(_hint(body[loop.index].name)) if loop.index is not None \
            else self.names.fresh('i')
        index = display(own)
        if loop.index is not None:
            inner[loop.index] = (index, ATOM)
        carried, names = [], {}
        for s, (kind, sid) in enumerate(loop.slots):
            a, text = args[s], texts[args[s]]
            if kind == CARRY and s in live:
                leaves = [parts[k] for k, o in enumerate(loop.outputs)
                          if o == loop.carry[s] and k not in loop.stacked]
                label = self.labels.get(leaves[0]) if top and leaves else None
                if label is not None and label in self.names.labels:   # d_x, the result
                    names[s] = display(claim(label, label=True))
                    carried.append((names[s], text[0]))
                elif self._reusable(nodes[a], a, uses, text, top):
                    names[s] = text[0]
                else:
                    names[s] = display(claim(_hint(body[sid].name)))
                    carried.append((names[s], text[0]))
                inner[sid] = (names[s], ATOM)
            elif kind == FREE and sid in seen:
                if nodes[a].op == 'const' or text[1] == ATOM and text[0].isidentifier():
                    inner[sid] = text
                else:   # computed once, before the loop
                    name = display(claim(_hint(body[sid].name)))
                    bindings.append((name, text[0]))
                    inner[sid] = (name, ATOM)
            elif kind == SCAN and sid in seen:   # W[i]: W bound to a name first
                if not (text[1] == ATOM and text[0].isidentifier()):
                    name = display(claim(_hint(body[sid].name.split('[')[0])))
                    bindings.append((name, text[0]))
                    text = (name, ATOM)
                inner[sid] = (self.scan.format(text[0], index), ATOM)
        statements, result_of = [], {}
        stacked = set(loop.stacked)
        for k in needed:
            o = loop.outputs[k]
            if o not in slot_of and body[o].op not in ('input', 'const', 'part') \
                    and k not in stacked:
                result_of.setdefault(o, _hint(loop.names[k]))
        program = {j: _hint(body[j].name) for j in order if body[j].name and body[j].args}
        body_uses = _uses(body, order)   # a carried or stacked value is read once more
        for o in [loop.carry[s] for s in live] + [loop.outputs[k] for k in needed
                                                    if k in stacked]:
            body_uses[o] = body_uses.get(o, 0) + 1
        outer = self.spell   # an array speller reads the body's own shapes
        if hasattr(outer, 'within'):
            self.spell = outer.within(i)
        # What reads nothing of an iteration (ones(n), a size) is bound once,
        # before the loop: a body may not read a size (the language's rule).
        varies = set()
        for j in order:
            if body[j].op in ('input', 'loop', 'part') or any(a in varies for a in body[j].args):
                varies.add(j)
        hoisted = {j for j in order if j not in varies and body[j].op not in ('const', 'static')}
        read_inside = {a for j in order if j not in hoisted for a in body[j].args}
        ends = [o for o in body_uses if o in hoisted and (o in result_of or o in read_inside)]
        if hoisted:   # (with the constants they read)
            self.run(body, [j for j in order if j not in varies], body_uses, inner, bindings,
                     dict.fromkeys(ends), program)
        bound = self.run(body, [j for j in order if j not in hoisted], body_uses, inner,
                         statements, result_of, program, body=True)
        self.spell = outer
        declared, stacks, states = [inner[o][0] for o in result_of], [], 0
        for k, p in zip(needed, [parts[k] for k in needed]):
            o = loop.outputs[k]
            if k in stacked:   # a row each iteration, before the carried names change
                label = self.labels.get(p) if top else None   # (the tape's ids, not a body's)
                name = display(claim(label, label=True) if label in self.names.labels
                               else claim(_hint(loop.names[k])))
                if body[o].op == 'input':   # the state it starts from: first
                    statements.insert(states, Stacked(name, index, inner[o][0]))
                    states += 1
                else:
                    statements.append(Stacked(name, index, inner[o][0]))
                stacks.append(name)
                texts[p] = (name, ATOM)
            elif o in slot_of:
                texts[p] = (names[slot_of[o]], ATOM)
            elif o in result_of or body[o].op in ('const', 'part'):
                texts[p] = inner[o]
            else:      # a value the body reads, as it is in the last iteration
                name = display(claim(_hint(loop.names[k])))
                statements.append(Assign(name, inner[o][0]))
                declared.append(name)
                texts[p] = (name, ATOM)
        statements += self._updates(body, order, bound, loop, live, names, inner)
        self.names.taken.discard(own)   # an index is the loop's own: the next may take it
        if not any(isinstance(s, (Assign, LoopLines, Stacked)) for s in statements):
            # nothing changes: the values it starts from, and what an inner loop bound once
            bindings.extend(carried + statements)
            return
        bindings.append(LoopLines(index, loop.first, loop.first + loop.count, carried, declared,
                                  statements, loop.reverse, tuple(stacks)))

    def _reusable(self, node, a, uses, text, top):
        """Whether a carried value may take the name of the value it starts
        from: a variable or a loop's name that nothing else reads."""
        if uses.get(a, 0) != 1 or a in self.results or not text[0].isidentifier():
            return False
        if node.op == 'part':
            return True
        return top and node.op == 'input' and (self.mutable is None or node.name in self.mutable)

    def _updates(self, body, order, bound, loop, live, names, inner):
        """The carried names' new values, each written before any name its
        text reads is given its own (a cycle of them goes through a name)."""
        reads = {}
        slot_ids = {loop.slots[s][1]: s for s in live}
        for j in order:
            node = body[j]
            if j in bound or node.op in ('loop', 'part', 'const', 'static'):
                reads[j] = frozenset()
            elif node.op == 'input':
                reads[j] = frozenset([slot_ids[j]]) if j in slot_ids else frozenset()
            elif node.op == 'custom':
                reads[j] = reads[node.args[0]]
            else:
                reads[j] = frozenset().union(*[reads[a] for a in node.args])
        text = {s: inner[loop.carry[s]][0] for s in live}
        read = {s: reads[loop.carry[s]] - {s} for s in live}
        pending, statements = sorted(live), []
        while pending:
            ready = [s for s in pending if not any(s in read[p] for p in pending if p != s)]
            if not ready:
                s = next(s for s in pending if read[s] & set(pending))
                name = self.display(self.names.fresh(self.fresh))
                statements.append((name, text[s]))
                text[s], read[s] = name, frozenset()
                continue
            s = ready[0]
            pending.remove(s)
            if text[s] != names[s]:
                statements.append(Assign(names[s], text[s]))
        return statements


def _hint(name):
    """A program's name as a wish for a printed one: its version and marks off."""
    return name.split('#')[0].rstrip("'") or 'v'


def _written(nodes, node, arguments, table, special):
    """(text, precedence) of a node whose arguments read `arguments`."""
    op, args = node.op, node.args
    if special is not None:
        return special
    if op == 'mul' and nodes[args[0]].op in _COMPARISONS and nodes[args[1]].op in _COMPARISONS:
        op = 'and'                      # (a == 0)*(b >= 0) reads as a == 0 and b >= 0
    if op in _MIRRORED and op in table and nodes[args[0]].op == 'const' \
            and nodes[args[1]].op != 'const' and _MIRRORED[op] in table:
        op, arguments = _MIRRORED[op], arguments[::-1]     # 0 >= x as x <= 0
    if op == 'neg' and arguments[0][1] == 2 and not arguments[0][0].startswith('-'):
        return '-' + arguments[0][0], 2     # -(a*b) as -a*b: the same number
    template = table[op]
    return _fill(template, arguments), template.precedence


# ---- the languages ----

def adgrad_text(derivative, order=1, defaults=None):
    """A program in adgrad's language whose bindings end with the derivatives.
    `defaults` ({variable: value}, the program's `input` declarations) are
    declared again, so that the derivative evaluates where the program did."""
    _check_printable(derivative, ADGRAD, 'adgrad')
    labels = [_label(label, order) for label, _ in derivative.results]
    printed = lay_out(derivative, ADGRAD, adgrad_number, labels=labels,
                      mutable=set(defaults or ()))
    lines = ['input ' + ', '.join(f'{name} = {adgrad_number(value)[0]}'
                                  for name, value in defaults.items())] if defaults else []
    lines += statements(printed.bindings, ADGRAD_LOOPS)
    for label, name, text in printed.results:
        if name is not None:
            lines.append(f'{name} = {text}')
    return '\n'.join(lines) + '\n'


class LoopForms(NamedTuple):
    """How a language writes statements: a binding, an assignment, a name a
    loop changes (with its start), one it binds for after it, a loop's head
    (index, first, stop), the head of one whose index runs down, its end,
    its indent; a slice W[i] as it reads (`scan`), and a stacked array's
    row, what makes it before the loop and what it is after it."""
    binding: str
    assign: str
    carried: str
    declared: str
    head: str
    head_down: str
    end: str
    indent: str = '    '
    stack_row: str = '{0}[{1}] = {2}'
    stack_open: str = ''
    stack_close: str = ''
    stack_close_down: str = ''


ADGRAD_LOOPS = LoopForms('{0} = {1}', '{0} = {1}', '{0} = {1}', '', 'for {0} in {1}..{2} {{',
                         'for {0} in reversed({1}..{2}) {{', '}}')
PYTHON_LOOPS = LoopForms('{0} = {1}', '{0} = {1}', '{0} = {1}', '',
                         'for {0} in map(float, range({1}, {2})):',
                         'for {0} in map(float, reversed(range({1}, {2}))):', '')
C_LOOPS = LoopForms('const double {0} = {1};', '{0} = {1};', 'double {0} = {1};', 'double {0};',
                    'for (double {0} = {1}; {0} < {2}; {0}++) {{',
                    'for (double {0} = {2} - 1; {0} >= {1}; {0}--) {{', '}}')


def statements(bindings, forms, indent=''):
    """Lines of lay_out's bindings in a language's `forms`; a loop's body
    one indent in (nested loops: a stack, not recursion)."""
    lines, stack = [], [(iter(bindings), indent, None)]
    while stack:
        entries, at, loop = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            if stack and forms.end:
                lines.append(stack[-1][1] + forms.end.format())
            close = forms.stack_close_down if loop and loop.reverse else forms.stack_close
            if stack and close:
                lines += [stack[-1][1] + close.format(n) for n in loop.stacks]
            continue
        if isinstance(entry, LoopLines):
            lines += [at + forms.carried.format(n, t) for n, t in entry.carried]
            if forms.declared:
                lines += [at + forms.declared.format(n) for n in entry.declared]
            if forms.stack_open:
                lines += [at + forms.stack_open.format(n) for n in entry.stacks]
            head = forms.head_down if entry.reverse else forms.head
            lines.append(at + head.format(entry.index, entry.first, entry.stop))
            stack.append((iter(entry.body), at + forms.indent, entry))
        elif isinstance(entry, Stacked):
            lines.append(at + forms.stack_row.format(*entry))
        else:
            form = forms.assign if isinstance(entry, Assign) else forms.binding
            lines.append(at + form.format(*entry))
    return lines


def _label(variable, order):
    return f'd_{variable}' if order == 1 else f'd{order}_{variable}'


def latex_text(derivative, order=1, function='f'):
    """One display-math line per binding and per derivative; `function` is
    the output's name (the program's last binding, else f)."""
    _check_printable(derivative, LATEX, 'latex')
    printed = lay_out(derivative, LATEX, latex_number, variable=latex_name,
                      labels=[_label(label, order) for label, _ in derivative.results],
                      display=_latex_binding)
    lines = [rf'\[ {name} = {text} \]' for name, text in printed.bindings]
    function = latex_name(function)
    for (label, ref), (_, name, text) in zip(derivative.results, printed.results):
        by = [printed.variables.get(v, latex_name(v)) for v in derivative.wrt[label]]
        if order == 1:
            head = rf'\frac{{\partial {function}}}{{\partial {by[0]}}}'
        elif len(set(by)) == 1:
            head = rf'\frac{{\partial^{{{order}}} {function}}}{{\partial {by[0]}^{{{order}}}}}'
        else:
            parts = r' \, '.join(rf'\partial {v}' for v in by)
            head = rf'\frac{{\partial^{{{order}}} {function}}}{{{parts}}}'
        lines.append(rf'\[ {head} = {text} \]')
    return '\n'.join(lines) + '\n'


def _latex_binding(name):
    match = re.fullmatch(r't(\d+)', name)
    return f't_{{{match.group(1)}}}' if match else latex_name(name)


def numpy_text(derivative):
    """A Python module: f(x, y, ...) -> (value, {name: gradient}) over arrays."""
    table, helpers = numpy_table()
    _check_printable(derivative, table, 'numpy')
    printed = lay_out(derivative, table, python_number, labels=_code_labels(derivative),
                      variable=lambda n: f'{n}_' if python_safe(n) else n, reserved=python_safe)
    parameters = ', '.join(printed.variables.values())
    used = _helpers_used(derivative, helpers)
    lines = ['import numpy as np', '']
    if any(table[op].text.startswith('_arrays.') for op in _ops(derivative) if op in table):
        lines[1:1] = ['', "from autodiff_cli.core import arrays as _arrays  # forms NumPy lacks"]
    for op in used:
        lines += [helpers[op], '']
    what = ('the gradient {variable: array}' if derivative.order == 1 else
            f'the derivatives of order {derivative.order} {{label: array}}')
    lines += ['', f'def f({parameters}):', f'    """The value and {what}, at arrays of points."""']
    for original, name in printed.variables.items():
        lines.append(f'    {name} = np.asarray({name}, dtype=np.float64)')
    lines.append("    with np.errstate(all='ignore'):")
    lines += statements(printed.bindings, PYTHON_LOOPS, '        ')
    outputs = []
    for label, name, text in printed.results:
        if name is not None:
            lines.append(f'        {name} = {text}')
        outputs.append((label, name or text))
    shapes = ', '.join(f'np.shape({n})' for n in printed.variables.values())
    lines.append(f'    shape = np.broadcast_shapes({shapes})')
    (_, value), gradient = outputs[0], outputs[1:]
    if derivative.order > 1:   # never under a variable's name, as if it were the gradient
        gradient = [(_label(label, derivative.order), name) for label, name in gradient]
    entries = ', '.join(f'{label!r}: np.broadcast_to({name}, shape).astype(np.float64)'
                        for label, name in gradient)
    lines.append(f'    return np.broadcast_to({value}, shape).astype(np.float64), {{{entries}}}')
    return '\n'.join(lines) + '\n'


def c_text(derivative, function='f'):
    """C99: void f(double x, ..., double *value, double *grad)."""
    _check_printable(derivative, C, 'c')
    printed = lay_out(derivative, C, c_number, labels=_code_labels(derivative),
                      variable=lambda n: f'{n}_' if c_safe(n) else n, reserved=c_safe)
    used = _helpers_used(derivative, C_HELPERS)
    lines = ['#include <math.h>', '']
    lines += [C_HELPERS[op] for op in used]
    if used:
        lines.append('')
    parameters = ''.join(f'double {n}, ' for n in printed.variables.values())
    k = derivative.order
    out, what = ('grad', 'the gradient') if k == 1 else (f'd{k}', f'the derivatives of order {k}')
    order = ', '.join(f'{out}[{i}] = {_ascii_derivative(derivative.wrt[label], k)}'
                      for i, (label, _) in enumerate(derivative.results[1:]))
    lines += [f'/* The value, and {what}: {order or "none"}. */',
              f'void {function}({parameters}double *value, double *{out})', '{']
    lines += statements(printed.bindings, C_LOOPS, '    ')
    for i, (label, name, text) in enumerate(printed.results):
        target = '*value' if i == 0 else f'{out}[{i - 1}]'
        lines.append(f'    {target} = {text};')
    if len(printed.results) == 1:
        lines.append(f'    (void){out};')
    lines.append('}')
    return '\n'.join(lines) + '\n'


def _ascii_derivative(by, order):
    """d/dx, d2/dx2, d2/dx dy: what a result differentiates by, in a C comment."""
    if order == 1:
        return f'd/d{by[0]}'
    if len(set(by)) == 1:
        return f'd{order}/d{by[0]}{order}'
    return f'd{order}/' + ' '.join(f'd{v}' for v in by)


def _check_printable(derivative, table, language):
    for op in _ops(derivative):
        if op not in table and op not in ('input', 'const', 'custom', 'loop', 'part'):
            raise AdgradError(f"--lang {language} has no form for '{op}' yet; "
                              "--lang adgrad prints every function")


def _ops(derivative):
    """The ops of the nodes the results depend on, in loops' bodies too."""
    ops, pending = set(), [(derivative.tape.nodes, derivative.reachable())]
    while pending:
        nodes, order = pending.pop()
        for i in order:
            node = nodes[i]
            ops.add(node.op)
            if node.op == 'loop':
                loop = node.value
                roots = [o for o in (*loop.outputs, *loop.carry) if o is not None]
                pending.append((loop.body.nodes, reachable(loop.body.nodes, roots)))
    return ops


def _code_labels(derivative):
    return ['value'] + [_label(label, derivative.order) for label, _ in derivative.results[1:]]


def _helpers_used(derivative, helpers):
    ops = _ops(derivative)
    ops |= {_MIRRORED[op] for op in ops if op in _MIRRORED}   # 0 >= x prints as x <= 0
    if ops & set(_COMPARISONS):
        ops.add('and')                                         # a product of comparisons
    return [op for op in helpers if op in ops]



LANGUAGES = ('adgrad', 'numpy', 'c', 'latex')


def output_name(graph):
    """The name a person gave the output (the program's last binding, z in
    z = f(y)), else f; never a variable's name, which would read as x(x)."""
    name = graph.nodes[graph.output].name
    if name and '#' not in name and name not in graph.inputs:
        return name
    return 'f' if 'f' not in graph.inputs else 'F'


def derivative_text(graph, names, order=1, lang='adgrad'):
    """`adgrad diff`'s text: the derivative of `graph` with respect to `names`
    (one name for order > 1), printed in `lang`, one of LANGUAGES."""
    from .record import differentiate, nth_derivative, second_derivatives
    code = lang in ('numpy', 'c')
    if graph.loops and lang == 'latex':
        raise AdgradError('--lang latex does not print loops: --lang adgrad, numpy and c do')
    if order == 2 and len(names) > 1:
        derivative = second_derivatives(graph, names, with_value=code)
    elif order > 1:
        derivative = nth_derivative(graph, names[0], order, with_value=code)
    else:
        derivative = differentiate(graph, names, with_value=code)
    if lang == 'adgrad':
        return adgrad_text(derivative, order, graph.defaults)
    if lang == 'latex':
        return latex_text(derivative, order, output_name(graph))
    return numpy_text(derivative) if lang == 'numpy' else c_text(derivative)
