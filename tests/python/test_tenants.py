"""Tenants (--auth-tokens): every RPC against a real server with two tenants.

Each RPC is called with no token, a wrong token, another tenant's token naming
the first tenant's ids, and the owner's token; the codes observed form the
matrix printed at the end (pytest -s shows it; LINALGD_TENANT_MATRIX=FILE
writes it). Also: ListTensors own-only and admin list-all, the quotas' codes
and messages, a store whose eviction never takes another tenant's objects,
and a TLS + token server used by the Python client, the C++ CLI and
--tenant-from-cert.
"""
import hashlib
import os
import subprocess
import threading

import grpc
import numpy as np
import pytest

import linalgd
from linalgd import shm
from linalgd._stubs import pb, pb_grpc
from conftest import REPO, server_binary
from test_tls import client_tls, make_certs, tls_flags

ALPHA, BETA, SMALL = "alpha-secret-token", "beta-secret-token", "small-secret-token"
F64 = pb.DTYPE_F64
A = np.array([[4.0, 1.0], [1.0, 3.0]])
UNKNOWN_ID = "0123456789abcdef0123456789abcdef"


def sha(token):
    return hashlib.sha256(token.encode()).hexdigest()


def tokens_file(tmp_path, text=None):
    path = tmp_path / "tokens"
    path.write_text(text or (
        "# tenant  sha256(token)  quotas\n"
        f"alpha {sha(ALPHA)}\n"
        f"beta  {sha(BETA)} admin=true\n"
        f"small {sha(SMALL)} store_bytes=100000 max_objects=2 max_inflight=1 "
        "max_message_bytes=4096 max_queued_bytes=3000\n"
        "linalgd-test-client -\n"))
    return str(path)


def md(token):
    return None if token is None else (("authorization", "Bearer " + token),)


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def inline(arr):
    return pb.Tensor(dtype=F64, shape=arr.shape, data=arr.astype("<f8").tobytes())


def header(arr, **kw):
    data = arr.astype("<f8").tobytes()
    return pb.PutTensorHeader(dtype=F64, shape=arr.shape, total_bytes=len(data), **kw), data


def put(stub, token, arr):
    h, data = header(arr, crc32c=crc32c(data := arr.astype("<f8").tobytes()))
    msgs = [pb.PutTensorRequest(header=h), pb.PutTensorRequest(chunk=data)]
    return stub.PutTensor(iter(msgs), metadata=md(token)).tensor.id


class Objects:
    """Fresh objects of one tenant: a tensor, a factor, a complete upload, a
    shared-memory region it has claimed (named in one of its calls)."""

    def __init__(self, stub, token, shm_socket):
        self.tensor = put(stub, token, A)
        self.factor = stub.Factorize(pb.FactorizeRequest(a=pb.Tensor(resident_id=self.tensor)),
                                     metadata=md(token)).factor_id
        h, data = header(A, crc32c=crc32c(A.astype("<f8").tobytes()))
        self.upload = stub.StartUpload(pb.StartUploadRequest(header=h), metadata=md(token)).upload_id
        part = pb.PutTensorHeader(dtype=F64, shape=A.shape, total_bytes=len(data),
                                  crc32c=crc32c(data), upload_id=self.upload, offset=0)
        stub.PutTensor(iter([pb.PutTensorRequest(header=part), pb.PutTensorRequest(chunk=data)]),
                       metadata=md(token))
        self.region = shm.Region(shm_socket, 4096, 5.0)
        ref = self.region.ref(0, A.nbytes)
        stub.Matmul(pb.MatmulRequest(a=inline(A), b=inline(A), out_shm=ref), metadata=md(token))

    def shm_tensor(self):
        return pb.Tensor(dtype=F64, shape=A.shape, shm=self.region.ref(0, A.nbytes))


def b_inline():
    return inline(np.ones((2, 1)))


