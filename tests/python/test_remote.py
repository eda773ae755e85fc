"""RemoteTensor operands, keep=True results and Factor objects of the Python client."""
import gc
import time

import numpy as np
import pytest

import linalgd
from linalgd.remote import Factor, RemoteTensor
from numerics import assert_close


def _ids(client, kind):
    return {t.id for t in client.list_tensors() if t.kind == kind}


def _no_bytes_sent(monkeypatch, client):
    """Fails the test if a request carries inline tensor bytes."""
    invoke = client._invoke

    def check(method, request, timeout, rpc=None):
        for name in ("a", "b", "c", "bias", "x0"):
            if name in type(request).DESCRIPTOR.fields_by_name and request.HasField(name):
                t = getattr(request, name)
                if t.DESCRIPTOR.name == "Tensor":
                    assert t.WhichOneof("source") == "resident_id", f"{method} {name} inline"
        return invoke(method, request, timeout, rpc)

    monkeypatch.setattr(client, "_invoke", check)


def test_put_returns_a_remote_tensor(client):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    with client.put(x) as t:
        assert isinstance(t, RemoteTensor) and len(t.id) == 32
        assert t.shape == (3, 4) and t.dtype == np.float32 and t.ndim == 2 and t.nbytes == 48
        np.testing.assert_array_equal(t.get(), x)
        assert t.id in _ids(client, "tensor")
    assert t.id not in _ids(client, "tensor")  # the with block deleted it
    with pytest.raises(linalgd.NotFound):
        t.get()


def test_remote_operands_in_every_matmul_slot(client, monkeypatch):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((5, 4)), rng.standard_normal((4, 3))
    c, bias = rng.standard_normal((5, 3)), rng.standard_normal(3)
    ra, rb, rc, rbias = (client.put(v) for v in (a, b, c, bias))
    _no_bytes_sent(monkeypatch, client)
    out = client.matmul(ra, rb, rc, bias=rbias, beta=0.5, epilogue="relu")
    np.testing.assert_allclose(out, np.maximum(a @ b + 0.5 * c + bias, 0), rtol=1e-12)
    monkeypatch.undo()
    # mixed: remote weights, local activations
    np.testing.assert_allclose(client.matmul(a, rb), a @ b, rtol=1e-12)
    np.testing.assert_allclose(client.matmul(ra, b, transpose_a=False), a @ b, rtol=1e-12)
    for t in (ra, rb, rc, rbias):
        t.delete()


def test_remote_operands_in_solve_and_sparse_solve(client, monkeypatch):
    rng = np.random.default_rng(2)
    n = 6
    a = rng.standard_normal((n, n)) + n * np.eye(n)
    b = rng.standard_normal((n, 2))
    ra, rb = client.put(a), client.put(b)
    _no_bytes_sent(monkeypatch, client)
    assert_close(client.solve(ra, rb), np.linalg.solve(a, b))
    spd = np.diag(np.arange(1.0, n + 1))
    csr = (np.arange(n + 1), np.arange(n), np.arange(1.0, n + 1), (n, n))  # spd, as CSR
    x0 = client.put(np.zeros((n, 2)))
    x = client.sparse_solve(csr, rb, method="cg", x0=x0)
    np.testing.assert_allclose(x, np.linalg.solve(spd, b), rtol=1e-8)
    monkeypatch.undo()
    assert_close(client.solve(a, rb), np.linalg.solve(a, b))
    with pytest.raises(linalgd.InvalidArgument, match="remote tensor"):
        client.solve(a, client.put(np.ones(n)))  # a 1-D remote b cannot be promoted
    for t in (ra, rb, x0):
        t.delete()


def test_keep_leaves_results_on_the_server(client):
    rng = np.random.default_rng(3)
    w1, w2 = rng.standard_normal((8, 16)), rng.standard_normal((16, 4))
    x = rng.standard_normal((5, 8))
    rw1, rw2 = client.put(w1), client.put(w2)
    h = client.matmul(x, rw1, epilogue="relu", keep=True)
    assert isinstance(h, RemoteTensor) and h.shape == (5, 16) and h.dtype == np.float64
    assert h.id in _ids(client, "tensor")
    y = client.matmul(h, rw2)  # the hidden activations never come back
    np.testing.assert_allclose(y, np.maximum(x @ w1, 0) @ w2, rtol=1e-12)
    r = client.matmul(h, rw2, keep=True, return_info=True)
    assert isinstance(r.out, RemoteTensor) and r.info.backend
    np.testing.assert_allclose(r.out.get(), y, rtol=1e-12)
    a = rng.standard_normal((5, 5)) + 5 * np.eye(5)
    xs = client.solve(a, h, keep=True)
    assert isinstance(xs, RemoteTensor) and xs.shape == (5, 16)
    assert_close(xs.get(), np.linalg.solve(a, h.get()))
    for t in (rw1, rw2, h, r.out, xs):
        t.delete()


def test_factor_object(client):
    rng = np.random.default_rng(4)
    n = 40
    a = rng.standard_normal((n, n)) + n * np.eye(n)
    b = rng.standard_normal((n, 3))
    with client.factorize(a, method="lu") as f:
        assert isinstance(f, Factor)
        assert f.method == linalgd.SolveMethod.LU and f.n == n and 0 < f.rcond <= 1
        assert_close(f.solve(b), np.linalg.solve(a, b))
        assert_close(f.solve(b[:, 0]), np.linalg.solve(a, b[:, 0]))
        assert_close(client.solve(None, b, factor=f), np.linalg.solve(a, b))
        assert f.id in _ids(client, "factor")
    assert f.id not in _ids(client, "factor")  # released by the with block
    with pytest.raises(linalgd.NotFound):
        f.solve(b)
    ra = client.put(a)  # a remote matrix factors too
    f2 = client.factorize(ra)
    assert_close(f2.solve(b), np.linalg.solve(a, b))
    f2.release()
    ra.delete()


def _wait_gone(client, factor_id, timeout=5.0):
    deadline = time.monotonic() + timeout
    while factor_id in _ids(client, "factor"):
        assert time.monotonic() < deadline, f"factor {factor_id} not released"
        time.sleep(0.02)


def test_factor_released_on_garbage_collection(client):
    a = np.eye(10) * 3.0
    f = client.factorize(a)
    fid = f.id
    assert fid in _ids(client, "factor")
    del f
    gc.collect()
    _wait_gone(client, fid)


def test_finalizer_never_raises_after_close(server):
    c = linalgd.Client(server.target, timeout=10.0)
    f = c.factorize(np.eye(4))
    c.close()
    del f
    gc.collect()  # the finalizer sees a closed client and does nothing


def test_factor_id_api_keeps_working(client):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((12, 12)) + 12 * np.eye(12)
    fid = client.factorize(a).factor_id  # the object is gone; the id is the caller's now
    gc.collect()
    time.sleep(0.1)
    b = rng.standard_normal((12, 2))
    assert_close(client.solve(None, b, factor=fid), np.linalg.solve(a, b))
    client.release_factor(fid)
    assert fid not in _ids(client, "factor")
