"""What start-up speed rests on: the table's fast copy is the shipped JSON,
bindings are read without compiling patterns, and the exit of the `adgrad`
command is the interpreter's own and loses neither output nor exit codes."""

import json
import os
import re
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from hypothesis import given, strategies as st


from autodiff_cli.table import bindings
from autodiff_cli.language import parse, shipped_table

ROOT = Path(__file__).resolve().parent.parent


def test_the_fast_copy_of_the_table_is_the_shipped_json():
    text = Path(parse.SHIPPED).read_bytes()
    assert shipped_table.JSON_CRC32 == zlib.crc32(text), \
        'shipped_table.py is stale: run python -m autodiff_cli.language.grammar_table'
    assert shipped_table.TABLE == json.loads(text)


def test_a_json_file_that_is_not_the_copy_is_read_as_json(tmp_path, monkeypatch):
    table = json.loads(Path(parse.SHIPPED).read_text(encoding='utf-8'))
    table['start'] = -5   # any edit: the copy no longer stands for the file
    changed = tmp_path / 'table.json'
    changed.write_text(json.dumps(table), encoding='utf-8')
    monkeypatch.setattr(parse, 'SHIPPED', str(changed))
    assert parse.load_table()['start'] == -5


def _python(code, *args, env=None):
    """Run code in a fresh interpreter on this checkout, with stdout a pipe
    (buffered: PYTHONUNBUFFERED removed), so unflushed output would be lost."""
    environ = {k: v for k, v in os.environ.items() if k != 'PYTHONUNBUFFERED'}
    environ['PYTHONPATH'] = os.pathsep.join(filter(None, [str(ROOT), environ.get('PYTHONPATH')]))
    environ.update(env or {})
    return subprocess.run([sys.executable, '-c', code, *args], capture_output=True,
                          text=True, env=environ, cwd=ROOT)


def test_the_commands_start_without_json_and_the_help_without_the_library():
    done = _python('import sys\n'
                   'from autodiff_cli.cli.main import main\n'
                   "code = main(['eval', 'x*y*z', 'x=2', 'y=3', 'z=4'])\n"
                   "print(code, 'json' in sys.modules)\n"
                   "print(main(['--version']))\n")
    assert done.stdout == '24.0\n0 False\nadgrad 0.1.0\n0\n', done.stderr
    done = _python('import sys\n'
                   'from autodiff_cli.cli.main import main\n'
                   "main(['--help'])\n"
                   "print(sorted(m for m in sys.modules if m.startswith(('autodiff_cli.core', "
                   "'autodiff_cli.language'))))\n")
    assert done.stdout.endswith('\n[]\n'), done.stderr


def test_start_up_imports_neither_matplotlib_nor_scipy():
    """plot's and minimize's extras are imported on their paths alone: not by
    another command, the help, or their own --help."""
    done = _python('import sys\n'
                   'from autodiff_cli.cli.main import main\n'
                   "main(['grad', 'x*y', 'x=2', 'y=3'])\n"
                   "main(['--help'])\n"
                   "main(['plot', '--help'])\n"
                   "main(['minimize', '--help'])\n"
                   "print(sorted(m for m in sys.modules if m.split('.')[0] in "
                   "('matplotlib', 'scipy')))\n")
    assert done.stdout.endswith('\n[]\n'), done.stderr


CONSOLE = ('import sys\n'
           'from autodiff_cli.cli.main import console\n'
           'sys.argv[0] = "adgrad"\n'
           'sys.exit(console())\n')


@pytest.mark.parametrize('args, code, out, err', [
    (['eval', 'x*y*z', 'x=2', 'y=3', 'z=4'], 0, '24.0\n', ''),
    (['grad', 'x*y', 'x=2', 'y=3'], 0, 'value\t6.0\nd_x\t3.0\nd_y\t2.0\n', ''),
    (['eval', 'x*'], 2, '', 'adgrad: error: unexpected end of input'),
    (['eval', '1/x', 'x=0', '--strict'], 1, '', 'adgrad: error: 1/x (node 2) is inf'),
    (['eval', '1/x', 'x=0'], 0, 'inf\n', 'adgrad: warning: 1/x (node 2) is inf'),
    (['--version'], 0, 'adgrad 0.1.0\n', ''),
    (['nonsense'], 2, '', "adgrad: error: argument COMMAND: invalid choice: 'nonsense'"),
])
def test_the_exit_keeps_output_and_exit_codes(args, code, out, err):
    done = _python(CONSOLE, *args)
    assert (done.returncode, done.stdout) == (code, out), done.stderr
    assert done.stderr.startswith(err) and (err or not done.stderr)


