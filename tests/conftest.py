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


def pytest_configure(config):
    """Started with SIGINT ignored (a job started with `&` by a shell without
    job control, as a CI runner may start it), Python leaves it ignored, and
    so do the processes the tests start: the Ctrl-C tests would find Ctrl-C
    lost. The suite takes it back; a handler, unlike SIG_IGN, does not pass
    on to the programs it runs."""
    import signal
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_sessionfinish(session, exitstatus):
    """No tests collected is a failure (exit 1), not pytest's exit 5: a suite that
    silently stopped being found must not look different from a green one only
    by its exit code."""
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