# RPC -> (call(stub, metadata, objects), uses the objects' ids)
CALLS = {
    "Matmul": (lambda s, m, o: s.Matmul(pb.MatmulRequest(
        a=pb.Tensor(resident_id=o.tensor), b=o.shm_tensor()), metadata=m), True),
    "Solve": (lambda s, m, o: s.Solve(pb.SolveRequest(
        a=pb.Tensor(resident_id=o.tensor), b=b_inline()), metadata=m), True),
    "Solve(factor_id)": (lambda s, m, o: s.Solve(pb.SolveRequest(
        factor_id=o.factor, b=b_inline()), metadata=m), True),
    "Factorize": (lambda s, m, o: s.Factorize(pb.FactorizeRequest(
        a=pb.Tensor(resident_id=o.tensor)), metadata=m), True),
    "SparseSolve": (lambda s, m, o: s.SparseSolve(pb.SparseSolveRequest(
        a=pb.CsrMatrix(rows=2, cols=2, index_type=pb.INDEX_TYPE_INT32, dtype=F64,
                       row_offsets=np.array([0, 1, 2], "<i4").tobytes(),
                       col_indices=np.array([0, 1], "<i4").tobytes(),
                       values=np.array([2.0, 2.0], "<f8").tobytes()),
        b=b_inline()), metadata=m), False),
    "PutTensor": (lambda s, m, o: put(s, None if m is None else m[0][1][7:], A), False),
    "PutTensor(upload part)": (lambda s, m, o: s.PutTensor(iter([pb.PutTensorRequest(
        header=pb.PutTensorHeader(dtype=F64, shape=A.shape, total_bytes=A.nbytes,
                                  upload_id=o.upload, offset=0))]), metadata=m), True),
    "GetTensor": (lambda s, m, o: list(s.GetTensor(pb.GetTensorRequest(id=o.tensor), metadata=m)),
                  True),
    "DeleteTensor": (lambda s, m, o: s.DeleteTensor(pb.DeleteTensorRequest(id=o.tensor),
                                                    metadata=m), True),
    "ListTensors": (lambda s, m, o: s.ListTensors(pb.ListTensorsRequest(), metadata=m), False),
    "StartUpload": (lambda s, m, o: s.StartUpload(pb.StartUploadRequest(
        header=header(A)[0]), metadata=m), False),
    "FinishUpload": (lambda s, m, o: s.FinishUpload(pb.FinishUploadRequest(upload_id=o.upload),
                                                    metadata=m), True),
    "AbortUpload": (lambda s, m, o: s.AbortUpload(pb.AbortUploadRequest(upload_id=o.upload),
                                                  metadata=m), True),
    "ReleaseFactor": (lambda s, m, o: s.ReleaseFactor(pb.ReleaseFactorRequest(
        factor_id=o.factor), metadata=m), True),
    "RegisterSharedMemory": (lambda s, m, o: s.RegisterSharedMemory(
        pb.RegisterSharedMemoryRequest(), metadata=m), False),
    "UnregisterSharedMemory": (lambda s, m, o: s.UnregisterSharedMemory(
        pb.UnregisterSharedMemoryRequest(name=o.region.name, secret=o.region.secret),
        metadata=m), True),
    "GetServerInfo": (lambda s, m, o: s.GetServerInfo(pb.GetServerInfoRequest(), metadata=m),
                      False),
}


def code_of(call):
    try:
        call()
        return "OK"
    except grpc.RpcError as e:
        return e.code().name


@pytest.fixture(scope="module")
def tenant_server(tmp_path_factory):
    from conftest import Server
    s = Server("--auth-tokens", tokens_file(tmp_path_factory.mktemp("tokens")),
               "--allow-shm").start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def stub(tenant_server):
    with grpc.insecure_channel(tenant_server.target) as channel:
        yield pb_grpc.LinalgStub(channel)


@pytest.fixture(scope="module")
def shm_socket(stub):
    return stub.GetServerInfo(pb.GetServerInfoRequest(), metadata=md(ALPHA)).shm_socket


EXPECTED = {
    "no token": "UNAUTHENTICATED", "wrong token": "UNAUTHENTICATED",
    "other tenant": "NOT_FOUND", "own": "OK"}
