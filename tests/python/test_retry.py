"""Retries with backoff, the retry-after-ms hint, and deadlines spanning retries."""
import math
import threading
import time
from concurrent import futures

import grpc
import numpy as np
import pytest

import linalgd
from linalgd._stubs import pb
from conftest import free_port


def test_retries_until_the_server_comes_up(start_server):
    port = free_port()
    timer = threading.Timer(0.3, lambda: start_server(port=port))
    timer.start()
    try:
        policy = linalgd.RetryPolicy(retries=50, initial_backoff=0.05, max_backoff=0.1)
        with linalgd.Client(f"127.0.0.1:{port}", retry_policy=policy, timeout=20) as c:
            np.testing.assert_array_equal(c.matmul(np.eye(2), np.ones((2, 2))), np.ones((2, 2)))
    finally:
        timer.join()


def test_deadline_covers_all_retries():
    port = free_port()
    policy = linalgd.RetryPolicy(retries=1000, initial_backoff=0.02, max_backoff=0.05)
    with linalgd.Client(f"127.0.0.1:{port}", retry_policy=policy, timeout=0.5) as c:
        t0 = time.monotonic()
        with pytest.raises((linalgd.Unavailable, linalgd.DeadlineExceeded)) as e:
            c.server_info()
    assert 0.4 < time.monotonic() - t0 < 1.0
    assert e.value.attempts > 5


def test_gives_up_when_the_next_wait_passes_the_deadline():
    policy = linalgd.RetryPolicy(retries=10, initial_backoff=0.2, jitter=0.0)
    with linalgd.Client(f"127.0.0.1:{free_port()}", retry_policy=policy, timeout=0.5) as c:
        t0 = time.monotonic()
        with pytest.raises(linalgd.Unavailable) as e:
            c.server_info()
    # waits 0.2 s, then 0.4 s would pass the deadline: fail now rather than sleep in vain
    assert e.value.attempts == 2 and time.monotonic() - t0 < 0.45


def test_no_retry_when_disabled():
    with linalgd.Client(f"127.0.0.1:{free_port()}", retries=0) as c:
        with pytest.raises(linalgd.Unavailable) as e:
            c.health()
    assert e.value.attempts == 1


def test_backoff_schedule():
    p = linalgd.RetryPolicy(retries=5, initial_backoff=0.1, max_backoff=0.3, jitter=0.0)
    assert [p.delay(i) for i in range(1, 5)] == pytest.approx([0.1, 0.2, 0.3, 0.3])
    assert p.delay(1, retry_after=1.25) == 1.25
    j = linalgd.RetryPolicy(initial_backoff=1.0, jitter=0.2)
    assert all(0.8 <= j.delay(1) <= 1.2 for _ in range(50))
    err = linalgd.InvalidArgument("x")
    assert not p.should_retry(err, 1)
    assert p.should_retry(linalgd.ResourceExhausted("queue full"), 5)
    assert not p.should_retry(linalgd.ResourceExhausted("queue full"), 6)
    quota = linalgd.ResourceExhausted(
        "tenant quota store_bytes=1", trailing_metadata=(("linalgd-store-refused", "store_bytes"),))
    assert not p.should_retry(quota, 1)  # would run the op again; only freeing space helps


@pytest.mark.parametrize("kwargs,says", [
    (dict(initial_backoff=math.nan), "initial_backoff: nan is not a number"),
    (dict(max_backoff="2"), "max_backoff: '2' is not a number"),
    (dict(multiplier=math.nan), "multiplier: nan is not a number"),
    (dict(jitter=math.nan), "jitter: nan is not a number"),
    (dict(jitter=1.5), r"jitter: 1.5; it must be in \[0, 1\]"),
    (dict(jitter=-0.1), r"jitter: -0.1; it must be in \[0, 1\]"),
    (dict(retries=math.nan), "retries: nan is not a whole number"),
    (dict(retries=2.5), "retries: 2.5 is not a whole number"),
    (dict(retries=True), "retries: True is not a whole number"),
    (dict(failovers=-1), "failovers: -1 is not a whole number"),
])
def test_a_retry_policy_of_nan_or_out_of_range_values_is_refused(kwargs, says):
    """NaN passed every check (its comparisons are false): retries=nan retried without end and
    a NaN backoff failed the first retry's wait with time.sleep's bare ValueError."""
    with pytest.raises(ValueError, match=says):
        linalgd.RetryPolicy(**kwargs)
    with pytest.raises(ValueError, match=says):
        linalgd.Client(f"127.0.0.1:{free_port()}", retry_policy=linalgd.RetryPolicy(**kwargs))


