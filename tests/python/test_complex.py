"""complex64 and complex128 through the real server, against numpy."""
import numpy as np
import pytest

import linalgd

RNG = np.random.default_rng(11)
TOL = {np.complex64: 1e-5, np.complex128: 1e-12}
DTYPES = [np.complex64, np.complex128]


def crand(*shape, dtype=np.complex128):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def rel(x, ref):
    return float(np.abs(np.asarray(x, np.complex128) - ref).max() / max(1.0, np.abs(ref).max()))


def hermitian_pd(n, dtype):
    b = crand(n, n)
    return (b.conj().T @ b + n * np.eye(n)).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_broadcast_batch_with_complex_alpha_beta(client, dtype):
    a, b, c = crand(2, 1, 3, 4, dtype=dtype), crand(5, 4, 2, dtype=dtype), crand(3, 2, dtype=dtype)
    alpha, beta = 0.5 - 2j, 1.5 + 0.25j
    result = client.matmul(a, b, c, alpha=alpha, beta=beta, return_info=True)
    ref = alpha * (a.astype(np.complex128) @ b.astype(np.complex128)) + beta * c
    assert result.out.dtype == dtype and result.out.shape == ref.shape
    assert rel(result.out, ref) <= TOL[dtype]
    assert result.info.backend == "cpu"


@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_transposes_are_not_conjugates(client, dtype):
    a, b = crand(4, 3, dtype=dtype), crand(5, 4, dtype=dtype)
    out = client.matmul(a, b, transpose_a=True, transpose_b=True)
    assert rel(out, a.T.astype(np.complex128) @ b.T) <= TOL[dtype]


@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_bias_epilogue(client, dtype):
    a, b, bias = crand(3, 4, dtype=dtype), crand(4, 5, dtype=dtype), crand(5, dtype=dtype)
    out = client.matmul(a, b, bias=bias)
    assert rel(out, a.astype(np.complex128) @ b + bias) <= TOL[dtype]


def test_matmul_activation_epilogue_is_refused(client):
    a = crand(2, 2, dtype=np.complex64)
    with pytest.raises(linalgd.InvalidArgument, match="epilogue: relu is not supported for c64"):
        client.matmul(a, a, epilogue="relu")


def test_imaginary_alpha_with_real_operands_is_refused(client):
    a = np.ones((2, 2))
    with pytest.raises(linalgd.InvalidArgument, match="alpha_imag: 1 is nonzero, but f64"):
        client.matmul(a, a, alpha=1 + 1j)


