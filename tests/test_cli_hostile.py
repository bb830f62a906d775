"""The command line against hostile input (issue 12): every repro is a row with
its exit code and what stdout and stderr must hold. Streams that are closed,
full or gone, and encodings, need a real process: those rows run the installed
script through bash; the rest run in-process through main()."""

import io
import json
import os
import shutil
import subprocess
import sys

import pytest

from autodiff_cli.cli.context import Environment, printable
from autodiff_cli.errors import AdgradError, CheckFailed, NumericalError, UsageError
from autodiff_cli.language.lower import MAX_NODES

needs_dot = pytest.mark.skipif(shutil.which('dot') is None, reason='Graphviz is not installed')


def _script():
    found = shutil.which('adgrad', path=os.path.dirname(sys.executable)) or shutil.which('adgrad')
    return found or f'{sys.executable} -m autodiff_cli'


def _one_error(err):
    """stderr holds one error line, then at most a source line and its caret."""
    lines = err.splitlines()
    return lines[0].startswith('adgrad: error: ') and len(lines) in (1, 3)


LONG_NAME = 'q' * 100_000

# (id, bash command with ADGRAD for the script, exit code, stdout, stderr):
# stdout and stderr are the exact text, a check to pass, or None where the
# stream is not captured (redirected or closed by the command itself).
PROCESS_ROWS = [
    ('-f value starting with -', "ADGRAD grad -f -prog.ad x=2", 0, 'value\t4.0\nd_x\t4.0\n', ''),
    ('--points value starting with -', "ADGRAD grad 'x*y' --points -p.csv", 0,
     'x,y,value,d_x,d_y\n1,2,2.0,2.0,1.0\n', ''),
    ('-o value starting with -', "ADGRAD render x x=1 --format dot -o -x.gv && test -s ./-x.gv",
     0, '', ''),
    pytest.param('--steps value starting with -',
                 "ADGRAD render 'x*y' x=1 y=2 --steps -st && test -s ./-st/index.html", 0, '', '',
                 marks=needs_dot),
    ('a negative number with an exponent', 'ADGRAD eval -5e3', 0, '-5000.0\n', ''),
    ('a negative number ending in a point', 'ADGRAD eval -1.', 0, '-1.0\n', ''),
    ('a negative number with E', 'ADGRAD eval -6.02E23', 0, '-6.02e+23\n', ''),
    ('stdin closed, program from stdin', 'ADGRAD eval - <&-', 2, '',
     'adgrad: error: cannot read <stdin>: standard input is closed\n'),
    ('stdin closed, not needed', 'ADGRAD eval 1 <&-', 0, '1.0\n', ''),
    ('stdout closed', 'ADGRAD eval 1 >&-', 2, None,
     'adgrad: error: cannot write the output: standard output is closed\n'),
    ('stderr closed, an error: nothing on stdout', 'ADGRAD eval x 2>&-', 2, '', ''),
    ('stderr closed, no error', 'ADGRAD eval 1 2>&-', 0, '1.0\n', ''),
    ('stdout full', 'ADGRAD eval 1 >/dev/full', 2, None,
     'adgrad: error: cannot write the output: No space left on device\n'),
    ('--help into a full disk', 'ADGRAD eval --help >/dev/full', 2, None,
     'adgrad: error: cannot write the output: No space left on device\n'),
    ('stdout and stderr full', 'ADGRAD eval 1 >/dev/full 2>/dev/full', 2, None, ''),
    ('a table into a closed pipe',
     "ADGRAD grad 'x*y' x=1 y=2 --nodes --format table | true; exit ${PIPESTATUS[0]}", 0, '', ''),
    ('plain lines into a closed pipe',
     "ADGRAD grad -f big.ad --nodes | head -1; exit ${PIPESTATUS[0]}", 0, 'value\t3000.0\n', ''),
    ('a Latin-1 terminal: d/dx for ∂',
     "PYTHONIOENCODING=latin-1 ADGRAD grad 'x*y' x=1 y=2 --nodes --format table", 0,
     lambda out: 'df/dx' in out and 'df/dnode' in out and '∂' not in out and '\\u' not in out, ''),
    ('a Latin-1 terminal, plain', "PYTHONIOENCODING=latin-1 ADGRAD grad 'x' x=1", 0,
     'value\t1.0\nd_x\t1.0\n', ''),
    ('bad UTF-8 on stdin', r"printf 'x*\351' | ADGRAD eval -", 2, '',
     'adgrad: error: cannot read <stdin>: byte 2 is not UTF-8 text\n'),
    ('bad UTF-8 in a file', 'ADGRAD eval -f bad.ad', 2, '',
     'adgrad: error: cannot read bad.ad: byte 2 is not UTF-8 text\n'),
    ('a 100,000-character unknown name', 'ADGRAD eval "$LONG_NAME"', 2, '',
     lambda err: _one_error(err) and len(err) < 700 and '…' in err),
    ('a 100,000-character unused binding', 'ADGRAD eval 1 "$LONG_NAME=1"', 0, '1.0\n',
     lambda err: err.startswith('adgrad: warning: ') and len(err) < 300),
    ('the shell completion still works', 'ADGRAD completion bash', 0,
     lambda out: 'eval' in out and '--wrt' in out, ''),
] + [
    # Every subcommand and every format into a full disk, a closed stdout and a
    # closed stdin: exit 2 and one line each, never 70 nor Python's noise.
    (f'/dev/full, every format of {name}',
     f'for f in {" ".join(formats)}; do ADGRAD {command} $f >/dev/full; echo "$f $?"; done', 0,
     ''.join(f'{f} 2\n' for f in formats),
     'adgrad: error: cannot write the output: No space left on device\n' * len(formats))
    for name, command, formats in (
        ('eval', "eval 'x*y' x=1 y=2 --format", ('table', 'plain', 'json', 'jsonl', 'csv', 'tsv')),
        ('grad --nodes', "grad 'x*y' x=1 y=2 --nodes --format",
         ('table', 'plain', 'json', 'jsonl', 'csv', 'tsv')),
        ('a batch', "grad 'x*y' --points ./-p.csv --format", ('table', 'plain', 'json', 'jsonl', 'csv', 'tsv')),
        ('render', "render 'x*y' x=1 y=2 -o - --format", ('dot', 'text')),
        ('diff', "diff 'x*y' --lang", ('adgrad', 'numpy', 'c', 'latex')),
        ('hessian', "hessian 'x*y' x=1 y=2 --format", ('table', 'plain', 'json', 'csv', 'tsv')),
        ('check', "check 'x*y' x=1 y=2 --format", ('table', 'plain', 'json', 'csv', 'tsv')),
    )
] + [
    (f'stdout closed, {command.split()[0]}', f'ADGRAD {command} >&-', 2, None,
     'adgrad: error: cannot write the output: standard output is closed\n')
    for command in ("diff 'x*y'", "hessian 'x*y' x=1 y=2", "check 'x*y' x=1 y=2",
                    "render 'x*y' x=1 y=2 --format text -o -", "grad 'x*y' --points ./-p.csv",
                    'completion bash')
] + [
    (f'stdin closed, {command.split()[0]}', f'ADGRAD {command} <&-', 2, '',
     'adgrad: error: cannot read <stdin>: standard input is closed\n')
    for command in ('diff -', 'hessian - x=1', 'check - x=1', 'render - x=1 --format text -o -',
                    "grad 'x*y' --points -", 'grad -f - x=1')
] + [
    (f'stderr closed, an error in {command.split()[0]}', f'ADGRAD {command} 2>&-', 2, '', '')
    for command in ("diff 'x+'", "hessian 'x+'", "check 'x+'", "render 'x+' -o -",
                    'grad x --points nothing.csv')
] + [
    (f'stray bytes in a comment, {fmt}',
     f"ADGRAD grad \"$(printf '(x # \\377\\n + y)')\" x=1 y=2 --nodes --format {fmt}", 0,
     # a comment is not node text: its bytes never reach the output
     lambda out: '#' not in out and '+ y' in out, '')
    for fmt in ('table', 'plain', 'json', 'jsonl', 'csv', 'tsv')
]


