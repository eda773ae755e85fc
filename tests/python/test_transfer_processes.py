"""Client(transfer_processes=N): the parts of large tensors move in worker
processes through shared-memory segments (_procs.py), against the real server."""
import os
import signal

import numpy as np
import pytest

import linalgd
from linalgd import _procs


def segments():
    """This process's transfer segments in /dev/shm."""
    prefix = f"{_procs.SEGMENT_PREFIX}{os.getpid()}-"
    return sorted(f for f in os.listdir("/dev/shm") if f.startswith(prefix))


def small_parts(client):
    """Streams from 64 KiB on, in parts of at least 16 KiB, chunks of 5000 bytes."""
    client.stream_threshold = 64 << 10
    client.transfer_part_min_bytes = 16 << 10
    client.transfer_connections = 4
    client.chunk_bytes = 5000
    return client


@pytest.fixture(scope="module")
def procs(server):
    """A client with 2 transfer processes, shared by this module's tests."""
    with small_parts(linalgd.Client(server.target, timeout=30.0, transfer_processes=2)) as c:
        yield c


def record_tasks(monkeypatch, field):
    """task[field] of each task the worker processes are given, in a list."""
    seen = []
    run = _procs.ProcessPool.run

    def record(self, task, deadline):
        seen.append(task[field])
        return run(self, task, deadline)

    monkeypatch.setattr(_procs.ProcessPool, "run", record)
    return seen


@pytest.fixture
def tasks(monkeypatch):
    """The kinds of the tasks the worker processes are given."""
    return record_tasks(monkeypatch, 0)


def test_round_trip_in_worker_processes(procs, tasks):
    rng = np.random.default_rng(1)
    for shape in [(200, 300), (257, 111), (64, 64)]:  # 480000, 228216, 32768 bytes
        x = rng.standard_normal(shape)
        t = procs.put(x)
        np.testing.assert_array_equal(t.get(), x)
        t.delete()
    assert tasks.count("PutTensor") == 8 and tasks.count("GetTensor") == 8  # 4 parts each
    a, b = rng.standard_normal((150, 160)), rng.standard_normal((160, 170))
    np.testing.assert_allclose(procs.matmul(a, b), a @ b, rtol=1e-12, atol=1e-12)
    assert len(procs._pool.pids()) == 2
    assert len(segments()) <= _procs.SegmentCache.MAX_SEGMENTS  # kept for the next transfer


def test_close_stops_the_workers_and_unlinks_every_segment(server):
    others = segments()  # other clients'
    c = small_parts(linalgd.Client(server.target, timeout=30.0, transfer_processes=3))
    x = np.arange(100_000, dtype=np.float64)
    np.testing.assert_array_equal(c.put(x).get(), x)
    pool = c._pool
    workers = [w.process for w in pool._workers if w is not None]
    assert workers and set(segments()) > set(others)
    c.close()
    assert segments() == others
    assert all(p.exitcode is not None for p in workers)
    assert c._transfer_pool() is None


def test_a_failing_part_fails_the_call_and_unlinks_its_segment(procs, monkeypatch):
    x = np.random.default_rng(2).standard_normal((200, 300))
    kept = segments()
    run = _procs.ProcessPool.run

    def corrupt(self, task, deadline):
        if task[0] == "PutTensor" and task[4] == 0:  # after the part's CRC32C was taken
            with _procs._Mapped(task[3], 0, 1) as first_byte:
                first_byte[0] ^= 1
        return run(self, task, deadline)

    monkeypatch.setattr(_procs.ProcessPool, "run", corrupt)
    before = {t.id for t in procs.list_tensors()}
    with pytest.raises(linalgd.DataLoss, match="CRC32C of the part") as e:
        procs.put(x)
    assert e.value.method == "PutTensor"
    assert set(segments()) <= set(kept)
    monkeypatch.undo()
    assert {t.id for t in procs.list_tensors()} == before  # the upload was aborted
    t = procs.put(x)
    np.testing.assert_array_equal(t.get(), x)
    t.delete()


