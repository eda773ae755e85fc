"""A call's timeout is one deadline from its start to its end: its uploads, the RPC and its
retries, the fetch of a kept result, and the deletes of its temporaries after a failure (by a
short grace past it, _procs.CLEANUP_GRACE_SECONDS). Each step used to take a deadline of its
own, and the fetch the client's timeout: a call of timeout=2.2 returned after 2.69 s, and one
of timeout=5 whose server was killed raised after 10.9 s (10 s per temporary to delete)."""
import asyncio
import signal
import threading
import time

import numpy as np
import pytest

import linalgd
import linalgd.aio

STALL = 1.5  # seconds each CPU matmul of the stalling server takes
SLOW = 1.0  # seconds a slowed transfer takes, unless its deadline comes first
# Slack over a call's timeout for its exception to arrive on a loaded 2-core machine: the
# deletes' grace (0.5 s) and scheduling.
SLACK = 1.5
RNG = np.random.default_rng(5)


@pytest.fixture(scope="module")
def stalling_server():
    from conftest import Server
    s = Server("--inject-faults", f"cpu:matmul:stall={STALL}s").start()
    yield s
    s.stop()


def _slow(deadline):
    """SLOW seconds more for a transfer, as over a slow link; ended by its deadline, as a real
    transfer is."""
    left = SLOW if deadline is None else deadline - time.monotonic()
    time.sleep(min(SLOW, max(0.0, left)))


def _slow_transfers(c):
    """Slows c's uploads and downloads; returns (the ids uploaded, the ids fetched)."""
    stored, fetched = [], []
    put_many, get = c._transfer.put_many, c._transfer.get

    def slow_put_many(items, deadline):
        _slow(deadline)
        infos = put_many(items, deadline)
        stored.extend(info.id for info in infos)
        return infos

    def slow_get(tensor_id, deadline):
        fetched.append(tensor_id)
        _slow(deadline)
        return get(tensor_id, deadline)
    c._transfer.put_many, c._transfer.get = slow_put_many, slow_get
    return stored, fetched


def _listed(c):
    return {t.id for t in c.list_tensors()}


def test_the_timeout_covers_uploads_the_call_and_the_fetch(stalling_server):
    """Upload (1 s), matmul (1.5 s) and fetch (1 s) each fit in 2.5 s, together they do not:
    the call ends at 2.5 s with DeadlineExceeded (it returned after 3.5 s). Its uploads are
    deleted all the same."""
    timeout = 2.5
    a, b = RNG.standard_normal((64, 64)), RNG.standard_normal((64, 64))
    with linalgd.Client(stalling_server.target, timeout=60.0) as c:
        c.stream_threshold = 1024  # a, b and the result move as stored tensors
        stored, _ = _slow_transfers(c)
        start = time.monotonic()
        with pytest.raises(linalgd.DeadlineExceeded):
            c.matmul(a, b, timeout=timeout)
        elapsed = time.monotonic() - start
        assert timeout - 0.1 < elapsed < timeout + SLACK
        assert len(stored) == 2 and not set(stored) & _listed(c)  # its temporaries are gone


def test_the_fetch_of_a_kept_result_keeps_the_calls_deadline(stalling_server):
    """A result large enough to be kept is fetched by the call's deadline, not the client's
    timeout: matmul (1.5 s) then fetch (1 s) pass 2 s (it returned after 2.5 s). The kept
    result is deleted."""
    timeout = 2.0
    a, b = RNG.standard_normal((64, 8)), RNG.standard_normal((8, 64))  # 4 KiB each, inline
    with linalgd.Client(stalling_server.target, timeout=60.0) as c:
        c.stream_threshold = 16 << 10  # the 32 KiB result is kept and fetched
        stored, fetched = _slow_transfers(c)
        start = time.monotonic()
        with pytest.raises(linalgd.DeadlineExceeded):
            c.matmul(a, b, timeout=timeout)
        elapsed = time.monotonic() - start
        assert stored == [] and len(fetched) == 1
        assert timeout - 0.1 < elapsed < timeout + SLACK
        assert fetched[0] not in _listed(c)
        np.testing.assert_allclose(c.matmul(a, b, timeout=10.0), a @ b)  # time enough


def test_the_aio_client_keeps_one_deadline_too(stalling_server):
    """linalgd.aio.Client runs the same operations: uploads, call and fetch by one deadline,
    and its temporaries deleted after the failure."""
    timeout = 2.5
    a, b = RNG.standard_normal((64, 64)), RNG.standard_normal((64, 64))

    async def main():
        async with linalgd.aio.Client(stalling_server.target, timeout=60.0) as c:
            c.stream_threshold = 1024
            stored, _ = _slow_transfers(c)
            start = time.monotonic()
            with pytest.raises(linalgd.DeadlineExceeded):
                await c.matmul(a, b, timeout=timeout)
            elapsed = time.monotonic() - start
            assert timeout - 0.1 < elapsed < timeout + SLACK
            assert len(stored) == 2
            assert not set(stored) & {t.id for t in await c.list_tensors()}
    asyncio.run(main())


def test_a_killed_server_fails_the_call_near_its_timeout(start_server):
    """The server is killed while the call's Matmul runs, after its operands were uploaded:
    the call raises by its timeout and a short grace for the deletes of its temporaries
    (each delete used to get 10 s of retries of its own: 10.9 s for timeout=5)."""
    timeout = 4.0
    s = start_server("--inject-faults", "cpu:matmul:stall=60s")
    a, b = RNG.standard_normal((64, 64)), RNG.standard_normal((64, 64))
    with linalgd.Client(s.target, timeout=60.0) as c:
        c.stream_threshold = 1024  # two temporaries to delete
        invoke = c._invoke

        def kill_during_matmul(method, request, timeout, rpc=None):
            if method == "Matmul":
                threading.Timer(0.3, s.proc.send_signal, (signal.SIGKILL,)).start()
            return invoke(method, request, timeout, rpc)
        c._invoke = kill_during_matmul
        start = time.monotonic()
        with pytest.raises((linalgd.Unavailable, linalgd.DeadlineExceeded)):
            c.matmul(a, b, timeout=timeout)
        elapsed = time.monotonic() - start
    s.proc.wait()
    assert elapsed < timeout + SLACK
