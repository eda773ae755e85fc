"""The package itself: generated stubs, enums, wire encoding (no server needed)."""
import os
import subprocess

import numpy as np
import pytest

import linalgd
from linalgd import tensors
from linalgd._stubs import pb
from conftest import CLIENT_DIR, REPO


def test_stubs_are_generated_not_committed():
    proto_dir = os.path.join(CLIENT_DIR, "linalgd", "_proto")
    assert pb.__file__.startswith(proto_dir)
    tracked = subprocess.run(["git", "-C", REPO, "ls-files", "client/python/linalgd/_proto"],
                             capture_output=True, text=True)
    if tracked.returncode == 0:
        assert tracked.stdout == ""


def test_generated_service_matches_proto():
    from linalgd._stubs import pb_grpc
    service = pb.DESCRIPTOR.services_by_name["Linalg"]
    assert service.full_name == "linalgd.v1.Linalg"
    stub = pb_grpc.LinalgStub.__init__.__code__.co_names  # every RPC is bound by the stub
    for method in service.methods:
        assert method.name in stub


def test_enums_mirror_proto():
    for enum, proto in ((linalgd.Epilogue, pb.Epilogue), (linalgd.SolveMethod, pb.SolveMethod),
                        (linalgd.ComputeMode, pb.ComputeMode), (linalgd.DType, pb.DType)):
        assert sorted(int(m) for m in enum) == sorted(proto.values())
    assert linalgd.Epilogue.RELU_BIAS == pb.EPILOGUE_RELU_BIAS
    assert str(linalgd.SolveMethod.CHOLESKY) == "cholesky"


@pytest.mark.parametrize("dtype,wire", [(np.float16, "F16"), (np.float32, "F32"), (np.float64, "F64"),
                                        (">f4", "F32")])
def test_encode_decode_round_trip(dtype, wire):
    x = np.arange(24, dtype=np.float64).reshape(2, 3, 4).astype(dtype)[:, ::-1]
    t = tensors.encode(x, "x")
    assert t.dtype == getattr(pb, f"DTYPE_{wire}") and list(t.shape) == [2, 3, 4]
    assert len(t.data) == x.size * x.dtype.itemsize
    y = tensors.decode(t, "x")
    assert y.dtype == np.dtype(dtype).newbyteorder("=") and y.flags.writeable
    np.testing.assert_array_equal(y, x)


def test_decode_rejects_wrong_byte_count():
    t = pb.Tensor(dtype=pb.DTYPE_F32, shape=[2, 2], data=b"\0" * 12)
    with pytest.raises(linalgd.DataLoss, match="12 bytes"):
        tensors.decode(t, "out")


def test_type_hints_are_shipped():
    """PEP 561: py.typed is in the package and listed as its package data."""
    assert os.path.isfile(os.path.join(CLIENT_DIR, "linalgd", "py.typed"))
    with open(os.path.join(CLIENT_DIR, "pyproject.toml")) as f:
        assert 'linalgd = ["py.typed"]' in f.read()
