"""The benchmark harness runs and writes a well-formed report (how fast is
not tested: that is what the harness itself reports)."""

import re
import subprocess
import sys
from pathlib import Path

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
        assert cells[3].strip() in ('pass', 'miss', 'n/a'), row
    names = ' '.join(figures)
    for figure in ('start-up', 'sum of products', 'nesting of unary functions',
                   'chain of a block', 'PyTorch', 'linearity', 'cheap gradient',
                   'logistic.ad', 'CSV in to CSV out', 'memory', 'short statements',
                   'chains of a block that calls a block'):
        assert figure in names, figure


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
