"""Resident tensors and cached factorizations (linalgd.v1 PutTensor, GetTensor,
DeleteTensor, ListTensors, Factorize, ReleaseFactor): the pieces the clients'
put/get/delete/list_tensors/factorize methods (_ops.py) use.

put() returns a RemoteTensor, usable as an operand of matmul, solve and
sparse_solve; factorize() returns a Factor (remote.py says how long each
lives). Tensors move in chunks of `chunk_bytes` (any size, beyond the message
limit); from `stream_threshold` bytes on, in parts over several connections
at once, checked with CRC32C per part (transfer.py).
"""
import dataclasses
from typing import Tuple

import numpy as np

from ._stubs import pb
from .remote import Factor, RemoteTensor

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
    tenant: str = ""  # the owner (ListTensors with all_tenants)

    @classmethod
    def from_proto(cls, t):
        return cls(t.id, t.dtype, tuple(t.shape), t.bytes, t.placement, t.ttl_seconds,
                   t.expires_in_seconds, t.kind, t.in_use, t.tenant)


def id_of(x) -> str:
    return x.id if isinstance(x, (RemoteTensor, Factor)) else str(x)


def put_item(arr, wire, placement=None, ttl=None, no_evict=False):
    """(PutTensorHeader without checksum, flat uint8 memoryview) of an array
    from tensors.to_numpy; copies only a non-contiguous or big-endian array.
    no_evict: a call's temporary, for which the server evicts nothing (the
    store refuses it unless the room is free)."""
    little = arr.dtype.newbyteorder("<")
    if arr.dtype != little or not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr, dtype=little)
    if arr.ndim < 1:
        raise ValueError("put: needs at least 1 dimension")
    if placement is not None and not isinstance(placement, str):
        raise TypeError(f"put: placement is 'host' or 'gpu:N' (a str), not "
                        f"{type(placement).__name__} {placement!r}")
    raw = memoryview(arr.reshape(-1).view(np.uint8))  # cast() refuses a 0 in the shape
    header = pb.PutTensorHeader(dtype=int(wire), shape=arr.shape, placement=placement or "",
                                ttl_seconds=float(ttl or 0), total_bytes=len(raw),
                                no_evict=bool(no_evict))
    return header, raw
