"""Shared memory with a same-host server (server flag --allow-shm).

Results through the region equal the socket's; with a 64 KiB message limit a
large matmul succeeds only through shared memory (no tensor bytes cross the
socket); without --allow-shm, or when tensors do not fit or the region is busy,
the client falls back to the socket. Regions are sealed memfds handed over the
server's Unix socket; a region id is useless without its secret, and closing
the socket releases the region.
"""
import fcntl
import logging
import math
import os
import socket
import threading
import time

import numpy as np
import pytest

import linalgd
from linalgd import shm
from numerics import assert_close

RNG = np.random.default_rng(8)


def rand(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def spd(n, batch=()):
    m = rand(*batch, n, n)
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


def our_shm_names():
    try:
        return [n for n in os.listdir("/dev/shm") if n.startswith(f"linalgd-py-{os.getpid()}-")]
    except FileNotFoundError:
        return []


@pytest.fixture(scope="module")
def pair(shm_server):
    """(shared-memory client, socket client) of the same --allow-shm server."""
    with linalgd.Client(shm_server.target, timeout=20.0, use_shared_memory=True) as s, \
            linalgd.Client(shm_server.target, timeout=20.0) as plain:
        yield s, plain


MATMUL_CASES = [
    dict(a=rand(30, 20, dtype=np.float32), b=rand(20, 10, dtype=np.float32)),
    dict(a=rand(20, 30), b=rand(10, 20), transpose_a=True, transpose_b=True),
    dict(a=rand(2, 1, 6, 5, dtype=np.float32), b=rand(3, 5, 4, dtype=np.float32)),
    dict(a=rand(8, 6, dtype=np.float32), b=rand(6, 4, dtype=np.float32),
         bias=rand(4, dtype=np.float32), epilogue="relu"),
    dict(a=rand(5, 7), b=rand(7, 3), c=rand(5, 3), alpha=0.5, beta=2.0),
    dict(a=rand(9, 4, dtype=np.float16), b=rand(4, 6, dtype=np.float16), output_dtype="float32"),
    dict(a=np.asfortranarray(rand(12, 11)), b=rand(22, 13)[::2].astype(">f8")),  # layouts
    dict(a=rand(7), b=rand(7, 3)),  # 1-D operand: promoted and squeezed
]


@pytest.mark.parametrize("case", range(len(MATMUL_CASES)))
def test_matmul_through_shm_equals_socket(pair, case):
    s, plain = pair
    kw = MATMUL_CASES[case]
    got = s.matmul(**kw, return_info=True)
    want = plain.matmul(**kw, return_info=True)
    assert s.shared_memory_active
    assert got.out.dtype == want.out.dtype and got.out.shape == want.out.shape
    assert got.out.flags.writeable and got.out.flags.c_contiguous
    np.testing.assert_array_equal(got.out, want.out)
    assert got.info.backend == want.info.backend


def test_solve_through_shm_equals_socket(pair):
    s, plain = pair
    cases = [dict(a=spd(40), b=rand(40, 3)),
             dict(a=spd(6), b=rand(6), method="cholesky"),
             dict(a=rand(2, 5, 5) + 5 * np.eye(5), b=rand(5, 2), method="lu"),
             dict(a=rand(8, 5), b=rand(8, 2), method="lstsq"),
             dict(a=spd(16).astype(np.float32), b=rand(16, 4, dtype=np.float32))]
    for kw in cases:
        got = s.solve(**kw, return_info=True)
        want = plain.solve(**kw, return_info=True)
        assert got.x.dtype == want.x.dtype and got.x.shape == want.x.shape
        np.testing.assert_array_equal(got.x, want.x)
        assert got.method_used == want.method_used and got.residual == want.residual
    assert s.shared_memory_active


def test_solve_with_factor_through_shm(pair):
    s, plain = pair
    a, b = spd(20), rand(20, 5)
    f = s.factorize(a)
    try:
        np.testing.assert_array_equal(s.solve(None, b, factor=f.factor_id),
                                      plain.solve(None, b, factor=f.factor_id))
    finally:
        s.release_factor(f.factor_id)


def test_errors_through_shm_are_the_servers(pair):
    s, _ = pair
    with pytest.raises(linalgd.InvalidArgument):
        s.matmul(rand(3, 4), rand(5, 6))
    with pytest.raises(linalgd.InvalidArgument):
        s.solve(rand(3, 3), rand(4, 1))
    # the region is still usable afterwards
    a, b = rand(3, 4), rand(4, 2)
    np.testing.assert_allclose(s.matmul(a, b), a @ b, rtol=1e-12)


class Subclass(np.ndarray):
    pass


def operand_paths(pair):
    """(name, client, stream_threshold) of the three ways an operand travels: inline bytes,
    the region, and PutTensor uploads (a threshold of 16 bytes streams every operand)."""
    s, plain = pair
    return [("inline", plain, plain.stream_threshold), ("shm", s, s.stream_threshold),
            ("streamed", plain, 16)]


def test_masked_arrays_are_refused_on_every_path(pair):
    """A MaskedArray's buffer holds the values under its mask: the socket sent the fill value
    (1e20) in their place, the region the raw values, and an upload failed in numpy's reshape.
    None of them is what the caller means; every path refuses it, naming the operand."""
    a = np.ma.masked_array(spd(2), mask=[[True, False], [False, False]])
    for name, c, threshold in operand_paths(pair):
        saved, c.stream_threshold = c.stream_threshold, threshold
        try:
            with pytest.raises(linalgd.InvalidArgument, match=r"a: .*masked.*\.filled"):
                c.matmul(a, np.eye(2))
            with pytest.raises(linalgd.InvalidArgument, match=r"b: .*masked.*\.filled"):
                c.solve(np.eye(2), a)
            with pytest.raises(linalgd.InvalidArgument, match=r"tensor: .*masked"):
                c.put(a)
        finally:
            c.stream_threshold = saved


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_ndarray_subclasses_take_every_path(pair):
    """np.matrix and plain subclasses hold their values in their buffer: they compute as the
    ndarray they view on every path (np.matrix once failed to upload: its reshape(-1) stays
    2-D, and the upload's header counted 1 byte)."""
    A, B = spd(3), rand(3, 2)
    for x in (np.matrix(A), A.view(Subclass)):
        for name, c, threshold in operand_paths(pair):
            saved, c.stream_threshold = c.stream_threshold, threshold
            try:
                np.testing.assert_allclose(c.matmul(x, B), A @ B, rtol=1e-12, err_msg=name)
                assert_close(c.solve(x, B), np.linalg.solve(A, B))
                t = c.put(x)
                np.testing.assert_array_equal(t.get(), A, err_msg=name)
                assert type(t.get()) is np.ndarray
                t.delete()
            finally:
                c.stream_threshold = saved


def test_large_tensors_pass_a_tiny_message_limit_only_through_shm(start_server):
    server = start_server("--allow-shm", "--max-message-bytes", "65536")
    a, b = rand(256, 256, dtype=np.float32), rand(256, 256, dtype=np.float32)  # 256 KiB each
    A, B = spd(128), rand(128, 64)  # 128 KiB, 64 KiB
    with linalgd.Client(server.target, timeout=20.0, retries=0) as plain:
        with pytest.raises(linalgd.ResourceExhausted):
            plain.matmul(a, b)
        with pytest.raises(linalgd.ResourceExhausted):
            plain.solve(A, B)
    with linalgd.Client(server.target, timeout=20.0, retries=0, use_shared_memory=True) as s:
        out = s.matmul(a, b)
        np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
        assert_close(s.solve(A, B), np.linalg.solve(A, B))
        assert s.shared_memory_active
        assert our_shm_names() == []  # unlinked once registered: nothing left in /dev/shm
    assert not s.shared_memory_active


def test_server_without_allow_shm_falls_back(server, caplog):
    a, b = rand(20, 10), rand(10, 5)
    with caplog.at_level(logging.DEBUG, logger="linalgd"):
        with linalgd.Client(server.target, timeout=10.0, use_shared_memory=True) as c:
            np.testing.assert_allclose(c.matmul(a, b), a @ b, rtol=1e-12)
            A = spd(10)
            assert_close(c.solve(A, b), np.linalg.solve(A, b))
            assert not c.shared_memory_active
    refusals = [r for r in caplog.records if "shared memory not used" in r.getMessage()]
    assert len(refusals) == 1 and refusals[0].levelno == logging.DEBUG  # tried once only
    assert "--allow-shm" in refusals[0].getMessage()
    assert our_shm_names() == []


def test_tensors_that_do_not_fit_take_the_socket(shm_server, caplog):
    with linalgd.Client(shm_server.target, timeout=10.0, use_shared_memory=True,
                        shared_memory_bytes=4096) as c:
        with caplog.at_level(logging.DEBUG, logger="linalgd"):
            small_a, small_b = rand(4, 4), rand(4, 4)
            np.testing.assert_allclose(c.matmul(small_a, small_b), small_a @ small_b,
                                       rtol=1e-12)
            big_a, big_b = rand(40, 40), rand(40, 40)  # 12.8 KiB each
            np.testing.assert_allclose(c.matmul(big_a, big_b), big_a @ big_b, rtol=1e-12)
        assert c.shared_memory_active
    assert any("do not fit" in r.getMessage() for r in caplog.records)


def test_concurrent_calls_share_one_region(shm_server):
    with linalgd.Client(shm_server.target, timeout=20.0, use_shared_memory=True) as c:
        inputs = [(rand(64, 48), rand(48, 32)) for _ in range(8)]
        results, errors = [None] * len(inputs), []

        def work(i):
            try:
                for _ in range(5):
                    results[i] = c.matmul(*inputs[i])
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        for (a, b), out in zip(inputs, results):
            np.testing.assert_allclose(out, a @ b, rtol=1e-12)
        assert c.shared_memory_active


def test_concurrent_calls_each_take_a_region_up_to_the_cap(start_server):
    """Over a 64 KiB message cap only shared memory carries these calls: with a
    region per thread every call of 4 threads at once succeeds; the regions
    stop at the cap."""
    a, b = rand(128, 128, dtype=np.float32), rand(128, 128, dtype=np.float32)  # 64 KiB each
    want = a.astype(np.float64) @ b
    server = start_server("--allow-shm", "--max-message-bytes", "65536")
    with linalgd.Client(server.target, timeout=20.0, retries=0, use_shared_memory=True,
                        shared_memory_bytes=1 << 20, shared_memory_regions=4) as c:
        errors = []
        start = threading.Barrier(4)

        def work():
            try:
                start.wait()
                for _ in range(15):
                    np.testing.assert_allclose(c.matmul(a, b), want, rtol=1e-4, atol=1e-4)
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert 1 <= c._shm.regions <= 4
    assert not c.shared_memory_active
    assert our_shm_names() == []


def shm_matmul_request(region_id, secret):
    pb = linalgd.client.pb
    t = pb.Tensor(dtype=int(linalgd.DType.F64), shape=[1, 1],
                  shm=pb.SharedMemoryRef(region=region_id, secret=secret, bytes=8))
    return pb.MatmulRequest(a=t, b=t)


def test_close_releases_the_region(shm_server):
    c = linalgd.Client(shm_server.target, timeout=10.0, use_shared_memory=True)
    c.matmul(rand(3, 3), rand(3, 3))
    region = c._shm._regions[0]
    req = shm_matmul_request(region.name, region.secret)
    c.close()
    assert not c.shared_memory_active
    with linalgd.Client(shm_server.target, timeout=10.0) as plain:
        # Its socket closed: the server forgets it, secret or not (soon: its
        # listener sees the close).
        for _ in range(200):
            try:
                plain._invoke("Matmul", req, 5.0)
            except linalgd.NotFound:
                break
            time.sleep(0.01)
        else:
            pytest.fail("the region outlived its socket")


def test_a_region_id_without_its_secret_is_not_found(pair):
    s, plain = pair
    s.matmul(rand(3, 3), rand(3, 3))
    region = s._shm._regions[0]
    plain._invoke("Matmul", shm_matmul_request(region.name, region.secret), 5.0)
    for secret in ("", "0" * 32, region.name):
        with pytest.raises(linalgd.NotFound, match="needs its secret"):
            plain._invoke("Matmul", shm_matmul_request(region.name, secret), 5.0)


def test_registration_by_name_is_refused(shm_server):
    with linalgd.Client(shm_server.target, timeout=10.0) as c:
        req = linalgd.client.pb.RegisterSharedMemoryRequest(name="x", key="/x", size=4096)
        with pytest.raises(linalgd.LinalgdError, match="Unix socket") as e:
            c._invoke("RegisterSharedMemory", req, 5.0)
        assert e.value.code.name == "UNIMPLEMENTED"


def raw_register(path, fd):
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as sock:
        sock.connect(path)
        socket.send_fds(sock, [b"REGISTER"], [fd])
        return sock.recv(1024).decode()


def test_unsealed_or_repeated_memory_is_refused(shm_server):
    with linalgd.Client(shm_server.target, timeout=10.0) as c:
        path = c.server_info().shm_socket
    assert path and os.stat(path).st_mode & 0o777 == 0o600
    fd = os.memfd_create("test", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, 4096)
        assert raw_register(path, fd).startswith("ERR INVALID_ARGUMENT")  # shrinkable
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW |
                    fcntl.F_SEAL_SEAL)
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as sock:
            sock.connect(path)
            socket.send_fds(sock, [b"REGISTER"], [fd])
            assert sock.recv(1024).startswith(b"OK ")
            socket.send_fds(sock, [b"REGISTER"], [fd])  # the same memory again: an alias
            assert sock.recv(1024).startswith(b"ERR ALREADY_EXISTS")
    finally:
        os.close(fd)


