"""SIGTERM ends the server within --shutdown-grace plus a fixed margin (5 s),
even while a computation that cannot be interrupted is running (here a
fault-injected 60 s stall in the CPU backend)."""
import signal
import threading
import time

import numpy as np
import pytest

import linalgd
from conftest import Server


def test_sigterm_exits_within_a_hard_bound_while_a_job_is_stuck():
    s = Server("--inject-faults", "cpu:all:stall=60s").start()
    try:
        errors = []

        def call():
            try:
                with linalgd.Client(s.target, timeout=120,
                                    retry_policy=linalgd.RetryPolicy(retries=0)) as c:
                    c.matmul(np.ones((4, 4), np.float32), np.ones((4, 4), np.float32))
            except linalgd.LinalgdError as e:
                errors.append(e)

        t = threading.Thread(target=call, daemon=True)
        t.start()
        time.sleep(1.0)  # the call is in the backend's stall now
        start = time.monotonic()
        s.proc.send_signal(signal.SIGTERM)
        rc = s.proc.wait(timeout=30)
        took = time.monotonic() - start
        assert took < 15, f"exited {took:.1f} s after SIGTERM (grace 1 s + 5 s margin)"
        assert rc != 0  # the hard stop, not a clean exit
        t.join(10)
        assert errors, "the stuck call must fail, not succeed"
        assert "exiting" in s.output()
    finally:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()
