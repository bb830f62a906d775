"""parse.py drives a table that Lark computed from grammar/adgrad.lark: check
that the shipped table is in sync with the grammar, and that the parser
accepts exactly what Lark's own parser for the grammar accepts, giving the
same trees and failing at the same token."""

import json
import random
from pathlib import Path

import pytest
from lark import Transformer_NonRecursive
from lark import __version__ as lark_version
from lark.exceptions import UnexpectedCharacters, UnexpectedToken

from autodiff_cli.language import grammar_table, parse as parse_module
from autodiff_cli.errors import AdgradError
from autodiff_cli import lower
from autodiff_cli.language.parse import _Unexpected, grammar_text, load_table

ROOT = Path(__file__).resolve().parent.parent


def shipped():
    return json.loads(Path(grammar_table.SHIPPED).read_text(encoding='utf-8'))


def test_the_shipped_table_was_built_from_the_grammar_file():
    import zlib
    assert shipped()['grammar_crc32'] == zlib.crc32(grammar_text().encode('utf-8')), \
        'grammar/adgrad.lark changed: run python -m autodiff_cli.language.grammar_table'


def test_the_shipped_table_is_what_lark_builds_now():
    table = shipped()
    if table['lark'] != lark_version:
        pytest.skip(f"table built with Lark {table['lark']}, Lark {lark_version} installed; "
                    'the comparison with Lark below still runs')
    assert grammar_table.dump(grammar_table.build(grammar_text())) == \
        Path(grammar_table.SHIPPED).read_text(encoding='utf-8')


# ---- the same language as Lark's parser ----

def _shape(children):
    """A reduction's children as both parsers see them: tokens by kind, text
    and place; values of earlier reductions as '*'."""
    return tuple((c[0], c[3], c[1]) if isinstance(c, tuple) and len(c) == 4
                 and isinstance(c[0], str) and c[0].isupper() else '*' for c in children)


