"""Several servers behind one name: ids say which replica owns them, and a call
naming another replica's id fails fast with FAILED_PRECONDITION and the owner
in trailing metadata, never a silent NOT_FOUND."""
import os
import re
import subprocess

import grpc
import numpy as np
import pytest

import linalgd
from linalgd._stubs import pb, pb_grpc
from conftest import server_binary


def test_ids_carry_the_replica_and_foreign_ids_name_their_owner(start_server):
    a = start_server("--replica-id", "ra")
    b = start_server("--replica-id", "rb")
    with linalgd.Client(a.target) as ca, linalgd.Client(b.target, retries=0) as cb:
        assert ca.server_info().replica_id == "ra"
        t = ca.put(np.eye(3))
        assert re.fullmatch(r"ra-[0-9a-f]{32}", t.id), t.id
        np.testing.assert_array_equal(ca.get(t.id), np.eye(3))
        # b never saw it: a wrong-replica answer, naming the owner, for every kind of use.
        with pytest.raises(linalgd.LinalgdError) as e:
            cb.get(t.id)
        assert e.value.code == grpc.StatusCode.FAILED_PRECONDITION
        assert "belongs to replica ra, not to this one (rb)" in str(e.value)
        with pytest.raises(linalgd.LinalgdError) as e:
            cb.matmul(t, np.eye(3))
        assert e.value.code == grpc.StatusCode.FAILED_PRECONDITION
        # An unknown id of its own is still NOT_FOUND.
        with pytest.raises(linalgd.LinalgdError) as e:
            cb.get("rb-" + "0" * 32)
        assert e.value.code == grpc.StatusCode.NOT_FOUND
    with grpc.insecure_channel(b.target) as channel:
        stub = pb_grpc.LinalgStub(channel)
        with pytest.raises(grpc.RpcError) as e:
            stub.DeleteTensor(pb.DeleteTensorRequest(id=t.id))
        assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert ("linalgd-owner-replica", "ra") in tuple(e.value.trailing_metadata())
        with pytest.raises(grpc.RpcError) as e:
            stub.AbortUpload(pb.AbortUploadRequest(upload_id="ra-" + "1" * 32))
        assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION


def test_replica_id_auto_and_malformed(start_server, monkeypatch):
    monkeypatch.setenv("POD_NAME", "linalgd-3")
    s = start_server("--replica-id", "auto")
    with linalgd.Client(s.target) as c:
        rid = c.server_info().replica_id
        assert re.fullmatch(r"[0-9a-f]{8}", rid), rid
        assert c.put(np.ones(2)).id.startswith(rid + "-")
    p = subprocess.run([server_binary(), "--replica-id", "Bad-Id", "--listen", "127.0.0.1:0"],
                       capture_output=True, text=True, timeout=20)
    assert p.returncode != 0
    assert "--replica-id: 'Bad-Id' is not 1-16 of [a-z0-9]" in p.stderr


def test_without_replica_id_ids_stay_plain(server):
    with linalgd.Client(server.target) as c:
        assert c.server_info().replica_id == ""
        assert re.fullmatch(r"[0-9a-f]{32}", c.put(np.ones(2)).id)


def _trailing(call):
    return dict(call.trailing_metadata())


ASK_LOAD = (("linalgd-load", "1"),)


def test_every_response_carries_the_replica_and_when_asked_its_load(start_server):
    s = start_server("--replica-id", "rl")
    with grpc.insecure_channel(s.target) as channel:
        stub = pb_grpc.LinalgStub(channel)
        _, call = stub.GetServerInfo.with_call(pb.GetServerInfoRequest(), metadata=ASK_LOAD)
        md = _trailing(call)
        assert md["linalgd-replica"] == "rl"
        assert int(md["linalgd-queue-depth"]) >= 0
        assert 0 <= int(md["linalgd-predicted-wait-us"]) < 60_000_000
        # Errors carry it too: a client learns the load from a refusal as well.
        with pytest.raises(grpc.RpcError) as e:
            stub.DeleteTensor(pb.DeleteTensorRequest(id="rl-" + "0" * 32), metadata=ASK_LOAD)
        assert e.value.code() == grpc.StatusCode.NOT_FOUND
        md = dict(e.value.trailing_metadata())
        assert md["linalgd-replica"] == "rl" and "linalgd-queue-depth" in md
        # Not asked: the replica id only, no load keys to encode and parse.
        _, call = stub.GetServerInfo.with_call(pb.GetServerInfoRequest())
        md = _trailing(call)
        assert md["linalgd-replica"] == "rl"
        assert "linalgd-queue-depth" not in md and "linalgd-predicted-wait-us" not in md


def test_without_replica_id_the_load_keys_still_come_when_asked(start_server):
    s = start_server()
    with grpc.insecure_channel(s.target) as channel:
        stub = pb_grpc.LinalgStub(channel)
        _, call = stub.GetServerInfo.with_call(pb.GetServerInfoRequest(), metadata=ASK_LOAD)
        md = _trailing(call)
        assert "linalgd-replica" not in md
        assert "linalgd-queue-depth" in md and "linalgd-predicted-wait-us" in md
        _, call = stub.GetServerInfo.with_call(pb.GetServerInfoRequest())
        assert not any(k.startswith("linalgd-") for k in _trailing(call))