def test_an_explicit_socket_path_is_used(shm_server):
    with linalgd.Client(shm_server.target, timeout=10.0) as c:
        path = c.server_info().shm_socket
    with linalgd.Client(shm_server.target, timeout=10.0, use_shared_memory=True,
                        shared_memory_socket=path) as c:
        np.testing.assert_allclose(c.matmul(np.eye(3), np.eye(3)), np.eye(3))
        assert c.shared_memory_active
    with linalgd.Client(shm_server.target, timeout=10.0, use_shared_memory=True,
                        shared_memory_socket="/nonexistent/linalgd.sock") as c:
        np.testing.assert_allclose(c.matmul(np.eye(3), np.eye(3)), np.eye(3))
        assert not c.shared_memory_active


def test_a_connection_past_the_servers_cap_is_told_why(start_server):
    server = start_server("--allow-shm", "--shm-max-connections", "1")
    with linalgd.Client(server.target, timeout=10.0) as c:
        path = c.server_info().shm_socket
    first = shm.Region(path, 4096, 5.0)
    try:
        for _ in range(20):  # the REGISTER sent before or after the server's close
            with pytest.raises(linalgd.FailedPrecondition,
                               match=r"ERR RESOURCE_EXHAUSTED shared-memory socket: 1 "
                                     r"connections open, at most 1 \(--shm-max-connections\)"):
                shm.Region(path, 4096, 5.0)
    finally:
        first.close()


