"""Fixtures only; shared functions and data live in tests/helpers.py."""

import pytest


@pytest.fixture
def run_cli(capsys):
    """Run main() in-process: (exit code, stdout, stderr)."""
    from autodiff_cli.cli.main import main

    def run(*argv):
        code = main(list(argv))
        captured = capsys.readouterr()
        return code, captured.out, captured.err
    return run
