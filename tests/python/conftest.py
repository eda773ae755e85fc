"""Fixtures: the real linalgd server on a free port, and a Client connected to it.

The server binary is $LINALGD_SERVER (ctest sets it), else build-py/bin/linalgd
or build/bin/linalgd of the repository. Without one, server tests fail.
"""
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CLIENT_DIR = os.path.join(REPO, "client", "python")
EXAMPLES_DIR = os.path.join(REPO, "examples")
sys.path.insert(0, CLIENT_DIR)  # the source tree, not an installed copy

import linalgd  # noqa: E402  (generates the stubs from proto/ if stale)


def server_binary():
    env = os.environ.get("LINALGD_SERVER")
    if env:
        return env
    for build in ("build-py", "build"):
        path = os.path.join(REPO, build, "bin", "linalgd")
        if os.access(path, os.X_OK):
            return path
    return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metric_value(metrics_port, name):
    """The value of the unlabelled series `name` on a server's /metrics, or
    None when it is not exported."""
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    return None


class Server:
    """One linalgd process on 127.0.0.1, SERVING when start() returns: on the port given to
    start(), else on one the kernel picks at the server's bind (--listen HOST:0), read from its
    "listening on port" log line. A port picked before the server binds it could be another
    test's server by then, answering the readiness check in its place."""

    def __init__(self, *extra_flags, listen_host="127.0.0.1", metrics=False, log_level="info",
                 **client_kwargs):
        self.extra_flags = list(extra_flags)
        self.log_level = log_level
        self.listen_host = listen_host  # the target stays 127.0.0.1
        self.metrics = metrics  # on a port the kernel picks, read from the log
        self.metrics_port = None
        self.client_kwargs = client_kwargs  # how the readiness check connects (TLS)
        self.proc = None
        self.port = None
        self.log = tempfile.NamedTemporaryFile(prefix="linalgd-", suffix=".log", delete=False)

    @property
    def target(self):
        return f"127.0.0.1:{self.port}"

    def start(self, port=None, timeout=20.0):
        binary = server_binary()
        if not binary or not os.access(binary, os.X_OK):
            pytest.fail(f"no linalgd server binary (LINALGD_SERVER={binary!r}); build the "
                        "linalgd target or set LINALGD_SERVER")
        metrics = "127.0.0.1:0" if self.metrics else ""
        cmd = [binary, "--listen", f"{self.listen_host}:{port or 0}", "--metrics-listen", metrics,
               "--log-level", self.log_level, "--shutdown-grace", "1s", "--cpu-workers", "2",
               "--blas-threads", "1", *self.extra_flags]
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        listening = self._logged(r"listening on port (\d+) ", deadline)
        self.port = port or listening
        if self.metrics and listening:
            self.metrics_port = self._logged(r"metrics on http://127\.0\.0\.1:(\d+)/", deadline)
        if self.port and self._wait_serving(deadline):
            return self
        self.stop()
        pytest.fail(f"linalgd did not become SERVING: {' '.join(cmd)}\n{self.output()}")

    def _logged(self, pattern, deadline):
        """The number `pattern` captures in the server's log, once logged (None if the server
        exits or the deadline passes first)."""
        while time.monotonic() < deadline and self.proc.poll() is None:
            m = re.search(pattern, self.output(whole=True))
            if m:
                return int(m.group(1))
            time.sleep(0.01)
        return None

    def _wait_serving(self, deadline):
        policy = linalgd.RetryPolicy(retries=0, initial_backoff=0.02, max_backoff=0.1)
        with linalgd.Client(self.target, timeout=1.0, retry_policy=policy,
                            **self.client_kwargs) as c:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    return False
                try:
                    if c.health(timeout=0.5) == "SERVING":
                        return True
                except linalgd.LinalgdError:
                    pass
                time.sleep(0.02)
        self.stop()
        return False

    def stop(self, wait=5):
        """SIGTERM, then SIGKILL after `wait` seconds (the server may drain
        calls still in flight for up to its --shutdown-grace, 30 s)."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(wait)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def output(self, whole=False):
        self.log.flush()
        with open(self.log.name, errors="replace") as f:
            text = f.read()
        return text if whole else text[-4000:]


@pytest.fixture(scope="session")
def server():
    s = Server().start()
    yield s
    s.stop()
    # A crash during the session (or an unclean SIGTERM) fails the run here.
    assert s.proc.returncode == 0, f"server exit status {s.proc.returncode}\n{s.output()}"
    os.unlink(s.log.name)


@pytest.fixture(scope="module")
def shm_server():
    """A server that accepts same-host shared-memory regions (--allow-shm)."""
    s = Server("--allow-shm").start()
    yield s
    s.stop()
    assert s.proc.returncode == 0, f"server exit status {s.proc.returncode}\n{s.output()}"
    os.unlink(s.log.name)


@pytest.fixture
def start_server():
    """Starts extra servers (own flags) for a test; stops them afterwards."""
    started = []

    def start(*flags, port=None, **kwargs):
        s = Server(*flags, **kwargs)
        started.append(s)
        return s.start(port=port)

    yield start
    for s in started:
        s.stop()


@pytest.fixture
def client(server):
    with linalgd.Client(server.target, timeout=10.0) as c:
        yield c