def test_remote_targets_do_not_try_shared_memory(caplog):
    for target in ("unix:/tmp/x.sock", "localhost:1", "127.0.0.1:5", "127.1.2.3:5", "[::1]:5",
                   "dns:///localhost:50051", "ipv4:127.0.0.1:1"):
        assert shm.is_local_target(target), target
    for target in ("example.com:50051", "10.0.0.1:5", "[2001:db8::1]:5", "dns:///host:1"):
        assert not shm.is_local_target(target), target
    with caplog.at_level(logging.DEBUG, logger="linalgd"):
        c = linalgd.Client("192.0.2.1:9", timeout=0.2, retries=0, use_shared_memory=True)
        with pytest.raises(linalgd.LinalgdError):
            c.matmul(rand(2, 2), rand(2, 2))
        c.close()
    assert any("not on this host" in r.getMessage() for r in caplog.records)


def test_invalid_region_size():
    with pytest.raises(ValueError):
        linalgd.Client("localhost:1", use_shared_memory=True, shared_memory_bytes=0)


@pytest.mark.parametrize("timeout", [math.nan, "5"])
def test_a_bad_timeout_fails_its_call_alone_and_shared_memory_stays_on(shm_server, timeout):
    """A first call's timeout= of the wrong type once reached the region's registration, whose
    failure turned shared memory off for the whole client for good (NaN ended the call with
    DEADLINE_EXCEEDED); both are refused before anything is shared."""
    a, b = rand(20, 10), rand(10, 5)
    with linalgd.Client(shm_server.target, timeout=20.0, use_shared_memory=True) as c:
        with pytest.raises(linalgd.InvalidArgument, match="timeout: .* is not a number"):
            c.matmul(a, b, timeout=timeout)
        np.testing.assert_allclose(c.matmul(a, b, timeout=math.inf), a @ b, rtol=1e-12)
        assert c.shared_memory_active


