"""scipy.sparse in and out of Client.sparse_solve, against scipy.sparse.linalg.spsolve."""
import numpy as np
import pytest

import linalgd

sp = pytest.importorskip("scipy.sparse")
spla = pytest.importorskip("scipy.sparse.linalg")

RNG = np.random.default_rng(21)
N = 120


def system(fmt="csr", kind="matrix"):
    a = sp.random(N, N, density=0.03, random_state=4, format="csr") + sp.eye(N) * 8
    a = a.asformat(fmt)
    if kind == "array":
        a = getattr(sp, f"{fmt}_array")(a)
    return a


@pytest.mark.filterwarnings("ignore::scipy.sparse.SparseEfficiencyWarning")  # dia of a random a
@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "bsr", "dok", "lil", "dia"])
@pytest.mark.parametrize("kind", ["matrix", "array"])
def test_every_scipy_format_as_a(client, fmt, kind):
    a = system(fmt, kind)
    b = RNG.standard_normal(N)
    x = client.sparse_solve(a, b, method="lu")
    np.testing.assert_allclose(x, spla.spsolve(a.tocsc(), b), rtol=1e-9, atol=1e-11)


def test_int64_indices_and_duplicates_are_summed(client):
    c = system()
    # Every row's entries twice, each halved, int64 indices: scipy means the sum.
    indptr, indices, data = [0], [], []
    for r in range(N):
        lo, hi = c.indptr[r], c.indptr[r + 1]
        indices += list(c.indices[lo:hi]) * 2
        data += list(c.data[lo:hi] / 2) * 2
        indptr.append(len(indices))
    unsummed = sp.csr_matrix((np.array(data), np.array(indices, np.int64),
                              np.array(indptr, np.int64)), shape=c.shape)
    assert not unsummed.has_canonical_format
    b = RNG.standard_normal(N)
    want = spla.spsolve(c.tocsc(), b)
    np.testing.assert_allclose(client.sparse_solve(unsummed, b), want, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("kind", ["matrix", "array"])
def test_sparse_b_gives_sparse_x_like_spsolve(client, kind):
    a = system("csc")
    b = sp.random(N, 3, density=0.2, random_state=7, format="csc")
    if kind == "array":
        b = sp.csc_array(b)
    x = client.sparse_solve(a, b, method="lu")
    assert sp.issparse(x)
    assert x.shape == (N, 3)
    if kind == "array":
        assert isinstance(x, sp.sparray) if hasattr(sp, "sparray") else True
    else:
        assert isinstance(x, sp.spmatrix)
    want = spla.spsolve(a, b)
    np.testing.assert_allclose(x.toarray(), want.toarray(), rtol=1e-9, atol=1e-11)


def test_sparse_b_column_vector(client):
    a = system()
    b = sp.csr_matrix(RNG.standard_normal((N, 1)))
    x = client.sparse_solve(a, b)
    assert sp.issparse(x) and x.shape == (N, 1)
    np.testing.assert_allclose(a @ x.toarray(), b.toarray(), rtol=1e-9, atol=1e-10)


def test_shape_mismatch_names_the_sizes(client):
    with pytest.raises(linalgd.InvalidArgument, match=str(N)):
        client.sparse_solve(system(), np.ones(N + 1))
    with pytest.raises(linalgd.InvalidArgument):
        client.sparse_solve(sp.random(5, 4, density=0.5, format="csr"), np.ones(5))


def complex_system(dtype):
    """A random non-Hermitian complex a (scipy CSR), diagonally dominant."""
    re = sp.random(N, N, density=0.03, random_state=5, format="csr")
    im = sp.random(N, N, density=0.03, random_state=6, format="csr")
    return (re + 1j * im + sp.eye(N) * (8 + 2j)).astype(dtype).tocsr()


@pytest.mark.parametrize("dtype,rtol", [(np.complex128, 1e-10), (np.complex64, 1e-4)])
@pytest.mark.parametrize("method", ["auto", "lu"])
def test_complex_a_and_b_match_spsolve(client, dtype, rtol, method):
    a = complex_system(dtype)
    b = (RNG.standard_normal((N, 2)) + 1j * RNG.standard_normal((N, 2))).astype(dtype)
    r = client.sparse_solve(a, b, method=method, return_info=True)
    assert r.x.dtype == dtype
    assert r.method_used == linalgd.SparseMethod.LU
    assert r.info.backend == "cpu"
    want = spla.spsolve(a.astype(np.complex128).tocsc(), b.astype(np.complex128))
    np.testing.assert_allclose(r.x, want, rtol=rtol, atol=rtol)
    assert r.residual < rtol


def test_complex_a_with_a_real_b_promotes_b(client):
    a = complex_system(np.complex128)
    b = RNG.standard_normal(N)
    x = client.sparse_solve(a, b)
    assert x.dtype == np.complex128
    np.testing.assert_allclose(x, spla.spsolve(a.tocsc(), b), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("method", ["cholesky", "qr", "cg", "bicgstab", "gmres"])
def test_complex_methods_other_than_lu_name_method_and_dtype(client, method):
    a = complex_system(np.complex64)
    with pytest.raises(linalgd.InvalidArgument, match=f"{method}.*c64"):
        client.sparse_solve(a, np.ones(N, np.complex64), method=method)
