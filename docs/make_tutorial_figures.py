"""Make the pictures of docs/tutorial.md: python docs/make_tutorial_figures.py [DIR].

Each figure is the `adgrad render` command that the tutorial shows above it,
run from the top of the repository with its -o pointed into DIR (by default
docs/tutorial/). The output is deterministic, so tests/test_tutorial.py
regenerates the figures into a temporary folder and compares the bytes.
"""

import os
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / 'docs' / 'tutorial'

# (file, command as the tutorial shows it): the command writes `file`.
FIGURES = [
    ('figure1.svg', 'adgrad render -f samples/product.ad --pass forward -o figure1.svg'),
    ('figure2.svg', 'adgrad render -f samples/product.ad --step 3 -o figure2.svg'),
    ('figure3.svg', 'adgrad render -f samples/product.ad --step 2 -o figure3.svg'),
    ('figure4.svg', 'adgrad render -f samples/product.ad --step 5 -o figure4.svg'),
    ('figure5.svg', 'adgrad render -f samples/product.ad --step 4 -o figure5.svg'),
    ('figure6.svg', 'adgrad render -f samples/product.ad -o figure6.svg'),
    ('figure7.svg', 'adgrad render -f samples/blocks.ad --collapse blocks --pass forward '
                    '-o figure7.svg'),
    ('figure8.svg', 'adgrad render -f samples/blocks.ad --step 2 -o figure8.svg'),
    ('figure9.svg', 'adgrad render -f samples/blocks.ad --collapse blocks -o figure9.svg'),
    ('figure10.svg', 'adgrad render -f samples/deep.ad --collapse blocks -o figure10.svg'),
    ('magnitude.svg', 'adgrad render -f samples/deep.ad --collapse blocks --color magnitude '
                      '-o magnitude.svg'),
    ('if-positive.svg', "adgrad render 'if(x > 0, x^2, -x)' x=3 -o if-positive.svg"),
    ('if-negative.svg', "adgrad render 'if(x > 0, x^2, -x)' x=-3 -o if-negative.svg"),
    ('memory.svg', 'adgrad render -f samples/deep.ad --collapse blocks --memory -o memory.svg'),
    ('checkpoint.svg', 'adgrad render -f samples/deep.ad --collapse blocks --checkpoint sqrt '
                       '-o checkpoint.svg'),
]


def argv(command, folder, fmt=None):
    """The command's arguments for main(), its -o file put in `folder` (as
    `fmt` instead of its own extension, if given)."""
    words = shlex.split(command)[1:]
    name = words[words.index('-o') + 1]
    if fmt is not None:
        name = f'{os.path.splitext(name)[0]}.{fmt}'
    words[words.index('-o') + 1] = str(Path(folder) / name)
    return words


def make(folder=HERE, fmt=None):
    """Run every figure's command into `folder`; the exit code of the first that fails, else 0."""
    from autodiff_cli.cli.main import main
    Path(folder).mkdir(parents=True, exist_ok=True)
    here = os.getcwd()
    os.chdir(ROOT)   # the commands name samples/ as the tutorial runs them
    try:
        for _, command in FIGURES:
            code = main(argv(command, Path(folder).resolve(), fmt))
            if code != 0:
                return code
    finally:
        os.chdir(here)
    return 0


if __name__ == '__main__':
    sys.exit(make(*sys.argv[1:2]))
