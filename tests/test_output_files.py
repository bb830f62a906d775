"""-o FILE, all or nothing (cli/files.py): links followed as the file system
follows them, the replaced file's mode and owners kept, and names of this
process's own descriptors (/dev/stdout) written through, in order, never
renamed over. The shell's view is taken by running adgrad as a process."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import run_main

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(sys.platform == 'win32', reason='POSIX links and descriptors')
ROWS = 'x,value\n1,2.0\n2,4.0\n'


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path('points.csv').write_text('x\n1\n2\n')
    Path('bad.csv').write_text('x\n1\noops\n')
    return tmp_path


def adgrad(*words, **options):
    """adgrad as the shell runs it, from this checkout."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get('PYTHONPATH')])))
    return subprocess.run([sys.executable, '-m', 'autodiff_cli', *words], env=env, text=True,
                          timeout=60, **options)


def test_a_link_stays_a_link_and_its_file_keeps_its_mode(here):
    Path('target.csv').write_text('OLD\n')
    Path('target.csv').chmod(0o600)
    Path('link.csv').symlink_to('target.csv')
    assert run_main(['eval', '2*x', '--points', 'points.csv', '-o', 'link.csv']).code == 0
    assert Path('link.csv').is_symlink() and os.readlink('link.csv') == 'target.csv'
    assert Path('target.csv').read_text() == ROWS
    assert Path('target.csv').stat().st_mode & 0o777 == 0o600
    code, _, err = run_main(['eval', '2*x', '--points', 'bad.csv', '-o', 'link.csv'])
    assert code == 2 and Path('target.csv').read_text() == ROWS
    assert sorted(os.listdir()) == ['bad.csv', 'link.csv', 'points.csv', 'target.csv']


def test_dot_dot_after_a_link_is_the_link_s_parent(here):
    """`sub/../x.csv` with sub a link to far/deep is far/x.csv, as `cat` reads
    it: os.path.abspath would make it ./x.csv."""
    Path('far/deep').mkdir(parents=True)
    Path('sub').symlink_to('far/deep')
    Path('far/x.csv').write_text('FAR\n')
    Path('x.csv').write_text('HERE\n')
    assert run_main(['eval', '2*x', '--points', 'points.csv', '-o', 'sub/../x.csv']).code == 0
    assert Path('far/x.csv').read_text() == ROWS and Path('x.csv').read_text() == 'HERE\n'
    assert run_main(['render', 'x*y', 'x=1', 'y=2', '-o', 'sub/../x.dot']).code == 0
    assert Path('far/x.dot').read_text().startswith('digraph') and not Path('x.dot').exists()


def test_a_chain_of_links_and_a_dangling_one(here):
    Path('real').mkdir()
    Path('real/out.csv').write_text('OLD\n')
    Path('one').symlink_to('real/out.csv')
    Path('two').symlink_to('one')
    assert run_main(['eval', '2*x', '--points', 'points.csv', '-o', 'two']).code == 0
    assert Path('real/out.csv').read_text() == ROWS and Path('two').is_symlink()
    Path('dangling').symlink_to('real/new.csv')
    assert run_main(['eval', '2*x', '--points', 'points.csv', '-o', 'dangling']).code == 0
    assert Path('real/new.csv').read_text() == ROWS and Path('dangling').is_symlink()
    Path('loop1').symlink_to('loop2')
    Path('loop2').symlink_to('loop1')
    code, _, err = run_main(['eval', '2*x', '--points', 'points.csv', '-o', 'loop1'])
    assert code == 2 and err == ('adgrad: error: cannot write loop1: too many levels of '
                                 'symbolic links\n')


@pytest.mark.parametrize('command', [['eval', '2*x', '--points', 'points.csv'],
                                     ['render', 'x*y', 'x=1', 'y=2']])
