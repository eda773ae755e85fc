"""linalgd.aio.Client against the real server: every method, concurrency,
cancellation, errors (the same classes as linalgd.Client) and retries."""
import asyncio
import math
import os
import threading
import time

import numpy as np
import pytest

import linalgd
import linalgd.aio
from conftest import CLIENT_DIR, free_port
from test_retry import overloaded  # noqa: F401  (a fixture)
from numerics import assert_close


def run(coro):
    return asyncio.run(coro)


def aio_test(fn):
    """Runs the coroutine test fn(client, ...) with an aio Client on the session server."""
    def test(server, *args, **kwargs):
        async def main():
            async with linalgd.aio.Client(server.target, timeout=20.0) as c:
                await fn(c, *args, **kwargs)
        run(main())
    test.__name__ = fn.__name__
    test.__doc__ = fn.__doc__
    return test


RNG = np.random.default_rng(7)


async def ids(c):
    return sorted(t.id for t in await c.list_tensors())


@aio_test
async def test_matmul_bias_epilogue_and_info(c):
    x = RNG.standard_normal((4, 5, 6)).astype(np.float32)
    w = RNG.standard_normal((3, 6)).astype(np.float32)
    b = RNG.standard_normal(3).astype(np.float32)
    r = await c.matmul(x, w, bias=b, transpose_b=True, epilogue="relu", return_info=True)
    np.testing.assert_allclose(r.out, np.maximum(x @ w.T + b, 0), rtol=1e-5, atol=1e-5)
    assert r.out.dtype == np.float32 and r.info.backend == "cpu"
    v = await c.matmul(np.ones(3), np.ones((3, 2)))  # 1-D promoted and squeezed
    np.testing.assert_array_equal(v, [3.0, 3.0])


@aio_test
async def test_solve_lstsq_and_sparse_solve(c):
    a = RNG.standard_normal((5, 5)) + 5 * np.eye(5)
    b = RNG.standard_normal(5)
    assert_close(await c.solve(a, b), np.linalg.solve(a, b))
    r = await c.solve(a @ a.T, b[:, None], method="cholesky", return_info=True)
    assert r.method_used == linalgd.SolveMethod.CHOLESKY and r.x.shape == (5, 1)
    tall = RNG.standard_normal((8, 3))
    x, res, rank, s = await c.lstsq(tall, b[:3].repeat(3)[:8])
    ref = np.linalg.lstsq(tall, b[:3].repeat(3)[:8], rcond=None)
    np.testing.assert_allclose(x, ref[0], rtol=1e-9)
    assert rank == 3 and s.shape == (3,)
    dense = np.diag([2.0, 3.0, 4.0]) + np.diag([1.0, 1.0], 1)
    csr = (np.array([0, 2, 4, 5]), np.array([0, 1, 1, 2, 2]), dense[dense != 0], (3, 3))
    np.testing.assert_allclose(await c.sparse_solve(csr, np.ones(3)),
                               np.linalg.solve(dense, np.ones(3)), rtol=1e-12)


@aio_test
async def test_store_remote_tensors_and_factors(c):
    w = RNG.standard_normal((6, 4))
    async with await c.put(w) as remote:
        assert isinstance(remote, linalgd.aio.RemoteTensor) and remote.shape == (6, 4)
        assert remote.id in [t.id for t in await c.list_tensors()]
        np.testing.assert_array_equal(await remote.get(), w)
        np.testing.assert_array_equal(await c.get(remote.id), w)
        kept = await c.matmul(np.eye(6), remote, keep=True)
        np.testing.assert_allclose(await kept.get(), w)
        await kept.delete()
    ids = [t.id for t in await c.list_tensors()]
    assert remote.id not in ids and kept.id not in ids
    with pytest.raises(linalgd.NotFound):
        await c.get(remote.id)
    a = RNG.standard_normal((4, 4)) + 4 * np.eye(4)
    async with await c.factorize(a) as f:
        assert isinstance(f, linalgd.aio.Factor) and f.method == linalgd.SolveMethod.LU
        np.testing.assert_allclose(await f.solve(np.ones(4)), np.linalg.solve(a, np.ones(4)))
    with pytest.raises(linalgd.NotFound):
        await c.solve(None, np.ones(4), factor=f.id)
    with pytest.raises(TypeError, match="async with"):
        with f:
            pass
    info = await c.put_info(np.ones((2, 3), np.float32), ttl=60.0)
    assert info.shape == (2, 3) and info.ttl_seconds == 60.0
    await c.delete(info.id)
    g = await c.factorize(a, method="lu")
    await c.release_factor(g.factor_id)
    with pytest.raises(linalgd.NotFound):
        await c.release_factor(g.id)


@aio_test
async def test_server_info_health_and_wait(c):
    info = await c.server_info()
    assert "cpu" in info.backends and info.version
    assert await c.health() == "SERVING"
    await c.wait_for_server(timeout=5.0)


