"""Resident tensors and cached factorizations (linalgd.v1 PutTensor, GetTensor,
DeleteTensor, ListTensors, Factorize, ReleaseFactor), mixed into Client.

Uploads stream in chunks of `chunk_bytes` (a tensor of any size, beyond the
message limit), checked end to end with CRC-32 (zlib; the server also accepts
CRC32C). Downloads stream back the same way.
"""
import dataclasses
import zlib
from typing import List, Tuple

import grpc
import numpy as np

from . import tensors
from ._stubs import pb
from .enums import SolveMethod, parse
from .errors import DataLoss, from_rpc_error
from .results import ExecutionInfo

DEFAULT_CHUNK_BYTES = 2 << 20
TEMPORARY_TTL = 600.0  # seconds; automatic uploads are deleted after the call anyway


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


@dataclasses.dataclass
class FactorInfo:
    factor_id: str
    method: SolveMethod
    n: int
    rcond: float
    fallback: str
    placement: str
    bytes: int
    info: ExecutionInfo


def _put_messages(arr, wire, placement, ttl, chunk):
    data = memoryview(arr.reshape(-1).view(np.uint8))  # cast() refuses a 0 in the shape
    header = pb.PutTensorHeader(dtype=int(wire), shape=arr.shape, placement=placement or "",
                                ttl_seconds=float(ttl or 0), total_bytes=len(data),
                                crc32=zlib.crc32(data) & 0xFFFFFFFF)
    yield pb.PutTensorRequest(header=header)
    for off in range(0, len(data), chunk):
        yield pb.PutTensorRequest(chunk=bytes(data[off:off + chunk]))


class StoreMixin:
    """Client methods for resident tensors and factors."""

    chunk_bytes = DEFAULT_CHUNK_BYTES

    def put(self, x, *, placement=None, ttl=None, timeout=None):
        """Uploads x (numpy/torch/array-like) and returns its id (32 hex digits).

        placement: "host" (default) or "gpu:N"; ttl: seconds from the last use
        (default the server's --store-ttl). Refer to it with resident(id).
        """
        return self.put_info(x, placement=placement, ttl=ttl, timeout=timeout).id

    def put_info(self, x, *, placement=None, ttl=None, timeout=None, _wire=None):
        """As put(), returning the server's TensorInfo."""
        if _wire is None:
            arr, wire = tensors.to_numpy(x, "tensor")
        else:
            arr, wire = x, _wire
        little = arr.dtype.newbyteorder("<")
        arr = np.ascontiguousarray(arr, dtype=little)
        if arr.ndim < 1:
            raise ValueError("put: needs at least 1 dimension")
        try:
            resp = self._stub.PutTensor(
                _put_messages(arr, wire, placement, ttl, self.chunk_bytes),
                timeout=timeout or self.timeout, metadata=self._metadata or None)
        except grpc.RpcError as e:
            raise from_rpc_error(e, "PutTensor") from None
        return TensorInfo.from_proto(resp.tensor)

    def get(self, tensor_id, *, timeout=None, as_torch=False):
        """The resident tensor as a numpy array (streamed in chunks)."""
        req = pb.GetTensorRequest(id=tensor_id, chunk_bytes=self.chunk_bytes)
        info, parts = None, []
        try:
            for m in self._stub.GetTensor(req, timeout=timeout or self.timeout,
                                          metadata=self._metadata or None):
                if info is None:
                    info = m.info
                parts.append(m.chunk)
        except grpc.RpcError as e:
            raise from_rpc_error(e, "GetTensor") from None
        if info is None:
            raise DataLoss(f"GetTensor {tensor_id}: empty stream")
        t = pb.Tensor(dtype=info.dtype, shape=info.shape, data=b"".join(parts))
        return tensors.decode(t, "tensor", as_torch=as_torch)

    def delete(self, tensor_id, *, timeout=None):
        self._invoke("DeleteTensor", pb.DeleteTensorRequest(id=tensor_id), timeout or self.timeout)

    def list_tensors(self, *, all_tenants=False, timeout=None) -> List[TensorInfo]:
        """The caller's tensors and factors; all_tenants: every tenant's (an
        admin tenant only: else PERMISSION_DENIED), each naming its tenant."""
        resp = self._invoke("ListTensors", pb.ListTensorsRequest(all_tenants=all_tenants),
                            timeout or self.timeout)
        return [TensorInfo.from_proto(t) for t in resp.tensors]

    def factorize(self, a, *, method=None, no_fallback=False, ttl=None, allow_non_finite=False,
                  timeout=None):
        """Factorizes square a (LU or Cholesky) on the server; returns a FactorInfo.

        Use it with solve(None, b, factor=info.factor_id); release_factor() frees it.
        """
        req = pb.FactorizeRequest(method=int(parse(SolveMethod, method, "method")),
                                  no_fallback=bool(no_fallback), ttl_seconds=float(ttl or 0),
                                  allow_non_finite=bool(allow_non_finite))
        temps = []
        try:
            req.a.CopyFrom(self._operand(*tensors.to_numpy(a, "a"), "a", temps=temps))
            resp = self._invoke("Factorize", req, timeout or self.timeout)
        finally:
            self._drop(temps)
        return FactorInfo(resp.factor_id, SolveMethod(resp.method), resp.n, resp.rcond,
                          resp.fallback, resp.placement, resp.bytes,
                          ExecutionInfo.from_proto(resp.info))

    def release_factor(self, factor_id, *, timeout=None):
        self._invoke("ReleaseFactor", pb.ReleaseFactorRequest(factor_id=factor_id),
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