EXCEPTIONS = {  # (rpc, column): code, where the row has no id or no OK path
    ("RegisterSharedMemory", "own"): "UNIMPLEMENTED",
    ("PutTensor(upload part)", "own"): "INVALID_ARGUMENT",  # no chunk: a short part
}


def test_every_rpc_by_credentials_and_owner(stub, shm_socket):
    rows = {}
    for rpc, (call, uses_ids) in CALLS.items():
        row = {}
        for column, token in (("no token", None), ("wrong token", "wrong-token"),
                              ("other tenant", BETA), ("own", ALPHA)):
            objects = Objects(stub, ALPHA, shm_socket)
            try:
                code = code_of(lambda: call(stub, md(token), objects))
            finally:
                objects.region.close()
            if column == "other tenant" and not uses_ids:
                code += " (no id)"
            row[column] = code
        rows[rpc] = row
    table = ["| RPC | no token | wrong token | other tenant's id | own id |",
             "| --- | --- | --- | --- | --- |"]
    table += [f"| {rpc} | " + " | ".join(row.values()) + " |" for rpc, row in rows.items()]
    health = linalgd.Client(stub_target(stub), retries=0).health()
    table.append(f"| Health (grpc.health.v1, exempt) | {health} | {health} | {health} | {health} |")
    text = "\n".join(table)
    print("\n" + text)
    if os.environ.get("LINALGD_TENANT_MATRIX"):
        with open(os.environ["LINALGD_TENANT_MATRIX"], "w") as f:
            f.write(text + "\n")
    for rpc, row in rows.items():
        for column, code in row.items():
            want = EXCEPTIONS.get((rpc, column), EXPECTED[column])
            if column == "other tenant" and not CALLS[rpc][1]:
                want = EXCEPTIONS.get((rpc, "own"), "OK") + " (no id)"
            assert code == want, (rpc, column, code)


_TARGETS = {}


def stub_target(stub):
    return _TARGETS["target"]


@pytest.fixture(autouse=True, scope="module")
def _remember_target(tenant_server):
    _TARGETS["target"] = tenant_server.target


def test_several_authorization_values_are_refused_whichever_comes_first(stub):
    # A proxy that adds its token beside the caller's must not let the first
    # (or any) one win: neither order, nor a valid one beside garbage.
    for tokens in ((ALPHA, BETA), (BETA, ALPHA), (ALPHA, "garbage"), (ALPHA, ALPHA)):
        metadata = tuple(("authorization", "Bearer " + t) for t in tokens)
        with pytest.raises(grpc.RpcError) as e:
            stub.ListTensors(pb.ListTensorsRequest(), metadata=metadata)
        assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED, tokens
        assert "authorization: 2 values; send exactly one" in e.value.details()
    assert code_of(lambda: stub.ListTensors(pb.ListTensorsRequest(), metadata=md(ALPHA))) == "OK"


def test_another_tenants_id_reads_as_an_unknown_id(stub, shm_socket):
    objects = Objects(stub, ALPHA, shm_socket)
    try:
        def message(call):
            with pytest.raises(grpc.RpcError) as e:
                call()
            return e.value.details()
        theirs = message(lambda: stub.DeleteTensor(pb.DeleteTensorRequest(id=objects.tensor),
                                                   metadata=md(BETA)))
        unknown = message(lambda: stub.DeleteTensor(pb.DeleteTensorRequest(id=UNKNOWN_ID),
                                                    metadata=md(BETA)))
        assert theirs.replace(objects.tensor, UNKNOWN_ID) == unknown
        # Deleted by its owner: the owner hears why, another tenant as unknown.
        stub.DeleteTensor(pb.DeleteTensorRequest(id=objects.tensor), metadata=md(ALPHA))
        assert "was deleted" in message(lambda: stub.DeleteTensor(
            pb.DeleteTensorRequest(id=objects.tensor), metadata=md(ALPHA)))
        assert message(lambda: stub.DeleteTensor(pb.DeleteTensorRequest(id=objects.tensor),
                                                 metadata=md(BETA))) == theirs
        theirs = message(lambda: stub.AbortUpload(
            pb.AbortUploadRequest(upload_id=objects.upload), metadata=md(BETA)))
        unknown = message(lambda: stub.AbortUpload(
            pb.AbortUploadRequest(upload_id=UNKNOWN_ID), metadata=md(BETA)))
        assert theirs.replace(objects.upload, UNKNOWN_ID) == unknown
    finally:
        objects.region.close()


