"""Resident tensors, automatic streaming and cached factors through the Python client."""
import numpy as np
import pytest

import linalgd


def test_put_get_round_trip_odd_sizes(client):
    client.chunk_bytes = 1000
    rng = np.random.default_rng(1)
    for shape in [(3, 1001), (1, 1), (7,), (2, 3, 5)]:
        x = rng.standard_normal(shape).astype(np.float32)
        t = client.put(x)
        assert len(t.id) == 32 and t.shape == x.shape and t.dtype == x.dtype
        np.testing.assert_array_equal(client.get(t), x)
        np.testing.assert_array_equal(client.get(t.id), x)  # the id API
        client.delete(t.id)
        with pytest.raises(linalgd.NotFound, match="deleted"):
            t.get()


def test_unknown_id_is_not_found(client):
    with pytest.raises(linalgd.NotFound, match="unknown"):
        client.get("0" * 32)


def test_large_operands_stream_past_the_message_limit(start_server):
    server = start_server("--max-message-bytes", str(1 << 20))
    with linalgd.Client(server.target, timeout=30.0, max_message_bytes=1 << 20) as c:
        c.stream_threshold = 256 << 10
        c.chunk_bytes = 256 << 10
        rng = np.random.default_rng(2)
        a = rng.standard_normal((512, 600)).astype(np.float32)
        b = rng.standard_normal((600, 512)).astype(np.float32)
        out = c.matmul(a, b)
        np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-3)
        assert c.list_tensors() == []  # temporaries deleted


