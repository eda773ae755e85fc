"""sparse_solve through the real server: methods, CSR inputs, the dense path,
errors. Uses scipy.sparse when installed, else (indptr, indices, data, shape)."""
import numpy as np
import pytest

import linalgd

try:
    import scipy.sparse as sp
except ImportError:  # the tuple form is tested either way
    sp = None

RNG = np.random.default_rng(11)


def poisson(m):
    """The 5-point Laplacian on an m x m grid as (indptr, indices, data, shape)."""
    indptr, indices, data = [0], [], []
    for y in range(m):
        for x in range(m):
            i = y * m + x
            for j, v in ((i - m, -1.0), (i - 1, -1.0), (i, 4.0), (i + 1, -1.0), (i + m, -1.0)):
                if (j == i - 1 and x == 0) or (j == i + 1 and x == m - 1) or not 0 <= j < m * m:
                    continue
                indices.append(j)
                data.append(v)
            indptr.append(len(indices))
    n = m * m
    return (np.array(indptr, np.int32), np.array(indices, np.int32), np.array(data), (n, n))


def dense(a):
    indptr, indices, data, (n, _) = a
    d = np.zeros((n, n))
    for i in range(n):
        d[i, indices[indptr[i]:indptr[i + 1]]] = data[indptr[i]:indptr[i + 1]]
    return d


@pytest.mark.parametrize("method,pre", [
    (None, None), ("cholesky", None), ("lu", None), ("qr", None), ("cg", "ic0"),
    ("bicgstab", "ilu0"), ("gmres", "jacobi")])
def test_methods(client, method, pre):
    a = poisson(12)
    b = RNG.standard_normal((a[3][0], 2))
    r = client.sparse_solve(a, b, method=method, preconditioner=pre, return_info=True)
    assert isinstance(r, linalgd.SparseSolveResult)
    np.testing.assert_allclose(r.x, np.linalg.solve(dense(a), b), rtol=1e-7, atol=1e-9)
    assert r.residual < 1e-9
    expected = "CHOLESKY" if method is None else method.upper()
    assert r.method_used == linalgd.SparseMethod[expected]
    assert not r.dense_path
    assert (r.iterations > 0) == (method in ("cg", "bicgstab", "gmres"))


def test_vector_f32_and_int64_indices(client):
    indptr, indices, data, shape = poisson(8)
    a = (indptr.astype(np.int64), indices.astype(np.int64), data, shape)
    b = RNG.standard_normal(shape[0]).astype(np.float32)
    x = client.sparse_solve(a, b, method="lu")
    assert x.shape == (shape[0],) and x.dtype == np.float32
    np.testing.assert_allclose(x, np.linalg.solve(dense(a), b), rtol=1e-4, atol=1e-5)


def test_dense_path_for_a_dense_matrix(client):
    a = (np.array([0, 2, 4]), np.array([0, 1, 0, 1]), np.array([2.0, 1.0, 1.0, 3.0]), (2, 2))
    r = client.sparse_solve(a, [1.0, 2.0], return_info=True)
    assert r.dense_path
    np.testing.assert_allclose(r.x, [0.2, 0.6])


@pytest.mark.skipif(sp is None, reason="scipy is not installed")
def test_scipy_sparse_input(client):
    a = sp.random(200, 200, density=0.02, random_state=3, format="coo") + sp.eye(200) * 10
    b = RNG.standard_normal(200)
    x = client.sparse_solve(a, b, method="lu")
    np.testing.assert_allclose(a @ x, b, rtol=1e-9, atol=1e-10)


def test_errors_name_the_field(client):
    bad = (np.array([0, 2, 1], np.int32), np.array([0, 1], np.int32), np.array([1.0, 1.0]), (2, 2))
    with pytest.raises(linalgd.InvalidArgument, match="row_offsets"):
        client.sparse_solve(bad, [1.0, 1.0])
    nonsym = (np.array([0, 2, 3]), np.array([0, 1, 1]), np.array([2.0, 1.0, 2.0]), (2, 2))
    with pytest.raises(linalgd.InvalidArgument, match="symmetric"):
        client.sparse_solve(nonsym, [1.0, 1.0], method="cholesky")
    with pytest.raises(linalgd.InvalidArgument, match="preconditioner"):
        client.sparse_solve(poisson(3), np.ones(9), method="gmres", preconditioner="ilu7")
    n = 20  # the identity without its last entry: singular, sparse (density 0.05)
    singular = (np.array(list(range(n)) + [n - 1]), np.arange(n - 1), np.ones(n - 1), (n, n))
    with pytest.raises(linalgd.FailedPrecondition, match="singular"):
        client.sparse_solve(singular, np.ones(n), method="lu", no_fallback=True)


@pytest.mark.parametrize("method", ["cg", "bicgstab", "gmres"])
def test_initial_guess_x0(client, method):
    """A starting point near the answer takes fewer iterations; the answer is the same."""
    a = poisson(12)
    b = RNG.standard_normal(144)
    cold = client.sparse_solve(a, b, method=method, no_fallback=True, return_info=True)
    x_near = cold.x + 1e-6 * RNG.standard_normal(144)
    warm = client.sparse_solve(a, b, method=method, x0=x_near, no_fallback=True, return_info=True)
    np.testing.assert_allclose(warm.x, cold.x, rtol=1e-7, atol=1e-8)
    assert warm.iterations < cold.iterations
    # A starting point that meets the tolerance is the answer after 0 iterations (CG and
    # BiCGSTAB broke down on it and, with fallbacks allowed, solved again with cholesky).
    exact = client.sparse_solve(a, b, method=method, x0=cold.x, no_fallback=True,
                                return_info=True)
    assert exact.method_used == linalgd.SparseMethod[method.upper()]
    assert exact.iterations == 0 and exact.fallback == ""
    np.testing.assert_array_equal(exact.x, cold.x)


