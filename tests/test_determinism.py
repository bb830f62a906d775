"""Same input, same bytes: the CLI as separate processes under different hash seeds.

String hashing is salted per process (PYTHONHASHSEED), so any output that
leaked the order of a set or a dict keyed by strings would differ between
these runs; in-process tests cannot see that.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ('0', '1', '2718281')
# Many names, blocks and bindings: the places where an unordered collection could leak.
PROGRAM = '\n'.join(
    ['input ' + ', '.join(f'{v} = {i / 7}' for i, v in enumerate('qwrtyuiosd'))]
    + ['g(a, b) = a*b + sin(a - b)', 'h(c) = g(c, c^2) + tanh(c)']
    + [f's{i} = h({v}) * g({v}, {u})' for i, (v, u) in enumerate(zip('qwrtyuiosd', 'dsoiuytrwq'))]
    + [' + '.join(f's{i}' for i in range(10)) + ' + zeta*alpha - beta/gamma']) + '\n'
POINTS = 'q,w,zeta,alpha,beta,gamma,label\n' + ''.join(
    f'{i / 3},{-i},{i % 5},{2 ** -i},{i + 1},{1 + i / 9},row{i}\n' for i in range(40))

COMMANDS = {
    'grad --json --nodes': ['grad', '-f', 'p.ad', 'zeta=2', 'alpha=3', 'beta=5', 'gamma=7',
                            '--json', '--nodes'],
    'grad --nodes, plain': ['grad', '-f', 'p.ad', 'zeta=2', 'alpha=3', 'beta=5', 'gamma=7', '--nodes'],
    'render --format dot': ['render', '-f', 'p.ad', 'zeta=2', 'alpha=3', 'beta=5', 'gamma=7',
                            '--format', 'dot', '-o', '-'],
    'render --format text': ['render', '-f', 'p.ad', 'zeta=2', 'alpha=3', 'beta=5', 'gamma=7',
                             '--format', 'text', '-o', '-'],
    'a batch, csv': ['grad', '-f', 'p.ad', '--points', 'p.csv'],
    'a batch, json': ['grad', '-f', 'p.ad', '--points', 'p.csv', '--json'],
    'a sample, dot': ['render', '-f', str(ROOT / 'samples' / 'mlp_scalar.ad'), '--format', 'dot', '-o', '-'],
}


@pytest.mark.parametrize('argv', COMMANDS.values(), ids=COMMANDS.keys())
def test_same_bytes_under_every_hash_seed(argv, tmp_path):
    (tmp_path / 'p.ad').write_text(PROGRAM)
    (tmp_path / 'p.csv').write_text(POINTS)
    outputs = set()
    for seed in SEEDS:
        done = subprocess.run([sys.executable, '-m', 'autodiff_cli', *argv], cwd=tmp_path,
                              capture_output=True, timeout=120,
                              env=dict(os.environ, PYTHONHASHSEED=seed))
        assert done.returncode == 0, done.stderr.decode()
        assert len(done.stdout) > 100
        outputs.add(done.stdout + b'\0' + done.stderr)
    assert len(outputs) == 1
