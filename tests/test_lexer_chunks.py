"""The lexer reads long texts a chunk at a time (parse._CHUNK characters):
tokens must not depend on where the chunks are cut."""

import random
from itertools import chain
from pathlib import Path

import pytest

from autodiff_cli.language import parse

ROOT = Path(__file__).resolve().parent.parent


def tokens(text):
    return list(chain.from_iterable(parse.driver().chunks(text)))


def texts():
    rng = random.Random(7)
    pieces = ['x', 'y1', '_t', 'input', '2', '.5', '3e2', '1e+5', '1e', '1.', 'e+', '**', '*=',
              '<=', '==', '=', ' ', '   ', '\t', '\n', ';', '#c d\n', '# c', '\\\n', '\\\r\n',
              '\\', '\r', '(', ')', ',', '@', 'é', 'if', 'not', '-', '+', '/', '^']
    made = [''.join(rng.choice(pieces) for _ in range(rng.randint(1, 200))) for _ in range(300)]
    return made + [path.read_text(encoding='utf-8') for path in sorted((ROOT / 'samples').glob('*.ad'))]


@pytest.mark.parametrize('chunk', [1, 2, 3, 7, 64, 65, 100, 257])
def test_tokens_do_not_depend_on_the_chunk_size(monkeypatch, chunk):
    every = texts()
    whole = [tokens(text) for text in every]
    monkeypatch.setattr(parse, '_CHUNK', chunk)
    # the margin must cover the farthest any terminal reads past its end (3: `1e+`)
    monkeypatch.setattr(parse, '_MARGIN', max(4, min(parse._MARGIN, chunk)))
    for text, expected in zip(every, whole):
        assert tokens(text) == expected, text


def test_a_token_longer_than_a_chunk(monkeypatch):
    text = 'x' * 1000 + ' + 1 # ' + 'c' * 500 + '\n' + 'y*2\n' * 20
    expected = tokens(text)
    monkeypatch.setattr(parse, '_CHUNK', 16)
    monkeypatch.setattr(parse, '_MARGIN', 8)
    assert tokens(text) == expected
    assert [t[0] for t in expected] == ['NAME', 'PLUS', 'NUMBER', '_NEWLINE'] + [
        'NAME', 'STAR', 'NUMBER', '_NEWLINE'] * 20 + ['$END']


def test_new_lines_inside_parentheses_are_dropped_across_chunks(monkeypatch):
    text = 'f(\n' + 'x +\n' * 50 + '1)\ny\n'
    expected = tokens(text)
    monkeypatch.setattr(parse, '_CHUNK', 10)
    monkeypatch.setattr(parse, '_MARGIN', 4)
    assert tokens(text) == expected
    assert [t[0] for t in expected].count('_NEWLINE') == 2


def test_a_piece_has_the_same_kind_when_met_first_and_again():
    # New pieces are classified as they are first met; long ones (a comment,
    # a long name) are not remembered, so they are classified every time.
    name, comment = 'n' * 100, '# ' + 'c' * 100
    text = f'{name} + a1 {comment}\n{name} + a1 {comment}\n'
    kinds = [t[0] for t in tokens(text)]
    assert kinds == ['NAME', 'PLUS', 'NAME', '_NEWLINE'] * 2 + ['$END']
    assert [t[3] for t in tokens(text)][:3] == [name, '+', 'a1']


def _plain_texts():
    """Texts with no comment and no `\\`, with new lines in and out of parentheses."""
    rng = random.Random(11)
    pieces = ['x', '2', ' ', '\n', '\n', ';', '(', ')', ',', '+', 'f(', '\r\n', '=', '))', '((']
    return [''.join(rng.choice(pieces) for _ in range(rng.randint(1, 300))) for _ in range(400)]


@pytest.mark.parametrize('chunk', [1, 5, 64, 1 << 16])
def test_parentheses_counted_on_the_text_keep_the_same_new_lines(monkeypatch, chunk):
    """Where a chunk holds no '#' and no '\\', the lexer counts parentheses
    on its characters (_depth_after) instead of on its pieces' kinds: the
    new lines it keeps must be the same."""
    every = _plain_texts()
    monkeypatch.setattr(parse, '_CHUNK', chunk)
    monkeypatch.setattr(parse, '_MARGIN', max(4, min(parse._MARGIN, chunk)))
    counted = [tokens(text) for text in every]
    monkeypatch.setattr(parse, '_depth_after', lambda text, pos, end, depth: None)
    assert [tokens(text) for text in every] == counted
    assert sum(kind == '_NEWLINE' for t in counted for kind, *_ in t) > 1000