@pytest.mark.parametrize('name, command, code, out, err', PROCESS_ROWS,
                         ids=[getattr(r, 'values', r)[0] for r in PROCESS_ROWS])
def test_hostile_process(tmp_path, name, command, code, out, err):
    (tmp_path / '-prog.ad').write_text('x^2\n')
    (tmp_path / '-p.csv').write_text('x,y\n1,2\n')
    (tmp_path / 'bad.ad').write_bytes(b'x*\xe9')
    (tmp_path / 'big.ad').write_text('input ' + ', '.join(f'x{i} = 1' for i in range(3000))
                                     + '\n' + '+'.join(f'x{i}' for i in range(3000)))
    environ = {k: v for k, v in os.environ.items() if k not in ('PYTHONUNBUFFERED', 'PYTHONIOENCODING')}
    environ['LONG_NAME'] = LONG_NAME
    done = subprocess.run(['bash', '-c', command.replace('ADGRAD', _script())], cwd=tmp_path,
                          capture_output=True, env=environ, timeout=60)
    stdout = done.stdout.decode('utf-8', 'surrogateescape')
    stderr = done.stderr.decode('utf-8', 'surrogateescape')
    assert done.returncode == code, stderr
    for stream, expected in ((stdout, out), (stderr, err)):
        if callable(expected):
            assert expected(stream), stream[:2000]
        elif expected is not None:
            assert stream == expected
    for noise in ('Traceback', 'Exception ignored', 'internal error'):
        assert noise not in stderr


