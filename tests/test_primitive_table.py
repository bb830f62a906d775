"""Every row of the primitives table through every printer and every algebra.

A row must give each language a spelling, or say NO_FORM on purpose; each
spelling, run (NumPy in-process, C compiled with cc, JavaScript in node),
must compute what the row's float form computes at ordinary and edge
points; and the row's VJP must give the same cotangents over numbers, over
arrays and recorded on a tape. So a new row without a form, or with a form
that disagrees with its float form, fails here by name.
"""

import itertools
import math
import shutil
import struct
import subprocess

import pytest

from autodiff_cli.core import arrays as array_forms
from autodiff_cli.core.batch import _arrays
from autodiff_cli.core.primitives import (
    ARITHMETIC,
    COMPARISON,
    CUSTOM,
    INTERNAL_KIND,
    LOGICAL,
    NO_FORM,
    NUMBERS,
    PRIMITIVES,
    SELECT,
    STOP,
    TENSOR,
    names_of,
)
from autodiff_cli.derive import printers
from autodiff_cli.derive.record import Ref, Tape
from autodiff_cli.pictures.page import _HELPERS, JS

EDGES = (0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -3.7, 1e-10, -1e-12, 1e-300, 30.0, -30.0, 720.0,
         1e300, math.inf, -math.inf, math.nan)
PAIRS = (0.0, -0.0, 1.0, -2.5, 0.7, math.inf, -math.inf, math.nan)
# The array rows have a table of their own: tests/test_arrays_torch.py.
ROWS = sorted(name for name, row in PRIMITIVES.items() if row.kind not in (INTERNAL_KIND, TENSOR))
COMPUTED = [name for name in ROWS if PRIMITIVES[name].kind != CUSTOM]


def points(arity):
    if arity == 1:
        return [(x,) for x in EDGES]
    return list(itertools.product(PAIRS, repeat=arity))


def _ulps(a, b):
    """How many doubles apart a and b are; 0 for two nans, inf for a nan and a number."""
    if math.isnan(a) or math.isnan(b):
        return 0 if math.isnan(a) == math.isnan(b) else math.inf
    if a == b:
        return 0 if math.copysign(1, a) == math.copysign(1, b) or a != 0 else math.inf
    if math.isinf(a) or math.isinf(b):
        return math.inf
    key = lambda v: struct.unpack('<q', struct.pack('<d', v))[0] if v >= 0 \
        else -struct.unpack('<q', struct.pack('<d', -v))[0]
    return abs(key(a) - key(b))


def agree(name, form, got, point, ulps=4):
    want = float(PRIMITIVES[name].forward(*point))
    assert _ulps(float(got), want) <= ulps, f'{name}{point}: {form} gives {got!r}, the float form {want!r}'


def filled(template, names='abc'):
    return printers._fill(template, [(n, printers.ATOM) for n in names[:len(template.slots)]])


# ---- every language has a form for every row, unless the row says it has none ----

LANGUAGES = {'text': printers.ADGRAD, 'c': printers.C, 'latex': printers.LATEX,
             'numpy': printers.numpy_table()[0], 'js': JS}


@pytest.mark.parametrize('name', ROWS)
@pytest.mark.parametrize('language', sorted(LANGUAGES))
def test_every_row_has_a_form_in_every_language(name, language):
    row = PRIMITIVES[name]
    if getattr(row, language) == NO_FORM:
        assert name not in LANGUAGES[language]
        return
    template = LANGUAGES[language].get(name)
    assert template is not None, f"'{name}' has no {language} form: give its row one, or NO_FORM"
    if language != 'js':
        assert row.arity < 0 or len(template.slots) == row.arity, (name, language, template)
        assert all(f'${k}' in template.text for k in range(len(template.slots))), template


def test_the_kinds_give_the_lists_the_passes_use():
    for name in names_of(COMPARISON, LOGICAL, STOP):
        row = PRIMITIVES[name]
        args = (0.7, 1.3)[:row.arity]
        assert all(c is None for c in row.vjp(NUMBERS, 1.0, row.forward(*args), *args)), name
    for name in names_of(COMPARISON, LOGICAL):
        assert PRIMITIVES[name].forward(*(0.7, 1.3)[:PRIMITIVES[name].arity]) in (0.0, 1.0), name
    for name in names_of(SELECT):
        assert PRIMITIVES[name].vjp(NUMBERS, 1.0, 2.0, 1.0, 2.0, 3.0)[0] is None, name
    assert printers._MIRRORED == {'lt': 'gt', 'gt': 'lt', 'le': 'ge', 'ge': 'le'}


# ---- each form computes what the float form computes ----

