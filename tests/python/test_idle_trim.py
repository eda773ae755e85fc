"""--idle-trim against the real server: after a spell with no call the heap's
freed memory goes back to the OS once (linalgd_idle_trims_total counts it, the
debug log gives the resident set before and after), health probes do not keep
the server from being idle, and 0 turns it off. The server's malloc is
jemalloc (linked by default), whose purge the trim calls."""
import re
import time

import numpy as np

import linalgd
from conftest import metric_value
from numerics import assert_close

A = np.random.default_rng(5).standard_normal((300, 300))


def trims(server):
    value = metric_value(server.metrics_port, "linalgd_idle_trims_total")
    assert value is not None, "linalgd_idle_trims_total is not exported"
    return value


def wait_for_trims(server, c, want, seconds=15.0):
    """Polls health (not a call that counts) until the counter reaches `want`."""
    deadline = time.monotonic() + seconds
    while trims(server) < want:
        assert time.monotonic() < deadline, f"no idle trim within {seconds} s"
        assert c.health() == "SERVING"
        time.sleep(0.05)


def test_an_idle_server_trims_once_per_idle_spell(start_server):
    s = start_server("--idle-trim", "200ms", metrics=True, log_level="debug")
    with linalgd.Client(s.target, timeout=30) as c:
        assert_close(c.matmul(A, A), A @ A)
        wait_for_trims(s, c, 1)
        first = trims(s)
        time.sleep(1.0)  # five quiet periods without a call
        assert trims(s) == first
        np.testing.assert_allclose(c.solve(A + 300 * np.eye(300), A[:, :2]),
                                   np.linalg.solve(A + 300 * np.eye(300), A[:, :2]), rtol=1e-9)
        wait_for_trims(s, c, first + 1)
    out = s.output()
    assert "idle: returned freed heap memory to the OS" in out
    for before, after in re.findall(r"resident ([0-9.]+) -> ([0-9.]+) MiB", out):
        assert float(after) <= float(before) + 1.0, out  # never grows by trimming


def test_the_server_runs_on_jemalloc(start_server):
    """The start-up line names the malloc in use, and it is the one mapped."""
    s = start_server(log_level="info")
    with linalgd.Client(s.target, timeout=30) as c:
        c.matmul(A, A)
    with open(f"/proc/{s.proc.pid}/maps") as f:
        maps = f.read()
    out = s.output()
    assert re.search(r"malloc: jemalloc \d+\.\d+", out), out
    # jemalloc_conf.cc's setting reached it (large blocks stay in the ordinary arenas)
    assert "(oversize_threshold 0)" in out, out
    assert "libjemalloc" in maps


def test_zero_never_trims(start_server):
    s = start_server("--idle-trim", "0", metrics=True)
    with linalgd.Client(s.target, timeout=30) as c:
        c.matmul(A, A)
        time.sleep(1.0)
    assert trims(s) == 0
