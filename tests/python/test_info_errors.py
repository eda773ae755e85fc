"""server_info, health, and the mapping of failures onto the LinalgdError hierarchy."""
import math
import time

import grpc
import numpy as np
import pytest

import linalgd
from conftest import free_port


def test_health(client):
    assert client.health() == "SERVING"
    assert client.health("linalgd.v1.Linalg") == "SERVING"
    with pytest.raises(linalgd.NotFound):  # the standard answer for an unknown service
        client.health("no.such.Service")


def test_server_info(client):
    info = client.server_info()
    assert isinstance(info, linalgd.ServerInfo)
    assert info.version and "cpu" in info.backends
    assert info.limits.max_message_bytes > 0 and info.limits.max_elements > 0
    assert info.limits.op_timeout_seconds > 0
    assert all(isinstance(d, linalgd.Device) for d in info.devices)
    if not any(b.startswith("gpu") for b in info.backends):
        assert info.gpu_status  # says why no GPU is used


@pytest.mark.parametrize("call,field", [
    (lambda c: c.matmul(np.ones((3, 4)), np.ones((3, 4))), "b.shape"),
    (lambda c: c.matmul(np.ones((2, 3, 4)), np.ones((3, 4, 5))), "batch dims"),
    (lambda c: c.matmul(np.ones((3, 4)), np.ones((4, 5)), c=np.ones((2, 2))), "c"),
    (lambda c: c.matmul(np.ones((3, 4)), np.ones((4, 5)), bias=np.ones(4)), "bias"),
    (lambda c: c.matmul(np.ones((3, 4)), np.ones((4, 5)), epilogue="bias"), "bias"),
    (lambda c: c.matmul(np.ones((3, 4)), np.ones((4, 5), np.float32)), "dtype"),
    (lambda c: c.solve(np.ones((3, 4)), np.ones((3, 1)), method="lu"), "a"),
    (lambda c: c.solve(np.eye(3), np.ones((4, 1))), "b"),
    (lambda c: c.solve(np.eye(3, dtype=np.float16), np.ones((3, 1), np.float16)), "dtype"),
])
def test_bad_requests_are_invalid_argument(client, call, field):
    with pytest.raises(linalgd.InvalidArgument) as e:
        call(client)
    err = e.value
    assert err.code == grpc.StatusCode.INVALID_ARGUMENT and field in err.message
    assert err.attempts == 1 and err.method in ("Matmul", "Solve")
    assert isinstance(err, ValueError) and isinstance(err, linalgd.LinalgdError)
    assert str(err).startswith("INVALID_ARGUMENT: ")


@pytest.mark.parametrize("call,match", [
    (lambda c: c.matmul(np.ones((2, 2), np.int32), np.ones((2, 2))), "a: dtype int32"),
    (lambda c: c.matmul(np.ones((2, 2), np.clongdouble), np.ones((2, 2))), "complex256"),
    (lambda c: c.matmul(np.float64(1.0), np.ones((2, 2))), "scalar"),
    (lambda c: c.matmul(np.ones((2, 2)), np.ones((2, 2)), epilogue="swish"), "epilogue"),
    (lambda c: c.matmul(np.ones((2, 2)), np.ones((2, 2)), compute_mode="fp8"), "compute_mode"),
    (lambda c: c.matmul(np.ones((2, 2)), np.ones((2, 2)), output_dtype=np.int8), "output_dtype"),
    (lambda c: c.solve(np.eye(2), np.ones(2), method="gauss"), "method"),
])
def test_client_side_validation(client, call, match):
    with pytest.raises(linalgd.InvalidArgument, match=match):
        call(client)


def test_deadline_exceeded(client):
    a = np.ones((1500, 1500))
    t0 = time.monotonic()
    with pytest.raises(linalgd.DeadlineExceeded) as e:
        client.matmul(a, a, timeout=0.002)
    assert time.monotonic() - t0 < 2.0
    assert e.value.code == grpc.StatusCode.DEADLINE_EXCEEDED and isinstance(e.value, TimeoutError)


