"""Arrays with a zero dimension through the real server, answered as numpy does:
matmul, solve, factor solves, sparse solves, the store, shared memory, torch."""
import numpy as np
import pytest

import linalgd
from linalgd._stubs import pb


@pytest.mark.parametrize("a_shape,b_shape", [
    ((0, 3), (3, 4)), ((5, 3), (3, 0)), ((0, 2, 3), (3, 4)), ((2, 0, 3), (1, 3, 7)),
    ((4, 0), (0, 2)), ((0,), (0,)), ((3, 0), (0,)), ((0,), (0, 6))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_matmul_shapes_and_values_match_numpy(client, a_shape, b_shape, dtype):
    a, b = np.ones(a_shape, dtype), np.ones(b_shape, dtype)
    out = client.matmul(a, b)
    expected = np.matmul(a, b)
    assert out.shape == expected.shape and out.dtype == expected.dtype
    np.testing.assert_array_equal(out, expected)


def test_matmul_with_zero_k_is_beta_c_plus_bias(client):
    a, b = np.empty((2, 0)), np.empty((0, 3))
    c = np.arange(6.0).reshape(2, 3) - 2
    bias = np.array([10.0, -20.0, 0.5])
    r = client.matmul(a, b, c, beta=2.0, alpha=5.0, bias=bias, epilogue="relu", return_info=True)
    np.testing.assert_array_equal(r.out, np.maximum(2.0 * c + bias, 0))
    assert r.info.backend == "cpu"


def test_matmul_with_an_empty_batch_keeps_its_dtype(client):
    out = client.matmul(np.ones((0, 4, 4), np.float16), np.ones((4, 4), np.float16),
                        output_dtype="float32")
    assert out.shape == (0, 4, 4) and out.dtype == np.float32


def test_solve_matches_numpy(client):
    for a_shape, b_shape in [((0, 0), (0,)), ((0, 0), (0, 3)), ((3, 3), (3, 0)),
                             ((0, 2, 2), (0, 2, 1)), ((0, 2, 2), (2,))]:
        a, b = np.eye(a_shape[-1]) * np.ones(a_shape), np.ones(b_shape)
        r = client.solve(a, b, return_info=True)
        expected = np.linalg.solve(a, b) if b.ndim > 1 else np.zeros(a_shape[:-1])
        assert r.x.shape == expected.shape, (a_shape, b_shape)
        assert r.method_used == linalgd.SolveMethod.LU and r.fallback == "" and r.residual == 0


def test_solve_with_no_right_hand_side_does_not_factor_a(client):
    x = client.solve(np.zeros((4, 4), np.float32), np.zeros((4, 0), np.float32), no_fallback=True)
    assert x.shape == (4, 0) and x.dtype == np.float32


def test_least_squares_with_no_equations_is_zero(client):
    x = client.solve(np.empty((0, 3)), np.empty((0, 2)), method="lstsq")
    np.testing.assert_array_equal(x, np.linalg.lstsq(np.empty((0, 3)), np.empty((0, 2)),
                                                     rcond=None)[0])


def test_factorize_of_nothing_is_refused_and_factor_solves_take_empty_b(client):
    with pytest.raises(linalgd.InvalidArgument, match=r"a.shape: \[0, 0\]"):
        client.factorize(np.empty((0, 0)))
    f = client.factorize(np.array([[2.0, 1.0], [1.0, 3.0]]))
    try:
        assert client.solve(None, np.empty((2, 0)), factor=f.factor_id).shape == (2, 0)
        assert client.solve(None, np.empty((0, 2, 5)), factor=f.factor_id).shape == (0, 2, 5)
    finally:
        client.release_factor(f.factor_id)


@pytest.mark.parametrize("method", [None, "lu", "cg", "gmres"])
def test_sparse_solve_with_no_unknowns(client, method):
    a = (np.array([0], np.int32), np.array([], np.int32), np.array([]), (0, 0))
    r = client.sparse_solve(a, np.empty(0), method=method, return_info=True)
    assert r.x.shape == (0,) and r.iterations == 0 and r.fallback == ""


@pytest.mark.parametrize("shape", [(0,), (0, 3), (3, 0, 2)])
def test_empty_tensors_go_into_and_out_of_the_store(client, shape):
    info = client.put_info(np.empty(shape, np.float32))
    assert info.bytes == 0 and info.shape == shape
    back = client.get(info.id)
    assert back.shape == shape and back.dtype == np.float32
    client.delete(info.id)


def test_negative_dims_are_refused_naming_the_field(client):
    ok = pb.Tensor(dtype=pb.DTYPE_F32, shape=[2, 2], data=bytes(16))
    bad = pb.Tensor(dtype=pb.DTYPE_F32, shape=[2, -2], data=b"")
    with pytest.raises(linalgd.InvalidArgument, match=r"b.shape: \[2, -2\].*dimension 1 = -2"):
        client._invoke("Matmul", pb.MatmulRequest(a=ok, b=bad), 10.0)


def test_shared_memory_carries_empty_operands(shm_server):
    with linalgd.Client(shm_server.target, use_shared_memory=True) as c:
        out = c.matmul(np.empty((3, 0), np.float32), np.empty((0, 2), np.float32))
        np.testing.assert_array_equal(out, np.zeros((3, 2), np.float32))
        assert c.matmul(np.empty((0, 3)), np.ones((3, 2))).shape == (0, 2)
        assert c.solve(np.empty((0, 0)), np.empty((0, 4))).shape == (0, 4)


def test_torch_tensors_with_a_zero_dim(client):
    torch = pytest.importorskip("torch")
    out = client.matmul(torch.ones(0, 3), torch.ones(3, 2))
    assert isinstance(out, torch.Tensor) and tuple(out.shape) == (0, 2)
    x = client.solve(torch.eye(3, dtype=torch.float64), torch.ones(3, 0, dtype=torch.float64))
    assert tuple(x.shape) == (3, 0) and x.dtype == torch.float64
