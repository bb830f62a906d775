"""Rewrite tests/golden/*.dot from the samples: `python -m tests.update_golden`.

Run it after a deliberate change to pictures, then read the diff before
committing it: the golden files are what tests/test_golden.py holds render to.
"""

import sys
from pathlib import Path

from tests.helpers import scalar_samples

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = scalar_samples(ROOT / 'samples')   # pictures take programs of numbers
GOLDEN = ROOT / 'tests' / 'golden'


def argv(sample):
    """The command whose output is the golden file, run from the repository's root."""
    return ['render', '-f', f'samples/{sample.name}', '--format', 'dot', '-o', '-']


def golden(sample):
    return GOLDEN / f'{sample.stem}.dot'


def render(sample):
    """(exit code, DOT text, stderr) of the sample's command, in-process."""
    import os
    from tests.helpers import run_main
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        return run_main(argv(sample))
    finally:
        os.chdir(cwd)


def main():
    GOLDEN.mkdir(exist_ok=True)
    for sample in SAMPLES:
        code, out, err = render(sample)
        if code != 0:
            print(f'{sample.name}: exit {code}: {err.strip()}', file=sys.stderr)
            return 1
        golden(sample).write_text(out, encoding='utf-8', newline='')
        print(f'wrote {golden(sample).relative_to(ROOT)}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