def test_the_exit_is_the_interpreters_own():
    # Exit handlers run, then the teardown (an object freed there says so),
    # and a thread still running is waited for.
    done = _python('import atexit\n'
                   'class Loud:\n'
                   '    def __del__(self):\n'
                   '        print("teardown")\n'
                   'loud = Loud()\n'
                   'atexit.register(print, "the handler ran")\n' + CONSOLE, 'eval', '2*3')
    assert (done.returncode, done.stdout) == (0, '6.0\nthe handler ran\nteardown\n'), \
        done.stderr
    # The thread waits for the command to be under way, then outlives it.
    done = _python('import sys, threading, time\n'
                   'def late():\n'
                   '    while "autodiff_cli.cli.evaluate" not in sys.modules:\n'
                   '        time.sleep(0.001)\n'
                   '    time.sleep(2)\n'
                   '    print("thread done")\n'
                   'threading.Thread(target=late).start()\n' + CONSOLE, 'eval', '2*3')
    assert (done.returncode, done.stdout) == (0, '6.0\nthread done\n'), done.stderr


def test_no_module_reaches_into_the_interpreters_exit_or_tunes_the_allocator():
    """No private exit machinery anywhere; the allocator only from cli/."""
    package = ROOT / 'autodiff_cli'
    for path in package.rglob('*.py'):
        text = path.read_text(encoding='utf-8')
        for word in ('_run_exitfuncs', '_threading_atexits', 'os._exit', '_exit('):
            assert word not in text, f'{path.relative_to(ROOT)} refers to {word}'
        if path.parent.name != 'cli':
            for word in ('mallopt', 'tune_allocator', 'ctypes'):
                assert word not in text, f'{path.relative_to(ROOT)} refers to {word}'


@pytest.mark.skipif(sys.platform == 'win32', reason='SIGINT to itself')
@pytest.mark.parametrize('threads', ['none', 'a daemon thread'])
def test_ctrl_c_during_the_exit_ends_the_process_by_sigint_quietly(threads):
    """A Ctrl-C that lands in an exit handler, after a command that handles
    Ctrl-C itself (it imported signal), with or without a thread still alive
    (as a Dask client leaves one): the process ends by SIGINT, which a shell
    shows as 130, with the output kept and no 'Exception ignored' traceback."""
    import signal
    done = _python('import atexit, os, signal, sys, threading, time\n'
                   'from autodiff_cli.cli import main as cli\n'
                   'atexit.register(lambda: (os.kill(os.getpid(), signal.SIGINT), '
                   'time.sleep(0.5), print("not interrupted")))\n'
                   + ('threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n'
                      if threads != 'none' else '')
                   + 'sys.argv[0] = "adgrad"\n'
                   'sys.exit(cli.console())\n', 'eval', '2*3')
    assert (done.returncode, done.stdout, done.stderr) == (-signal.SIGINT, '6.0\n', '')
    shell = f'{sys.executable} -c "$SCRIPT" eval 2*3; echo "exit $?"'
    script = ('import atexit, os, signal, sys\n'
              'from autodiff_cli.cli.main import console\n'
              'atexit.register(lambda: os.kill(os.getpid(), signal.SIGINT))\n'
              'sys.exit(console())\n')
    done = subprocess.run(['bash', '-c', shell], capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ, SCRIPT=script, PYTHONPATH=str(ROOT)))
    assert (done.stdout, done.stderr) == ('6.0\nexit 130\n', '')