class _Recorder:
    """A builder that records each reduction the driver makes, in order."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        def record(stack, size):
            # As a builder's method: the rule's children are the top of the
            # stack, replaced with its value.
            children = stack[-size:]
            self.calls.append((name, () if name in _SPLICED else _shape(children)))
            stack[-size:] = ['*']
        return record


_SPLICED = ('inputs', 'loop')


class _Reference(Transformer_NonRecursive):
    """The same record from Lark's own parse tree: it reduces in the same
    order (post-order, left to right), so the lists must be equal."""

    def __init__(self):
        super().__init__(visit_tokens=True)
        self.calls = []

    def __default_token__(self, token):
        return (token.type, token.start_pos, token.end_pos, token.value)

    def __default__(self, data, children, meta):
        if data != 'program':
            # Lark splices the list of an `input` statement's defaults into
            # it, and a loop's statements into the loop; adgrad's driver drops
            # such lists (each default or statement was lowered as it was
            # read), so the statement's own children are not compared.
            self.calls.append((str(data), () if data in _SPLICED else _shape(children)))
        return '*'


_LARK = grammar_table.lark_parser(grammar_text())


def outcome(text):
    """('ok', reductions) or ('error', kind found, position, expected terminals)."""
    recorder = _Recorder()
    try:
        parse_module.driver().parse(text, recorder)
        return 'ok', recorder.calls
    except _Unexpected as error:
        if error.token is None:
            return 'error', None, error.pos, None
        kind, start, _, _ = error.token
        return ('error', kind, None if kind == '$END' else start,
                set(error.expected) - {'_NEWLINE'})


def reference(text):
    try:
        tree = _LARK.parse(text)
    except UnexpectedCharacters as error:
        return 'error', None, error.pos_in_stream, None
    except UnexpectedToken as error:
        kind = error.token.type
        return ('error', kind, None if kind == '$END' else error.token.start_pos,
                set(error.expected) - {'_NEWLINE'})
    reference = _Reference()
    reference.transform(tree)
    return 'ok', reference.calls


PROGRAMS = [
    'x', '-x^2', '2^3^2', 'x > 0 and not y <= 2 or z != 1', 'if(x > 0, sqrt(x), 0)',
    'c = 1; c += 2; c ^= c', 'f(a, b) = a*b\ngrad f(a, b) = (b, a)\nf(x, y)',
    'g(x) = x\ngrad g(x) = out*2', 'if(if(a, b, c), d, e)', 'a < b < c', 'x += ', 'grad', '2**3**2', 'a/b*c', 'x * -y', '2^-x', '-2^-x^2', '+x - -y',
    'pow(a, b+1)', 'atan2( y ,x )', '(x+1)*y', '1e-3 + .5 + 2. + 6.02E23', 'x**-+-y',
    'input x = 2, y = 3\nh(x) = x^2\nz = h(x) * y', 'a = 1; b = a + 1; b',
    '\n\n x \n\n', 'f(\n  x,\n  y\n) = x*y\nf(1,\n2)', 'x + \\\n y', 'x # comment\n',
    'input = 3', 'x = input', 'inputs = 2; inputs', 'input x = 1; x', 'x; input y = 2; x*y',
    # errors
    '', ' ', '# only a comment', 'x*', 'x + * y', '(x', 'x)', '2x', 'x $ y', 'f(,)', 'x y',
    '[1, 2] @ [[1], [2]]', 'A.T[0, 1:] + x[::2] + x[:-1]', 'input W[2, n], x[n] = [1, 2]',
    'sum(x, axis=0)', 'x[]', 'x[1:2:3:4]', '[]', 'x.T.T', 'A @ B @ C', 'input W[2,]',
    'input', 'input x', 'input x = ', 'x = = 1', 'f(x) = ', '1 = x', 'x ** * 2', 'x***2',
    ')', 'x\n+', '(x\n+', 'sin(x', 'x^', '--', 'x;;', ';x', 'a, b', 'f(x)(y)', 'x input',
    # loops
    'for i in 0..3 { x = x + i }', 'for i in 0..3 {\n  x = 1\n\n  y = x\n}\ny',
    'for i in 1 .. 2.5e1 {}', 'for i in 0..3 { for j in 0..2 { x = j }; y = i }',
    'for i in 0..3 {', 'for i in 0..3 x = 1 }', 'for i in 0...3 { x = 1 }', 'for in 0..3 {}',
    'x = 0..3', 'for i in 0..3 { x = 1 } y', '1..2', 'for = 2',
]


@pytest.mark.parametrize('text', PROGRAMS)
def test_same_outcome_as_lark(text):
    assert outcome(text) == reference(text)


def test_samples_parse_as_lark_parses_them():
    for path in sorted((ROOT / 'samples').glob('*.ad')):
        text = path.read_text(encoding='utf-8')
        assert outcome(text) == reference(text), path.name


def _random_program(rng):
    atoms = ['x', 'y1', '_t', 'input', '2', '.5', '3e2', 'pi', 'sin(x)', 'max(x, y1)']
    pieces = [' ', '  ', '\n', ';', '+', '-', '*', '/', '^', '**', '(', ')', ',', '=', '#c\n',
              '\\\n', 'input ', 'f(', '@', '<', '<=', '==', ' and ', ' or ', 'not ', 'if(',
              '+=', 'grad ', '[', ']', ':', ',', '.T', 'input A[2, n]']
    words = []
    for _ in range(rng.randint(1, 12)):
        words.append(rng.choice(atoms) if rng.random() < 0.5 else rng.choice(pieces))
    return ''.join(words)


def _digraph_split(text, mine, lark):
    """Lark's contextual lexer reads `*=` as `*` then `=` where only an
    operator fits, and adgrad's one-pass lexer as the update `*=`: the same
    error, one character apart."""
    # Likewise `x.5`: Lark reads `.` then `5` where only `.T` fits, adgrad the number `.5`.
    return (mine[0] == lark[0] == 'error' and mine[1] in ('UPDATE', 'NUMBER')
            and lark[2] == mine[2] + 1)


def test_random_texts_have_the_same_outcome_as_lark():
    rng = random.Random(5)
    texts = [_random_program(rng) for _ in range(3000)]
    different = [t for t in texts if outcome(t) != reference(t)]
    assert [t for t in different if not _digraph_split(t, outcome(t), reference(t))] == []
    assert len(different) <= len(texts) // 10   # `y1.5` alone splits often
    assert sum(outcome(t)[0] == 'ok' for t in texts) > 100  # the sample holds valid programs too


def test_deep_nesting_does_not_recurse():
    from autodiff_cli import lower
    depth = 100_000
    graph = lower('sin(' * depth + 'x' + ')' * depth)
    assert len(graph.nodes) == depth + 1
    assert [n.op for n in graph.nodes[:2]] == ['input', 'sin']
    assert graph.nodes[-1].args == (depth - 1,)


def test_a_syntax_error_is_an_adgrad_error_with_its_column():
    with pytest.raises(AdgradError) as caught:
        lower('x + * y')
    assert caught.value.location()[1] == 5


# ---- where the table comes from ----

def test_a_missing_or_stale_table_is_a_clear_error(tmp_path, monkeypatch):
    from autodiff_cli.errors import TableError
    monkeypatch.setattr(parse_module, 'SHIPPED', str(tmp_path / 'missing.json'))
    with pytest.raises(TableError, match='rebuild it with'):
        load_table()
    stale = json.loads(Path(grammar_table.SHIPPED).read_text(encoding='utf-8'))
    stale['grammar_crc32'] += 1
    (tmp_path / 'stale.json').write_text(json.dumps(stale), encoding='utf-8')
    monkeypatch.setattr(parse_module, 'SHIPPED', str(tmp_path / 'stale.json'))
    with pytest.raises(TableError, match='another version of grammar/adgrad.lark'):
        load_table()


def test_the_library_leaves_the_cycle_collector_alone():
    import gc
    assert gc.isenabled()
    lower('x')
    assert gc.isenabled()