# -- a region whose call may still run on the server is never reused ----------------------


def server_regions(server):
    """How many linalgd regions the server process has mapped (/proc/PID/maps)."""
    with open(f"/proc/{server.proc.pid}/maps") as f:
        return len({line.split()[4] for line in f if "/memfd:linalgd" in line})


def forgotten(server, region):
    """True once the server answers NOT_FOUND for region (its socket closed)."""
    with linalgd.Client(server.target, timeout=10.0) as plain:
        for _ in range(200):
            try:
                plain._invoke("Matmul", shm_matmul_request(region.name, region.secret), 5.0)
            except linalgd.NotFound:
                return True
            time.sleep(0.01)
    return False


@pytest.fixture(scope="module")
def stalling_server():
    """An --allow-shm server whose CPU matmuls stall 1 s (solves do not)."""
    from conftest import Server
    s = Server("--allow-shm", "--inject-faults", "cpu:matmul:stall=1s").start()
    yield s
    s.stop()


def test_a_region_whose_call_timed_out_is_dropped(stalling_server):
    """A call that ends in DEADLINE_EXCEEDED may still be running on the server, which may yet
    write its result into the region: the region was given back as idle, and the next call
    wrote its operands where the late result landed (wrong answers, no error). Now it is
    dropped: unmapped here, released on the server, and the next call registers another."""
    A, b = spd(30), rand(30, 4)
    with linalgd.Client(stalling_server.target, timeout=20.0, retries=0,
                        use_shared_memory=True) as c:
        assert_close(c.solve(A, b), np.linalg.solve(A, b))
        (first,) = c._shm._regions
        with pytest.raises(linalgd.DeadlineExceeded):
            c.matmul(rand(40, 30), rand(30, 20), timeout=0.2)
        assert c._shm.regions == 0 and first._map.closed
        assert forgotten(stalling_server, first)
        for _ in range(3):  # a flood of timeouts: one region at a time, each replaced once
            with pytest.raises(linalgd.DeadlineExceeded):
                c.matmul(rand(40, 30), rand(30, 20), timeout=0.2)
            assert c._shm.regions == 0
        A2, b2 = spd(30), rand(30, 4)
        assert_close(c.solve(A2, b2), np.linalg.solve(A2, b2))
        (second,) = c._shm._regions
        assert second.name != first.name and c.shared_memory_active
        assert_close(c.solve(A, b), np.linalg.solve(A, b))
        assert c._shm._regions == [second]  # a successful call keeps its region
        # The stalled calls end within 1 s; the server then unmaps the regions they held.
        for _ in range(300):
            if server_regions(stalling_server) == 1:
                break
            time.sleep(0.01)
        assert server_regions(stalling_server) == 1
    assert our_shm_names() == []