def test_a_failing_range_fails_the_get_and_unlinks_its_segment(procs, monkeypatch):
    x = np.random.default_rng(3).standard_normal((200, 300))
    t = procs.put(x)
    kept = segments()
    get_task = _procs.get_task
    monkeypatch.setattr(_procs, "get_task",
                        lambda target, tensor_id, *rest: get_task(target, "0" * 32, *rest))
    with pytest.raises(linalgd.NotFound) as e:
        t.get()
    assert e.value.method == "GetTensor"
    assert set(segments()) <= set(kept)
    monkeypatch.undo()
    np.testing.assert_array_equal(t.get(), x)
    t.delete()


@pytest.mark.parametrize("direction", ["put", "get"])
def test_a_killed_worker_fails_the_call_and_is_replaced(procs, monkeypatch, direction):
    x = np.random.default_rng(4).standard_normal((200, 300))
    t = procs.put(x) if direction == "get" else None
    kept = segments()
    call = _procs._Worker.call
    killed = []

    def kill_then_call(self, task, deadline):
        if not killed:  # the worker dies before it answers its task
            killed.append(self.process.pid)
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.join()
        return call(self, task, deadline)

    monkeypatch.setattr(_procs._Worker, "call", kill_then_call)
    with pytest.raises(linalgd.TransferWorkerError) as e:
        procs.put(x) if direction == "put" else t.get()
    assert f"(pid {killed[0]})" in str(e.value) and "exit status -9" in str(e.value)
    assert isinstance(e.value, linalgd.Internal)
    assert set(segments()) <= set(kept)
    monkeypatch.undo()
    assert killed[0] not in procs._pool.pids()
    t = t or procs.put(x)
    np.testing.assert_array_equal(t.get(), x)  # a fresh worker took its place
    assert len(procs._pool.pids()) == 2 and killed[0] not in procs._pool.pids()
    t.delete()


def test_credentials_objects_keep_transfers_on_threads(server, caplog):
    import grpc
    creds = grpc.local_channel_credentials()
    with caplog.at_level("WARNING", logger="linalgd"):
        c = linalgd.Client(server.target, credentials=creds, transfer_processes=2)
    with c:
        assert c._transfer_pool() is None
    assert "cannot be passed to worker processes" in caplog.text


def test_a_channel_keeps_transfers_on_threads(server, caplog):
    import grpc
    with grpc.insecure_channel(server.target) as channel:
        with caplog.at_level("WARNING", logger="linalgd"):
            c = linalgd.Client(channel=channel, transfer_processes=2)
        with c:
            x = np.arange(100_000, dtype=np.float64)
            c.stream_threshold = 1 << 16
            np.testing.assert_array_equal(c.put(x).get(), x)
            assert c._pool is None and c._transfer_pool() is None
    assert "a client handed channel= moves its transfers on threads" in caplog.text


def test_transfer_processes_must_not_be_negative():
    with pytest.raises(ValueError, match="transfer_processes must be 0 to 64, not -1"):
        linalgd.Client("127.0.0.1:1", transfer_processes=-1)


def test_transfer_processes_are_bounded():
    # The largest count is accepted (workers start only at the first large
    # transfer); one more is refused before any process is spawned.
    with linalgd.Client("127.0.0.1:1", transfer_processes=64) as c:
        assert c.transfer_processes == 64
    with pytest.raises(ValueError, match="transfer_processes must be 0 to 64, not 65"):
        linalgd.Client("127.0.0.1:1", transfer_processes=65)
    with pytest.raises(ValueError, match="not 1000000"):
        linalgd.Client("127.0.0.1:1", transfer_processes=10**6)


