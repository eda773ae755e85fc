"""Resident tensors and cached factorizations (linalgd.v1 PutTensor, GetTensor,
DeleteTensor, ListTensors, Factorize, ReleaseFactor), mixed into Client.

put() returns a RemoteTensor, usable as an operand of matmul, solve and
sparse_solve; factorize() returns a Factor (remote.py says how long each
lives). Tensors move in chunks of `chunk_bytes` (any size, beyond the message
limit); from `stream_threshold` bytes on, in parts over several connections
at once, checked with CRC32C per part (transfer.py).
"""
import dataclasses
from typing import List, Optional, Tuple, Union

import numpy as np

from . import tensors
from ._stubs import pb
from .enums import SolveMethod, parse
from .errors import DataLoss
from .remote import Factor, RemoteTensor
from .results import ExecutionInfo

DEFAULT_CHUNK_BYTES = 2 << 20
TEMPORARY_TTL = 600.0  # seconds; automatic uploads are deleted after the call anyway

# The id-based API's name for what factorize() returns.
FactorInfo = Factor


@dataclasses.dataclass
class TensorInfo:
    id: str
    dtype: int
    shape: Tuple[int, ...]
    bytes: int
    placement: str
    ttl_seconds: float
    expires_in_seconds: float
    kind: str
    in_use: bool
    tenant: str = ""  # the owner, in list_tensors(all_tenants=True) only

    @classmethod
    def from_proto(cls, t):
        return cls(t.id, t.dtype, tuple(t.shape), t.bytes, t.placement, t.ttl_seconds,
                   t.expires_in_seconds, t.kind, t.in_use, t.tenant)


def _id_of(x) -> str:
    return x.id if isinstance(x, (RemoteTensor, Factor)) else str(x)


def put_item(arr, wire, placement=None, ttl=None):
    """(PutTensorHeader without checksum, flat uint8 memoryview) of an array
    from tensors.to_numpy; copies only a non-contiguous or big-endian array."""
    little = arr.dtype.newbyteorder("<")
    if arr.dtype != little or not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr, dtype=little)
    if arr.ndim < 1:
        raise ValueError("put: needs at least 1 dimension")
    raw = memoryview(arr.reshape(-1).view(np.uint8))  # cast() refuses a 0 in the shape
    header = pb.PutTensorHeader(dtype=int(wire), shape=arr.shape, placement=placement or "",
                                ttl_seconds=float(ttl or 0), total_bytes=len(raw))
    return header, raw


class StoreMixin:
    """Client methods for resident tensors and factors."""

    chunk_bytes = DEFAULT_CHUNK_BYTES

    def put(self, x, *, placement: Optional[str] = None, ttl: Optional[float] = None,
            timeout: Optional[float] = None) -> RemoteTensor:
        """Uploads x (numpy/torch/array-like) and returns its RemoteTensor.

        placement: "host" (default) or "gpu:N"; ttl: seconds from the last use
        (default the server's --store-ttl). Pass the RemoteTensor (or its
        .id to get/delete) instead of an array; see linalgd.remote.
        """
        arr, wire = tensors.to_numpy(x, "tensor")
        info = self.put_info(arr, placement=placement, ttl=ttl, timeout=timeout, _wire=wire)
        return RemoteTensor(self, info.id, info.dtype, info.shape, info)

    def put_info(self, x, *, placement=None, ttl=None, timeout=None, _wire=None) -> TensorInfo:
        """As put(), returning the server's TensorInfo."""
        arr, wire = tensors.to_numpy(x, "tensor") if _wire is None else (x, _wire)
        [info] = self._transfer.put_many([put_item(arr, wire, placement, ttl)],
                                         self._deadline(timeout or self.timeout))
        return TensorInfo.from_proto(info)

    def get(self, tensor: Union[str, RemoteTensor], *, timeout: Optional[float] = None,
            as_torch: bool = False):
        """The resident tensor (a RemoteTensor or its id) as a fresh numpy array."""
        tensor_id = _id_of(tensor)
        info, raw = self._transfer.get(tensor_id, self._deadline(timeout or self.timeout))
        return tensors.from_bytes(raw, info.dtype, info.shape, "tensor", as_torch=as_torch)

    def delete(self, tensor: Union[str, RemoteTensor], *, timeout: Optional[float] = None):
        self._invoke("DeleteTensor", pb.DeleteTensorRequest(id=_id_of(tensor)),
                     timeout or self.timeout)

    def list_tensors(self, *, all_tenants=False, timeout=None) -> List[TensorInfo]:
        """The caller's tensors and factors; all_tenants: every tenant's (an
        admin tenant only: else PERMISSION_DENIED), each naming its tenant."""
        resp = self._invoke("ListTensors", pb.ListTensorsRequest(all_tenants=all_tenants),
                            timeout or self.timeout)
        return [TensorInfo.from_proto(t) for t in resp.tensors]

    def factorize(self, a, *, method=None, no_fallback: bool = False,
                  ttl: Optional[float] = None, allow_non_finite: bool = False,
                  timeout: Optional[float] = None) -> Factor:
        """Factorizes square a (LU or Cholesky; an array or RemoteTensor) on the
        server; returns a Factor: f.solve(b), f.rcond, f.method, f.release(),
        `with`, released when collected. solve(None, b, factor=f or id) works too.
        """
        req = pb.FactorizeRequest(method=int(parse(SolveMethod, method, "method")),
                                  no_fallback=bool(no_fallback), ttl_seconds=float(ttl or 0),
                                  allow_non_finite=bool(allow_non_finite))
        timeout = timeout or self.timeout
        temps = self._encode_operands(req, {"a": self._arg(a, "a")}, timeout)
        try:
            resp = self._invoke("Factorize", req, timeout)
        finally:
            self._drop(temps)
        return Factor(self, resp, ExecutionInfo.from_proto(resp.info))

    def release_factor(self, factor: Union[str, Factor], *, timeout=None):
        self._invoke("ReleaseFactor", pb.ReleaseFactorRequest(factor_id=_id_of(factor)),
                     timeout or self.timeout)

    def _drop(self, ids):
        for i in ids:
            try:
                self.delete(i, timeout=10.0)
            except Exception:  # noqa: BLE001  best effort; the TTL covers it
                pass

    def _fetch_kept(self, t, field, as_torch):
        """Decodes t, streaming it back (and deleting it) when it was kept."""
        if t.WhichOneof("source") != "resident_id":
            return tensors.decode(t, field, as_torch=as_torch)
        try:
            return self.get(t.resident_id, as_torch=as_torch)
        finally:
            self._drop([t.resident_id])

    def _remote_result(self, t, field):
        """The RemoteTensor of a result kept with keep=True."""
        if t.WhichOneof("source") != "resident_id":
            raise DataLoss(f"{field}: keep=True, but the server sent the bytes")
        return RemoteTensor(self, t.resident_id, t.dtype, t.shape)