def test_a_timeout_drops_only_its_own_region(stalling_server):
    A, b = spd(12), rand(12, 2)
    with linalgd.Client(stalling_server.target, timeout=20.0, retries=0, use_shared_memory=True,
                        shared_memory_regions=2) as c:
        path = c._shm
        held = [path._acquire(5.0), path._acquire(5.0)]
        for region in held:
            path._release(region)
        with pytest.raises(linalgd.DeadlineExceeded):
            c.matmul(rand(4, 3), rand(3, 4), timeout=0.2)  # takes held[1]
        assert path._regions == [held[0]] and path._idle == [held[0]]
        assert_close(c.solve(A, b), np.linalg.solve(A, b))
        assert path._regions == [held[0]]


def test_a_final_refusal_keeps_the_region(shm_server):
    """INVALID_ARGUMENT, FAILED_PRECONDITION, ... end the call on the server: the region is safe
    to reuse."""
    with linalgd.Client(shm_server.target, timeout=20.0, use_shared_memory=True) as c:
        c.matmul(rand(3, 3), rand(3, 3))
        (region,) = c._shm._regions
        with pytest.raises(linalgd.InvalidArgument):
            c.matmul(rand(3, 4), rand(5, 6))  # reaches the server through the region
        with pytest.raises(linalgd.FailedPrecondition):
            c.solve(np.zeros((4, 4)), rand(4, 1), no_fallback=True)
        assert c._shm._regions == [region] and c._shm._idle == [region]
        a, b = rand(3, 4), rand(4, 2)
        np.testing.assert_allclose(c.matmul(a, b), a @ b, rtol=1e-12)
        assert c._shm._regions == [region]


