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
