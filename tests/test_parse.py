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
from autodiff_cli.language.parse import ToSyntax, _Unexpected, grammar_text, load_table, parse

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

class _Reference(Transformer_NonRecursive):
    """Lark's parse tree, through the same transformer methods."""

    def __default_token__(self, token):
        return (token.type, token.start_pos, token.end_pos, token.value)


for _name in [n for n in vars(ToSyntax) if not n.startswith('_')]:
    setattr(_Reference, _name, lambda self, children, m=getattr(ToSyntax(), _name): m(children))

_LARK = grammar_table.lark_parser(grammar_text())


def outcome(text):
    """('ok', tree) or ('error', kind found, position, expected terminals)."""
    try:
        return 'ok', parse_module._parser().parse(text)
    except _Unexpected as error:
        if error.token is None:
            return 'error', None, error.pos, None
        kind, start, _, _ = error.token
        return ('error', kind, None if kind == '$END' else start,
                set(error.expected) - {'_NEWLINE'})


def reference(text):
    try:
        return 'ok', _Reference(visit_tokens=True).transform(_LARK.parse(text))
    except UnexpectedCharacters as error:
        return 'error', None, error.pos_in_stream, None
    except UnexpectedToken as error:
        kind = error.token.type
        return ('error', kind, None if kind == '$END' else error.token.start_pos,
                set(error.expected) - {'_NEWLINE'})


PROGRAMS = [
    'x', '-x^2', '2^3^2', '2**3**2', 'a/b*c', 'x * -y', '2^-x', '-2^-x^2', '+x - -y',
    'pow(a, b+1)', 'atan2( y ,x )', '(x+1)*y', '1e-3 + .5 + 2. + 6.02E23', 'x**-+-y',
    'input x = 2, y = 3\nh(x) = x^2\nz = h(x) * y', 'a = 1; b = a + 1; b',
    '\n\n x \n\n', 'f(\n  x,\n  y\n) = x*y\nf(1,\n2)', 'x + \\\n y', 'x # comment\n',
    'input = 3', 'x = input', 'inputs = 2; inputs', 'input x = 1; x', 'x; input y = 2; x*y',
    # errors
    '', ' ', '# only a comment', 'x*', 'x + * y', '(x', 'x)', '2x', 'x @ y', 'f(,)', 'x y',
    'input', 'input x', 'input x = ', 'x = = 1', 'f(x) = ', '1 = x', 'x ** * 2', 'x***2',
    ')', 'x\n+', '(x\n+', 'sin(x', 'x^', '--', 'x;;', ';x', 'a, b', 'f(x)(y)', 'x input',
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
              '\\\n', 'input ', 'f(', '@']
    words = []
    for _ in range(rng.randint(1, 12)):
        words.append(rng.choice(atoms) if rng.random() < 0.5 else rng.choice(pieces))
    return ''.join(words)


def test_random_texts_have_the_same_outcome_as_lark():
    rng = random.Random(5)
    texts = [_random_program(rng) for _ in range(3000)]
    assert [t for t in texts if outcome(t) != reference(t)] == []
    assert sum(outcome(t)[0] == 'ok' for t in texts) > 100  # the sample holds valid programs too


def test_deep_nesting_does_not_recurse():
    depth = 100_000
    tree = parse('sin(' * depth + 'x' + ')' * depth)[0]
    for _ in range(depth):
        tree = tree[4][0]
    assert tree == ('var', 4 * depth, 4 * depth + 1, 'x')


def test_a_syntax_error_is_an_adgrad_error_with_its_column():
    with pytest.raises(AdgradError) as caught:
        parse('x + * y')
    assert caught.value.location()[1] == 5


# ---- where the table comes from ----

def test_a_missing_or_stale_table_is_a_clear_error(tmp_path, monkeypatch):
    from autodiff_cli.language.parse import TableError
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
    parse('x')
    assert gc.isenabled()
