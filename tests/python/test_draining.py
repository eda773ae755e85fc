"""A replica drains before it stops (--drain-grace): on SIGTERM its health turns
NOT_SERVING, every response carries `linalgd-draining: 1`, new work is refused
with UNAVAILABLE naming the replica, calls already accepted finish, and stored
objects stay readable until the store is empty or the grace period ends; then
the server shuts down as before."""
import json
import os
import signal
import subprocess
import threading
import time

import grpc
import numpy as np
import pytest

import linalgd
from linalgd._crc32c import crc32c
from linalgd._stubs import pb, pb_grpc
from conftest import metric_value, server_binary
from numerics import assert_close

DRAINING = ("linalgd-draining", "1")
REFUSED = "replica ra is draining; send new work to another replica"


def wait_until(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def metric(server, name):
    return metric_value(server.metrics_port, name)


def cli_info(server, *flags):
    cli = os.path.join(os.path.dirname(server_binary()), "linalgd-cli")
    out = subprocess.run([cli, "--target", server.target, *flags, "info"], capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout


def refused(call):
    with pytest.raises(linalgd.LinalgdError) as e:
        call()
    assert e.value.code == grpc.StatusCode.UNAVAILABLE, e.value
    assert REFUSED in str(e.value)
    assert DRAINING in e.value.trailing_metadata
    return e.value


def test_sigterm_drains_reads_go_on_and_the_empty_store_ends_it(start_server):
    # Matmuls on the CPU stall 3 s: the long job in flight when SIGTERM comes.
    s = start_server("--replica-id", "ra", "--drain-grace", "120", "--inject-faults",
                     "cpu:matmul:stall=3s", metrics=True, log_level="info")
    with linalgd.Client(s.target, retries=0, timeout=30) as c:
        a = np.random.default_rng(1).random((3, 3)) + 3 * np.eye(3)
        t = c.put(a)
        assert metric(s, "linalgd_draining") == 0
        assert not c.server_info().draining
        assert "draining" not in cli_info(s)
        assert json.loads(cli_info(s, "--json"))["draining"] is False

        in_flight = {}

        def long_job():
            with linalgd.Client(s.target, retries=0, timeout=30) as c2:
                in_flight["out"] = c2.matmul(np.ones((4, 4)), np.ones((4, 4)))

        job = threading.Thread(target=long_job, daemon=True)
        job.start()
        time.sleep(0.5)  # the job is in the backend's stall now
        s.proc.send_signal(signal.SIGTERM)

        # Health turns NOT_SERVING at once, overall and for the service.
        assert wait_until(lambda: c.health() == "NOT_SERVING"), s.output()
        assert c.health(service="linalgd.v1.Linalg") == "NOT_SERVING"
        assert c.server_info().draining
        assert metric(s, "linalgd_draining") == 1
        assert "draining: yes" in cli_info(s)
        assert json.loads(cli_info(s, "--json"))["draining"] is True

        # New work goes elsewhere: stateless compute and anything that stores.
        refused(lambda: c.matmul(np.eye(2), np.eye(2)))
        refused(lambda: c.put(np.ones(3)))
        refused(lambda: c.factorize(t))
        refused(lambda: c.matmul(t, np.eye(3), keep=True))

        # Reads of what this replica stores go on, and say it drains.
        with grpc.insecure_channel(s.target) as channel:
            stub = pb_grpc.LinalgStub(channel)
            call = stub.GetTensor(pb.GetTensorRequest(id=t.id))
            data = b"".join(m.chunk for m in call)
            assert DRAINING in tuple(call.trailing_metadata())
            listed, list_call = stub.ListTensors.with_call(pb.ListTensorsRequest())
            assert [x.id for x in listed.tensors] == [t.id]
            assert DRAINING in tuple(list_call.trailing_metadata())
            header = pb.PutTensorHeader(dtype=pb.DTYPE_F64, shape=[2, 2], total_bytes=32)
            for rpc, request in [(stub.StartUpload, pb.StartUploadRequest(header=header)),
                                 (stub.RegisterSharedMemory,
                                  pb.RegisterSharedMemoryRequest(name="r", key="/r", size=64))]:
                with pytest.raises(grpc.RpcError) as e:
                    rpc(request)
                assert e.value.code() == grpc.StatusCode.UNAVAILABLE, e.value
                assert REFUSED in e.value.details()
        np.testing.assert_array_equal(np.frombuffer(data, np.float64).reshape(3, 3), a)
        x = c.solve(t, np.ones((3, 1)))
        assert_close(a @ x, np.ones((3, 1)))

        # The call accepted before the signal finished OK.
        job.join(30)
        np.testing.assert_array_equal(in_flight["out"], np.full((4, 4), 4.0))
        assert s.proc.poll() is None, "exited while the store still held a tensor"

        c.delete(t)  # the store is empty: the drain ends long before its 120 s
    assert s.proc.wait(timeout=20) == 0, s.output()
    log = s.output()
    assert "draining: health NOT_SERVING" in log
    assert "the store is empty" in log
    assert "shut down" in log


def test_an_upload_in_progress_finishes_during_the_drain(start_server):
    # The store holds no finished object when SIGTERM comes, only an upload
    # half sent: the drain waits for it (its second part and FinishUpload go
    # on), and ends once the caller has read and deleted what it made.
    s = start_server("--replica-id", "ra", "--drain-grace", "60", log_level="info")
    a = np.arange(8, dtype="<f8").reshape(2, 4)
    data = a.tobytes()
    with grpc.insecure_channel(s.target) as channel:
        stub = pb_grpc.LinalgStub(channel)
        header = pb.PutTensorHeader(dtype=pb.DTYPE_F64, shape=a.shape, total_bytes=len(data),
                                    crc32c=crc32c(data))
        upload = stub.StartUpload(pb.StartUploadRequest(header=header)).upload_id

        def part(offset, piece):
            h = pb.PutTensorHeader(dtype=pb.DTYPE_F64, shape=a.shape, total_bytes=len(piece),
                                   crc32c=crc32c(piece), upload_id=upload, offset=offset)
            stub.PutTensor(iter([pb.PutTensorRequest(header=h), pb.PutTensorRequest(chunk=piece)]))

        part(0, data[:32])
        s.proc.send_signal(signal.SIGTERM)
        with linalgd.Client(s.target, retries=0, timeout=10) as c:
            assert wait_until(lambda: c.health() == "NOT_SERVING"), s.output()
            time.sleep(0.3)  # more than the drain's poll: an empty-store check has run
            assert s.proc.poll() is None, s.output()
            part(32, data[32:])
            info = stub.FinishUpload(pb.FinishUploadRequest(upload_id=upload)).tensor
            np.testing.assert_array_equal(c.get(info.id), a)
            assert s.proc.poll() is None, "exited while the store still held a tensor"
            c.delete(info.id)
    assert s.proc.wait(timeout=20) == 0, s.output()
    assert "1 uploads in progress" in s.output()
    assert "the store is empty" in s.output()


def test_the_grace_period_ends_the_drain(start_server):
    s = start_server("--replica-id", "ra", "--drain-grace", "1", log_level="info")
    with linalgd.Client(s.target, retries=0) as c:
        c.put(np.ones((2, 2)))
        s.proc.send_signal(signal.SIGTERM)
        assert s.proc.wait(timeout=20) == 0, s.output()
    assert "drain over after" in s.output()
    assert "the grace period ended; 1 stored objects left" in s.output()


def test_a_second_signal_ends_the_drain_at_once(start_server):
    s = start_server("--replica-id", "ra", "--drain-grace", "600", log_level="info")
    with linalgd.Client(s.target, retries=0) as c:
        c.put(np.ones((2, 2)))
        s.proc.send_signal(signal.SIGINT)
        assert wait_until(lambda: c.health() == "NOT_SERVING"), s.output()
        s.proc.send_signal(signal.SIGTERM)
        assert s.proc.wait(timeout=20) == 0, s.output()
    assert "a second signal ended it" in s.output()


def test_without_drain_grace_sigterm_stops_at_once(start_server):
    s = start_server("--replica-id", "ra", log_level="info")
    with linalgd.Client(s.target, retries=0) as c:
        c.put(np.ones((2, 2)))
        s.proc.send_signal(signal.SIGTERM)
        assert s.proc.wait(timeout=20) == 0, s.output()
    assert "draining:" not in s.output()


def test_a_get_after_the_drained_server_exited_fails_by_its_deadline(start_server):
    """The first GetTensor stream on a connection the exited server had sent
    GOAWAY on (grpcio 1.51 retried it inside grpc and never ended it) fails
    with UNAVAILABLE instead of outliving its deadline."""
    from test_routing import returns_by
    s = start_server("--replica-id", "ra", "--drain-grace", "60")
    with linalgd.Client(s.target, timeout=10.0, retries=0) as c:
        t = c.put(np.eye(3))
        np.testing.assert_array_equal(c.get(t), np.eye(3))  # the connection is up
        s.proc.send_signal(signal.SIGTERM)
        np.testing.assert_array_equal(c.get(t), np.eye(3))  # still served while draining
        c.delete(t)
        s.proc.wait(30)  # the store is empty: the drain ends
        with pytest.raises(linalgd.Unavailable):
            returns_by(lambda: c.get(t, timeout=3.0), 30.0)
