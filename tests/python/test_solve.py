"""Solve through the real server: methods, fallbacks, batching, vectors, dtypes."""
import numpy as np
import pytest

import linalgd
from numerics import assert_close

RNG = np.random.default_rng(7)


def spd(n, dtype=np.float64):
    m = RNG.standard_normal((n, n))
    return (m @ m.T + n * np.eye(n)).astype(dtype)


@pytest.mark.parametrize("method,expected", [
    (None, "CHOLESKY"), ("auto", "CHOLESKY"), ("lu", "LU"), ("cholesky", "CHOLESKY"),
    (linalgd.SolveMethod.QR, "QR"), ("LSTSQ", "LSTSQ")])
def test_methods_on_spd(client, method, expected):
    a, b = spd(6), RNG.standard_normal((6, 3))
    r = client.solve(a, b, method=method, return_info=True)
    assert isinstance(r, linalgd.SolveResult)
    assert r.method_used == linalgd.SolveMethod[expected] and r.fallback == ""
    assert r.x.dtype == np.float64 and r.x.shape == (6, 3)
    np.testing.assert_allclose(r.x, np.linalg.solve(a, b), rtol=1e-10, atol=1e-12)
    assert 0 <= r.residual < 1e-12
    assert r.info.backend and r.info.batch_size >= 1


@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-4), (np.float64, 1e-10)])
def test_dtype_preserved(client, dtype, tol):
    a, b = spd(5, dtype), RNG.standard_normal((5, 2)).astype(dtype)
    x = client.solve(a, b)
    assert x.dtype == dtype and x.shape == (5, 2)
    np.testing.assert_allclose(x, np.linalg.solve(a.astype(np.float64), b), rtol=tol, atol=tol)


def test_vector_rhs_and_batch_broadcast(client):
    a = np.stack([spd(4), spd(4), spd(4)])
    v = RNG.standard_normal(4)
    x = client.solve(a[0], v)
    assert x.shape == (4,)
    assert_close(x, np.linalg.solve(a[0], v))
    b = RNG.standard_normal((4, 2))  # broadcasts over a's batch
    xb = client.solve(a, b)
    assert xb.shape == (3, 4, 2)
    assert_close(xb, np.linalg.solve(a, np.broadcast_to(b, (3, 4, 2))))


def test_many_right_hand_sides(client):
    a, b = spd(16), RNG.standard_normal((16, 64))
    np.testing.assert_allclose(client.solve(a, b, method="cholesky"), np.linalg.solve(a, b),
                               rtol=1e-9, atol=1e-12)


def test_least_squares_non_square(client):
    a, b = RNG.standard_normal((10, 3)), RNG.standard_normal((10, 2))
    r = client.solve(a, b, return_info=True)
    assert r.x.shape == (3, 2)
    np.testing.assert_allclose(r.x, np.linalg.lstsq(a, b, rcond=None)[0], rtol=1e-9)


def test_fallback_reported(client):
    indefinite = np.array([[1.0, 2.0], [2.0, 1.0]])
    r = client.solve(indefinite, np.ones((2, 1)), method="cholesky", return_info=True)
    assert r.method_used != linalgd.SolveMethod.CHOLESKY
    assert "cholesky" in r.fallback.lower()
    np.testing.assert_allclose(r.x, np.linalg.solve(indefinite, np.ones((2, 1))), rtol=1e-12)


def test_no_fallback_is_failed_precondition(client):
    with pytest.raises(linalgd.FailedPrecondition) as e:
        client.solve(np.array([[1.0, 2.0], [2.0, 1.0]]), np.ones((2, 1)), method="cholesky",
                     no_fallback=True)
    assert e.value.code.name == "FAILED_PRECONDITION" and "cholesky" in e.value.message
    with pytest.raises(linalgd.FailedPrecondition):
        client.solve(np.zeros((3, 3)), np.ones((3, 1)), method="lu", no_fallback=True)


def test_non_contiguous_and_priority(client):
    base = spd(8)
    a = base.T[::2, ::2]  # a symmetric-strided view
    b = np.asfortranarray(RNG.standard_normal((4, 3)))
    assert_close(client.solve(a, b, priority=3), np.linalg.solve(a, b))


def nan_rhs():
    b = np.ones((3, 1))
    b[0, 0] = np.nan
    return b


def test_non_finite_rejected_by_default(client):
    with pytest.raises(linalgd.InvalidArgument, match="b"):
        client.solve(spd(3), nan_rhs())


def test_allow_non_finite(client):
    x = client.solve(spd(3), nan_rhs(), allow_non_finite=True)
    assert x.shape == (3, 1) and np.isnan(x).any()


@pytest.mark.parametrize("method", [None, "lu", "cholesky", "qr", "lstsq"])
@pytest.mark.parametrize("no_fallback", [False, True])
def test_non_finite_a_allowed_gives_nan_x_naming_the_element(client, method, no_fallback):
    a = np.array([[1.0, np.nan], [2.0, 3.0]])
    r = client.solve(a, np.ones((2, 1)), method=method, no_fallback=no_fallback,
                     allow_non_finite=True, return_info=True)
    assert np.isnan(r.x).all() and r.rcond is None
    assert "a[0,1] is NaN (allow_non_finite): x is NaN" in r.fallback
    if method in (None, "qr", "lstsq"):  # a 50 x 30 a, whose lstsq was "SVD did not converge"
        tall = RNG.standard_normal((50, 30))
        tall[7, 3] = -np.inf
        r = client.solve(tall, np.ones((50, 2)), method=method, no_fallback=no_fallback,
                         allow_non_finite=True, return_info=True)
        assert r.x.shape == (30, 2) and np.isnan(r.x).all()
        assert "a[7,3] is -Inf" in r.fallback


def test_entries_near_double_max_keep_their_condition(client):
    a = np.array([[1e308, 1e308], [1e308, -1e308]])  # condition 1; ||a||_1 overflows
    r = client.solve(a, np.ones(2), method="lu", no_fallback=True, return_info=True)
    assert r.rcond == pytest.approx(0.5) and r.fallback == ""
    np.testing.assert_allclose(r.x, [1e-308, 0.0], atol=1e-320)