def test_infinite_retries_or_backoff_cap_are_taken():
    p = linalgd.RetryPolicy(retries=math.inf, max_backoff=math.inf, jitter=0.0)
    assert p.should_retry(linalgd.Unavailable("down"), 10**6)
    assert p.delay(3) == pytest.approx(0.4)


class _Overloaded(grpc.GenericRpcHandler):
    """Answers GetServerInfo with RESOURCE_EXHAUSTED + retry-after-ms, `fails` times.

    Not a stand-in for linalgd (which has no switch to send the hint on demand):
    it checks only that the client waits as long as the hint says.
    """

    def __init__(self, fails, retry_after_ms):
        self.fails, self.retry_after_ms, self.times = fails, retry_after_ms, []

    def service(self, details):
        if details.method != "/linalgd.v1.Linalg/GetServerInfo":
            return None

        def handler(request, context):
            self.times.append(time.monotonic())
            if len(self.times) <= self.fails:
                context.set_trailing_metadata((("retry-after-ms", str(self.retry_after_ms)),))
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "queue full (test)")
            return pb.GetServerInfoResponse(version="test", backends=["cpu"])

        return grpc.unary_unary_rpc_method_handler(
            handler, request_deserializer=pb.GetServerInfoRequest.FromString,
            response_serializer=pb.GetServerInfoResponse.SerializeToString)


@pytest.fixture
def overloaded():
    handler = _Overloaded(fails=2, retry_after_ms=150)
    server = grpc.server(futures.ThreadPoolExecutor(2), handlers=[handler])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield handler, f"127.0.0.1:{port}"
    server.stop(0)


def test_retry_after_hint_is_honoured(overloaded):
    handler, target = overloaded
    policy = linalgd.RetryPolicy(retries=3, initial_backoff=0.001)
    with linalgd.Client(target, retry_policy=policy, timeout=5) as c:
        assert c.server_info().version == "test"
    gaps = np.diff(handler.times)
    assert len(handler.times) == 3 and (gaps >= 0.14).all(), gaps


def test_retry_after_beyond_deadline_gives_up(overloaded):
    handler, target = overloaded
    with linalgd.Client(target, retries=3, timeout=0.1) as c:
        with pytest.raises(linalgd.ResourceExhausted) as e:
            c.server_info()
    assert e.value.retry_after == pytest.approx(0.15) and len(handler.times) == 1


def test_a_request_that_can_never_fit_is_not_retried(start_server):
    """A request alone past --max-inflight-bytes (or an iterative solve's workspace past it) is
    RESOURCE_EXHAUSTED with linalgd-never-fits: retrying it only costs the backoff."""
    s = start_server("--max-inflight-bytes", str(1 << 20))
    with linalgd.Client(s.target) as c:  # the default policy: 5 retries
        with pytest.raises(linalgd.ResourceExhausted) as e:
            c.matmul(np.ones((300, 300)), np.ones((300, 300)))  # 1.44 MB of operands
        assert e.value.attempts == 1
        assert "do not fit in --max-inflight-bytes=1048576" in str(e.value)
        assert ("linalgd-never-fits", "--max-inflight-bytes") in e.value.trailing_metadata
        n = 10_000  # GMRES: 35 vectors of n doubles, 2.8 MB
        eye = (np.arange(n + 1, dtype=np.int32), np.arange(n, dtype=np.int32), np.ones(n), (n, n))
        with pytest.raises(linalgd.ResourceExhausted) as e:
            c.sparse_solve(eye, np.ones(n), method="gmres")
        assert e.value.attempts == 1
        np.testing.assert_allclose(c.matmul(np.ones((10, 10)), np.ones((10, 10))), 10.0)
