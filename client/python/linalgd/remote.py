"""Handles to objects held by the server: RemoteTensor (a resident tensor) and
Factor (a cached factorization).

A RemoteTensor is accepted wherever an array is (matmul a, b, c, bias; solve
a, b; sparse_solve b, x0): the request names it by id and no bytes move. It
lives until delete(), the end of its `with` block, or the server's TTL (from
its last use); dropping the Python object does not delete it, so its id may be
kept and used elsewhere (Client.get(id), the CLI's @ID).

A Factor is released by release(), the end of its `with` block, or when the
object is garbage-collected (weakref.finalize; a failure there is ignored: the
server's TTL covers it). Reading `factor_id` hands the id to the caller, who
then owns it as the id-based API always did (solve(..., factor=id),
release_factor(id)): the object no longer releases it on collection.
"""
import logging
import weakref
from typing import Any, Optional, Tuple

from ._stubs import pb
from .enums import DType, SolveMethod

_log = logging.getLogger("linalgd")


class RemoteTensor:
    """A tensor held by the server: id, shape, dtype; .get(), .delete()."""

    def __init__(self, client: Any, tensor_id: str, wire: int, shape: Tuple[int, ...],
                 info: Any = None) -> None:
        self._client = client
        self.id = tensor_id
        self.wire = DType(wire)
        self.shape = tuple(int(d) for d in shape)
        self.info = info  # the server's TensorInfo when known (put), else None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def itemsize(self) -> int:
        from . import tensors
        return tensors.itemsize(self.wire)

    @property
    def nbytes(self) -> int:
        n = self.itemsize
        for d in self.shape:
            n *= d
        return n

    @property
    def dtype(self):
        """The numpy dtype (None for bfloat16 without ml_dtypes; see .wire)."""
        from . import tensors
        return tensors.numpy_dtype(self.wire)

    def get(self, *, timeout: Optional[float] = None, as_torch: bool = False) -> Any:
        """The tensor's values as a fresh numpy array (torch with as_torch)."""
        return self._client.get(self.id, timeout=timeout, as_torch=as_torch)

    def delete(self, *, timeout: Optional[float] = None) -> None:
        self._client.delete(self.id, timeout=timeout)

    def to_proto(self) -> Any:
        """The operand naming this tensor (with its dtype and shape, which the
        server checks against the stored tensor)."""
        return pb.Tensor(resident_id=self.id, dtype=int(self.wire), shape=self.shape)

    def __enter__(self) -> "RemoteTensor":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.delete()

    def __repr__(self):
        return f"RemoteTensor({self.id!r}, shape={self.shape}, dtype={self.wire.name})"


def _release_quietly(client_ref, factor_id):
    """weakref.finalize callback: asks the server to release, never raises."""
    client = client_ref()
    if client is None or client._closed:
        return
    try:
        client._release_in_background(factor_id)
    except Exception:  # noqa: BLE001  a finalizer must not raise; the TTL covers it
        _log.debug("releasing factor %s on collection failed", factor_id, exc_info=True)


class Factor:
    """A factorization held by the server (Client.factorize).

    method (LU or CHOLESKY), n, rcond (reciprocal 1-norm condition estimate),
    fallback, placement ("cpu" or "gpu:N"), bytes, info (ExecutionInfo).
    """

    def __init__(self, client, resp, info):
        self._client = client
        self._id = resp.factor_id
        self.method = SolveMethod(resp.method)
        self.n = resp.n
        self.wire = DType(resp.dtype) if resp.dtype else DType.UNSPECIFIED
        self.rcond = resp.rcond
        self.fallback = resp.fallback
        self.placement = resp.placement
        self.bytes = resp.bytes
        self.info = info
        self._released = False
        self._source = None  # (a, factorize options) with recreate=True
        self._finalizer = self._release_on_collection()

    def _release_on_collection(self):
        finalizer = weakref.finalize(self, _release_quietly, weakref.ref(self._client), self._id)
        finalizer.atexit = False  # no RPCs while the interpreter shuts down
        return finalizer

    def _adopt(self, other: "Factor") -> None:
        """Becomes other, a new factorization of the same a (recreate=True):
        its id and fields; other no longer releases it, this object does."""
        other._finalizer.detach()
        self._finalizer.detach()  # the old one went with its replica
        for name in ("_id", "method", "n", "wire", "rcond", "fallback", "placement", "bytes",
                     "info"):
            setattr(self, name, getattr(other, name))
        self._finalizer = self._release_on_collection()

    @property
    def id(self) -> str:
        return self._id

    @property
    def factor_id(self) -> str:
        """The id, handed to the caller: this object no longer releases it on collection."""
        self._finalizer.detach()
        return self._id

    def solve(self, b: Any, **kwargs: Any) -> Any:
        """x with a @ x = b for the factored a; keyword arguments as Client.solve."""
        return self._client.solve(None, b, factor=self, **kwargs)

    def release(self, *, timeout: Optional[float] = None) -> None:
        """Frees the factorization on the server (NotFound if it is already gone)."""
        self._finalizer.detach()
        self._released = True
        self._client.release_factor(self._id, timeout=timeout)

    def __enter__(self) -> "Factor":
        return self

    def __exit__(self, *exc: Any) -> None:
        if not self._released:
            self.release()

    def __repr__(self):
        return (f"Factor({self._id!r}, method={self.method.name}, n={self.n}, "
                f"rcond={self.rcond:.3g}, placement={self.placement!r})")
