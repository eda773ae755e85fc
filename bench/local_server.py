"""A linalgd server for a bench script, on 127.0.0.1 at a port the kernel picks when the server
binds (--listen 127.0.0.1:0), read from the server's "listening on port N" log line.

A port picked in advance (bind port 0, close, pass the number) can be another process's by
the time the server binds it, and the server then refuses to start; reading the port from the
server's own log leaves no such window. The log goes to a temporary file (`Started.log`,
removed by `stop()`), and its end is in the error when the server does not start.
"""
import os
import re
import subprocess
import tempfile
import time

import linalgd


class Started:
    """A started server: proc (its Popen), target (127.0.0.1:PORT) and log (its log file)."""

    def __init__(self, proc, target, log):
        self.proc, self.target, self.log = proc, target, log

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if os.path.exists(self.log):
            os.remove(self.log)


def _tail(path, lines=30):
    with open(path, errors="replace") as f:
        return "".join(f.readlines()[-lines:])


def start(binary, *flags, token=None, timeout=30.0):
    """Starts `binary` with --listen 127.0.0.1:0 --metrics-listen "" --log-level info and
    `flags`; returns a Started once the server answers SERVING (its health check with `token`
    when one is given). Raises RuntimeError, naming the command and the log's end, when it
    exits or has not served within `timeout` seconds."""
    log = tempfile.NamedTemporaryFile(prefix="linalgd-bench-", suffix=".log", delete=False)
    cmd = [binary, "--listen", "127.0.0.1:0", "--metrics-listen", "", "--log-level", "info",
           *flags]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    deadline = time.monotonic() + timeout
    port = None
    while port is None and time.monotonic() < deadline and proc.poll() is None:
        with open(log.name, errors="replace") as f:
            m = re.search(r"listening on port (\d+) ", f.read())
        if m:
            port = int(m.group(1))
        else:
            time.sleep(0.05)
    server = Started(proc, f"127.0.0.1:{port}", log.name)
    if port is not None:
        try:
            with linalgd.Client(server.target, token=token) as c:
                c.wait_for_server(max(deadline - time.monotonic(), 1.0))
            return server
        except Exception:  # reported below with the log
            pass
    tail = _tail(log.name)
    server.stop()
    raise RuntimeError(f"linalgd did not start: {' '.join(cmd)}\n{tail}")


def stop_all(servers):
    for s in servers:
        s.stop()