def test_list_tensors_is_own_only_and_admin_lists_all(tenant_server):
    with linalgd.Client(tenant_server.target, token=ALPHA) as alpha, \
            linalgd.Client(tenant_server.target, token=BETA) as beta:
        mine = alpha.put(A).id
        assert mine in [t.id for t in alpha.list_tensors()]
        assert mine not in [t.id for t in beta.list_tensors()]
        with pytest.raises(linalgd.LinalgdError) as e:
            alpha.list_tensors(all_tenants=True)
        assert e.value.code == grpc.StatusCode.PERMISSION_DENIED
        every = {t.id: t.tenant for t in beta.list_tensors(all_tenants=True)}
        assert every[mine] == "alpha"


def test_quotas_are_resource_exhausted_naming_the_quota(tenant_server):
    with linalgd.Client(tenant_server.target, token=SMALL, retries=0) as small:
        with pytest.raises(linalgd.LinalgdError) as e:
            small.matmul(np.ones((40, 40)), np.ones((40, 40)))
        assert e.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "tenant quota max_message_bytes=4096" in str(e.value)
        # ~3.7 kB: within max_message_bytes, past max_queued_bytes on its own.
        with pytest.raises(linalgd.LinalgdError) as e:
            small.matmul(np.ones((15, 15)), np.ones((15, 15)))
        assert e.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "tenant quota max_queued_bytes=3000 exceeded" in str(e.value)
        np.testing.assert_allclose(small.matmul(np.ones((4, 4)), np.ones((4, 4))), 4 * np.ones((4, 4)))
        with pytest.raises(linalgd.LinalgdError) as e:
            small.put(np.ones((200, 200)))
        assert e.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "tenant quota store_bytes=100000" in str(e.value)
        ids = [small.put(np.full((2, 2), float(i))).id for i in range(3)]
        listed = [t.id for t in small.list_tensors()]
        assert listed == ids[1:]  # max_objects=2: its own oldest went


def test_uploads_in_progress_count_against_max_objects(stub):
    """Each upload in progress is an object being stored: SMALL (max_objects=2) may not hold
    a third open beside two, whatever it has stored, and another tenant is not refused for it."""
    def start(token):
        return stub.StartUpload(pb.StartUploadRequest(header=header(np.ones((2, 2)))[0]),
                                metadata=md(token)).upload_id

    opened = [start(SMALL), start(SMALL)]
    try:
        with pytest.raises(grpc.RpcError) as e:
            start(SMALL)
        assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "tenant quota max_objects=2 reached" in e.value.details()
        assert "2 being stored" in e.value.details()
        stub.AbortUpload(pb.AbortUploadRequest(upload_id=start(BETA)), metadata=md(BETA))
    finally:
        for upload_id in opened:
            stub.AbortUpload(pb.AbortUploadRequest(upload_id=upload_id), metadata=md(SMALL))
    stub.AbortUpload(pb.AbortUploadRequest(upload_id=start(SMALL)), metadata=md(SMALL))


def test_max_inflight_counts_open_calls(tenant_server):
    with grpc.insecure_channel(tenant_server.target) as channel:
        stub = pb_grpc.LinalgStub(channel)
        release = threading.Event()

        def held():
            yield pb.PutTensorRequest(header=header(A)[0])
            release.wait(10)

        pending = stub.PutTensor.future(held(), metadata=md(SMALL))
        try:
            for _ in range(100):  # until the server has the open call
                code = code_of(lambda: stub.ListTensors(pb.ListTensorsRequest(),
                                                        metadata=md(SMALL)))
                if code != "OK":
                    break
                threading.Event().wait(0.02)
            with pytest.raises(grpc.RpcError) as e:
                stub.ListTensors(pb.ListTensorsRequest(), metadata=md(SMALL))
            assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "tenant quota max_inflight=1 reached (1 in flight)" in e.value.details()
            stub.ListTensors(pb.ListTensorsRequest(), metadata=md(ALPHA))  # others unaffected
        finally:
            release.set()
            pending.cancel()


