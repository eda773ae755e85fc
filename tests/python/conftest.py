"""Fixtures: the real linalgd server on a free port, and a Client connected to it.

The server binary is $LINALGD_SERVER (ctest sets it), else build-py/bin/linalgd
or build/bin/linalgd of the repository. Without one, server tests fail.
"""
import os
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
    """One linalgd process on 127.0.0.1:<free port>, SERVING when start() returns."""

    def __init__(self, *extra_flags, listen_host="127.0.0.1", metrics=False, log_level="warn",
                 **client_kwargs):
        self.extra_flags = list(extra_flags)
        self.log_level = log_level
        self.listen_host = listen_host  # the target stays 127.0.0.1
        self.metrics_port = free_port() if metrics else None
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
        for _ in range(3):  # a free port can be taken before the server binds it
            self.port = port or free_port()
            metrics = f"127.0.0.1:{self.metrics_port}" if self.metrics_port else ""
            cmd = [binary, "--listen", f"{self.listen_host}:{self.port}", "--metrics-listen", metrics,
                   "--log-level", self.log_level, "--shutdown-grace", "1s", "--cpu-workers", "2",
                   "--blas-threads", "1", *self.extra_flags]
            self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
            if self._wait_serving(timeout):
                return self
            if port:
                break
        pytest.fail(f"linalgd did not become SERVING: {' '.join(cmd)}\n{self.output()}")

    def _wait_serving(self, timeout):
        deadline = time.monotonic() + timeout
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

    def output(self):
        self.log.flush()
        with open(self.log.name, errors="replace") as f:
            return f.read()[-4000:]


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
