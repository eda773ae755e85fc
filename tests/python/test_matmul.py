"""Matmul through the real server: every request field, dtypes, shapes, layouts."""
import numpy as np
import pytest

import linalgd

RNG = np.random.default_rng(42)
TOL = {np.float16: 2e-2, np.float32: 1e-5, np.float64: 1e-12}


def rand(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def close(out, ref, dtype):
    scale = max(1.0, float(np.abs(ref).max()))
    return float(np.abs(np.asarray(out, np.float64) - ref).max()) <= TOL[dtype] * scale


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 2)),
                                    ((1, 7), (7, 1))])
def test_dtype_and_shape_preserved(client, dtype, shapes):
    a, b = rand(*shapes[0], dtype=dtype), rand(*shapes[1], dtype=dtype)
    out = client.matmul(a, b)
    ref = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert isinstance(out, np.ndarray) and out.dtype == dtype and out.shape == ref.shape
    assert out.flags.writeable and out.flags.c_contiguous
    assert close(out, ref, dtype)


def test_one_dimensional_operands_follow_numpy(client):
    a, b, v = rand(3, 4), rand(4, 5), rand(4)
    assert client.matmul(v, b).shape == (5,)
    np.testing.assert_allclose(client.matmul(v, b), v @ b, rtol=1e-12)
    np.testing.assert_allclose(client.matmul(a, v), a @ v, rtol=1e-12)


@pytest.mark.parametrize("ta,tb", [(False, True), (True, False), (True, True)])
def test_transposes(client, ta, tb):
    a, b = rand(3, 4), rand(4, 5)
    a_in = np.ascontiguousarray(a.T) if ta else a
    b_in = np.ascontiguousarray(b.T) if tb else b
    np.testing.assert_allclose(client.matmul(a_in, b_in, transpose_a=ta, transpose_b=tb), a @ b,
                               rtol=1e-12)


def test_alpha_beta_c(client):
    a, b, c = rand(3, 4), rand(4, 5), rand(3, 5)
    np.testing.assert_allclose(client.matmul(a, b, c, alpha=2.0, beta=-0.5), 2 * a @ b - 0.5 * c,
                               rtol=1e-12)
    np.testing.assert_allclose(client.matmul(a, b, c), a @ b + c, rtol=1e-12)  # beta 1 with c
    np.testing.assert_allclose(client.matmul(a, b, alpha=3), 3 * a @ b, rtol=1e-12)
    row = rand(5)  # 1-D c broadcasts as a row
    np.testing.assert_allclose(client.matmul(a, b, c=row), a @ b + row, rtol=1e-12)


def gelu(z):
    return 0.5 * z * (1 + np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z ** 3)))


@pytest.mark.parametrize("epilogue,fn,with_bias", [
    ("none", lambda z: z, False), ("relu", lambda z: np.maximum(z, 0), False),
    ("gelu", gelu, False), ("bias", lambda z: z, True),
    (linalgd.Epilogue.RELU_BIAS, lambda z: np.maximum(z, 0), True),
    ("EPILOGUE_GELU_BIAS", gelu, True), (linalgd.Epilogue.RELU_BIAS.value, lambda z: np.maximum(z, 0), True),
])
def test_epilogues(client, epilogue, fn, with_bias):
    a, b, bias = rand(6, 4, dtype=np.float32), rand(4, 5, dtype=np.float32), rand(5, dtype=np.float32)
    z = a.astype(np.float64) @ b + (bias if with_bias else 0)
    out = client.matmul(a, b, bias=bias if with_bias else None, epilogue=epilogue)
    assert close(out, fn(z), np.float32)


@pytest.mark.parametrize("bias_shape", [(5,), (1, 5), (6, 1)])
def test_bias_shapes_and_implied_epilogue(client, bias_shape):
    a, b, bias = rand(6, 4), rand(4, 5), rand(*bias_shape)
    # bias given with epilogue relu -> relu_bias
    np.testing.assert_allclose(client.matmul(a, b, bias=bias, epilogue="relu"),
                               np.maximum(a @ b + bias, 0), rtol=1e-12)


