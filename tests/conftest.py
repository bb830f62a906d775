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


def pytest_sessionfinish(session, exitstatus):
    """No tests collected is a failure (exit 1), not pytest's exit 5: a suite that
    silently stopped being found must not look different from a green one only
    by its exit code."""
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