def test_results_past_the_message_limit_are_sized_as_the_server_shapes_them(start_server):
    """A result of stream_threshold bytes or more is kept and streamed back. The client sized it
    from the larger operand's batch (Matmul) or from b (Solve), and asked for these inline: the
    server's answer was over its message limit ("Sent message larger than max"). It sizes them
    as the server shapes them now: batch dims broadcast, x is [..., N, K] for a [..., M, N]."""
    server = start_server("--max-message-bytes", str(1 << 20))
    rng = np.random.default_rng(4)
    with linalgd.Client(server.target, timeout=60.0, max_message_bytes=1 << 20) as c:
        c.stream_threshold = 256 << 10
        c.chunk_bytes = 256 << 10
        a = rng.standard_normal((32, 1, 16, 16))  # 64 KiB each; out [32, 32, 16, 16]: 2 MiB
        b = rng.standard_normal((1, 32, 16, 16))
        np.testing.assert_allclose(c.matmul(a, b), a @ b, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(c.matmul(b, a, transpose_a=True, transpose_b=True),
                                   np.swapaxes(b, -1, -2) @ np.swapaxes(a, -1, -2),
                                   rtol=1e-10, atol=1e-12)
        eye = np.eye(8)
        batched = rng.standard_normal((64, 8, 8)) + 8 * eye  # 32 KiB
        b = rng.standard_normal((8, 512))  # unbatched, 32 KiB; x [64, 8, 512]: 2 MiB
        np.testing.assert_allclose(c.solve(batched, b),
                                   np.linalg.solve(batched, np.broadcast_to(b, (64, 8, 512))),
                                   rtol=1e-8, atol=1e-10)
        pairs = rng.standard_normal((1 << 17, 2, 2)) + 4 * np.eye(2)  # 4 MiB, uploaded
        v = rng.standard_normal(2)  # a vector; x [131072, 2]: 2 MiB
        want = np.linalg.solve(pairs, np.broadcast_to(v[:, None], (1 << 17, 2, 1)))[..., 0]
        np.testing.assert_allclose(c.solve(pairs, v), want, rtol=1e-8, atol=1e-10)
        wide = rng.standard_normal((8, 4096))  # 256 KiB, uploaded; b [8, 64]: 4 KiB
        b = rng.standard_normal((8, 64))  # x [4096, 64]: 2 MiB
        x = c.solve(wide, b, method="lstsq")
        np.testing.assert_allclose(x, np.linalg.lstsq(wide, b, rcond=None)[0],
                                   rtol=1e-8, atol=1e-10)
        assert c.list_tensors() == []  # the kept results deleted once fetched


def test_factor_reuse_matches_fresh_solves(client):
    rng = np.random.default_rng(3)
    n = 80
    a = rng.standard_normal((n, n)) + n * np.eye(n)
    f = client.factorize(a, method="lu")
    assert f.n == n and f.placement == "cpu" and f.method == linalgd.SolveMethod.LU
    for k in (1, 3, 5):
        b = rng.standard_normal((n, k))
        np.testing.assert_allclose(client.solve(None, b, factor=f.factor_id),
                                   client.solve(a, b), rtol=1e-10, atol=1e-12)
    client.release_factor(f.factor_id)
    with pytest.raises(linalgd.NotFound):
        client.solve(None, rng.standard_normal((n, 1)), factor=f.factor_id)


def test_a_put_cancelled_before_its_half_close_stores_nothing(start_server):
    """All the bytes sent, then the call cancelled instead of half-closed: the caller never
    learns an id, so nothing may stay stored (and charged) until the TTL."""
    import threading

    import grpc

    from linalgd._crc32c import crc32c
    from linalgd._stubs import pb, pb_grpc

    s = start_server()
    data = np.ones((4, 4)).astype("<f8").tobytes()
    header = pb.PutTensorHeader(dtype=pb.DTYPE_F64, shape=[4, 4], total_bytes=len(data),
                                crc32c=crc32c(data))
    with grpc.insecure_channel(s.target) as channel:
        stub = pb_grpc.LinalgStub(channel)
        for upload in (False, True):
            release = threading.Event()
            if upload:
                upload_id = stub.StartUpload(pb.StartUploadRequest(header=header)).upload_id
                first = pb.PutTensorHeader(upload_id=upload_id, offset=0, total_bytes=len(data),
                                           crc32c=crc32c(data))
            else:
                first = header

            def held():
                yield pb.PutTensorRequest(header=first)
                yield pb.PutTensorRequest(chunk=data)
                release.wait(10)  # never half-closed

            call = stub.PutTensor.future(held())
            threading.Event().wait(0.5)  # the server has read every byte by now
            call.cancel()
            release.set()
            threading.Event().wait(0.5)  # and has seen the cancellation
            assert not stub.ListTensors(pb.ListTensorsRequest()).tensors
            if upload:  # the part was not committed: the upload still misses its bytes
                with pytest.raises(grpc.RpcError) as e:
                    stub.FinishUpload(pb.FinishUploadRequest(upload_id=upload_id))
                assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
                stub.AbortUpload(pb.AbortUploadRequest(upload_id=upload_id))


def test_start_upload_reports_the_expiry_the_upload_has(start_server):
    """An upload without activity goes after its TTL or --stream-idle-timeout, whichever is
    sooner; StartUpload's expires_in_seconds says which."""
    import grpc

    from linalgd._stubs import pb, pb_grpc

    s = start_server("--stream-idle-timeout", "2s")
    header = pb.PutTensorHeader(dtype=pb.DTYPE_F64, shape=[2, 2], total_bytes=32)
    with grpc.insecure_channel(s.target) as channel:
        stub = pb_grpc.LinalgStub(channel)
        for ttl, expected in ((600.0, 2.0), (1.5, 1.5)):
            header.ttl_seconds = ttl
            started = stub.StartUpload(pb.StartUploadRequest(header=header))
            assert started.expires_in_seconds == expected
            stub.AbortUpload(pb.AbortUploadRequest(upload_id=started.upload_id))


def test_an_expired_tensor_is_freed_without_another_store_call(start_server):
    """The server sweeps the store every second: an expired tensor's bytes leave the gauge
    (and the memory) at its expiry, not at whatever store call comes next."""
    import time

    from conftest import metric_value

    s = start_server(metrics=True)
    with linalgd.Client(s.target) as c:
        c.put(np.ones((256, 256)), ttl=1.0)
        assert metric_value(s.metrics_port, "linalgd_resident_store_bytes") == 256 * 256 * 8
        deadline = time.monotonic() + 10
        while metric_value(s.metrics_port, "linalgd_resident_store_bytes") != 0:
            assert time.monotonic() < deadline, "the expired tensor is still counted"
            time.sleep(0.2)
        assert metric_value(s.metrics_port, "linalgd_resident_store_objects") == 0


@pytest.mark.parametrize("placement", [5, 0.5, b"host"])
def test_a_placement_that_is_not_a_string_is_refused_naming_it(client, placement):
    before = [t.id for t in client.list_tensors()]
    with pytest.raises(TypeError, match=r"put: placement is 'host' or 'gpu:N' \(a str\), not "):
        client.put(np.ones(4, np.float32), placement=placement)
    assert [t.id for t in client.list_tensors()] == before  # nothing was sent


@pytest.mark.parametrize("ttl", [1e-9, 1e-6, 9e-4])
def test_a_ttl_below_a_millisecond_is_refused_naming_it(client, ttl):
    # It would expire the tensor before the put answers: the put said NOT_FOUND for its own id.
    with pytest.raises(linalgd.InvalidArgument,
                       match=r"header.ttl_seconds: .* must be 0 \(the default\) or in \[0.001, "):
        client.put(np.ones(1000, np.float32), ttl=ttl)