def test_a_deadline_that_has_passed_is_exceeded_at_once(client):
    """gRPC keeps deadlines to the millisecond, rounding up: a zero timeout (a deadline that
    has passed by the time the call goes) is DEADLINE_EXCEEDED every time, never a result."""
    a = np.ones((2, 2), np.float32)
    for _ in range(30):
        with pytest.raises(linalgd.DeadlineExceeded):
            client.matmul(a, a, timeout=0.0)


@pytest.mark.parametrize("timeout", [math.inf, 1e300, 1e12, 1e10, 4e9, 1e8 + 1])
def test_a_timeout_years_long_or_infinite_is_no_deadline(server, timeout):
    """grpcio made a timeout of 1e10 s or more a deadline already passed: infinity, the natural
    'no deadline', failed every call at once. Per call, and as the client's default."""
    a = np.ones((2, 2), np.float32)
    with linalgd.Client(server.target, timeout=timeout) as c:
        assert np.array_equal(c.matmul(a, a), a @ a)
        assert np.array_equal(c.matmul(a, a, timeout=timeout), a @ a)
        t = c.put(a, timeout=timeout)
        assert np.array_equal(c.get(t, timeout=timeout), a)
        c.wait_for_server(timeout=timeout)


@pytest.mark.parametrize("timeout,says", [
    (math.nan, "timeout: NaN is not a number of seconds"),
    ("3", "timeout: '3' is not a number of seconds"),
    (True, "timeout: True is not a number of seconds"),
    ([1.0], r"timeout: \[1.0\] is not a number of seconds"),
])
def test_a_timeout_that_is_not_a_number_is_refused_naming_it(client, timeout, says):
    a = np.ones((2, 2), np.float32)
    with pytest.raises(linalgd.InvalidArgument, match=says):
        client.matmul(a, a, timeout=timeout)
    with pytest.raises(linalgd.InvalidArgument, match=says):
        client.get("no-such-id", timeout=timeout)
    with pytest.raises(linalgd.InvalidArgument, match=says):
        client.wait_for_server(timeout=timeout)
    with pytest.raises(ValueError, match=says):
        linalgd.Client(client.target, timeout=timeout)
    assert client.matmul(a, a, timeout=np.float32(5)).shape == (2, 2)  # numpy scalars are numbers


@pytest.mark.parametrize("call,says", [
    (lambda c, a: c.matmul(a, a, priority=2**40), r"priority: 1099511627776 is outside \["),
    (lambda c, a: c.matmul(a, a, priority=-2**31 - 1), r"priority: -2147483649 is outside \["),
    (lambda c, a: c.solve(np.eye(2), a, priority=1.5), "priority: 1.5 is not an integer"),
    (lambda c, a: c.matmul(a, a, priority="1"), "priority: '1' is not an integer"),
    (lambda c, a: c.matmul(a, a, priority=math.nan), "priority: nan is not an integer"),
    (lambda c, a: c.put(a, ttl=math.nan), "ttl: NaN is not a number of seconds"),
    (lambda c, a: c.put(a, ttl="5"), "ttl: '5' is not a number of seconds"),
    (lambda c, a: c.factorize(np.eye(2), ttl=True), "ttl: True is not a number of seconds"),
])
def test_a_bad_integer_or_seconds_argument_is_refused_naming_it(client, call, says):
    """Before: protobuf's bare 'Value out of range' or 'cannot convert float NaN to integer',
    or the value silently truncated (1.5) or parsed ('1')."""
    a = np.ones((2, 2))
    with pytest.raises(linalgd.InvalidArgument, match=says):
        call(client, a)
    assert client.matmul(a, a, priority=np.int64(-5)).shape == (2, 2)  # numpy integers are fine


@pytest.mark.parametrize("limit,says", [
    (0, r"max_message_bytes: 0 is outside \[1, "),
    (-1, r"max_message_bytes: -1 is outside \[1, "),
    (4.5, "max_message_bytes: 4.5 is not an integer"),
])
def test_a_message_limit_that_is_not_a_positive_integer_is_refused(server, limit, says):
    with pytest.raises(ValueError, match=says):
        linalgd.Client(server.target, max_message_bytes=limit)