# (argv, exit code, stdout, stderr) run in-process; checks as above.
ROWS = [
    (['grad', 'x + d_x', 'x=2', 'd_x=5', '--format', 'jsonl'], 2, '',
     "adgrad: error: the variable 'd_x' has the name of an output column, which --format jsonl "
     'would repeat; rename it, or use --format json or plain\n'),
    (['grad', 'x + d_x', 'x=2', 'd_x=5', '--format', 'csv'], 2, '', lambda e: "'d_x'" in e),
    (['eval', '2*value', 'value=3', '--format', 'tsv'], 2, '', lambda e: "'value'" in e),
    (['grad', 'x + d_x', 'x=2', 'd_x=5', '--format', 'json'], 0,
     '{"value": 7.0, "gradient": {"d_x": 1.0, "x": 1.0}}\n', ''),
    (['grad', 'x*y', 'x=2', 'y=3', '--format', 'csv'], 0, 'x,y,value,d_x,d_y\n2.0,3.0,6.0,3.0,2.0\n', ''),
    (['grad', 'x*y', 'x=2', 'y=3', '--format', 'jsonl', '--wrt', 'y'], 0,
     '{"x":2.0,"y":3.0,"value":6.0,"d_y":2.0}\n', ''),
    (['grad', 'x*y', 'x=1', 'y=2', '--wrt', ','], 2, '',
     "adgrad: error: --wrt ',' has an empty name: list variables as X,Y\n"),
    (['grad', 'x*y', 'x=1', 'y=2', '--wrt', 'x,'], 2, '', lambda e: 'empty name' in e),
    (['eval', '-fprog.ad'], 2, '',
     "adgrad: error: '-fprog.ad' is not an expression: write -f prog.ad, with a space "
     "(put -- before an expression that starts with '-f')\n"),
    (['eval', '-f=prog.ad'], 2, '', lambda e: 'write -f prog.ad' in e),
    (['render', 'x', '-ox.svg'], 2, '', lambda e: 'write -o x.svg' in e),
    (['eval', '-factor*x', 'factor=2', 'x=3'], 0, '-6.0\n', ''),
    (['eval', '-f/2', 'f=3'], 0, '-1.5\n', ''),
    (['eval', 'x', 'x=y=2'], 2, '',
     "adgrad: error: bad binding 'x=y=2': the value must be one expression, such as x=2 "
     'or x=pi/4\n'),
    (['eval', 'x', 'x=1;2'], 2, '', lambda e: 'one expression' in e),
    (['eval', 'x', 'x=-2.5'], 0, '-2.5\n', ''),
    (['render', 'x', 'x=1', '--max-nodes', '10000000000000'], 2, '',
     "adgrad: error: argument --max-nodes: '10000000000000' is not a whole number from 1 to "
     f'{MAX_NODES:,} (see adgrad render --help)\n'),
    (['render', 'x', 'x=1', '--max-nodes', '²'], 2, '', _one_error),
    (['render', 'x', 'x=1', '--max-nodes', '0'], 2, '', _one_error),
    (['render', 'x', 'x=1', '--max-nodes', '-5'], 2, '', lambda e: "'-5' is not" in e),
    (['eval', 'x', 'x=1', '--format', '-x'], 2, '', lambda e: "invalid choice: '-x'" in e),
    (['eval', 'x', 'x=1', '--format', '--'], 2, '', lambda e: "invalid choice: '--'" in e),
    (['eval', '-f', '--'], 2, '', 'adgrad: error: cannot read --: No such file or directory\n'),
    (['grad', 'x', 'x=1', '--wrt', '--'], 2, '', "adgrad: error: '--' is not a variable of the "
     'expression; its variables are x\n'),
    (['grad', '(x #[/]\n+1)', 'x=1', '--format', 'table', '--nodes'], 0,
     lambda out: out.count('x +1') == 2 and '[/]' not in out, ''),
    (['eval', '(x #[note] see a[i] [bold]b[/bold] :smile:\n+ 1)', 'x=1', '--format', 'table'], 0,
     lambda out: 'x + 1' in out and 'note' not in out, ''),
    (['grad', '(x # \udcff\n+ y)', 'x=1', 'y=2', '--nodes'], 0,
     lambda out: 'x + y' in out and 'udcff' not in out, ''),
    (['eval', 'x\udcff', 'x=1'], 2, '',
     "adgrad: error: unexpected character '\\udcff' (column 2)\n  x?\n   ^\n"),
    (['eval', 'x + \x1b[31m', 'x=1'], 2, '', lambda e: '\x1b' not in e and _one_error(e)),
    (['eval', LONG_NAME], 2, '', lambda e: _one_error(e) and len(e) < 700),
    (['eval', 'x', f'{LONG_NAME}=1', 'x=1'], 0, '1.0\n', lambda e: len(e) < 300),
]