def test_tls_client_certificate_and_token_reach_the_workers(start_server, tmp_path, tasks):
    from test_tenants import ALPHA, tokens_file
    from test_tls import client_tls, make_certs, tls_flags
    certs = make_certs(tmp_path)
    s = start_server(*tls_flags(certs, client_ca=True), "--auth-tokens", tokens_file(tmp_path),
                     **client_tls(certs))
    x = np.random.default_rng(5).standard_normal((200, 300))
    with small_parts(linalgd.Client(s.target, timeout=30.0, token=ALPHA, transfer_processes=2,
                                    **client_tls(certs))) as c:
        t = c.put(x)  # parts without the token or the certificate would be refused
        np.testing.assert_array_equal(t.get(), x)
        assert tasks.count("PutTensor") == 4 and tasks.count("GetTensor") == 4
        assert t.id in {info.id for info in c.list_tensors()}  # alpha's own tensor
    with linalgd.Client(s.target, timeout=30.0, **client_tls(certs)) as anonymous:
        with pytest.raises(linalgd.Unauthenticated):
            anonymous.list_tensors()


def test_replica_parts_go_to_the_owner_from_the_workers(start_server, monkeypatch):
    servers = {rid: start_server("--replica-id", rid) for rid in ("r0", "r1")}
    targets = record_tasks(monkeypatch, 1)
    target = "ipv4:" + ",".join(s.target for s in servers.values())
    x = np.random.default_rng(6).standard_normal((200, 300))
    with small_parts(linalgd.Client(target, timeout=30.0, transfer_processes=2)) as c:
        for _ in range(4):
            t = c.put(x)
            np.testing.assert_array_equal(t.get(), x)
            owner = servers[t.id.split("-", 1)[0]].target
            assert set(targets) == {"ipv4:" + owner} and len(targets) == 8
            targets.clear()


def test_asyncio_client_moves_parts_in_worker_processes(server, tasks):
    import asyncio
    from linalgd import aio
    x = np.random.default_rng(7).standard_normal((200, 300))

    async def main():
        async with aio.Client(server.target, timeout=30.0, transfer_processes=2) as c:
            small_parts(c)
            t = await c.put(x)
            np.testing.assert_array_equal(await c.get(t), x)
            await c.delete(t)
            return c
    c = asyncio.run(main())
    assert tasks.count("PutTensor") == 4 and tasks.count("GetTensor") == 4
    assert c._pool is None  # closed with the client


def test_an_interrupted_wait_stops_the_worker_so_no_reply_goes_astray(procs, monkeypatch):
    x = np.random.default_rng(8).standard_normal((200, 300))
    procs.delete(procs.put(x))  # both workers started
    wait = _procs.multiprocessing.connection.wait
    interrupted = []

    def interrupt_once(*args, **kwargs):
        ready = wait(*args, **kwargs)
        if not interrupted:  # the worker answers after its caller stopped waiting
            interrupted.append(1)
            raise KeyboardInterrupt
        return ready

    monkeypatch.setattr(_procs.multiprocessing.connection, "wait", interrupt_once)
    pids = procs._pool.pids()
    with pytest.raises(KeyboardInterrupt):
        procs.put(x)
    monkeypatch.undo()
    assert len(set(pids) - set(procs._pool.pids())) == 1  # that worker was stopped
    for _ in range(3):  # each task gets its own reply
        t = procs.put(x)
        np.testing.assert_array_equal(t.get(), x)
        t.delete()


def test_a_worker_that_stops_answering_is_replaced_after_the_deadline(procs, monkeypatch):
    x = np.random.default_rng(9).standard_normal((200, 300))
    t = procs.put(x)
    monkeypatch.setattr(_procs, "DEADLINE_GRACE_SECONDS", 0.1)
    call = _procs._Worker.call
    stopped = []

    def stop_then_call(self, task, deadline):
        if not stopped:  # the worker is alive but never answers
            stopped.append(self.process.pid)
            os.kill(self.process.pid, signal.SIGSTOP)
        return call(self, task, deadline)

    monkeypatch.setattr(_procs._Worker, "call", stop_then_call)
    with pytest.raises(linalgd.TransferWorkerError, match="has not answered 0.1 s past the "
                                                          "call's deadline"):
        procs.get(t, timeout=1.0)
    monkeypatch.undo()
    assert stopped[0] not in procs._pool.pids()
    np.testing.assert_array_equal(t.get(), x)
    t.delete()