@aio_test
async def test_large_operands_go_through_parallel_uploads(c):
    before = await ids(c)
    c.stream_threshold = 1 << 16  # 64 KiB: these operands and the result are streamed
    c.transfer_part_min_bytes = 1 << 14
    a = RNG.standard_normal((128, 96))
    b = RNG.standard_normal((96, 112))
    assert_close(await c.matmul(a, b), a @ b)
    big = RNG.standard_normal((200, 100))
    remote = await c.put(big)
    np.testing.assert_array_equal(await remote.get(), big)
    await remote.delete()
    assert await ids(c) == before  # temporary uploads and the kept result are gone


@aio_test
async def test_fifty_concurrent_calls(c):
    xs = [RNG.standard_normal((3, 4)) for _ in range(50)]
    w = RNG.standard_normal((4, 2))
    outs = await asyncio.gather(*(c.matmul(x, w) for x in xs))
    for x, out in zip(xs, outs):
        np.testing.assert_allclose(out, x @ w, rtol=1e-12)


def test_cancelling_a_pending_call():
    """A call waiting for a server that is not there is cancelled at once."""
    async def main():
        async with linalgd.aio.Client(f"127.0.0.1:{free_port()}", timeout=30.0,
                                      wait_for_ready=True) as c:
            task = asyncio.create_task(c.matmul(np.eye(2), np.eye(2)))
            await asyncio.sleep(0.2)
            assert not task.done()
            t0 = time.monotonic()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert time.monotonic() - t0 < 1.0
    run(main())


@aio_test
async def test_cancelling_a_running_call_leaves_the_client_usable(c):
    before = await ids(c)
    c.stream_threshold = 1 << 16  # a is uploaded first, then deleted on cancellation
    a = RNG.standard_normal((700, 700))
    task = asyncio.create_task(c.lstsq(a, np.ones((700, 8))))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    np.testing.assert_array_equal(await c.matmul(np.eye(2), np.ones((2, 2))), np.ones((2, 2)))
    # the upload finishes on its thread, then is deleted: up to 30 s on a loaded machine (a
    # CI run with 2 cores and other suites beside it once took more than 5 s)
    for _ in range(600):
        if await ids(c) == before:
            break
        await asyncio.sleep(0.05)
    assert await ids(c) == before


def test_errors_are_the_sync_clients_classes(server):
    cases = [
        ("matmul", (np.ones((2, 3)), np.ones((2, 3))), {}),
        ("solve", (np.zeros((2, 2)), np.ones(2)), {"method": "lu", "no_fallback": True}),
        ("get", ("no-such-tensor",), {}),
        ("matmul", (np.ones((2, 2), np.int8), np.ones((2, 2))), {}),  # client-side check
    ]
    with linalgd.Client(server.target) as sync:
        expected = []
        for name, args, kwargs in cases:
            with pytest.raises(linalgd.LinalgdError) as e:
                getattr(sync, name)(*args, **kwargs)
            expected.append((type(e.value), e.value.code, e.value.message))

    async def main():
        async with linalgd.aio.Client(server.target) as c:
            for (name, args, kwargs), want in zip(cases, expected):
                with pytest.raises(linalgd.LinalgdError) as e:
                    await getattr(c, name)(*args, **kwargs)
                assert (type(e.value), e.value.code, e.value.message) == want
    run(main())
    assert [cls for cls, _, _ in expected] == [linalgd.InvalidArgument,
                                               linalgd.FailedPrecondition, linalgd.NotFound,
                                               linalgd.InvalidArgument]


def test_retries_until_the_server_comes_up(start_server):
    port = free_port()
    timer = threading.Timer(0.3, lambda: start_server(port=port))
    timer.start()

    async def main():
        policy = linalgd.RetryPolicy(retries=50, initial_backoff=0.05, max_backoff=0.1)
        async with linalgd.aio.Client(f"127.0.0.1:{port}", retry_policy=policy,
                                      timeout=20) as c:
            np.testing.assert_array_equal(await c.matmul(np.eye(2), np.ones((2, 2))),
                                          np.ones((2, 2)))
    try:
        run(main())
    finally:
        timer.join()


def test_retry_after_hint_and_other_tasks_run_meanwhile(overloaded):  # noqa: F811
    handler, target = overloaded
    ticks = []

    async def ticker():
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.01)

    async def main():
        policy = linalgd.RetryPolicy(retries=3, initial_backoff=0.001)
        async with linalgd.aio.Client(target, retry_policy=policy, timeout=5) as c:
            tick = asyncio.create_task(ticker())
            info = await c.server_info()
            tick.cancel()
        return info
    assert run(main()).version == "test"
    gaps = np.diff(handler.times)
    assert len(handler.times) == 3 and (gaps >= 0.14).all(), gaps
    assert len(ticks) > 15  # about 0.3 s of retry waits did not block the loop