def test_a_message_limit_beyond_grpcs_int_is_grpcs_largest(server):
    """Before: OverflowError from the channel options at the first call."""
    a = np.ones((2, 2))
    with linalgd.Client(server.target, max_message_bytes=2**40) as c:
        assert c.max_message_bytes == 2**31 - 1
        assert np.array_equal(c.matmul(a, a), a @ a)


def test_a_zero_timeout_of_a_store_or_factor_call_is_exceeded_not_the_default(client):
    """timeout=None means the client's timeout there; 0 meant it too."""
    a = np.eye(2)
    t = client.put(a)
    for call in (lambda: client.put(a, timeout=0), lambda: client.get(t, timeout=0),
                 lambda: client.factorize(a, timeout=0), lambda: client.delete(t, timeout=0)):
        with pytest.raises(linalgd.DeadlineExceeded):
            call()
    assert np.array_equal(client.get(t, timeout=None), a)


@pytest.mark.parametrize("timeout", [0, -1.0, -math.inf])
def test_a_default_timeout_of_zero_or_less_is_refused(server, timeout):
    with pytest.raises(ValueError, match="it must be positive, infinite or None"):
        linalgd.Client(server.target, timeout=timeout)


def test_request_over_client_limit_is_refused_locally():
    port = free_port()  # nothing listens: the error must come before any call
    with linalgd.Client(f"127.0.0.1:{port}", max_message_bytes=1024) as c:
        with pytest.raises(linalgd.ResourceExhausted, match="PutTensor") as e:
            c.matmul(np.ones((16, 16)), np.ones((16, 16)))
    assert e.value.attempts == 1


def test_message_over_server_limit_is_not_retried(start_server):
    s = start_server("--max-message-bytes", "4096")
    with linalgd.Client(s.target, retries=5) as c:
        assert c.matmul(np.ones((4, 4)), np.ones((4, 4))).shape == (4, 4)
        with pytest.raises(linalgd.ResourceExhausted) as e:
            c.matmul(np.ones((32, 32)), np.ones((32, 32)))
    assert e.value.attempts == 1


def test_unavailable_after_retries():
    port = free_port()
    policy = linalgd.RetryPolicy(retries=2, initial_backoff=0.01)
    with linalgd.Client(f"127.0.0.1:{port}", retry_policy=policy, timeout=5) as c:
        with pytest.raises(linalgd.Unavailable) as e:
            c.server_info()
    assert e.value.attempts == 3 and e.value.code == grpc.StatusCode.UNAVAILABLE
    assert isinstance(e.value, ConnectionError) and "3 attempts" in str(e.value)


def test_error_class_for_every_code():
    for code in grpc.StatusCode:
        if code != grpc.StatusCode.OK:
            cls = linalgd.error_class(code)
            assert issubclass(cls, linalgd.LinalgdError) and cls.code == code, code


@pytest.mark.parametrize("metadata,says", [
    ([("X-Key", "v")], "metadata: key 'X-Key': lowercase letters"),
    ([(":path", "/x")], "metadata: key ':path'"),
    ([("x-key", "v\n")], "metadata: x-key: the value is not printable ASCII text"),
    ([("x-key", b"v")], "metadata: x-key: the value is not printable ASCII text"),
    ([("x-key-bin", "text")], "metadata: x-key-bin: a -bin key's value is bytes"),
    ("abc", "metadata: 'abc'; give"),
    ({"x-a": "b"}, "metadata: {'x-a': 'b'}; give"),
    ([("a",)], r"metadata: \('a',\) is not a \(key, value\) pair"),
])
def test_metadata_gRPC_would_refuse_is_refused_when_the_client_is_made(server, metadata, says):
    """Before: gRPC refused it at every call ('metadata was invalid', an unpacking error for a
    dict or a string), and a client with it could make no call at all."""
    with pytest.raises(ValueError, match=says):
        linalgd.Client(server.target, metadata=metadata)


