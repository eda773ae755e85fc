"""linalgd-cli's progress line against the real server: a put and a get of a
tensor large enough to go in parts draw nothing when stderr is a pipe, nor on
a terminal with --quiet or --json (when the line is drawn at all, after a
second, depends on the machine's speed: tests/tools/cli_progress_line_test.cc
checks that policy with given times).

Run: LINALGD_BIN=build/bin /usr/bin/python3 -m pytest -q tests/integration/cli_progress_test.py
"""
import os
import pty
import subprocess

import numpy as np
import pytest

from cli_numpy_test import BIN, cli, start_linalgd, stop_linalgd

PROGRESS_MARK = "/s  ETA"  # in every progress line: "... 128.0 MiB/s  ETA 3s"


@pytest.fixture(scope="module")
def server():
    proc, target = start_linalgd("--store-bytes", str(1 << 30))
    yield target
    stop_linalgd(proc)


@pytest.fixture(scope="module")
def big_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("progress") / "big.npy"
    np.save(path, np.ones((10240, 2048)))  # 160 MiB: streamed in parts
    return str(path)


def cli_on_terminal(target, *args):
    """Runs linalgd-cli with stderr on a pseudo-terminal: (returncode, what it printed there)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([os.path.join(BIN, "linalgd-cli"), "--target", target, *args],
                            stdout=subprocess.DEVNULL, stderr=follower)
    os.close(follower)
    printed = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        printed += chunk
    os.close(leader)
    return proc.wait(timeout=120), printed.decode(errors="replace")


def test_pipe_gets_no_progress_line(server, big_file, tmp_path):
    put = cli(server, "put", big_file)
    assert put.returncode == 0, put.stderr
    assert PROGRESS_MARK not in put.stderr and "\r" not in put.stderr
    got = cli(server, "get", put.stdout.strip(), "-o", f"{tmp_path}/back.npy")
    assert got.returncode == 0, got.stderr
    assert got.stderr == ""
    cli(server, "rm", put.stdout.strip())


@pytest.mark.parametrize("flag", ["--quiet", "--json"])
def test_terminal_with_quiet_or_json_gets_no_progress_line(server, big_file, flag):
    rc, printed = cli_on_terminal(server, flag, "put", big_file)
    assert rc == 0, printed
    assert PROGRESS_MARK not in printed