@aio_test
async def test_a_deadline_that_has_passed_is_exceeded_at_once(c):
    """As the blocking client: a zero timeout is DEADLINE_EXCEEDED every time, never a result
    (gRPC's millisecond rounding would otherwise give the call up to a millisecond more)."""
    a = np.ones((2, 2), np.float32)
    for _ in range(30):
        with pytest.raises(linalgd.DeadlineExceeded):
            await c.matmul(a, a, timeout=0.0)


@aio_test
async def test_an_infinite_timeout_is_no_deadline_and_nan_is_refused(c):
    """As the blocking client: infinity (which gRPC made a deadline already passed) means no
    deadline, per call and as the client's default; NaN is refused naming timeout."""
    a = np.ones((2, 2), np.float32)
    assert np.array_equal(await c.matmul(a, a, timeout=math.inf), a @ a)
    async with linalgd.aio.Client(c.target, timeout=math.inf) as forever:
        assert np.array_equal(await forever.matmul(a, a), a @ a)
    with pytest.raises(linalgd.InvalidArgument, match="timeout: NaN is not a number"):
        await c.matmul(a, a, timeout=math.nan)


def test_deadline_covers_all_retries():
    async def main():
        policy = linalgd.RetryPolicy(retries=1000, initial_backoff=0.02, max_backoff=0.05)
        async with linalgd.aio.Client(f"127.0.0.1:{free_port()}", retry_policy=policy,
                                      timeout=0.5) as c:
            with pytest.raises((linalgd.Unavailable, linalgd.DeadlineExceeded)) as e:
                await c.server_info()
        return e.value
    t0 = time.monotonic()
    error = run(main())
    assert 0.4 < time.monotonic() - t0 < 1.0 and error.attempts > 5


def test_readme_asyncio_example(server):
    with open(os.path.join(CLIENT_DIR, "README.md")) as f:
        text = f.read()
    code = text.split("## asyncio", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    scope = {}
    exec(code.replace("localhost:50051", server.target), scope)  # noqa: S102
    batches = [np.full((2, 3), float(i)) for i in range(4)]
    outs = run(scope["main"](batches, np.ones((3, 5))))
    for i, out in enumerate(outs):
        np.testing.assert_array_equal(out, np.full((2, 5), 3.0 * i))


def test_wait_for_server_both_clients(start_server):
    """Both clients run one wait_for_server: it waits for a server that comes up
    later, and past its timeout raises DeadlineExceeded naming the target."""
    port = free_port()
    target = f"127.0.0.1:{port}"
    with linalgd.Client(target) as c:
        t0 = time.monotonic()
        with pytest.raises(linalgd.DeadlineExceeded, match=f"{target} not SERVING after 0.3 s"):
            c.wait_for_server(timeout=0.3)
        assert time.monotonic() - t0 < 1.0

    async def main():
        async with linalgd.aio.Client(target) as c:
            with pytest.raises(linalgd.DeadlineExceeded, match=f"{target} not SERVING"):
                await c.wait_for_server(timeout=0.3)
            timer = threading.Timer(0.3, lambda: start_server(port=port))
            timer.start()
            try:
                await c.wait_for_server(timeout=20.0)
                assert await c.health() == "SERVING"
            finally:
                timer.join()
    run(main())


def test_same_methods_and_signatures_as_the_sync_client():
    import inspect
    sync_only = {"shared_memory_active"}  # shared memory is the sync client's
    names = [n for n in dir(linalgd.Client) if not n.startswith("_") and n not in sync_only]
    for name in names:
        mine, theirs = getattr(linalgd.aio.Client, name), getattr(linalgd.Client, name)
        if not callable(theirs):  # options: chunk_bytes
            assert mine == theirs, name
            continue
        assert inspect.iscoroutinefunction(mine), name
        assert inspect.signature(mine).parameters == inspect.signature(theirs).parameters, name


@aio_test
async def test_cancelling_during_an_upload_deletes_what_it_stored(c):
    before = await ids(c)
    c.stream_threshold = 1 << 20
    a = np.ones((4096, 2048))  # 64 MiB: still uploading when the task is cancelled
    task = asyncio.create_task(c.matmul(a, np.ones((2048, 2))))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await ids(c) == before  # cancelled before the upload finished
    for _ in range(150):  # the upload completes on its thread (a tensor appears)...
        if await ids(c) != before:
            break
        await asyncio.sleep(0.02)
    for _ in range(100):  # ... and is deleted (it may be gone before the loop above saw it)
        if await ids(c) == before:
            break
        await asyncio.sleep(0.05)
    assert await ids(c) == before


@aio_test
async def test_a_collected_factor_is_released_in_the_background(c):
    import gc
    f = await c.factorize(np.eye(3) * 2)
    factor_id = f.id
    assert factor_id in await ids(c)
    del f
    gc.collect()
    for _ in range(100):
        if factor_id not in await ids(c):
            break
        await asyncio.sleep(0.02)
    assert factor_id not in await ids(c)