def test_main_leaves_the_graph_and_its_values_to_a_caller_that_asks(capsys):
    """Given a list, the command leaves its large results there (the graph,
    the values and gradients of its passes), for the caller to free."""
    from autodiff_cli.cli.main import main
    from autodiff_cli.core.graph import Graph
    kept = []
    assert main(['grad', 'x*y + x', 'x=2', 'y=3'], keep=kept) == 0
    assert capsys.readouterr().out.split() == ['value', '8.0', 'd_x', '4.0', 'd_y', '2.0']
    graph, values, grads = kept
    assert isinstance(graph, Graph) and [n.op for n in graph.nodes] == ['input', 'input', 'mul',
                                                                      'add']
    assert values == [2.0, 3.0, 6.0, 8.0] and grads == [4.0, 2.0, 1.0, 1.0]


def test_main_without_a_list_to_keep_in_frees_the_graph_as_it_returns(capsys):
    """As tests and library users call it: nothing waits for the collector."""
    import gc
    from autodiff_cli.cli.main import main
    from autodiff_cli.core.graph import Graph
    source = 'x*y + x  # freed as main() returns'
    enabled = gc.isenabled()
    gc.disable()
    try:
        assert main(['grad', source, 'x=2', 'y=3']) == 0
        alive = [o for o in gc.get_objects() if type(o) is Graph and o.source == source]
    finally:
        if enabled:
            gc.enable()
    assert alive == []


def test_the_exit_after_a_reader_left_or_a_full_disk():
    big = '+'.join(f'x*{k}' for k in range(3000))
    shell = (f'{sys.executable} -c "$CONSOLE" grad "{big}" x=1 --nodes | head -c 10 > /dev/null; '
             'echo "exit ${PIPESTATUS[0]}"')
    done = subprocess.run(['bash', '-c', shell], capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ, CONSOLE=CONSOLE, PYTHONPATH=str(ROOT)))
    assert (done.stdout, done.stderr) == ('exit 0\n', '')
    if not os.path.exists('/dev/full'):
        pytest.skip('no /dev/full here')
    shell = f'{sys.executable} -c "$CONSOLE" eval 2*3 > /dev/full; echo "exit $?"'
    done = subprocess.run(['bash', '-c', shell], capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ, CONSOLE=CONSOLE, PYTHONPATH=str(ROOT)))
    assert done.stdout == 'exit 2\n'
    assert done.stderr == 'adgrad: error: cannot write the output: No space left on device\n'


# ---- bindings are read without compiling a pattern ----

_FLOAT = re.compile(bindings._FLOAT, re.I)


@pytest.mark.parametrize('text, is_number', [
    *[(t, True) for t in ('2', '-2.5', '+.5', '5.', '1e5', '1E+05', '.5e-3', '1.e5', 'inf',
                          '-Infinity', 'NaN', '+nan')],
    *[(t, False) for t in ('.', '-', 'e5', '1e', '1e5.0', '0x10', '1_000', 'infinit', 'nan(1)',
                           '1.5j', '1 2', 'pi', '2*x')],
    # other scripts' digits: the pattern's \d takes them, and float() reads them
    # (table/bindings.py keeps this for bindings; program text takes ASCII only)
    ('٣', True), ('٣.٥', True)])
def test_a_number_is_what_the_pattern_reads(text, is_number):
    assert bindings._is_number(text) is is_number
    assert bool(_FLOAT.fullmatch(text)) is is_number


def _float_reads(text):
    """The documented rule, from Python's own reader rather than the module's
    pattern: a number is what float() reads, except that '_' (which float()
    takes between digits) is not part of one."""
    if '_' in text:
        return False
    try:
        float(text)
    except ValueError:
        return False
    return True


# ASCII and other scripts' decimal digits (Arabic-Indic, full-width); a
# superscript is a digit to neither
_DIGITS = st.text(alphabet='0123456789٣٥５²', max_size=4)
_NUMBER_LIKE = st.builds(lambda *parts: ''.join(parts), st.sampled_from(['', '+', '-']), _DIGITS,
                         st.sampled_from(['', '.', '..']), _DIGITS,
                         st.sampled_from(['', 'e', 'E+', 'e-', '_']), _DIGITS)


@given(st.one_of(_NUMBER_LIKE, st.text(alphabet='0123456789.eE+-_ inftyaINFTYA٣٥５²',
                                       max_size=12)))
def test_a_number_is_what_float_reads_whatever_the_text(text):
    text = text.strip()
    assert bindings._is_number(text) == _float_reads(text)