def test_mixed_real_and_complex_operands_are_refused(client):
    with pytest.raises(linalgd.InvalidArgument, match="b.dtype: f64 differs from a.dtype c128"):
        client.matmul(crand(2, 2), np.ones((2, 2)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("method", ["auto", "lu", "qr", "lstsq"])
def test_solve_matches_numpy(client, dtype, method):
    a = crand(2, 6, 6, dtype=dtype) + 6 * np.eye(6, dtype=dtype)
    b = crand(2, 6, 3, dtype=dtype)
    x = client.solve(a, b, method=method)
    ref = np.linalg.solve(a.astype(np.complex128), b.astype(np.complex128))
    assert x.dtype == dtype and x.shape == ref.shape
    assert rel(x, ref) <= 100 * TOL[dtype]


@pytest.mark.parametrize("dtype", DTYPES)
def test_auto_solve_of_hermitian_positive_definite_uses_cholesky(client, dtype):
    a, b = hermitian_pd(5, dtype), crand(5, 2, dtype=dtype)
    r = client.solve(a, b, return_info=True)
    assert r.method_used == linalgd.SolveMethod.CHOLESKY and r.fallback == ""
    assert rel(r.x, np.linalg.solve(a.astype(np.complex128), b)) <= 100 * TOL[dtype]
    assert r.rcond > 0


def test_singular_complex_solve_falls_back_or_refuses(client):
    a = np.array([[1, 1j], [2, 2j]], np.complex128)
    b = np.array([[1 + 1j], [2 + 2j]])
    r = client.solve(a, b, method="lu", return_info=True)
    assert r.method_used == linalgd.SolveMethod.LSTSQ and "lu:" in r.fallback
    np.testing.assert_allclose(r.x, np.linalg.lstsq(a, b, rcond=None)[0], atol=1e-12)
    with pytest.raises(linalgd.FailedPrecondition, match="lu:"):
        client.solve(a, b, method="lu", no_fallback=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_lstsq_matches_numpy(client, dtype):
    a, b = crand(8, 3, dtype=dtype), crand(8, 2, dtype=dtype)
    got_x, got_res, got_rank, got_sv = client.lstsq(a, b)
    x, residuals, rank, sv = np.linalg.lstsq(a.astype(np.complex128), b.astype(np.complex128),
                                             rcond=None)
    assert rel(got_x, x) <= 100 * TOL[dtype]
    assert got_rank == rank
    np.testing.assert_allclose(got_res, residuals, rtol=1e-3 if dtype == np.complex64 else 1e-9)
    np.testing.assert_allclose(got_sv, sv, rtol=1e-4 if dtype == np.complex64 else 1e-10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("hermitian", [False, True])
def test_factorize_then_solve_with_the_factor(client, dtype, hermitian):
    n = 6
    a = hermitian_pd(n, dtype) if hermitian else crand(n, n, dtype=dtype) + n * np.eye(n)
    a = a.astype(dtype)
    f = client.factorize(a)
    try:
        assert f.method == (linalgd.SolveMethod.CHOLESKY if hermitian else linalgd.SolveMethod.LU)
        assert f.placement == "cpu" and f.rcond > 0
        b = crand(3, n, 2, dtype=dtype)
        x = client.solve(None, b, factor=f.factor_id)
        assert x.dtype == dtype
        assert rel(x, np.linalg.solve(a.astype(np.complex128), b)) <= 100 * TOL[dtype]
    finally:
        client.release_factor(f.factor_id)


@pytest.mark.parametrize("dtype", DTYPES)
def test_put_get_roundtrip_and_resident_operand(client, dtype):
    x = crand(3, 4, dtype=dtype)
    tid = client.put(x).id
    try:
        back = client.get(tid)
        assert back.dtype == dtype and np.array_equal(back, x)
        info = [t for t in client.list_tensors() if t.id == tid][0]
        assert info.bytes == x.nbytes and info.dtype == int(
            linalgd.DType.C64 if dtype == np.complex64 else linalgd.DType.C128)
    finally:
        client.delete(tid)


def test_non_finite_imaginary_part_is_refused(client):
    a = crand(2, 2)
    a[1, 0] = complex(1, np.inf)
    with pytest.raises(linalgd.InvalidArgument, match="a: element 2 is \\+Inf"):
        client.solve(a, crand(2, 1))


def test_sparse_solve_takes_complex_csr_tuples(client):
    indptr, indices = np.array([0, 1, 2], np.int32), np.array([0, 1], np.int32)
    data = np.array([1 + 1j, 2], np.complex128)
    x = client.sparse_solve((indptr, indices, data, (2, 2)), np.array([2j, 4], np.complex128))
    np.testing.assert_allclose(x, [1 + 1j, 2], rtol=1e-14)


def test_sparse_solve_refuses_a_non_finite_imaginary_part(client):
    indptr, indices = np.array([0, 1, 2], np.int32), np.array([0, 1], np.int32)
    data = np.array([1, complex(2, np.nan)], np.complex64)
    with pytest.raises(linalgd.InvalidArgument, match="entry 1 \\(imaginary part\\) is NaN"):
        client.sparse_solve((indptr, indices, data, (2, 2)), np.ones(2, np.complex64))


@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_complex(client, dtype):
    torch = pytest.importorskip("torch")
    a = torch.from_numpy(crand(3, 3, dtype=dtype)) + 3 * torch.eye(3)
    b = torch.from_numpy(crand(3, 2, dtype=dtype))
    out = client.matmul(a.conj(), b)  # a lazily conjugated view is resolved before sending
    assert isinstance(out, torch.Tensor) and out.dtype == a.dtype
    assert rel(out.numpy(), a.conj().resolve_conj().numpy().astype(np.complex128) @ b.numpy()) \
        <= TOL[dtype]
    x = client.solve(a, b)
    assert rel(x.numpy(), np.linalg.solve(a.numpy().astype(np.complex128), b.numpy())) \
        <= 100 * TOL[dtype]


@pytest.mark.parametrize("dtype", DTYPES)
def test_shared_memory_carries_complex_operands_and_results(shm_server, dtype):
    with linalgd.Client(shm_server.target, timeout=20.0, use_shared_memory=True) as c:
        a, b = crand(2, 5, 5, dtype=dtype) + 5 * np.eye(5), crand(2, 5, 3, dtype=dtype)
        a = a.astype(dtype)
        out = c.matmul(a, b, alpha=1j)
        assert c.shared_memory_active
        assert out.dtype == dtype and rel(out, 1j * (a.astype(np.complex128) @ b)) <= TOL[dtype]
        x = c.solve(a, b)
        assert x.dtype == dtype
        assert rel(x, np.linalg.solve(a.astype(np.complex128), b)) <= 100 * TOL[dtype]