def test_eviction_never_takes_another_tenants_objects(start_server, tmp_path):
    s = start_server("--auth-tokens", tokens_file(tmp_path), "--store-bytes", "1000000")
    big = np.ones((250, 250))  # 500000 bytes
    with linalgd.Client(s.target, token=ALPHA, retries=0) as alpha, \
            linalgd.Client(s.target, token=BETA, retries=0) as beta:
        first = alpha.put(big).id
        small = beta.put(np.ones((2, 2))).id
        with pytest.raises(linalgd.LinalgdError) as e:
            beta.put(big)  # fits only by evicting alpha's tensor: refused
        assert e.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "only this tenant's objects are evicted" in str(e.value)
        # Evicting beta's own small tensor would not have made the room: it stays.
        assert [t.id for t in beta.list_tensors()] == [small]
        second = alpha.put(big).id  # alpha's own oldest makes room
        assert [t.id for t in alpha.list_tensors()] == [second]
        assert first != second


def test_metrics_and_log_name_the_tenant_never_the_token(start_server, tmp_path):
    import urllib.request
    s = start_server("--auth-tokens", tokens_file(tmp_path), log_level="debug", metrics=True)
    with linalgd.Client(s.target, token=ALPHA) as alpha:
        alpha.matmul(A, A)
    with linalgd.Client(s.target, token="nope", retries=0) as bad:
        with pytest.raises(linalgd.LinalgdError):
            bad.matmul(A, A)
    text = urllib.request.urlopen(f"http://127.0.0.1:{s.metrics_port}/metrics").read().decode()
    assert 'linalgd_requests_total{backend="cpu",code="OK",op="Matmul",tenant="alpha"} 1' in text
    assert 'code="UNAUTHENTICATED",op="Matmul",tenant="none"} 1' in text
    assert 'linalgd_received_bytes_total{tenant="alpha",transport="grpc"}' in text
    log = s.output()
    assert "Matmul" in log and "tenant alpha" in log
    assert ALPHA not in log and "nope" not in log


