"""The benchmark harness runs and writes a well-formed report (how fast is
not tested: that is what the harness itself reports)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_quick_run_writes_a_well_formed_report(tmp_path):
    out = tmp_path / 'BENCHMARKS.md'
    run = subprocess.run([sys.executable, str(ROOT / 'benchmarks' / 'run.py'), '--quick',
                          '--output', str(out)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    text = out.read_text(encoding='utf-8')

    assert text.startswith('# Benchmarks\n') and 'Quick mode' in text
    for field in ('- command: `python benchmarks/run.py --quick --output ', '- date: 20',
                  '- machine: nproc ', '- Python 3.'):
        assert field in text

    rows = [line for line in text.splitlines() if line.startswith('| ') and '---' not in line]
    assert rows[0] == '| figure | measured | target | result |'
    figures = rows[1:]
    for row in figures:
        cells = re.split(r'(?<!\\)\|', row)[1:-1]
        assert len(cells) == 4, row
        assert cells[3].strip() in ('pass', 'miss', 'n/a', 'reported'), row
    names = ' '.join(figures)
    for figure in ('start-up', 'sum of products', 'nesting of unary functions',
                   'chain of a block', 'PyTorch', 'linearity', 'cheap gradient',
                   'logistic.ad', 'CSV in to CSV out', 'JSON Lines and JSON output', 'memory',
                   'short statements',
                   'chains of a block that calls a block', '`--points --mean`'):
        assert figure in names, figure


def test_against_runs_both_trees_side_by_side_and_prints_the_ratios():
    """--against HEAD: the old side from a worktree of its own, removed after;
    every quantity measured on both sides, and each ratio is new ÷ old."""
    if not (ROOT / '.git').exists():
        pytest.skip('not a git checkout: --against needs one')
    figures = 'startup,parse,batch'   # one of each kind: whole process, child.py, batches.py
    run = subprocess.run([sys.executable, str(ROOT / 'benchmarks' / 'run.py'), '--against', 'HEAD',
                          '--quick', '--only', figures], capture_output=True, text=True,
                         timeout=600, cwd=ROOT)  # where -m would import this tree
    assert run.returncode == 0, run.stderr
    text = run.stdout
    git = ['git', '-C', str(ROOT)]
    head = subprocess.run(git + ['rev-parse', 'HEAD'], capture_output=True, text=True,
                          check=True).stdout.strip()
    old = re.search(r'^- old: HEAD \(([0-9a-f]+)\), imported from (.+)/autodiff_cli \(', text, re.M)
    assert old and head.startswith(old.group(1)), text
    tree = Path(old.group(2))
    assert tree.resolve() != ROOT.resolve() and not tree.exists()
    listed = subprocess.run(git + ['worktree', 'list', '--porcelain'], capture_output=True,
                            text=True, check=True).stdout
    assert str(tree) not in listed
    new = re.search(r'^- new: .*, imported from (.+)$', text, re.M)
    assert new and Path(new.group(1)) == (ROOT / 'autodiff_cli').resolve()

    lines = text.splitlines()
    start = lines.index('| figure | quantity | old | new | new ÷ old | within 1.10 |')
    rows = [re.split(r'(?<!\\)\|', line)[1:-1] for line in lines[start + 2:]
            if line.startswith('| ')]
    names = ' '.join(row[0] for row in rows)
    for figure in ('start-up', 'parse + lower per token', 'CSV in to CSV out',
                   'JSON Lines and JSON output', 'hand-written NumPy'):
        assert figure in names, figure
    for name, quantity, a, b, ratio, within in (map(str.strip, row) for row in rows):
        assert quantity and ratio != 'n/a', (name, a, b)   # both sides measured it
        a, b, ratio = float(a), float(b), float(ratio)
        assert abs(ratio - b / a) <= 2e-4 * max(1.0, ratio), (name, quantity, a, b, ratio)
        assert within == ('yes' if ratio <= 1.10 else 'NO'), (name, quantity, ratio, within)
    held = sum(row[5].strip() == 'yes' for row in rows)
    assert f'{held} of {len(rows)} compared quantities within 1.10' in text


def test_each_workload_has_the_size_its_rows_say():
    """The operation and token counts the report quotes, against the graph
    lowered from the workload's text and the tokens counted in it."""
    sys.path.insert(0, str(ROOT / 'benchmarks'))
    try:
        import child
        import workloads
    finally:
        sys.path.remove(str(ROOT / 'benchmarks'))
    from autodiff_cli import lower
    for name, make in workloads.WORKLOADS.items():
        for size in (5, 6, 7, 8):
            text = make(size)
            graph = lower(text)
            operations = sum(node.op not in ('input', 'const') for node in graph.nodes)
            assert operations == workloads.operations(name, size), (name, size)
            expression = [line for line in text.splitlines()
                          if not line.startswith('input ') and not re.match(r'\w+\(\w+\) =', line)]
            tokens = sum(1 for _ in child._tokens('\n'.join(expression)))
            assert tokens == workloads.tokens(name, size), (name, size)


def test_a_ratio_is_judged_as_it_is_printed():
    """A ratio printed as 1.1000 is within 1.10, one printed as 1.1002 is not,
    so the report never shows a passing number beside NO."""
    sys.path.insert(0, str(ROOT / 'benchmarks'))
    try:
        import run
    finally:
        sys.path.remove(str(ROOT / 'benchmarks'))
    sides = (run.Side('old', ROOT, 'old'), run.Side('new', ROOT, 'new'))
    table = {'at the limit': {'s': {'old': [1.0], 'new': [1.10003]}},
             'over it': {'s': {'old': [1.0], 'new': [1.1002]}}}
    text = run.against_report(table, sides, 'command', 1)
    assert '| at the limit | s | 1 | 1.10003 | 1.1000 | yes |' in text, text
    assert '| over it | s | 1 | 1.1002 | 1.1002 | NO |' in text, text