@pytest.mark.parametrize('name', COMPUTED)
def test_the_array_form_and_the_numpy_spelling_compute_the_float_form(name):
    np, algebra = _arrays()
    row = PRIMITIVES[name]
    table, helpers = printers.numpy_table()
    namespace = {'np': np, '_arrays': array_forms}
    for source in helpers.values():
        exec(compile(source, '<helper>', 'exec'), namespace)     # the generated module's text
    code = compile(filled(table[name]), '<spelling>', 'eval')
    for point in points(row.arity):
        columns = [np.array([v], dtype=np.float64) for v in point]
        with np.errstate(all='ignore'):
            by_algebra = np.asarray(getattr(algebra, name)(*columns)).reshape(-1)[0]
            spelled = np.asarray(eval(code, namespace, dict(zip('abc', columns)))).reshape(-1)[0]
        agree(name, 'the array form', by_algebra, point)
        agree(name, '--lang numpy', spelled, point)


@pytest.mark.parametrize('name', ['tanh', 'erf', 'erfc'])
def test_a_form_of_c_s_math_per_element_takes_an_array_block_by_block(name):
    # Past a block's edge, in any layout, each entry is C's (math's) own.
    np, _ = _arrays()
    rng = np.random.default_rng(3)
    x = rng.standard_normal(2 * array_forms.BLOCK + 6) * 4
    x[[0, array_forms.BLOCK - 1, array_forms.BLOCK, -1]] = [np.nan, np.inf, -0.0, -np.inf]
    for given in (x, x.reshape(2, -1).T, x[3:4].reshape(())):
        expected = np.array([getattr(math, name)(v) for v in given.reshape(-1)])
        got = getattr(array_forms, name)(given)
        assert got.shape == given.shape and got.dtype == np.float64
        assert got.reshape(-1).tobytes() == expected.tobytes()


@pytest.mark.parametrize('name', [name for name, row in PRIMITIVES.items() if row.array_vjp])
def test_a_rule_s_array_form_gives_the_rule_s_bits_and_leaves_its_arguments(name):
    # The row's own rule over the array algebra is the reference, bit for bit,
    # at edges and in every shape a cotangent arrives in; g and out are read only.
    np, _ = _arrays()
    from autodiff_cli.core import tensors
    k, row = tensors.algebra(), PRIMITIVES[name]
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.standard_normal(40) * 3, [0.0, -0.0, 1.0, -1.0, 20.0, -20.0,
                                                      np.inf, -np.inf, np.nan]])
    out = np.asarray(getattr(k, name)(x))
    g = rng.standard_normal(out.shape)
    g[:3] = [np.inf, np.nan, 0.0]
    square_g, square = g.reshape(7, 7), out.reshape(7, 7)
    for given_g, given_out in ((g, out), (square_g, square), (square_g, square.T),
                               (square_g.T, square.T), (square_g[:, ::2], square[:, ::2]),
                               (np.broadcast_to(0.5, out.shape), out), (g[:1], out[:1]),
                               (np.asarray(g[4]), np.asarray(out[4])), (g, out[4]), (2.0, out),
                               (g, out.astype(np.float32))):
        kept = [np.array(given_g, copy=True), np.array(given_out, copy=True)]
        expected = row.vjp(k, given_g, given_out, None)
        got = getattr(array_forms, row.array_vjp)(k, given_g, given_out, None)
        assert k.rules[name] is getattr(array_forms, row.array_vjp)
        for e, r in zip(expected, got):   # the layout too: a later sum adds in its order
            r, e = np.asarray(r), np.asarray(e)
            assert (r.shape, r.strides, r.dtype) == (e.shape, e.strides, e.dtype)
            assert r.tobytes() == e.tobytes()
        assert np.array_equal(given_g, kept[0], equal_nan=True)
        assert np.array_equal(given_out, kept[1], equal_nan=True)


CC = shutil.which('cc') or shutil.which('gcc')
NODE = shutil.which('node')


def _c_program():
    lines = ['#include <math.h>', '#include <stdio.h>', '#include <stdlib.h>',
             *printers.C_HELPERS.values()]
    for name in COMPUTED:
        text = filled(printers.C[name])
        lines.append(f'static double op_{name}(double a, double b, double c) '
                     f'{{ (void)a; (void)b; (void)c; return {text}; }}')
    lines.append('int main(int argc, char **argv) {')
    lines.append('    char *op = argv[1]; double a = strtod(argv[2], 0), b = strtod(argv[3], 0), '
                 'c = strtod(argv[4], 0); (void)argc;')
    for name in COMPUTED:
        lines.append(f'    if (!strcmp(op, "{name}")) printf("%a\\n", op_{name}(a, b, c));')
    lines.append('    return 0;\n}')
    return '\n'.join(['#include <string.h>'] + lines) + '\n'


