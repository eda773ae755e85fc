"""Client.sparse_solve: a sparse (CSR) a @ x = b on the server.

a is a scipy.sparse matrix or array (any format; converted to CSR) when scipy is
installed, or a tuple (indptr, indices, data, shape) in scipy's CSR layout.
Index arrays go over the wire as packed int32 or int64, as given (no copy);
data must be float32, float64, complex64 or complex128 (integers are sent as
float64); a complex a with a real b promotes b (as numpy would) to complex.
a's values are sent in b's dtype, so b must be one of those four too: a float16
or bfloat16 b is refused (InvalidArgument naming it), as the dense solve does.
b may be dense or scipy.sparse; as scipy.sparse.linalg.spsolve does, a sparse b
gives a sparse x (CSR, a sparse array for a sparse-array b, else a matrix).
"""
import dataclasses
import operator
from typing import Any

import numpy as np

from . import tensors
from ._stubs import pb
from .enums import DType, Preconditioner, SparseMethod
from .errors import InvalidArgument
from .results import ExecutionInfo


@dataclasses.dataclass(frozen=True)
class SparseSolveResult:
    x: Any
    method_used: SparseMethod
    preconditioner_used: Preconditioner
    iterations: int  # iterative methods: the most over b's columns; direct: 0
    residual: float  # max over columns of ||a x - b|| / ||b||
    fallback: str  # empty, or why the requested method was not the one used
    dense_path: bool  # the server solved a as a dense matrix
    info: ExecutionInfo

    def __array__(self, dtype=None):
        return np.asarray(self.x, dtype=dtype)


def _csr_arrays(a):
    """(indptr, indices, data, (rows, cols)) from scipy.sparse or a tuple."""
    if hasattr(a, "tocsr") and hasattr(a, "shape"):
        csr = a.tocsr(copy=True)
        csr.sum_duplicates()  # duplicates summed, indices sorted, as scipy means them
        return csr.indptr, csr.indices, csr.data, tuple(csr.shape)
    expected = "a: expected a scipy.sparse matrix or a tuple (indptr, indices, data, shape)"
    if not isinstance(a, tuple):  # a dense 4-row array would unpack as one
        raise InvalidArgument(f"{expected}, not {type(a).__name__}")
    try:
        indptr, indices, data, shape = a
        shape = tuple(shape)
    except (TypeError, ValueError):
        raise InvalidArgument(f"{expected}; got a tuple of {len(a)}") from None
    try:  # integers only: 4.9 is no size (numpy's operator.index rule)
        shape = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise InvalidArgument(f"a: shape {shape} must hold integers") from None
    return np.asarray(indptr), np.asarray(indices), np.asarray(data), shape


def _values_dtype(a):
    """The dtype of a's stored values (scipy.sparse or a tuple); None when unreadable."""
    if hasattr(a, "tocsr") and hasattr(a, "dtype"):
        return np.dtype(a.dtype)
    try:
        return np.asarray(a[2]).dtype
    except (TypeError, IndexError, KeyError):
        return None  # encode_csr names what is wrong


def complex_b_for(a, b):
    """b promoted as numpy would when a's values are complex and b (an array) is
    real, so that a's values, sent in b's dtype, keep their imaginary parts;
    None when b needs no promotion."""
    a_dtype = _values_dtype(a)
    if a_dtype is None or a_dtype.kind != "c" or b.dtype.kind == "c":
        return None
    return b.astype(np.result_type(a_dtype, b.dtype))


def is_scipy_sparse(x):
    return hasattr(x, "tocsr") and hasattr(x, "toarray") and hasattr(x, "nnz")


def to_scipy_like(x, like):
    """x (dense) as a CSR of like's flavour: sparse array or sparse matrix."""
    import scipy.sparse as sp  # like is scipy.sparse, so scipy is importable
    if x.ndim == 1:
        x = x.reshape(-1, 1)
    sparray = getattr(sp, "sparray", None)
    if sparray is not None and isinstance(like, sparray):
        return sp.csr_array(x)
    return sp.csr_matrix(x)


def _index_bytes(indptr, indices):
    """(index type, indptr bytes, indices bytes): int32 if both are, else int64."""
    wide = indptr.dtype != np.int32 or indices.dtype != np.int32
    dt = np.dtype("<i8") if wide else np.dtype("<i4")
    kind = pb.INDEX_TYPE_INT64 if wide else pb.INDEX_TYPE_INT32
    for name, arr in (("indptr", indptr), ("indices", indices)):
        if arr.dtype.kind not in "iu":
            raise InvalidArgument(f"a.{name}: dtype {arr.dtype} is not an integer type")
    return (kind, np.ascontiguousarray(indptr, dtype=dt).tobytes(),
            np.ascontiguousarray(indices, dtype=dt).tobytes())


_WIRE = {np.dtype(np.float32): pb.DTYPE_F32, np.dtype(np.float64): pb.DTYPE_F64,
         np.dtype(np.complex64): pb.DTYPE_C64, np.dtype(np.complex128): pb.DTYPE_C128}
_SUPPORTED = "float32, float64, complex64 or complex128"


def check_b_dtype(wire) -> None:
    """Refuses a b (DType wire) whose dtype a's values cannot be sent in: they go in b's
    dtype, and the server's CSR values are f32, f64, c64 or c128 only. A float16 b had
    its a's values sent as float16 bytes labelled float64, which the server refused
    with a byte count ('a.values: 4 bytes, expected 16') naming neither dtype."""
    if wire in (DType.F32, DType.F64, DType.C64, DType.C128):
        return
    dtype = tensors.numpy_dtype(wire)
    name = dtype.name if dtype is not None else DType(wire).name.lower()
    raise InvalidArgument(f"b: dtype {name}; sparse_solve takes {_SUPPORTED} (a's values are "
                          f"sent in b's dtype): convert b, e.g. b.astype(numpy.float32)")


def encode_csr(a, dtype=None):
    """A pb.CsrMatrix from scipy.sparse or (indptr, indices, data, shape)."""
    indptr, indices, data, shape = _csr_arrays(a)
    if len(shape) != 2:
        raise InvalidArgument(f"a: shape {shape} is not 2-D")
    if dtype is not None:
        data = data.astype(dtype)
    elif data.dtype not in _WIRE:
        data = data.astype(np.float64)
    kind, ptr_bytes, idx_bytes = _index_bytes(indptr, indices)
    # By the dtype in native order: a big-endian '>f4' went as float64 (the fallback), its
    # 4-byte values labelled 8-byte ones.
    wire = _WIRE.get(data.dtype.newbyteorder("="))
    if wire is None:  # a dtype given that CSR values cannot have (check_b_dtype names b's)
        raise InvalidArgument(f"a.values: dtype {data.dtype}; they must be {_SUPPORTED}")
    values = np.ascontiguousarray(data, dtype=data.dtype.newbyteorder("<")).tobytes()
    return pb.CsrMatrix(rows=int(shape[0]), cols=int(shape[1]), index_type=kind,
                        row_offsets=ptr_bytes, col_indices=idx_bytes, dtype=wire, values=values)