def test_metadata_as_lists_or_with_binary_values_is_taken(server):
    a = np.ones((2, 2))
    with linalgd.Client(server.target, metadata=[["x-trace", "abc"], ("x-id-bin", b"\x00\xff")]) as c:
        assert np.array_equal(c.matmul(a, a), a @ a)


def test_a_view_past_the_servers_max_elements_is_refused_before_its_copy(start_server):
    # A zero-stride view of 8 bytes standing for 2e8 elements: the client asks
    # the server's limit (1e6 here) and refuses it naming the operand, without
    # expanding it (1.6 GB), on every path that would copy it; small operands
    # are not held up by the question.
    server = start_server("--max-elements", "1000000", "--allow-shm")
    huge = np.lib.stride_tricks.as_strided(np.zeros(1), (2 * 10**8, 1, 1), (0, 0, 0))
    flat = np.lib.stride_tricks.as_strided(np.zeros(1), (2 * 10**8,), (0,))
    says = r"shape \(200000000, 1, 1\) has 200000000 elements, more than the server's " \
           r"max_elements 1000000 for one tensor; nothing was sent"
    for shm in (False, True):
        with linalgd.Client(server.target, timeout=10.0, use_shared_memory=shm) as c:
            start = time.monotonic()
            with pytest.raises(linalgd.InvalidArgument, match="a: " + says):
                c.matmul(huge, np.ones((1, 1)))
            with pytest.raises(linalgd.InvalidArgument, match="b: " + says):
                c.solve(np.ones((1, 1)), huge)
            with pytest.raises(linalgd.InvalidArgument, match="tensor: shape"):
                c.put(flat)
            with pytest.raises(linalgd.InvalidArgument, match="b: shape"):
                c.sparse_solve((np.array([0, 1]), np.array([0]), np.array([2.0]), (1, 1)),
                               np.lib.stride_tricks.as_strided(np.ones(1), (2 * 10**8, 1),
                                                               (0, 0)))
            assert time.monotonic() - start < 5  # nothing expanded
            np.testing.assert_allclose(c.matmul(np.eye(2), np.ones((2, 2))), np.ones((2, 2)))


def test_a_call_after_close_is_refused_saying_so(server):
    c = linalgd.Client(server.target, timeout=10.0)
    np.testing.assert_allclose(c.matmul(np.eye(2), np.eye(2)), np.eye(2))
    c.close()
    with pytest.raises(linalgd.FailedPrecondition, match="is closed: calls after close"):
        c.matmul(np.eye(2), np.eye(2))
    with pytest.raises(linalgd.FailedPrecondition, match="is closed"):
        c.put(np.ones(3))


@pytest.mark.parametrize("a,says", [
    # A dense array of 4 rows would unpack as (indptr, indices, data, shape).
    (np.array([[0, 2], [0, 0], [3, 4], [1, 1]]), "not ndarray"),
    ([np.array([0, 1]), np.array([0]), np.array([2.0]), (1, 1)], "not list"),
    ((np.array([0, 1]), np.array([0]), np.array([2.0]), (4.9, 4.9)), r"must hold integers"),
    ((np.array([0, 1]), np.array([0]), np.array([2.0])), "got a tuple of 3"),
])
def test_a_sparse_a_that_is_not_a_csr_tuple_is_refused(client, a, says):
    with pytest.raises(linalgd.InvalidArgument, match=says):
        client.sparse_solve(a, np.ones(1))


@pytest.mark.parametrize("call,says", [
    (lambda c: c.solve(np.eye(2), np.ones(2), method="lstsq", rcond="x"),
     "rcond: 'x' is not a real number"),
    (lambda c: c.sparse_solve((np.array([0, 1]), np.array([0]), np.array([2.0]), (1, 1)),
                              np.ones(1), tol="x"), "tol: 'x' is not a real number"),
    (lambda c: c.sparse_solve((np.array([0, 1]), np.array([0]), np.array([2.0]), (1, 1)),
                              np.ones(1), max_iter=2**70), "max_iter: .* is outside"),
])
def test_solver_arguments_of_the_wrong_kind_are_refused_naming_them(client, call, says):
    with pytest.raises(linalgd.InvalidArgument, match=says):
        call(client)
