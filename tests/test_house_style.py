"""The house rules a reader meets first, checked over the whole package.

Docstrings state a contract: none but a module's overview runs past 8 lines.
Measurements live in BENCHMARKS.md and commit messages, where they cannot go
stale unseen: no comment or docstring quotes a time or a measured size (a
buffer's size in KiB or MiB is a constant of the code, and may be said).
(test_startup.py checks that nothing reaches into the interpreter's exit.)
"""

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / 'autodiff_cli'
MODULES = sorted(PACKAGE.rglob('*.py'))
# A number with a unit of time, or of memory as measured: 3 ms, 0.5 µs, 120 MB.
FIGURE = re.compile(r'\d\s?(ms|µs|us|ns|MB|GB)\b')


def _ids(paths):
    return [str(p.relative_to(PACKAGE)) for p in paths]


@pytest.mark.parametrize('path', MODULES, ids=_ids(MODULES))
def test_docstrings_state_a_contract_in_at_most_8_lines(path):
    tree = ast.parse(path.read_text(encoding='utf-8'))
    long = [f'{node.name} ({len(doc.splitlines())} lines)'
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            for doc in [ast.get_docstring(node, clean=True)] if doc and len(doc.splitlines()) > 8]
    assert not long, f'{path.name}: ' + ', '.join(long)


@pytest.mark.parametrize('path', MODULES, ids=_ids(MODULES))
def test_no_comment_or_docstring_quotes_a_measurement(path):
    text = path.read_text(encoding='utf-8')
    found = [f'{tok.start[0]}: {tok.string.strip()[:70]}'
             for tok in tokenize.generate_tokens(io.StringIO(text).readline)
             if tok.type in (tokenize.COMMENT, tokenize.STRING) and FIGURE.search(tok.string)
             and (tok.type == tokenize.COMMENT or tok.string.startswith(('"""', "'''", 'r"""')))]
    assert not found, f'{path.name}: ' + '; '.join(found)

