"""torch tensors in, torch tensors out, on the caller's device (CPU here; the
CUDA tests run on a GPU host and skip elsewhere)."""
import asyncio

import numpy as np
import pytest

import linalgd
import linalgd.aio
from linalgd import tensors

torch = pytest.importorskip("torch")
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.complex64, torch.complex128]


@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_keeps_torch_dtype_and_device(client, dtype):
    a = torch.randn(3, 4, 5, dtype=dtype if dtype.is_complex else torch.float32).to(dtype)
    b = torch.randn(5, 2, dtype=dtype if dtype.is_complex else torch.float32).to(dtype)
    y = client.matmul(a, b)
    assert isinstance(y, torch.Tensor) and y.dtype == dtype and y.device == a.device
    tol = 5e-2 if dtype == torch.bfloat16 else 1e-5
    wide = torch.complex128 if dtype.is_complex else torch.float64
    torch.testing.assert_close(y.to(wide), a.to(wide) @ b.to(wide), rtol=tol, atol=tol)


def test_solve_put_get_and_mixed_operands(client):
    a = torch.eye(3, dtype=torch.float64) * 2
    x = client.solve(a, torch.ones(3, dtype=torch.float64))
    assert isinstance(x, torch.Tensor) and x.shape == (3,)
    torch.testing.assert_close(x, torch.full((3,), 0.5, dtype=torch.float64))
    with client.put(torch.ones(3, 2)) as w:  # torch in, a RemoteTensor operand
        y = client.matmul(torch.eye(3), w)
        assert isinstance(y, torch.Tensor)
        g = w.get(as_torch=True)
        assert isinstance(g, torch.Tensor) and g.dtype == torch.float32
    assert isinstance(client.matmul(np.eye(2), torch.eye(2, dtype=torch.float64)), torch.Tensor)
    assert isinstance(client.matmul(np.eye(2), np.eye(2)), np.ndarray)


def test_a_tensor_that_requires_grad_is_read_without_its_graph(client):
    a = torch.randn(2, 2, requires_grad=True)
    y = client.matmul(a, torch.eye(2))
    assert not y.requires_grad
    torch.testing.assert_close(y, a.detach())


def test_aio_client_takes_and_returns_torch(server):
    async def main():
        async with linalgd.aio.Client(server.target) as c:
            return await c.matmul(torch.ones(2, 3, dtype=torch.bfloat16),
                                  torch.ones(3, 4, dtype=torch.bfloat16))
    y = asyncio.run(main())
    assert y.dtype == torch.bfloat16 and torch.equal(y.float(), torch.full((2, 4), 3.0))


def test_sparse_solve_takes_and_returns_torch(client):
    sp = pytest.importorskip("scipy.sparse")
    a = sp.csr_matrix(np.diag([2.0, 4.0, 8.0]))
    x = client.sparse_solve(a, torch.ones(3, dtype=torch.float64))
    assert isinstance(x, torch.Tensor) and x.dtype == torch.float64 and x.shape == (3,)
    torch.testing.assert_close(x, torch.tensor([0.5, 0.25, 0.125], dtype=torch.float64))
    r = client.sparse_solve(a, torch.ones(3, 2, dtype=torch.float32), return_info=True)
    assert isinstance(r.x, torch.Tensor) and r.x.dtype == torch.float32 and r.x.shape == (3, 2)
    assert isinstance(client.sparse_solve(a, np.ones(3)), np.ndarray)


def test_results_go_back_to_the_callers_device():
    """The device-side path with a device every build has: the result of a call
    with a tensor on device D is moved to D (cuda on a GPU host)."""
    meta = torch.empty(2, 2, device="meta")
    assert tensors.torch_device(np.eye(2), meta, torch.eye(2)) == meta.device
    assert tensors.torch_device(np.eye(2)) is None
    out = tensors.to_device(torch.ones(2, 2), meta.device)
    assert out.device.type == "meta" and out.shape == (2, 2)
    host = torch.ones(2)
    assert tensors.to_device(host, torch.device("cpu")) is host


@cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_cuda_in_cuda_out(client, dtype):
    a = torch.randn(64, 32, device="cuda").to(dtype)
    b = torch.randn(32, 16, device="cuda").to(dtype)
    y = client.matmul(a, b, bias=torch.ones(16, device="cuda").to(dtype), epilogue="relu")
    assert y.device == a.device and y.dtype == dtype
    tol = 5e-2 if dtype == torch.bfloat16 else 1e-4
    torch.testing.assert_close(y.double(), torch.relu(a.double() @ b.double() + 1),
                               rtol=tol, atol=tol)
    z = client.matmul(a.to(torch.complex64), b.to(torch.complex64) * 1j)
    assert z.device == a.device and z.dtype == torch.complex64
    x = client.solve(torch.eye(4, device="cuda", dtype=torch.float64) * 2,
                     torch.ones(4, device="cuda", dtype=torch.float64))
    assert x.device == a.device


@cuda
def test_cuda_sparse_solve_returns_on_the_callers_device(client):
    sp = pytest.importorskip("scipy.sparse")
    b = torch.ones(4, device="cuda", dtype=torch.float64)
    x = client.sparse_solve(sp.identity(4, format="csr") * 2, b)
    assert x.device == b.device and x.dtype == torch.float64
    torch.testing.assert_close(x, torch.full((4,), 0.5, device="cuda", dtype=torch.float64))


@cuda
def test_cuda_host_copy_is_pinned_and_complete():
    t = torch.arange(1 << 20, device="cuda", dtype=torch.float32)
    host = tensors.host_copy(t)
    assert host.device.type == "cpu" and host.is_pinned()
    assert torch.equal(host, torch.arange(1 << 20, dtype=torch.float32))


@cuda
def test_cuda_large_operand_through_parallel_upload(client):
    client.stream_threshold = 1 << 20
    a = torch.randn(1024, 512, device="cuda", dtype=torch.float64)
    b = torch.randn(512, 8, device="cuda", dtype=torch.float64)
    y = client.matmul(a, b)
    assert y.device == a.device
    torch.testing.assert_close(y, a @ b)
