"""The README's console examples, run as written: the tour must stay true."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
BLOCKS = re.findall(r'```console\n(.*?)```', (ROOT / 'README.md').read_text(), re.S)


def examples():
    for block in BLOCKS:
        steps = []
        for chunk in re.split(r'^\$ ', block, flags=re.M)[1:]:
            command, _, output = chunk.partition('\n')
            steps.append((command, output))
        yield pytest.param(steps, id=steps[0][0][:60])


@pytest.mark.parametrize('steps', list(examples()))
def test_console_example(steps, tmp_path):
    """Each block's commands run in order in one fresh directory."""
    bin_dir = os.path.dirname(sys.executable)
    if not shutil.which('adgrad', path=bin_dir):
        pytest.skip('adgrad is not installed beside this Python')
    (tmp_path / 'samples').symlink_to(ROOT / 'samples')
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ['PATH'])
    for command, expected in steps:
        done = subprocess.run(['bash', '-c', command], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.stdout + done.stderr == expected, command