@pytest.mark.parametrize("mode", ["default", "tf32", "fast_16f", linalgd.ComputeMode.FAST_16BF])
def test_compute_modes(client, mode):
    a, b = rand(8, 16, dtype=np.float32), rand(16, 4, dtype=np.float32)
    out = client.matmul(a, b, compute_mode=mode)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, atol=0.1)


@pytest.mark.parametrize("output_dtype", ["float32", np.float32, linalgd.DType.F32, "f32"])
def test_output_dtype_widens_half(client, output_dtype):
    a, b = rand(3, 4, dtype=np.float16), rand(4, 5, dtype=np.float16)
    out = client.matmul(a, b, output_dtype=output_dtype)
    assert out.dtype == np.float32
    assert close(out, a.astype(np.float64) @ b.astype(np.float64), np.float16)


def test_allow_non_finite(client):
    a, b = rand(2, 3), rand(3, 2)
    a[0, 0] = np.inf
    with pytest.raises(linalgd.InvalidArgument, match="non-finite|NaN|Inf|inf"):
        client.matmul(a, b)
    out = client.matmul(a, b, allow_non_finite=True)
    assert np.isinf(out[0]).any() and np.isfinite(out[1]).all()


def test_priority_and_execution_info(client):
    a, b = rand(3, 4), rand(4, 5)
    r = client.matmul(a, b, priority=5, return_info=True)
    assert isinstance(r, linalgd.MatmulResult)
    np.testing.assert_allclose(r.out, a @ b, rtol=1e-12)
    assert r.info.backend == "cpu" or r.info.backend.startswith("gpu:")
    assert r.info.batch_size >= 1 and r.info.run_time_ns >= 0 and r.info.queue_time_ns >= 0
    assert r.info.run_time == pytest.approx(r.info.run_time_ns * 1e-9)
    np.testing.assert_allclose(np.asarray(r), a @ b, rtol=1e-12)


@pytest.mark.parametrize("layout", ["transposed", "strided", "fortran", "big_endian", "negative"])
def test_non_contiguous_inputs(client, layout):
    base = rand(8, 10)
    a = {"transposed": base.T[:4, :6],           # (4, 6) view, not C-contiguous
         "strided": base[::2, 1:7],
         "fortran": np.asfortranarray(base[:4, :6]),
         "big_endian": base[:4, :6].astype(">f8"),
         "negative": base[::-2, ::-1][:4, :6]}[layout]
    assert not (a.flags.c_contiguous and a.dtype.isnative)
    b = rand(6, 3)
    out = client.matmul(a, b)
    assert out.dtype == np.float64 and out.shape == (4, 3)
    np.testing.assert_allclose(out, np.asarray(a, np.float64) @ b, rtol=1e-12)


def test_python_lists_are_float64(client):
    out = client.matmul([[1, 2], [3, 4]], [[1, 0], [0, 1]])
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, [[1, 2], [3, 4]])


def test_torch_in_torch_out(client):
    torch = pytest.importorskip("torch")
    a, b = torch.randn(3, 4), torch.randn(5, 4)
    out = client.matmul(a, b, transpose_b=True)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32 and out.shape == (3, 5)
    assert torch.allclose(out, a @ b.T, atol=1e-5)


def test_bfloat16(client):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    a, b = rand(3, 4).astype(ml_dtypes.bfloat16), rand(4, 5).astype(ml_dtypes.bfloat16)
    out = client.matmul(a, b)
    assert out.dtype == ml_dtypes.bfloat16 and out.shape == (3, 5)


def test_an_operand_that_is_not_an_array_is_refused_naming_it(client):
    """numpy's own ValueError for a ragged nested list named no operand."""
    with pytest.raises(linalgd.InvalidArgument, match="b: not an array: setting an array element"):
        client.matmul([[1.0, 2.0]], [[1.0], [2.0, 3.0]])
    with pytest.raises(linalgd.InvalidArgument, match="a: not an array"):
        client.solve([[1.0], [1.0, 2.0]], [1.0, 2.0])
