"""sparse_solve's direct methods (cholesky, lu) through the real server: a numerically singular
a gets the dense solve's decision, a factorization predicted to need more memory than
--max-inflight-bytes is refused before it starts, and entries near DBL_MAX keep their
condition."""
import numpy as np
import pytest

import linalgd


def csr(d):
    """A dense square matrix as (indptr, indices, data, shape), zeros left out."""
    n = d.shape[0]
    indptr, indices, data = [0], [], []
    for i in range(n):
        nz = np.nonzero(d[i])[0]
        indices.extend(nz)
        data.extend(d[i, nz])
        indptr.append(len(indices))
    return (np.array(indptr, np.int32), np.array(indices, np.int32), np.array(data), (n, n))


def path_laplacian(n, shift=0.0, extra=0.0):
    """The path graph's Laplacian (singular) plus shift * I, plus `extra` at (0, 5)."""
    d = np.diag(np.r_[1.0, 2.0 * np.ones(n - 2), 1.0] + shift)
    d -= np.eye(n, k=1) + np.eye(n, k=-1)
    d[0, 5] += extra
    return d


def test_numerically_singular_lu_gets_the_dense_decision(client):
    d = path_laplacian(200, extra=1e-14)  # condition 4.7e17
    b = np.ones((200, 1))
    with pytest.raises(linalgd.FailedPrecondition, match=r"lu: rcond \S+ of a is below the "):
        client.sparse_solve(csr(d), b, method="lu", no_fallback=True)
    with pytest.raises(linalgd.FailedPrecondition, match=r"lu: rcond \S+ of a is below the "):
        client.solve(d, b, method="lu", no_fallback=True)
    r = client.sparse_solve(csr(d), b, method="lu", return_info=True)
    assert r.method_used == linalgd.SparseMethod.QR and not r.dense_path
    assert "lu: rcond " in r.fallback and "numerically singular); used qr" in r.fallback


@pytest.mark.parametrize("method", [None, "cholesky"])
def test_numerically_singular_cholesky_is_refused_with_no_fallback(client, method):
    d = path_laplacian(200, shift=1e-15)  # SPD, condition 4e15
    with pytest.raises(linalgd.FailedPrecondition, match=r"cholesky: rcond \S+ of a is below"):
        client.sparse_solve(csr(d), np.ones(200), method=method, no_fallback=True)


def test_well_conditioned_is_solved_as_asked(client):
    d = path_laplacian(200, shift=1e-3)
    b = np.ones(200)
    for method in ("cholesky", "lu"):
        r = client.sparse_solve(csr(d), b, method=method, no_fallback=True, return_info=True)
        assert r.method_used == linalgd.SparseMethod[method.upper()] and r.fallback == ""
        np.testing.assert_allclose(r.x, np.linalg.solve(d, b), rtol=1e-9)


def poisson(m):
    """The 5-point Laplacian on an m x m grid (n = m * m) as (indptr, indices, data, shape)."""
    indptr, indices, data = [0], [], []
    for i in range(m * m):
        y, x = divmod(i, m)
        for j, v, ok in ((i - m, -1.0, y > 0), (i - 1, -1.0, x > 0), (i, 4.0, True),
                         (i + 1, -1.0, x < m - 1), (i + m, -1.0, y < m - 1)):
            if ok:
                indices.append(j)
                data.append(v)
        indptr.append(len(indices))
    return (np.array(indptr, np.int32), np.array(indices, np.int32), np.array(data),
            (m * m, m * m))


def test_factorization_over_the_memory_limit_is_refused(start_server):
    s = start_server("--max-inflight-bytes", "1048576")
    a = poisson(80)  # a request of about 0.4 MB; factorizations of several MB
    b = np.ones(6400)
    # No retries: another attempt would be refused alike.
    with linalgd.Client(s.target, timeout=30, retry_policy=linalgd.RetryPolicy(retries=0)) as c:
        for method in ("cholesky", "lu"):
            with pytest.raises(linalgd.ResourceExhausted,
                               match=r"at its peak .* more than --max-inflight-bytes=1048576"):
                c.sparse_solve(a, b, method=method)
        # A small one still runs.
        d = path_laplacian(20, shift=1.0)
        x = c.sparse_solve(csr(d), np.ones(20), method="lu")
        np.testing.assert_allclose(d @ x, np.ones(20), atol=1e-12)


def test_entries_near_double_max_keep_their_condition(start_server):
    s = start_server("--sparse-dense-threshold", "1")  # a 2 x 2 stays sparse
    d = np.array([[1e308, 1e308], [1e308, -1e308]])  # condition 1
    with linalgd.Client(s.target, timeout=30) as c:
        r = c.sparse_solve(csr(d), np.ones(2), method="lu", no_fallback=True, return_info=True)
    assert not r.dense_path and r.fallback == ""
    np.testing.assert_allclose(r.x, [1e-308, 0.0], atol=1e-320)