@pytest.mark.parametrize("method", ["cg", "bicgstab", "gmres"])
def test_iterative_solvers_are_scale_invariant(client, method):
    """b times 1e-170 or 1e170 gives x times the same, after the same iterations: ||b||^2 and
    the dot products would underflow or overflow (x = 0 'converged', or a breakdown)."""
    a = poisson(10)
    b = RNG.standard_normal(100)
    base = client.sparse_solve(a, b, method=method, no_fallback=True, return_info=True)
    for c in (1e-170, 1e170):
        r = client.sparse_solve(a, b * c, method=method, no_fallback=True, return_info=True)
        assert r.iterations == base.iterations
        np.testing.assert_allclose(r.x / c, base.x, rtol=0, atol=1e-12 * np.abs(base.x).max())
        np.testing.assert_allclose(r.residual, base.residual, rtol=0.1)


def test_iterative_workspace_is_admitted_against_max_inflight_bytes(start_server):
    """GMRES's 31 basis vectors of n doubles were allocated unbounded (n = 16M: 5 GB from a
    128 MB request); they are held against --max-inflight-bytes before anything runs."""
    s = start_server("--max-inflight-bytes", str(64 << 20))
    n = 300_000
    eye = (np.arange(n + 1, dtype=np.int32), np.arange(n, dtype=np.int32), np.ones(n), (n, n))
    with linalgd.Client(s.target, retries=0) as c:
        with pytest.raises(linalgd.ResourceExhausted) as e:
            c.sparse_solve(eye, np.ones(n), method="gmres")
        assert (f"gmres needs about {8 * 38 * n} bytes of host workspace (n = {n}, restart 30: "
                "35 vectors of n doubles") in str(e.value)
        assert "more than --max-inflight-bytes=67108864" in str(e.value)
        x = c.sparse_solve(eye, np.ones(n), method="cg", no_fallback=True)  # 9 n doubles fit
        np.testing.assert_array_equal(x, np.ones(n))


def test_the_dense_path_is_admitted_against_max_inflight_bytes(start_server):
    """A direct solve above --sparse-dense-threshold expands a to n^2 elements (a few MB of
    request may become GBs): the dense a and its factor are held like the request's bytes."""
    s = start_server("--max-inflight-bytes", str(1 << 20))

    def dense_ish(n):  # 30% of the entries, diagonally dominant
        rng = np.random.default_rng(n)
        a = np.where(rng.random((n, n)) < 0.3, rng.random((n, n)), 0.0) + n * np.eye(n)
        rows, cols = np.nonzero(a)
        offsets = np.searchsorted(rows, np.arange(n + 1)).astype(np.int32)
        return (offsets, cols.astype(np.int32), a[rows, cols], (n, n)), a

    with linalgd.Client(s.target) as c:
        big, _ = dense_ish(400)  # 2 * 400^2 doubles: 2.56 MB
        with pytest.raises(linalgd.ResourceExhausted) as e:
            c.sparse_solve(big, np.ones(400))
        assert e.value.attempts == 1  # never fits: not retried
        assert ("the dense path (density above --sparse-dense-threshold=0.1) needs about "
                "2560000 bytes for the dense a and its factor (n = 400), more than "
                "--max-inflight-bytes=1048576") in str(e.value)
        small, a = dense_ish(100)
        x = c.sparse_solve(small, np.ones(100))
        np.testing.assert_allclose(a @ x, np.ones(100), rtol=1e-10)


def test_x0_must_match_b(client):
    a = poisson(4)
    with pytest.raises(linalgd.InvalidArgument, match="x0"):
        client.sparse_solve(a, np.ones((16, 2)), method="cg", x0=np.zeros((16, 3)))
    with pytest.raises(linalgd.InvalidArgument, match="x0"):
        client.sparse_solve(a, np.ones(16), method="cg", x0=np.full(16, np.nan))


def test_a_float16_b_is_refused_naming_its_dtype(client):
    """a's values are sent in b's dtype: a float16 b sent them as float16 bytes labelled
    float64, and the server refused with a byte count ('a.values: 4 bytes, expected 16')
    naming no dtype. Now the client refuses it, as the dense solve does, naming float16."""
    a = poisson(3)
    with pytest.raises(linalgd.InvalidArgument,
                       match=r"^INVALID_ARGUMENT: b: dtype float16; sparse_solve takes float32"):
        client.sparse_solve(a, np.ones(9, np.float16))
    with pytest.raises(linalgd.InvalidArgument, match="b: dtype float16"):  # a remote b too
        with client.put(np.ones(9, np.float16).reshape(9, 1)) as b:
            client.sparse_solve(a, b)
    # A complex a promotes b to complex128 first, which its values can take.
    complex_a = (*a[:2], a[2] + 1j, a[3])
    x = client.sparse_solve(complex_a, np.ones(9, np.float16))
    assert x.dtype == np.complex128
    np.testing.assert_allclose(x, client.sparse_solve(complex_a, np.ones(9, np.complex128)))


@pytest.mark.parametrize("dtype", [">f4", ">f8", ">c8", ">c16"])
def test_a_big_endian_b_labels_a_values_by_its_dtype(client, dtype):
    """A big-endian b's dtype differs from the native one it stands for: a's values in '>f4'
    went labelled float64 (the fallback), with 4-byte values ('a.values: ... expected')."""
    a = poisson(3)
    x = client.sparse_solve(a, np.ones(9, dtype))
    assert x.dtype == np.dtype(dtype).newbyteorder("=")
    np.testing.assert_allclose(dense(a) @ x, np.ones(9), rtol=1e-5)
