"""The hints a newcomer needs (issue 31): each common mistake of a new-user
trial, as one row: the command line, the exit code, and what stderr must
say instead of a bare "unexpected ..." or a wrong guess. Errors stay one
line, plus the source and caret where a column applies."""

import importlib.util
from pathlib import Path

import pytest

from tests.helpers import run_main

SAMPLES = Path(__file__).resolve().parent.parent / 'samples'
HEADER_ONLY = {'h.csv': 'x,y\n'}


def needs(module):
    return pytest.mark.skipif(importlib.util.find_spec(module) is None,
                              reason=f'needs {module}')


def row(argv, exit, says, files=None, marks=()):
    return pytest.param(argv, exit, says, files or {}, marks=marks, id=' '.join(argv)[:60])


ROWS = [
    # 1. wrong hints: a product only after a real number
    row(['eval', 'x', 'x=0x10'], 2, 'hexadecimal is not read: write 16'),
    row(['eval', 'x', 'x=1_000'], 2, "write 1000, without '_'"),
    row(['eval', 'input x = 1; for i in 0..3 x = x*2 }; x'], 2,
        "the loop's body goes in { }: for i in 0..3 { ... }"),
    # 2. Python's range
    row(['grad', 'input x=1; for i in range(3) { x = x*2 }; x'], 2,
        'there is no range(): loops are written for i in 0..3 { ... }'),
    row(['eval', 'input x = 1; for i in 0...3 { x = x + 1 }; x'], 2,
        'a range has two dots, not three: a..b, such as 0..3'),
    row(['eval', 'input x = 1; for i in 0..3 { x = x + i }; i'], 2,
        "no value for 'i' (a loop index exists only inside its loop)"),
    # 3. options in the wrong place, of another command, in capitals, with a value
    row(['--json', 'grad', 'x^2', 'x=3'], 2,
        "options go after the command: adgrad grad 'x^2' x=3 --json"),
    row(['diff', 'x^2', '--strict'], 2, '--strict is an option of eval, grad'),
    row(['grad', 'x^2', 'x=1', '--pass', 'forward'], 2, '--pass is an option of render, not of grad'),
    row(['render', 'x^2', 'x=1', '--pass', 'backwards', '-o', 'p.svg'], 2,
        "did you mean 'backward'?"),
    row(['grad', 'x^2', 'x=1', '--format', 'CSV'], 0, ''),
    row(['grad', 'x^2', 'x=1', '--json=true'], 2, '--json takes no value: write --json alone'),
    # 4. an expression and -f
    row(['grad', 'x*y', '-f', str(SAMPLES / 'product.ad')], 2,
        'give the program as an expression or with -f, not both'),
    # 5. missing hints
    row(['eval', '2(x+1)', 'x=1'], 2, 'write 2*(x+1) for a product'),
    row(['eval', '(x+1)(x-1)', 'x=1'], 2, 'write (x+1)*(x-1) for a product'),
    row(['eval', 'x y', 'x=1', 'y=1'], 2, 'write x*y for a product'),
    row(['eval', 'x+1)', 'x=1'], 2, "there is no '(' for this ')'"),
    row(['eval', '1,5'], 2, "a decimal point is '.': write 1.5 (and statements are separated by ';')"),
    row(['eval', 'x=[1 2 3]; x'], 2, "separate entries with ','"),
    row(['eval', '|x|', 'x=1'], 2, 'write abs(x) for |x|'),
    row(['eval', 'x!', 'x=1'], 2, 'there is no factorial'),
    row(['eval', 'x > 0 ? x : 1', 'x=1'], 2, 'write if(x > 0, x, 1) for x > 0 ? x : 1'),
    row(['eval', '// comment'], 2, "comments start with '#'"),
    row(['eval', '1 < 2 < 3'], 2, 'comparisons do not chain: write 1 < 2 and 2 < 3'),
    row(['eval', 'if(x > 0, 1)', 'x=1'], 2, 'if takes 3 arguments: if(condition, then, else)'),
    row(['eval', 'sin()'], 2, 'sin() takes 1 argument'),
    row(['eval', 'input x; x'], 2,
        'an input needs a default (input x = 1), or no declaration at all'),
    row(['eval', 'x', 'x=-1..1'], 2, 'x=-1..1 is a range, which only adgrad plot takes'),
    row(['grad', 'x = x + 1', 'x=1'], 2, 'to start from a value, declare it: input x = 1'),
    # 6. names in ASCII
    *[row(['eval', text, 'x=1'], 2, f'names use ASCII letters, digits and _: write {ascii}')
      for text, ascii in [('α*2', 'alpha'), ('café', 'cafe'), ('x₁', 'x1'), ('Δx', 'Delta_x'),
                          ('ｘ', 'x')]],
    # 7. a data file of a header only
    row(['grad', 'mean((w*x-y)^2)', '--data', 'h.csv', 'w=1'], 2, 'h.csv has no rows',
        HEADER_ONLY),
    row(['grad', 'x*y', '--points', 'h.csv'], 0, 'warning: the points have no rows', HEADER_ONLY),
    row(['check', 'x*y', '--points', 'h.csv'], 0, 'warning: the points have no rows', HEADER_ONLY),
    # 8. plot's ranges
    row(['plot', 'x^2', 'x=-1...1', '-o', 'p.png'], 2, 'with two dots', marks=needs('matplotlib')),
    row(['plot', 'log(x)', 'x=-1..-0.5', '-o', 'p.png'], 0,
        'warning: f is not finite anywhere on x=-1..-0.5', marks=needs('matplotlib')),
    # 9. no minimum
    row(['minimize', 'x', 'x=0'], 1, 'f seems unbounded below', marks=needs('scipy')),
    # 10. redundant parameters
    row(['fit', 'a*x + b*x', '--data', str(SAMPLES / 'misra1a.csv'), '--target', 'y', 'a=1',
         'b=1'], 1, 'the model may not depend on them separately, or start nearer the data',
        marks=needs('scipy')),
    # 11. hessian and check warn as grad does, and take --strict
    row(['hessian', 'exp(x)', 'x=1000'], 0, 'warning: exp(x) (node 1) is inf'),
    row(['hessian', 'log(x)', 'x=-1', '--strict'], 1, 'error: log(x) (node 1) is nan'),
    row(['hessian', 'sqrt(x)', 'x=0'], 0, 'warning: the Hessian entry'),
    row(['check', 'log(x)', 'x=-1', '--strict'], 1, 'the function or its derivative is not finite'),
]


@pytest.mark.parametrize('argv, exit, says, files', ROWS)
def test_a_common_mistake_says_what_to_write(argv, exit, says, files, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    run = run_main(argv)
    assert run.code == exit, run.err
    assert says in run.err, run.err
    errors = [line for line in run.err.splitlines() if line.startswith('adgrad: error:')]
    assert len(errors) == (exit != 0), run.err
    if exit == 2:   # one line, with the source and its caret where a column applies
        assert run.out == '' and run.err.count('\n') in (1, 3), run.err
    assert 'Traceback' not in run.err


def test_a_product_is_hinted_only_after_a_real_number():
    for argv in (['eval', 'x', 'x=0x10'], ['eval', 'x', 'x=1_000'],
                 ['eval', 'input x = 1; for i in 0..3 x = x*2 }; x']):
        assert 'for a product' not in run_main(argv).err