def record_regions(client, method):
    """The regions the attempts of method name (the stub wrapped to record its requests)."""
    names = []
    rpc = getattr(client._stub, method)

    def recording(req, **kwargs):
        names.append(req.a.shm.region)
        return rpc(req, **kwargs)
    setattr(client._stub, method, recording)
    return names


@pytest.mark.parametrize("code, drops", [("unavailable", True), ("resource_exhausted", False)])
def test_retries_take_a_fresh_region_after_a_drop(start_server, code, drops):
    """UNAVAILABLE may come from a call the server still runs (a broken connection): each retry
    takes a new region. RESOURCE_EXHAUSTED is the server's refusal: the retries keep it."""
    server = start_server("--allow-shm", "--inject-faults", f"cpu:matmul:fail={code}")
    policy = linalgd.RetryPolicy(retries=2, initial_backoff=0.01, max_backoff=0.01)
    with linalgd.Client(server.target, timeout=20.0, retry_policy=policy,
                        use_shared_memory=True) as c:
        names = record_regions(c, "Matmul")
        with pytest.raises(linalgd.LinalgdError) as e:
            c.matmul(rand(4, 3), rand(3, 4))
        assert e.value.code.name == code.upper() and e.value.attempts == 3
        assert len(names) == 3 and all(names)
        assert len(set(names)) == (3 if drops else 1)
        assert c._shm.regions == (0 if drops else 1)


