"""Shared memory with a same-host linalgd server (issue 8; server flag --allow-shm).

The protocol is the C++ client's (client/src/shm_path.cc): one POSIX region
per Client, created on first use and registered once (RegisterSharedMemory,
then its name is unlinked: the mapping stays, no /dev/shm entry is left
behind). A call writes its operands into the region at 64-byte-aligned
offsets, sends Tensor.shm references instead of bytes, asks for the result
in the rest of the region (out_shm) and copies it out before the region is
reused. A lock guards the region: a call that finds it busy, operands that do
not fit, a remote target or a server that refuses registration all take the
socket instead, said at debug level on the "linalgd" logger.
"""
import itertools
import logging
import math
import os
import secrets
import threading
from multiprocessing import shared_memory

import numpy as np

from . import tensors
from ._stubs import pb
from .errors import DeadlineExceeded, Internal, NotFound, Unavailable

log = logging.getLogger("linalgd")

ALIGN = 64
DEFAULT_SHARED_MEMORY_BYTES = 256 << 20
_COUNTER = itertools.count()


def align_up(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


def is_local_target(target):
    """True for unix: sockets, localhost, 127.x and [::1] (as the C++ client)."""
    if target.startswith(("unix:", "unix-abstract:")):
        return True
    for prefix in ("dns:///", "dns:", "ipv4:", "ipv6:"):
        if target.startswith(prefix):
            target = target[len(prefix):]
            break
    host = target
    if target.startswith("["):
        end = target.find("]")
        host = target[1:end if end >= 0 else len(target)]
    elif ":" in target:
        host = target[:target.rfind(":")]
    return host == "localhost" or host.startswith("127.") or host == "::1"


class SharedMemoryPath:
    """The region of one Client and the calls that go through it."""

    def __init__(self, client, nbytes):
        if int(nbytes) <= 0:
            raise ValueError("shared_memory_bytes must be positive")
        self._client = client
        self._bytes = int(nbytes)
        self._lock = threading.Lock()
        self._region = None  # a SharedMemory once registered
        self._refused = False  # registration failed for good: never try again
        self._closed = False

    @property
    def active(self):
        return self._region is not None

    @property
    def name(self):
        return self._region.name if self._region is not None else None

    # -- region lifecycle (under self._lock) --------------------------------

    def _ensure_registered(self, timeout):
        if self._region is not None:
            return True
        if self._refused or self._closed:
            return False
        target = self._client.target
        if not is_local_target(target):
            self._refused = True
            log.debug("shared memory not used: target %r is not on this host; using the socket",
                      target)
            return False
        name = f"linalgd-py-{os.getpid()}-{next(_COUNTER)}-{secrets.token_hex(4)}"
        try:
            region = shared_memory.SharedMemory(name=name, create=True, size=self._bytes)
        except (OSError, ValueError) as e:
            self._refused = True
            log.debug("shared memory not used: cannot create a %d-byte region: %s; using the "
                      "socket", self._bytes, e)
            return False
        try:
            self._client._invoke("RegisterSharedMemory", pb.RegisterSharedMemoryRequest(
                name=region.name, key="/" + region.name, size=region.size), timeout)
        except Exception as e:  # noqa: BLE001  any refusal means: use the socket
            _discard(region)
            # A server not up yet may accept later; anything else is final.
            self._refused = not isinstance(e, (Unavailable, DeadlineExceeded))
            log.debug("shared memory not used: RegisterSharedMemory: %s; using the socket", e)
            return False
        region.unlink()  # the server has mapped it; leave no name behind
        self._region = region
        log.debug("shared memory: region %s of %d bytes registered", region.name, region.size)
        return True

    def _drop_region(self):
        region, self._region = self._region, None
        if region is not None:
            region.close()

    def close(self):
        with self._lock:
            self._closed = True
            if self._region is None:
                return
            try:
                self._client._stub.UnregisterSharedMemory(
                    pb.UnregisterSharedMemoryRequest(name=self._region.name), timeout=2.0,
                    metadata=self._client._metadata or None)
            except Exception:  # noqa: BLE001  best effort; the server drops it with us
                pass
            self._drop_region()

    # -- calls ----------------------------------------------------------------

    def call(self, method, req, operands, out_dtype, out_shape, out_field, timeout, as_torch):
        """Runs method with operands (name -> (array, DType)) and the output in
        the region. Returns (response, output array), or None: use the socket."""
        if out_shape is None or any(arr.ndim < 1 for arr, _ in operands.values()):
            return None
        out_bytes = math.prod(out_shape) * tensors.itemsize(out_dtype)
        need = align_up(out_bytes) + sum(align_up(arr.nbytes) for arr, _ in operands.values())
        if not self._lock.acquire(blocking=False):
            log.debug("%s: the shared-memory region is busy; using the socket", method)
            return None
        try:
            if not self._ensure_registered(timeout):
                return None
            region = self._region
            if need > region.size:
                log.debug("%s: %d bytes do not fit the %d-byte shared-memory region; using "
                          "the socket", method, need, region.size)
                return None
            cursor = 0
            buf = region.buf
            for field, (arr, wire) in operands.items():
                dst = np.ndarray(arr.shape, dtype=arr.dtype.newbyteorder("<"), buffer=buf,
                                 offset=cursor)
                dst[...] = arr  # one copy, C order, little-endian
                del dst
                getattr(req, field).CopyFrom(pb.Tensor(
                    dtype=int(wire), shape=arr.shape,
                    shm=pb.SharedMemoryRef(region=region.name, offset=cursor, bytes=arr.nbytes)))
                cursor += align_up(arr.nbytes)
            req.keep_result = False
            req.out_shm.CopyFrom(pb.SharedMemoryRef(region=region.name, offset=cursor,
                                                    bytes=region.size - cursor))
            try:
                resp = self._client._invoke(method, req, timeout)
            except NotFound as e:
                if "not registered" not in str(e):
                    raise
                # The server forgot the region (it restarted): register a new one next time.
                log.debug("%s: %s; using the socket", method, e)
                self._drop_region()
                req.ClearField("out_shm")
                return None
            out = getattr(resp, out_field)
            if out.WhichOneof("source") == "shm":
                if out.shm.region != region.name:
                    raise Internal(f"{method}: the server answered with shm region "
                                   f"{out.shm.region!r}, not this client's {region.name!r}")
                arr = tensors.decode_from(out, buf, out_field, as_torch=as_torch)
            else:
                arr = tensors.decode(out, out_field, as_torch=as_torch)
            del buf
            return resp, arr
        finally:
            self._lock.release()


def _discard(region):
    try:
        region.close()
    finally:
        region.unlink()


def matmul_out_shape(a, b, transpose_a, transpose_b):
    """The output shape of op(a) @ op(b) (both at least 2-D), or None if it does not broadcast."""
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        return None
    m = a.shape[-1] if transpose_a else a.shape[-2]
    n = b.shape[-2] if transpose_b else b.shape[-1]
    return (*batch, m, n)


def solve_out_shape(a, b):
    """The shape of x in a @ x = b (a None with a factor: b's shape), or None."""
    if a is None:
        return b.shape
    if a.ndim < 2 or b.ndim < 2:
        return None
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        return None
    return (*batch, a.shape[-1], b.shape[-1])