def test_tls_and_token_with_both_clients_and_the_cli(start_server, tmp_path):
    certs = make_certs(tmp_path)
    s = start_server(*tls_flags(certs, client_ca=True), "--auth-tokens", tokens_file(tmp_path),
                     "--tenant-from-cert", **client_tls(certs))
    with linalgd.Client(s.target, token=ALPHA, **client_tls(certs)) as alpha:
        np.testing.assert_allclose(alpha.matmul(A, A), A @ A)
        mine = alpha.put(A).id
    # No token: the certificate (CN linalgd-test-client) names the tenant.
    with linalgd.Client(s.target, **client_tls(certs)) as by_cert:
        assert mine not in [t.id for t in by_cert.list_tensors()]
        assert by_cert.put(A)
    cli = os.path.join(os.path.dirname(server_binary()), "linalgd-cli")
    np.save(tmp_path / "a.npy", A)
    base = [cli, "--target", s.target, "--tls-ca", certs["ca.pem"], "--tls-cert",
            certs["client.pem"], "--tls-key", certs["client.key"]]
    env = dict(os.environ, LINALGD_TOKEN=ALPHA)
    out = subprocess.run(base + ["ls"], env=env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and mine in out.stdout, out.stderr
    out = subprocess.run(base + ["--token", "wrong", "ls"], capture_output=True, text=True,
                         timeout=30)
    assert out.returncode != 0 and "UNAUTHENTICATED" in out.stderr + out.stdout
    out = subprocess.run(base + ["--token", ALPHA, "matmul", str(tmp_path / "a.npy"),
                                 str(tmp_path / "a.npy"), "-o", str(tmp_path / "c.npy")],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    np.testing.assert_allclose(np.load(tmp_path / "c.npy"), A @ A)


def test_a_malformed_tokens_file_refuses_to_start(tmp_path):
    path = tokens_file(tmp_path, f"alpha {sha(ALPHA)}\nbeta abc\n")
    out = subprocess.run([server_binary(), "--listen", "127.0.0.1:0", "--metrics-listen", "",
                          "--auth-tokens", path], capture_output=True, text=True, timeout=30)
    assert out.returncode != 0
    assert "line 2" in out.stderr + out.stdout
    assert sha(ALPHA) not in out.stderr + out.stdout


def test_token_argument_is_checked():
    with pytest.raises(ValueError, match="token"):
        linalgd.Client("localhost:1", token="has space")


def test_token_from_the_environment_for_both_clients(tenant_server, monkeypatch):
    import asyncio
    from linalgd import aio

    monkeypatch.setenv("LINALGD_TOKEN", ALPHA)
    with linalgd.Client(tenant_server.target) as alpha:
        mine = alpha.put(A).id
    monkeypatch.setenv("LINALGD_TOKEN", BETA)

    async def listed():
        async with aio.Client(tenant_server.target) as beta:
            return {t.id: t.tenant for t in await beta.list_tensors(all_tenants=True)}

    assert asyncio.run(listed())[mine] == "alpha"  # beta (admin) saw alpha's tensor
    # An explicit token wins over the environment; an empty variable is unset.
    with linalgd.Client(tenant_server.target, token=ALPHA) as alpha:
        assert mine in [t.id for t in alpha.list_tensors()]
    monkeypatch.setenv("LINALGD_TOKEN", "")
    with linalgd.Client(tenant_server.target, retries=0) as anonymous:
        with pytest.raises(linalgd.LinalgdError) as e:
            anonymous.list_tensors()
        assert e.value.code == grpc.StatusCode.UNAUTHENTICATED


def test_max_message_bytes_covers_every_small_rpc(stub):
    """Tenant small has max_message_bytes=4096: an oversized request of any RPC,
    even one answered on the gRPC thread, is RESOURCE_EXHAUSTED naming the quota
    (not NOT_FOUND or INVALID_ARGUMENT from looking at its content)."""
    big = "x" * 5000
    calls = {
        "DeleteTensor": lambda: stub.DeleteTensor(pb.DeleteTensorRequest(id=big), metadata=md(SMALL)),
        "ReleaseFactor": lambda: stub.ReleaseFactor(pb.ReleaseFactorRequest(factor_id=big),
                                                    metadata=md(SMALL)),
        "GetTensor": lambda: list(stub.GetTensor(pb.GetTensorRequest(id=big), metadata=md(SMALL))),
        "StartUpload": lambda: stub.StartUpload(
            pb.StartUploadRequest(header=pb.PutTensorHeader(shape=[1] * 5000)), metadata=md(SMALL)),
        "FinishUpload": lambda: stub.FinishUpload(pb.FinishUploadRequest(upload_id=big),
                                                  metadata=md(SMALL)),
        "AbortUpload": lambda: stub.AbortUpload(pb.AbortUploadRequest(upload_id=big),
                                                metadata=md(SMALL)),
        "UnregisterSharedMemory": lambda: stub.UnregisterSharedMemory(
            pb.UnregisterSharedMemoryRequest(name=big), metadata=md(SMALL)),
    }
    for name, call in calls.items():
        with pytest.raises(grpc.RpcError) as e:
            call()
        assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, name
        assert "tenant quota max_message_bytes=4096" in e.value.details(), name
    # The same request from a tenant without the quota is judged on its content.
    assert code_of(lambda: stub.DeleteTensor(pb.DeleteTensorRequest(id=big),
                                             metadata=md(ALPHA))) == "NOT_FOUND"
    # Small requests still pass.
    assert code_of(lambda: stub.ListTensors(pb.ListTensorsRequest(), metadata=md(SMALL))) == "OK"