def test_an_exception_while_waiting_drops_the_region(shm_server):
    """An exception in the client while the call was out (KeyboardInterrupt, say) leaves the
    server free to write later: the region goes; one raised before the call keeps it."""
    class Interrupted(Exception):
        pass

    def interrupted(req, **kwargs):
        raise Interrupted()
    with linalgd.Client(shm_server.target, timeout=20.0, use_shared_memory=True) as c:
        c.matmul(rand(3, 3), rand(3, 3))
        (region,) = c._shm._regions
        with pytest.raises(linalgd.InvalidArgument):
            c.matmul(rand(3, 3), rand(3, 3), alpha="x")  # refused before the region is used
        assert c._shm._regions == [region]
        rpc, c._stub.Matmul = c._stub.Matmul, interrupted
        with pytest.raises(Interrupted):
            c.matmul(rand(3, 3), rand(3, 3))
        assert c._shm.regions == 0 and region._map.closed
        c._stub.Matmul = rpc
        a, b = rand(3, 4), rand(4, 2)
        np.testing.assert_allclose(c.matmul(a, b), a @ b, rtol=1e-12)
        assert c._shm.regions == 1 and c._shm._regions[0].name != region.name


def test_a_refused_replacement_does_not_turn_shared_memory_off():
    """The server may see a replacement's registration before the dropped region's socket
    closing: that one refusal is not final (each drop allows one); a refusal otherwise is."""
    class FakeRegion:
        closed = False

        def close(self):
            self.closed = True
    path = shm.SharedMemoryPath(None, 4096)
    first, second = FakeRegion(), FakeRegion()
    outcomes = [(first, False), (None, True), (second, False)]
    path._register = lambda timeout: outcomes.pop(0)
    assert path._acquire(1.0) is first
    path._release(first, drop=True)
    assert first.closed and path.regions == 0
    assert path._acquire(1.0) is None and not path._refused  # the replacement: refused
    assert path._acquire(1.0) is second and path.regions == 1  # tried again, once
    path._release(second, drop=True)
    outcomes[:] = [(None, True), (None, True)]
    assert path._acquire(1.0) is None and not path._refused
    assert path._acquire(1.0) is None and path._refused  # no drop left: final
    assert outcomes == []


@pytest.mark.parametrize("method", ["matmul", "solve"])
def test_the_socket_after_a_dropped_region_names_no_region(start_server, caplog, method):
    """An attempt through the region that failed with UNAVAILABLE drops it; when the retry then
    finds no region (here the server came back without --allow-shm), the call takes the
    socket. It took it with the request the region's attempt had written, whose out_shm still
    named the dropped region: the server refused the call (FAILED_PRECONDITION here, NOT_FOUND
    where it has shared memory). The socket's request names no region now. The server restarts
    only once the first attempt has failed (its "dropped" log line), so the order is fixed."""
    first = start_server("--allow-shm")
    A, B = spd(12), rand(12, 3)
    call, want = ((lambda c: c.matmul(A, B), A @ B) if method == "matmul" else
                  (lambda c: c.solve(A, B), np.linalg.solve(A, B)))
    dropped, restarted = threading.Event(), []

    class OnDrop(logging.Handler):
        def emit(self, record):
            if "dropped" in record.getMessage():
                dropped.set()

    def restart():
        if dropped.wait(30):
            try:
                restarted.append(start_server(port=first.port))  # without --allow-shm
            except BaseException as e:  # noqa: BLE001  reported by the assertion below
                restarted.append(e)

    policy = linalgd.RetryPolicy(retries=math.inf, initial_backoff=0.05, max_backoff=0.2)
    handler, logger = OnDrop(), logging.getLogger("linalgd")
    with linalgd.Client(first.target, timeout=30.0, retry_policy=policy,
                        use_shared_memory=True) as c:
        assert_close(call(c), want)
        assert c.shared_memory_active
        first.stop()
        thread = threading.Thread(target=restart)
        thread.start()
        logger.addHandler(handler)
        try:
            with caplog.at_level(logging.DEBUG, logger="linalgd"):
                got = call(c)
        finally:
            logger.removeHandler(handler)
            dropped.set()  # a call that failed before any drop must not leave the thread waiting
            thread.join()
        assert len(restarted) == 1 and not isinstance(restarted[0], BaseException), restarted
        assert_close(got, want)
        assert not c.shared_memory_active
        assert any("shared memory not used" in r.getMessage() for r in caplog.records)
    assert our_shm_names() == []
