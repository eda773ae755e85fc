"""Server flags are bounded: out-of-range values are refused at start with a
message naming the flag (--max-elements above 2^61 used to make byte counts
wrap)."""
import re
import socket
import subprocess
import time

import numpy as np
import pytest

import linalgd
from conftest import server_binary


@pytest.mark.parametrize("flag,value", [
    ("--max-elements", str(1 << 62)),
    ("--max-elements", "0"),
    ("--max-batch-matrices", "0"),
    ("--max-priority", "-1"),
    ("--max-inflight-bytes", "10"),
    ("--max-ttl", "inf"),
    ("--stream-idle-timeout", "0"),
    ("--idle-trim", "-1"),
    ("--idle-trim", "inf"),
    ("--idle-trim", "nan"),
    ("--idle-trim", "soon"),
    ("--max-queue", "0"),
    ("--max-message-bytes", str(1 << 40)),
    ("--singular-rcond-factor", "-1"),
    # CLI11's ranges let NaN through (every comparison with it is false): a NaN rcond factor
    # made no system numerically singular, a NaN memory fraction a NaN budget.
    ("--singular-rcond-factor", "nan"),
    ("--sparse-dense-threshold", "nan"),
    ("--gpu-memory-fraction", "nan"),
    ("--gpu-memory-fraction", "-nan"),
    ("--busy-blas-threads", "-1"),
    ("--busy-blas-threads", "1025"),
    ("--gpu-wait", "sometimes"),
    ("--gpu-wait", "SPIN"),
    ("--gpu-wait", ""),
    ("--max-queue-delay", "-1"),
    ("--max-queue-delay", "-5us"),
    ("--max-queue-delay", "soon"),
    ("--gpu-inline-min-idle-us", "-1"),
    ("--gpu-inline-min-idle-us", "1000001"),
    ("--gpu-inline-min-idle-us", "soon"),
    ("--gpu-inline-max-us", "-1"),
    ("--gpu-inline-max-us", "100001"),
    ("--gpu-inline-max-us", "fast"),
    ("--handshake-timeout", "0s"),
    ("--handshake-timeout", "inf"),
    ("--handshake-timeout", "soon"),
])
def test_out_of_range_flag_is_refused(flag, value):
    out = subprocess.run([server_binary(), "--listen", "127.0.0.1:0", "--metrics-listen", "",
                          flag, value], capture_output=True, text=True, timeout=30)
    assert out.returncode != 0
    assert flag in (out.stdout + out.stderr)


@pytest.mark.parametrize("wait", ["auto", "spin", "yield", "block"])
def test_every_gpu_wait_is_taken_and_serves(start_server, wait):
    import numpy as np
    import linalgd
    s = start_server("--gpu-wait", wait, log_level="info")
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    with linalgd.Client(s.target) as c:
        np.testing.assert_array_equal(c.matmul(a, a.T), a @ a.T)
    import re
    gpus = re.findall(r"gpu:\d+ \((.*)\) in service", s.output())
    for line in gpus:  # each GPU in service names the wait on its start line
        assert line.endswith(f"--gpu-wait {wait}"), line


@pytest.mark.parametrize("flag", ["--gpu-small-graphs", "--no-gpu-small-graphs"])
def test_small_graphs_either_way_is_taken_and_serves(start_server, flag):
    import numpy as np
    import linalgd
    s = start_server(flag, log_level="info")
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    with linalgd.Client(s.target) as c:
        np.testing.assert_array_equal(c.matmul(a, a.T), a @ a.T)
    for line in re.findall(r"gpu:\d+ \((.*)\) in service", s.output()):
        assert ("small graphs off" in line) == (flag == "--no-gpu-small-graphs"), line


def test_build_info_metric_names_the_version_and_commit_that_version_prints(start_server):
    import re
    import urllib.request
    printed = subprocess.run([server_binary(), "--version"], capture_output=True, text=True,
                             timeout=30).stdout
    version, commit = re.fullmatch(r"linalgd (\S+) \(commit (\S+)\)\n", printed).groups()
    s = start_server(metrics=True)
    text = urllib.request.urlopen(f"http://127.0.0.1:{s.metrics_port}/metrics",
                                  timeout=10).read().decode()
    assert f'linalgd_build_info{{commit="{commit}",version="{version}"}} 1' in text


def test_batches_wait_for_no_arrivals_by_default():
    # --max-queue-delay 0: a batch is what queued while the workers were busy (a window of
    # 200 us cost 16 callers a fifth to a quarter of their calls/s on an H100, and gained 64
    # and 256 callers less than the runs' spread).
    out = subprocess.run([server_binary(), "--help"], capture_output=True, text=True, timeout=30)
    assert re.search(r"--max-queue-delay TEXT=(\S+)", out.stdout).group(1) == "0us"


# The inline GPU bounds at their ends (0: every GPU job queues; 100000, the largest) and the
# default's neighbourhood are taken, and the server answers (on a GPU host with --cpu-threshold 0
# the products go to the GPU, inline or queued).
@pytest.mark.parametrize("max_us,min_idle", [("0", "0"), ("200", "100"), ("100000", "1000000")])
def test_inline_gpu_bounds_are_taken_and_serve(start_server, max_us, min_idle):
    import numpy as np
    import linalgd
    s = start_server("--cpu-threshold", "0", "--gpu-inline-max-us", max_us,
                     "--gpu-inline-min-idle-us", min_idle)
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    with linalgd.Client(s.target) as c:
        for _ in range(3):
            np.testing.assert_array_equal(c.matmul(a, a.T), a @ a.T)


@pytest.mark.parametrize("value,says", [("0s", "'0s' is out of range (it must be more than 0)"),
                                        ("soon", "cannot parse 'soon' as a duration")])
def test_a_duration_flag_says_whether_it_did_not_parse_or_broke_its_rule(value, says):
    out = subprocess.run([server_binary(), "--listen", "127.0.0.1:0", "--metrics-listen", "",
                          "--stream-idle-timeout", value], capture_output=True, text=True,
                         timeout=30)
    assert out.returncode != 0
    assert f"--stream-idle-timeout: {says}" in out.stderr


def test_a_connection_that_never_speaks_is_closed_after_the_handshake_timeout(start_server):
    # Each silent TCP connection is an fd of the server until gRPC gives up on
    # it (120 s by its own default): --handshake-timeout closes it sooner.
    server = start_server("--handshake-timeout", "1s")
    host, port = server.target.rsplit(":", 1)
    silent = [socket.create_connection((host, int(port)), timeout=10) for _ in range(5)]
    start = time.monotonic()
    for s in silent:
        while s.recv(1024):  # the server's SETTINGS, then its close
            pass
        s.close()
    assert time.monotonic() - start < 8
    with linalgd.Client(server.target, timeout=10.0) as c:
        np.testing.assert_allclose(c.matmul(np.eye(2), np.eye(2)), np.eye(2))
