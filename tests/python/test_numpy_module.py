"""linalgd.numpy against numpy itself: same results, same shapes, same exception types."""
import numpy as np
import pytest

import linalgd
import linalgd.numpy as lnp
from numerics import assert_close

RNG = np.random.default_rng(5)


@pytest.fixture(autouse=True)
def module_client(client):
    lnp.use(client)
    yield client


def well_conditioned(*shape, dtype=np.float64):
    n = shape[-1]
    a = RNG.standard_normal(shape) + n * np.eye(n)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * RNG.standard_normal(shape)
    return a.astype(dtype)


@pytest.mark.parametrize("sa,sb", [
    ((4, 3), (3, 5)), ((3,), (3, 2)), ((2, 3), (3,)), ((3,), (3,)), ((2, 4, 3), (3, 5)),
    ((4, 3), (2, 3, 5)), ((2, 1, 4, 3), (5, 3, 2)), ((0, 3), (3, 4)), ((4, 0), (0, 2)),
])
def test_matmul_matches_numpy_shapes(sa, sb):
    a, b = RNG.standard_normal(sa), RNG.standard_normal(sb)
    got, want = lnp.matmul(a, b), np.matmul(a, b)
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_matmul_promotes_like_numpy():
    a = RNG.standard_normal((5, 4)).astype(np.float32)
    b = RNG.standard_normal((4, 3))
    got = lnp.matmul(a, b)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-12)


def test_matmul_errors_are_numpys_types():
    with pytest.raises(ValueError, match="core dimension"):
        lnp.matmul(np.ones((2, 3)), np.ones((4, 2)))
    with pytest.raises(ValueError):
        lnp.matmul(np.ones((2, 3)), 2.0)
    with pytest.raises(ValueError, match="broadcast"):
        lnp.matmul(np.ones((2, 2, 3)), np.ones((3, 3, 2)))
    with pytest.raises(TypeError, match="int64"):
        lnp.matmul(np.ones((2, 2), np.int64), np.ones((2, 2), np.int64))


@pytest.mark.parametrize("shape_a,shape_b", [
    ((5, 5), (5,)), ((5, 5), (5, 3)), ((3, 4, 4), (3, 4, 2)), ((3, 4, 4), (1, 4, 2)),
    ((0, 0), (0,)), ((4, 4), (4, 0)),
])
def test_solve_matches_numpy(shape_a, shape_b):
    a = well_conditioned(*shape_a) if shape_a[-1] else np.zeros(shape_a)
    b = RNG.standard_normal(shape_b)
    want = np.linalg.solve(a, b)
    got = lnp.solve(a, b)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_solve_integer_inputs_become_float64_like_numpy():
    a = np.array([[2, 1], [1, 3]])
    b = np.array([3, 5])
    got = lnp.solve(a, b)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, np.linalg.solve(a, b), rtol=1e-12)


def test_solve_singular_raises_linalgerror():
    a = np.array([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.solve(a, np.ones(2))  # numpy's own behaviour, for reference
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        lnp.solve(a, np.ones(2))


def test_solve_non_square_and_mismatched():
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        lnp.solve(np.ones((3, 2)), np.ones(3))
    with pytest.raises(np.linalg.LinAlgError, match="two-dimensional"):
        lnp.solve(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="rows"):
        lnp.solve(np.eye(3), np.ones(4))


def test_inv_matches_numpy_and_refuses_singular():
    a = well_conditioned(3, 6, 6)
    np.testing.assert_allclose(lnp.inv(a), np.linalg.inv(a), rtol=1e-9, atol=1e-12)
    a32 = well_conditioned(4, 4, dtype=np.float32)
    got = lnp.inv(a32)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.linalg.inv(a32), rtol=1e-4, atol=1e-6)
    with pytest.raises(np.linalg.LinAlgError):
        lnp.inv(np.zeros((3, 3)))


@pytest.mark.parametrize("m,n,k", [(8, 5, None), (8, 5, 2), (5, 8, 1), (6, 6, None)])
def test_lstsq_matches_numpy(m, n, k):
    a = RNG.standard_normal((m, n))
    b = RNG.standard_normal((m,) if k is None else (m, k))
    x, res, rank, s = lnp.lstsq(a, b, None)
    wx, wres, wrank, ws = np.linalg.lstsq(a, b, rcond=None)
    np.testing.assert_allclose(x, wx, rtol=1e-9, atol=1e-12)
    assert x.shape == wx.shape
    assert rank == wrank
    assert_close(s, ws)
    assert res.shape == wres.shape
    np.testing.assert_allclose(res, wres, rtol=1e-8, atol=1e-12)


def test_lstsq_rank_deficient_rank_and_cutoff():
    a = RNG.standard_normal((10, 3)) @ RNG.standard_normal((3, 6))  # rank 3
    b = RNG.standard_normal(10)
    x, _, rank, _ = lnp.lstsq(a, b)
    wx, _, wrank, _ = np.linalg.lstsq(a, b, rcond=None)
    assert rank == wrank == 3
    np.testing.assert_allclose(x, wx, rtol=1e-8, atol=1e-10)
    with pytest.raises(np.linalg.LinAlgError, match="Incompatible"):
        lnp.lstsq(np.ones((3, 2)), np.ones(4))


def test_explicit_client_argument_wins(server):
    other = linalgd.Client(server.target)
    try:
        np.testing.assert_allclose(lnp.matmul(np.eye(2), np.ones((2, 2)), client=other),
                                   np.ones((2, 2)))
    finally:
        other.close()