@pytest.fixture(scope='module')
def c_binary(tmp_path_factory):
    if CC is None:
        pytest.skip('no C compiler')
    folder = tmp_path_factory.mktemp('c')
    (folder / 'ops.c').write_text(_c_program())
    subprocess.run([CC, '-std=c99', '-Wall', '-Werror', '-Wno-unused-function', '-O0',
                    '-o', str(folder / 'ops'), str(folder / 'ops.c'), '-lm'], check=True)
    return folder / 'ops'


@pytest.mark.parametrize('name', COMPUTED)
def test_the_c_spelling_computes_the_float_form(name, c_binary):
    row = PRIMITIVES[name]
    for point in points(row.arity):
        args = [repr(v) for v in point] + ['0'] * (3 - len(point))
        out = subprocess.run([str(c_binary), name, *args], capture_output=True, text=True,
                             check=True).stdout.strip()
        agree(name, 'C', float.fromhex(out) if 'nan' not in out else math.nan, point)


@pytest.fixture(scope='module')
def js_results():
    """{op: [result per point]} from node, running the page's helpers and templates."""
    if NODE is None:
        pytest.skip('node is not installed')
    cases = {name: [list(p) for p in points(PRIMITIVES[name].arity)] for name in COMPUTED
             if name in JS}
    show = "function show(v) { return Object.is(v, -0) ? '-0' : String(v); }"
    functions = ',\n'.join(f'{name!r}: function (a, b, c) {{ return {JS[name]}; }}'
                           for name in cases)
    data = repr({name: [[_js_number(v) for v in p] for p in ps] for name, ps in cases.items()})
    script = f'''{_HELPERS}
{show}
var ops = {{{functions}}};
var cases = {data};
var out = {{}};
for (var name in cases) out[name] = cases[name].map(function (p) {{
  var v = p.map(Number); return show(ops[name](v[0], v[1], v[2])); }});
console.log(JSON.stringify(out));'''
    import json
    result = subprocess.run([NODE, '-e', script], capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


def _js_number(v):
    return 'NaN' if math.isnan(v) else ('Infinity' if v == math.inf else
                                 '-Infinity' if v == -math.inf else repr(v))


@pytest.mark.parametrize('name', COMPUTED)
def test_the_javascript_spelling_computes_the_float_form(name, js_results):
    if PRIMITIVES[name].js == NO_FORM:
        pytest.skip(f'{name} has no JavaScript form, on purpose')
    assert name in js_results, f'{name} has no JavaScript form'
    for point, got in zip(points(PRIMITIVES[name].arity), js_results[name]):
        agree(name, 'JavaScript', float(got.replace('Infinity', 'inf')), point, ulps=8)


@pytest.mark.parametrize('name', sorted(set(COMPUTED) - set(names_of(ARITHMETIC, COMPARISON))))
def test_latex_spells_a_function_by_its_row(name):
    text = filled(printers.LATEX[name], 'xyz')
    assert '$' not in text and text.count('{') == text.count('}'), text
    assert all(v in text for v in 'xyz'[:PRIMITIVES[name].arity]), text


# ---- the VJP over every algebra ----

@pytest.mark.parametrize('name', COMPUTED)
def test_the_vjp_is_the_same_over_numbers_arrays_and_a_tape(name):
    np, algebra = _arrays()
    row = PRIMITIVES[name]
    for point in points(row.arity)[::3]:
        out = row.forward(*point)
        by_numbers = row.vjp(NUMBERS, 1.5, out, *point)
        with np.errstate(all='ignore'):
            columns = [np.array([v]) for v in point]
            by_arrays = row.vjp(algebra, np.array([1.5]), np.array([out]), *columns)
        tape = Tape(simplify=False, exact=True)
        inputs = [tape.input(n) for n in 'abc'[:row.arity]]
        recorded = row.vjp(tape, 1.5, tape.apply(name, *inputs), *inputs)
        for k, (n, a, r) in enumerate(zip(by_numbers, by_arrays, recorded)):
            # A choice's untaken branch: None at a point, a masked 0 over arrays and on a tape.
            want = 0.0 if n is None and row.kind == SELECT and k > 0 else n
            assert (want is None) == (a is None) == (r is None), (name, point, k)
            if want is None:
                continue
            by_array = float(np.asarray(a).reshape(-1)[0])
            assert _ulps(by_array, float(want)) <= 4, (name, point, k, 'arrays', by_array, want)
            replayed = _evaluate(tape, r, dict(zip('abc', point)))
            assert _ulps(replayed, float(want)) <= 4, (name, point, k, 'tape', replayed, want)


def _evaluate(tape, x, point):
    """The value of a recorded node at the point, by the float forms."""
    if not isinstance(x, Ref):
        return float(x)
    values = []
    for node in tape.nodes[:int(x) + 1]:
        if node.op == 'input':
            values.append(point[node.name])
        elif node.op == 'const':
            values.append(node.value)
        else:
            values.append(PRIMITIVES[node.op].forward(*(values[a] for a in node.args)))
    return float(values[int(x)])
