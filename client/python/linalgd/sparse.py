"""Client.sparse_solve: a sparse (CSR) a @ x = b on the server.

a is a scipy.sparse matrix or array (any format; converted to CSR) when scipy is
installed, or a tuple (indptr, indices, data, shape) in scipy's CSR layout.
Index arrays go over the wire as packed int32 or int64, as given (no copy);
data must be float32 or float64 (integers are sent as float64).
b may be dense or scipy.sparse; as scipy.sparse.linalg.spsolve does, a sparse b
gives a sparse x (CSR, a sparse array for a sparse-array b, else a matrix).
"""
import dataclasses
from typing import Any

import numpy as np

from . import tensors
from ._stubs import pb
from .enums import _make, parse
from .errors import InvalidArgument
from .remote import RemoteTensor
from .results import ExecutionInfo

SparseMethod = _make("SparseMethod", pb.SparseMethod.DESCRIPTOR, "SPARSE_METHOD_")
Preconditioner = _make("Preconditioner", pb.Preconditioner.DESCRIPTOR, "PRECONDITIONER_")

_DEFAULT = object()


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
    try:
        indptr, indices, data, shape = a
    except (TypeError, ValueError):
        raise InvalidArgument(
            "a: expected a scipy.sparse matrix or (indptr, indices, data, shape)") from None
    return np.asarray(indptr), np.asarray(indices), np.asarray(data), tuple(shape)


def _is_scipy_sparse(x):
    return hasattr(x, "tocsr") and hasattr(x, "toarray") and hasattr(x, "nnz")


def _to_scipy_like(x, like):
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
    wire = _WIRE.get(data.dtype, pb.DTYPE_F64)  # the server names what it refuses
    values = np.ascontiguousarray(data, dtype=data.dtype.newbyteorder("<")).tobytes()
    return pb.CsrMatrix(rows=int(shape[0]), cols=int(shape[1]), index_type=kind,
                        row_offsets=ptr_bytes, col_indices=idx_bytes, dtype=wire, values=values)


class SparseMixin:
    """Client.sparse_solve; mixed into Client (uses its _arg and _call_with_operands)."""

    def sparse_solve(self, a, b, *, method=None, preconditioner=None, tol=0.0, max_iter=0,
                     x0=None, no_fallback=False, allow_non_finite=False, priority=0,
                     timeout=_DEFAULT, return_info=False):
        """x with a @ x = b for a sparse square a (n x n) and b [n] or [n, k].

        a: scipy.sparse (any format) or (indptr, indices, data, shape) in CSR.
        b: dense, or scipy.sparse (then x is a sparse CSR, as spsolve returns).

        method: auto (default; cholesky for a symmetric a with a positive
        diagonal, else lu), cholesky, lu, qr, cg, bicgstab, gmres.
        preconditioner (iterative methods): none, jacobi, ilu0, ic0.
        tol, max_iter: iterative stopping rule (0: the server's defaults).
        x0: the iterative methods' starting point, shaped like b (default zeros).
        A failed method falls back (cholesky -> lu -> qr; iterative -> direct)
        unless no_fallback, which raises FailedPrecondition instead.
        a's values are sent in b's dtype. Returns x, or a SparseSolveResult
        with return_info. b and x0 may be RemoteTensors (put()), named by id;
        a b or x0 of stream_threshold bytes or more is uploaded in parts first.
        """
        sparse_b = b if _is_scipy_sparse(b) else None
        if sparse_b is not None:
            b = sparse_b.toarray()
        b_arr, b_wire = self._arg(b, "b")
        vector = b_arr.ndim == 1
        if vector:
            b_arr, b_wire = self._arg(b, "b", min_ndim=2)  # refuses a 1-D RemoteTensor
            b_arr = b_arr.reshape(-1, 1)
        req = pb.SparseSolveRequest(
            a=encode_csr(a, dtype=b_arr.dtype),
            method=int(parse(SparseMethod, method, "method")),
            preconditioner=int(parse(Preconditioner, preconditioner, "preconditioner")),
            tolerance=float(tol), max_iterations=int(max_iter), no_fallback=bool(no_fallback),
            allow_non_finite=bool(allow_non_finite), priority=int(priority))
        operands = {"b": (b_arr, b_wire)}
        if x0 is not None:  # shaped like b (the server checks), sent in b's dtype
            x0_arr, x0_wire = self._arg(x0, "x0")
            if isinstance(x0_arr, RemoteTensor):  # named by id, as it is
                operands["x0"] = (x0_arr, x0_wire)
            else:
                if vector:
                    x0_arr = x0_arr.reshape(-1, 1)
                operands["x0"] = (x0_arr.astype(b_arr.dtype, copy=False), b_wire)
        resp = self._call_with_operands("SparseSolve", req, operands,
                                        self.timeout if timeout is _DEFAULT else timeout)
        x = tensors.decode(resp.x, "x")
        if vector:
            x = x.squeeze(-1)
        if sparse_b is not None:
            x = _to_scipy_like(x, sparse_b)
        if not return_info:
            return x
        return SparseSolveResult(x, SparseMethod(resp.method_used),
                                 Preconditioner(resp.preconditioner_used), resp.iterations,
                                 resp.residual, resp.fallback, resp.dense_path,
                                 ExecutionInfo.from_proto(resp.info))