def test_a_name_ending_in_a_slash_is_refused(here, command):
    for name in ('nodir/', 'points.csv/'):
        code, _, err = run_main([*command, '-o', name])
        assert code == 2 and err == f'adgrad: error: cannot write {name}: a file name cannot ' \
                                    'end in /\n'
    assert sorted(os.listdir()) == ['bad.csv', 'points.csv']
    assert Path('points.csv').read_text() == 'x\n1\n2\n'


@pytest.mark.skipif(not hasattr(os, 'geteuid') or os.geteuid() != 0, reason='needs root')
def test_the_replaced_file_keeps_its_owners(here):
    Path('owned.csv').write_text('OLD\n')
    os.chown('owned.csv', 65534, 65534)
    assert run_main(['eval', '2*x', '--points', 'points.csv', '-o', 'owned.csv']).code == 0
    info = Path('owned.csv').stat()
    assert (info.st_uid, info.st_gid) == (65534, 65534) and Path('owned.csv').read_text() == ROWS


# A link of the test's own to /proc/self/fd/1 stands for /dev/stdout: a test
# that went wrong as root would replace the system's /dev/stdout.
needs_proc = pytest.mark.skipif(not os.path.exists('/proc/self/fd'), reason='Linux /proc')


@needs_proc
@pytest.mark.parametrize('command, expected', [
    (['eval', '2*x', '--points', 'points.csv'], ROWS),
    (['render', 'x*y', 'x=1', 'y=2', '--format', 'dot'], 'digraph'),
])
def test_dev_stdout_appends_to_the_file_the_shell_opened(here, command, expected):
    """`-o /dev/stdout >> log`: written into log after what it held; neither
    renamed over /dev/stdout nor truncating log by opening it again."""
    Path('stdout').symlink_to('/proc/self/fd/1')
    Path('log').write_text('PREVIOUS\n')
    with open('log', 'a') as log:
        done = adgrad(*command, '-o', 'stdout', stdout=log, stderr=subprocess.PIPE)
    assert done.returncode == 0, done.stderr
    assert Path('stdout').is_symlink()
    written = Path('log').read_text()
    assert written.startswith('PREVIOUS\n' + expected)
    assert sorted(os.listdir()) == ['bad.csv', 'log', 'points.csv', 'stdout']


@needs_proc
def test_dev_stdout_keeps_its_order_with_what_else_goes_there(here):
    """Written through a duplicate of descriptor 1, which shares the shell's
    position: a warning through 2>&1, and what the shell writes after, come
    in order (a second handle at its own position would overwrite them)."""
    Path('stdout').symlink_to('/proc/self/fd/1')
    Path('signs.csv').write_text('x\n4\n-1\n9\n')
    with open('out', 'w') as out:
        done = adgrad('eval', 'sqrt(x)', '--points', 'signs.csv', '-o', 'stdout', stdout=out,
                      stderr=subprocess.STDOUT)
        out.write('TRAILER\n')
    lines = Path('out').read_text().splitlines()
    plain = adgrad('eval', 'sqrt(x)', '--points', 'signs.csv', stdout=subprocess.PIPE,
                   stderr=subprocess.STDOUT)   # the same run, written to stdout itself
    assert done.returncode == 0 and 'not finite in 1 of 3 rows' in plain.stdout
    assert lines == plain.stdout.splitlines() + ['TRAILER']


@needs_proc
def test_a_bad_row_writes_nothing_through_dev_stdout(here):
    """Rows that go straight out are all checked first, as on stdout itself."""
    Path('stdout').symlink_to('/proc/self/fd/1')
    Path('log').write_text('PREVIOUS\n')
    with open('log', 'a') as log:
        done = adgrad('eval', '2*x', '--points', 'bad.csv', '-o', 'stdout', stdout=log,
                      stderr=subprocess.PIPE)
    assert done.returncode == 2 and "line 3: 'x' is 'oops'" in done.stderr
    assert Path('log').read_text() == 'PREVIOUS\n'
