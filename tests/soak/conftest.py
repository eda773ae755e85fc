"""Soak options, and the Python client tests' Server helper (shared, not copied).

tests/python/conftest.py starts the real linalgd binary on a free port
($LINALGD_SERVER, else build-py/bin/linalgd or build/bin/linalgd) and puts
client/python on sys.path; it is loaded here under its own module name so that
it does not clash with this conftest. soak_test.py imports Server from here.
"""
import importlib.util
import os

import pytest

_PYTHON_TESTS_CONFTEST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                      "python", "conftest.py")
_spec = importlib.util.spec_from_file_location("linalgd_python_tests_conftest",
                                               _PYTHON_TESTS_CONFTEST)
_helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_helpers)

Server = _helpers.Server
server_binary = _helpers.server_binary

DEFAULT_SOAK_SECONDS = 120.0
DEFAULT_CALLERS = 48


def pytest_addoption(parser):
    group = parser.getgroup("linalgd soak")
    group.addoption("--soak-seconds", type=float, default=None,
                    help="seconds of load in the main phase (default $LINALGD_SOAK_SECONDS, "
                         f"else {DEFAULT_SOAK_SECONDS:g})")
    group.addoption("--soak-callers", type=int, default=None,
                    help="concurrent caller threads (default $LINALGD_SOAK_CALLERS, "
                         f"else {DEFAULT_CALLERS})")


@pytest.fixture(scope="session")
def soak_seconds(request):
    value = request.config.getoption("--soak-seconds")
    if value is None:
        value = float(os.environ.get("LINALGD_SOAK_SECONDS", DEFAULT_SOAK_SECONDS))
    if value <= 0:
        raise pytest.UsageError("--soak-seconds must be positive")
    return value


@pytest.fixture(scope="session")
def soak_callers(request):
    value = request.config.getoption("--soak-callers")
    if value is None:
        value = int(os.environ.get("LINALGD_SOAK_CALLERS", DEFAULT_CALLERS))
    if value < 1:
        raise pytest.UsageError("--soak-callers must be at least 1")
    return value


_SUMMARIES = []


@pytest.fixture
def soak_summary():
    """Appends a line to the summary printed at the end of the run (even with -q)."""
    return _SUMMARIES.append


def pytest_terminal_summary(terminalreporter):
    if _SUMMARIES:
        terminalreporter.section("linalgd soak")
        for line in _SUMMARIES:
            terminalreporter.write_line(line)
