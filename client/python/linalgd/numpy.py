"""numpy's signatures and semantics, computed by a linalgd server.

    import linalgd.numpy as lnp            # instead of numpy.matmul / numpy.linalg.*
    lnp.use("gpu-host:50051")              # or LINALGD_TARGET, default localhost:50051
    y = lnp.matmul(a, b)
    x = lnp.solve(a, b)                    # raises numpy.linalg.LinAlgError when singular
    x, res, rank, s = lnp.lstsq(a, b)
    ai = lnp.inv(a)

Only what the server computes exactly as numpy does is here: matmul, solve, lstsq
and inv. Arguments are promoted as numpy promotes them (numpy.result_type; integer
and bool inputs of solve, lstsq and inv become float64, as in numpy.linalg); a
matmul of integer or bool arrays raises TypeError, because the server has no
integer GEMM. Errors are numpy's types: ValueError for shapes that do not match,
numpy.linalg.LinAlgError for non-square or singular matrices. Unlike numpy, solve
and inv also refuse a numerically singular matrix (rcond below the server's
threshold, n * eps by default), where numpy would return a meaningless answer.

Every function takes a keyword-only client= (a linalgd.Client) besides numpy's
arguments; without it they use the module's client (use(), or one made on first
call from LINALGD_TARGET).
"""
import os
import threading

import numpy as np

from .client import DEFAULT_TARGET, Client
from .errors import FailedPrecondition, InvalidArgument

__all__ = ["use", "matmul", "solve", "lstsq", "inv"]

_lock = threading.Lock()
_client = None
_owned = False  # _client was made by use(), not passed in
_SERVED = frozenset("fc")  # numpy dtype kinds the server computes: float, complex


def use(target_or_client=None, **client_options):
    """Sets the module's client: a linalgd.Client, or a target (plus Client options).

    Returns the client. A client the module made itself is closed when replaced;
    one the caller passed in is the caller's to close.
    """
    global _client, _owned
    owned = not isinstance(target_or_client, Client)
    new = target_or_client if not owned else Client(
        target_or_client or os.environ.get("LINALGD_TARGET", DEFAULT_TARGET), **client_options)
    with _lock:
        old, old_owned = _client, _owned
        _client, _owned = new, owned
    if old is not None and old_owned and old is not new:
        old.close()
    return new


def _get(client):
    if client is not None:
        return client
    with _lock:
        if _client is not None:
            return _client
    return use()


def _linalg_error(e):
    """numpy's LinAlgError("Singular matrix"), with the server's reason after it."""
    return np.linalg.LinAlgError(f"Singular matrix ({getattr(e, 'message', e)})")


def _float_operands(*arrays):
    """numpy.linalg's promotion: ints and bools become float64; float16 becomes float32."""
    dt = np.result_type(*arrays)
    if dt.kind not in _SERVED:
        dt = np.dtype(np.float64)
    elif dt == np.float16:
        dt = np.dtype(np.float32)
    return [np.asarray(x, dtype=dt) for x in arrays], dt


def _assert_stacked_square(a, name="a"):
    if a.ndim < 2:
        raise np.linalg.LinAlgError(
            f"{a.ndim}-dimensional array given. Array must be at least two-dimensional")
    if a.shape[-1] != a.shape[-2]:
        raise np.linalg.LinAlgError(
            f"Last 2 dimensions of the array must be square ({name} is {a.shape[-2]}x"
            f"{a.shape[-1]})")


def matmul(a, b, /, *, client=None):
    """numpy.matmul(a, b) for float and complex arrays."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions (a scalar; "
                         "use * for scalar products)")
    dt = np.result_type(a, b)
    if dt.kind not in _SERVED:
        raise TypeError(f"matmul: linalgd computes float and complex products, not {dt} "
                        f"(operands {a.dtype} and {b.dtype})")
    a, b = a.astype(dt, copy=False), b.astype(dt, copy=False)
    k_a = a.shape[-1]
    k_b = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if k_a != k_b:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0 "
                         f"(size {k_b} is different from {k_a}): a {a.shape} @ b {b.shape}")
    try:
        np.broadcast_shapes(a.shape[:-2], b.shape[:-2] if b.ndim > 1 else ())
    except ValueError:
        raise ValueError(f"matmul: batch dimensions of a {a.shape} and b {b.shape} do not "
                         "broadcast") from None
    out = _get(client).matmul(a, b)
    return np.asarray(out, dtype=dt)


def _vector_rhs(a, b):
    """numpy.linalg.solve's rule for a b of vectors: b.ndim == 1 from numpy 2.0,
    b.ndim == a.ndim - 1 before."""
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
        return b.ndim == 1
    return b.ndim == a.ndim - 1


def solve(a, b, /, *, client=None):
    """numpy.linalg.solve(a, b): LinAlgError when a is singular or not square."""
    a, b = np.asarray(a), np.asarray(b)
    (a, b), _ = _float_operands(a, b)
    _assert_stacked_square(a)
    vector = _vector_rhs(a, b)
    bm = b[..., None] if vector else b
    if bm.ndim < 2 or bm.shape[-2] != a.shape[-1]:
        raise ValueError(f"solve: b {b.shape} does not match a {a.shape} (b's rows must be "
                         f"{a.shape[-1]})")
    try:
        x = _get(client).solve(a, bm, method="lu", no_fallback=True)
    except FailedPrecondition as e:
        raise _linalg_error(e) from None
    except InvalidArgument as e:
        raise ValueError(str(e)) from None
    x = np.asarray(x)
    return x[..., 0] if vector else x


def inv(a, /, *, client=None):
    """numpy.linalg.inv(a): a solve against the identity."""
    a = np.asarray(a)
    (a,), dt = _float_operands(a)
    _assert_stacked_square(a)
    eye = np.broadcast_to(np.eye(a.shape[-1], dtype=dt), a.shape)
    return solve(a, np.ascontiguousarray(eye), client=client)


def lstsq(a, b, rcond=None, /, *, client=None):
    """numpy.linalg.lstsq(a, b, rcond): (x, residuals, rank, s) through the server's SVD.

    rcond=None is numpy 2's default, eps * max(M, N).
    """
    a, b = np.asarray(a), np.asarray(b)
    (a, b), _ = _float_operands(a, b)
    if a.ndim != 2:
        raise np.linalg.LinAlgError(f"{a.ndim}-dimensional array given. Array must be "
                                    "two-dimensional")
    if b.ndim not in (1, 2):
        raise np.linalg.LinAlgError(f"{b.ndim}-dimensional array given. Array must be one "
                                    "or two-dimensional")
    if b.shape[0] != a.shape[0]:
        raise np.linalg.LinAlgError(f"Incompatible dimensions: a {a.shape}, b {b.shape}")
    if rcond is not None and rcond < 0:
        rcond = None  # numpy's old -1: machine precision; the server's default is close
    x, residuals, rank, s = _get(client).lstsq(a, b, rcond=rcond)
    residuals = np.asarray(residuals, dtype=a.real.dtype)
    if b.ndim == 1 and residuals.ndim > 0 and residuals.size:
        residuals = residuals.reshape(-1)[:1]
    return np.asarray(x), residuals, int(rank), np.asarray(s, dtype=a.real.dtype)