@pytest.mark.parametrize('argv, code, out, err', ROWS, ids=[' '.join(r[0])[:50] for r in ROWS])
def test_hostile_in_process(run_cli, argv, code, out, err):
    got_code, got_out, got_err = run_cli(*argv)
    assert got_code == code, got_err
    for stream, expected in ((got_out, out), (got_err, err)):
        if callable(expected):
            assert expected(stream), stream[:2000]
        else:
            assert stream == expected
    if code == 2:
        assert _one_error(got_err)


def test_a_file_named_like_an_attached_option_value(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / 'actor').write_text('1')
    code, out, err = run_cli('eval', '-factor')   # an expression, but also -f with a file
    assert (code, out) == (2, '') and 'write -f actor' in err
    assert run_cli('eval', '--', '-factor', 'factor=2')[:2] == (0, '-2.0\n')


def test_a_closed_stdin_read_in_process(run_cli, monkeypatch):
    monkeypatch.setattr(sys, 'stdin', None)
    assert run_cli('eval', '-') == (2, '', 'adgrad: error: cannot read <stdin>: standard input '
                                           'is closed\n')


def test_stdin_bytes_are_decoded_like_a_file(run_cli, monkeypatch, tmp_path):
    class Stdin:
        buffer = io.BytesIO(b'\xef\xbb\xbfx * 2 + \xff')
    monkeypatch.setattr(sys, 'stdin', Stdin)
    path = tmp_path / 'p.ad'
    path.write_bytes(b'\xef\xbb\xbfx * 2 + \xff')
    from_stdin, from_file = run_cli('eval', '-')[2], run_cli('eval', '-f', str(path))[2]
    assert from_stdin == 'adgrad: error: cannot read <stdin>: byte 11 is not UTF-8 text\n'
    assert from_file == from_stdin.replace('<stdin>', str(path))


def test_printable_caps_words_escapes_controls_and_spells_d_without_a_partial_sign():
    latin1 = io.TextIOWrapper(io.BytesIO(), encoding='latin-1')
    assert printable('∂f/∂x is inf', latin1) == 'df/dx is inf'
    assert printable('∂f/∂x is inf', io.StringIO()) == '∂f/∂x is inf'
    line = printable(f"unknown name '{'a' * 5000}' here\x1b\udcff", io.StringIO())
    assert len(line) < 150 and line.endswith("' here\\x1b\\udcff") and '…' in line
    assert len(printable('word ' * 1000, io.StringIO())) == 400


def test_exit_codes_of_every_error_type():
    from autodiff_cli.cli.main import exit_code
    assert [exit_code(e('m')) for e in (NumericalError, CheckFailed, UsageError, AdgradError)] \
        == [1, 1, 2, 2]


def test_warnings_are_kept_by_the_sink_and_printed():
    err = io.StringIO()
    env = Environment(io.StringIO(), io.StringIO(), err)
    env.warn('one'), env.warn('two')
    assert env.warn.messages == ['one', 'two']
    assert err.getvalue() == 'adgrad: warning: one\nadgrad: warning: two\n'


def test_the_result_keeps_the_warnings_of_its_computation(monkeypatch):
    from autodiff_cli import lower
    from autodiff_cli.cli.context import Command
    from autodiff_cli.cli.evaluate import compute
    env = Environment(io.StringIO(), io.StringIO(), io.StringIO())
    args = type('Args', (), {'command': Command.GRAD, 'strict': False, 'nodes': True})
    graph = lower('log(x) * y')
    result = compute(graph, {'x': 0.0, 'y': 2.0}, ['x', 'y'], args, env)
    assert result.value == -float('inf') and result.gradients == {'x': float('inf'), 'y': -float('inf')}
    assert [r.grad for r in result.nodes] == [float('inf'), 2.0, -float('inf'), 1.0]
    assert len(result.warnings) == 2 and 'log(x) (node 1) is -inf' in result.warnings[0]
    assert json.loads(json.dumps(result.warnings)) == env.warn.messages
