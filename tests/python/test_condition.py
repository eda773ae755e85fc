"""Numerically singular systems through the real server: the rcond each solve
reports, the decision (solved / minimum-norm fallback / refused) at the
server's threshold n * eps, numpy.linalg.lstsq's outputs, and cached factors.
"""
import numpy as np
import pytest

import linalgd
import condition_families as fam
from numerics import assert_close

CASES = fam.cases()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name,a", CASES, ids=[f"{c[0]} n{c[1].shape[0]}" for c in CASES])
def test_family(client, name, a, dtype):
    n = a.shape[0]
    x0 = np.random.default_rng(n).standard_normal(n)
    b = a @ x0
    r = client.solve(a.astype(dtype), b.astype(dtype), return_info=True)
    want = fam.expected_decision(a, dtype)
    fell_back = r.method_used == linalgd.SolveMethod.LSTSQ
    if want is not None:
        assert fell_back == (want == "fallback"), r.fallback
    if fell_back:
        assert "used lstsq" in r.fallback
    assert r.rcond is not None
    eps = np.finfo(dtype).eps
    rc = fam.rcond1(a)
    if rc > 100 * eps and np.linalg.matrix_rank(a) == n:
        assert rc / 10 <= r.rcond <= rc * 10
        rc2 = 1 / np.linalg.cond(a)  # numpy's SVD
        assert rc2 / 10 <= r.rcond <= rc2 * 10
    if not fell_back:
        assert np.linalg.norm(r.x - x0) <= n * eps / rc * np.linalg.norm(x0)
    elif dtype == np.float64 and np.linalg.matrix_rank(a) < n:
        s = np.linalg.svd(a, compute_uv=False)
        cutoff = n * eps * s[0]
        if np.all(np.abs(np.log10(s / cutoff)) > 2):
            # A clear gap at the cutoff: the minimum-norm answer is well defined.
            ref = fam.min_norm(a, b)
            assert np.linalg.norm(r.x - ref) <= 1e-8 * np.linalg.norm(ref)
        else:
            # Singular values within 100x of the cutoff: which of them count
            # is decided by rounding (two correct SVDs differ), so check what
            # any minimum-norm answer to a consistent b has: a tiny residual
            # and a norm no larger than the x0 that made b.
            assert np.linalg.norm(a @ r.x - b) <= 1e-8 * s[0] * np.linalg.norm(x0)
            assert np.linalg.norm(r.x) <= 1.5 * np.linalg.norm(x0)
    if fell_back:
        with pytest.raises(linalgd.FailedPrecondition, match="no fallback taken"):
            client.solve(a.astype(dtype), b.astype(dtype), no_fallback=True)


def test_refusal_names_rcond_and_threshold(client):
    a = fam.svd_family(32, 1e20, np.random.default_rng(1))
    with pytest.raises(linalgd.FailedPrecondition) as e:
        client.solve(a, np.ones(32), method="lu", no_fallback=True)
    msg = str(e.value)
    assert "lu: rcond " in msg and f"below the threshold {32 * np.finfo(np.float64).eps:g}" in msg


def test_singular_rcond_factor_moves_the_threshold(client, start_server):
    a = fam.svd_family(16, 1e10, np.random.default_rng(7))  # rcond1 ~ 1e-11
    b = a @ np.ones(16)
    assert client.solve(a, b, method="lu", return_info=True).fallback == ""
    strict = start_server("--singular-rcond-factor", "1e8")  # threshold 3.6e-7
    with linalgd.Client(strict.target) as c:
        r = c.solve(a, b, method="lu", return_info=True)
    assert r.method_used == linalgd.SolveMethod.LSTSQ
    assert f"below the threshold {1e8 * 16 * np.finfo(np.float64).eps:g}" in r.fallback


def test_rank_1000_of_1024_is_the_minimum_norm_solution(client):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((1024, 1000)) @ rng.standard_normal((1000, 1024))
    b = a @ rng.standard_normal(1024)
    r = client.solve(a, b, return_info=True)
    assert r.fallback != "" and r.method_used == linalgd.SolveMethod.LSTSQ
    assert r.rcond < 1024 * np.finfo(np.float64).eps
    ref = np.linalg.pinv(a) @ b
    assert np.linalg.norm(r.x - ref) <= 1e-6 * np.linalg.norm(ref)


@pytest.mark.parametrize("shape", [(9, 4), (4, 9), (6, 6)])
def test_lstsq_matches_numpy(client, shape):
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal(shape), rng.standard_normal((shape[0], 2))
    x, res, rank, s = client.lstsq(a, b)
    ref_x, ref_res, ref_rank, ref_s = np.linalg.lstsq(a, b, rcond=None)
    np.testing.assert_allclose(x, ref_x, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(res, ref_res, rtol=1e-9, atol=1e-12)
    assert res.shape == ref_res.shape and rank == ref_rank
    np.testing.assert_allclose(s, ref_s, rtol=1e-12)


def test_lstsq_rcond_and_vector_rhs(client):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((8, 3)) @ np.diag([1.0, 1e-3, 1e-9])
    b = rng.standard_normal(8)
    for rcond in (None, 1e-6, 1e-2):
        x, res, rank, s = client.lstsq(a, b, rcond=rcond)
        ref_x, ref_res, ref_rank, ref_s = np.linalg.lstsq(a, b, rcond=rcond)
        assert rank == ref_rank, rcond
        assert res.shape == ref_res.shape
        np.testing.assert_allclose(x, ref_x, rtol=1e-8, atol=1e-12)
        assert_close(s, ref_s)


def test_lstsq_batched_shapes(client):
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((3, 7, 4)), rng.standard_normal((3, 7, 2))
    r = client.solve(a, b, method="lstsq", return_info=True)
    assert r.residuals.shape == (3, 2) and r.rank.shape == (3,)
    assert r.singular_values.shape == (3, 4)
    for i in range(3):
        ref = np.linalg.lstsq(a[i], b[i], rcond=None)
        np.testing.assert_allclose(r.residuals[i], ref[1], rtol=1e-9)
        np.testing.assert_allclose(r.singular_values[i], ref[3], rtol=1e-12)
    assert client.solve(a, b, return_info=True).residuals is None  # QR: not lstsq


@pytest.mark.parametrize("rcond", [-1.0, float("nan"), float("inf")])
def test_bad_rcond_is_invalid_argument(client, rcond):
    with pytest.raises(linalgd.InvalidArgument, match="rcond"):
        client.solve(np.eye(3), np.ones(3), method="lstsq", rcond=rcond)


def test_numerically_singular_factor(client):
    a = fam.svd_family(12, 1e18, np.random.default_rng(6))
    with pytest.raises(linalgd.FailedPrecondition, match="below the threshold"):
        client.factorize(a, method="lu", no_fallback=True)
    f = client.factorize(a, method="lu")
    assert "factor kept" in f.fallback and f.rcond < 12 * np.finfo(np.float64).eps
    r = client.solve(None, np.ones(12), factor=f.factor_id, return_info=True)
    assert "x is from the factor" in r.fallback and r.rcond == f.rcond
    with pytest.raises(linalgd.FailedPrecondition, match="of the factor is below the threshold"):
        client.solve(None, np.ones(12), factor=f.factor_id, no_fallback=True)
    good = client.factorize(np.eye(4) * 2)
    r = client.solve(None, np.ones(4), factor=good.factor_id, return_info=True)
    assert r.fallback == "" and r.rcond == pytest.approx(1.0)
