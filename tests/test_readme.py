"""The console examples of the README and of docs/, run as written: what they say must stay true.

A ```console block is `$ command` lines, each followed by its exact stdout and stderr.
Its commands run in order in one fresh directory that holds `samples/` and the files
its page shows as fenced blocks titled with a file name (```c title="main.c"). A block
that runs `cc`, draws a picture with Graphviz's `dot`, runs `--engine dask`, or
runs `plot` (matplotlib) or `minimize` (scipy), skips where that is missing.
The ```pycon blocks of a page run as one doctest, in order.
"""

import doctest
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
PAGES = [ROOT / 'README.md', *sorted((ROOT / 'docs').glob('*.md'))]
FILE_BLOCK = re.compile(r'^```\w*[ \t]+title="([\w.-]+)"[^\n]*\n(.*?)^```', re.M | re.S)
# A picture needs dot unless it is written as DOT source or as the text table.
NO_DOT = re.compile(r'--format[ =](text|dot)\b|-o \S+\.(txt|dot|gv)\b')


def tools(command):
    """What `command` needs besides adgrad: the programs 'cc', 'dot', the extras
    'dask', 'matplotlib' (plot) and 'scipy' (minimize, fit)."""
    needed = set()
    for segment in re.split(r'&&|\|\|?|;', command):
        words = segment.split()
        if words[:1] in (['cc'], ['dot']):
            needed.add(words[0])
        if words[:2] == ['adgrad', 'render'] and not NO_DOT.search(segment):
            needed.add('dot')
        if '--engine dask' in segment:
            needed.add('dask')
        if words[:2] == ['adgrad', 'plot']:
            needed.add('matplotlib')
        if words[:2] in (['adgrad', 'minimize'], ['adgrad', 'fit']):
            needed.add('scipy')
    return needed


def missing(tool):
    modules = {'dask': 'dask.distributed', 'matplotlib': 'matplotlib', 'scipy': 'scipy.optimize'}
    if tool in modules:      # an extra, in the Python that runs adgrad
        return subprocess.run([sys.executable, '-c', f'import {modules[tool]}'],
                              capture_output=True).returncode != 0
    return shutil.which(tool) is None


def examples():
    for page in PAGES:
        text = page.read_text(encoding='utf-8')
        files = dict(FILE_BLOCK.findall(text))
        for block in re.findall(r'```console\n(.*?)```', text, re.S):
            steps = []
            for chunk in re.split(r'^\$ ', block, flags=re.M)[1:]:
                command, _, output = chunk.partition('\n')
                steps.append((command, output))
            yield pytest.param(steps, files, id=f'{page.name}: {steps[0][0][:60]}')


EXAMPLES = list(examples())


def sessions():
    for page in PAGES:
        blocks = re.findall(r'```pycon\n(.*?)```', page.read_text(encoding='utf-8'), re.S)
        if blocks:
            yield pytest.param(page, '\n'.join(blocks), id=page.name)


@pytest.mark.parametrize('page, text', list(sessions()))
def test_python_session(page, text, monkeypatch):
    """A page's Python examples, as doctest runs them: the library says what it shows."""
    if '_repr_svg_' in text and missing('dot'):
        pytest.skip('dot is not installed')
    monkeypatch.chdir(ROOT)
    test = doctest.DocTestParser().get_doctest(text, {}, page.name, str(page), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    reports = []            # not printed: doctest holds sys.stdout while it runs
    runner.run(test, out=reports.append)
    assert runner.failures == 0 and runner.tries > 0, ''.join(reports)


def test_every_page_has_examples():
    """A page renamed or a fence misspelt would otherwise drop its examples unseen."""
    assert {param.id.partition(':')[0] for param in EXAMPLES} >= {
        'README.md', 'commands.md', 'language.md', 'batches.md', 'pictures.md'}


def test_tools_are_found_in_each_kind_of_command():
    assert tools('cc -std=c99 main.c f.c -lm -o f && ./f 1.5') == {'cc'}
    assert tools('adgrad render -f samples/product.ad -o product.svg') == {'dot'}
    assert tools('adgrad render -f samples/blocks.ad --format text') == set()
    assert tools('adgrad grad x x=1 | dot -Tsvg') == {'dot'}
    assert tools('adgrad grad -f samples/blocks.ad --format dot') == set()
    assert tools('adgrad grad x --points data --engine dask -o out') == {'dask'}
    assert tools("adgrad plot 'x^2' x=0..1 --format svg > f.svg") == {'matplotlib'}
    assert tools("adgrad minimize 'x^2' x=1") == {'scipy'}


@pytest.mark.parametrize('steps, files', EXAMPLES)
def test_console_example(steps, files, tmp_path):
    """Each block's commands run in order in one fresh directory."""
    bin_dir = os.path.dirname(sys.executable)
    if not shutil.which('adgrad', path=bin_dir):
        pytest.skip('adgrad is not installed beside this Python')
    for tool in sorted(set().union(*(tools(command) for command, _ in steps))):
        if missing(tool):
            pytest.skip(f'{tool} is not installed')
    (tmp_path / 'samples').symlink_to(ROOT / 'samples')
    for name, body in files.items():
        (tmp_path / name).write_text(body, encoding='utf-8')
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ['PATH'])
    for command, expected in steps:
        done = subprocess.run(['bash', '-c', command], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)
        assert same_up_to_rounding(done.stdout + done.stderr, expected), (
            f'{command}\n--- printed\n{done.stdout + done.stderr}--- the page says\n{expected}')


# A float64 as Python prints it; integers are compared as text.
FLOAT = re.compile(r'-?(?:\d+\.\d*(?:e[+-]?\d+)?|\d+e[+-]?\d+|inf|nan)\b')


def same_up_to_rounding(printed, shown):
    """The page's text exactly, except that each float may differ in its last few bits:
    how BLAS rounds a short sum depends on the machine's SIMD width."""
    if printed == shown:
        return True
    words, shown_words = FLOAT.split(printed), FLOAT.split(shown)
    numbers, shown_numbers = FLOAT.findall(printed), FLOAT.findall(shown)
    return (words == shown_words and len(numbers) == len(shown_numbers)
            and all(a == b or math.isclose(float(a), float(b), rel_tol=1e-13)
                    for a, b in zip(numbers, shown_numbers)))


def test_rounding_is_forgiven_and_nothing_else():
    assert same_up_to_rounding('d_x\t[-0.75344700022099]\n', 'd_x\t[-0.7534470002209999]\n')
    assert not same_up_to_rounding('d_x\t[-0.7534470002]\n', 'd_x\t[-0.7534470002209999]\n')
    assert not same_up_to_rounding('d_y\t[-0.7534470002209999]\n', 'd_x\t[-0.7534470002209999]\n')
    assert not same_up_to_rounding('value\t2\n', 'value\t3\n')
    assert not same_up_to_rounding('[1.5, 2.5]', '[1.5]')


def test_the_commands_page_opens_with_every_command_and_its_exit_codes():
    """docs/commands.md's first table is 'which command': it left out jacobian
    and fit; its exit code 1 named minimize's failures, not fit's."""
    from autodiff_cli.cli.context import Command
    page = (ROOT / 'docs' / 'commands.md').read_text(encoding='utf-8')
    table = page.split('\n\n')[1]
    assert sorted(re.findall(r'^\| \[`(\w+)`\]\(#\1\)', table, re.M)) == \
        sorted(c.value for c in Command)
    (one,) = re.findall(r'^\| 1 \|(.*)$', page, re.M)
    assert all(f'`adgrad {c}`' in one for c in ('check', 'minimize', 'fit'))
