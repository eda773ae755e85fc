"""Shared memory with a same-host linalgd server (issue 8; server flag --allow-shm).

The protocol is the C++ client's (client/src/shm_path.cc): POSIX regions
created on first use and registered once each (RegisterSharedMemory, then
the name is unlinked: the mapping stays, no /dev/shm entry is left behind).
A call takes an idle region, or registers another while there are fewer than
shared_memory_regions, writes its operands into it at 64-byte-aligned
offsets, sends Tensor.shm references instead of bytes, asks for the result in
the rest of the region (out_shm) and copies it out before giving the region
back. A call that finds every region busy, operands that do not fit, a remote
target or a server that refuses registration all take the socket instead,
said at debug level on the "linalgd" logger.
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
    """The regions of one Client and the calls that go through them."""

    def __init__(self, client, nbytes, regions=1):
        if int(nbytes) <= 0:
            raise ValueError("shared_memory_bytes must be positive")
        if int(regions) <= 0:
            raise ValueError("shared_memory_regions must be positive")
        self._client = client
        self._bytes = int(nbytes)
        self._lock = threading.Lock()  # guards everything below
        self._registered = threading.Condition(self._lock)  # a registration ended
        self._cap = int(regions)  # lowered when the server takes no more
        self._regions = []  # SharedMemory objects, registered
        self._idle = []  # those no call holds
        self._pending = 0  # registrations in progress
        self._refused = False  # registration failed for good: never try again
        self._closed = False

    @property
    def active(self):
        return bool(self._regions)

    @property
    def name(self):
        """The first region's name (None before one is registered)."""
        regions = self._regions
        return regions[0].name if regions else None

    @property
    def regions(self):
        return len(self._regions)

    # -- regions ---------------------------------------------------------------

    def _acquire(self, timeout):
        """An idle or newly registered region, or None (use the socket)."""
        with self._lock:
            # Calls that arrive while the first registration is out wait for
            # its verdict rather than all trying (and all logging a refusal).
            self._registered.wait_for(lambda: self._regions or not self._pending)
            if self._refused or self._closed:
                return None
            if self._idle:
                return self._idle.pop()
            if len(self._regions) + self._pending >= self._cap:
                return None
            self._pending += 1
        region, final, late = None, True, None  # late: registered after close()
        try:
            region, final = self._register(timeout)
        finally:
            with self._lock:
                self._pending -= 1
                self._registered.notify_all()
                if region is None:
                    if self._regions:
                        self._cap = len(self._regions)  # the server takes no more
                    else:
                        self._refused = final
                elif self._closed:
                    late, region = region, None
                else:
                    self._regions.append(region)
        if late is not None:
            self._unregister(late)
        return region

    def _release(self, region, dropped=False):
        """Gives a call's region back; a region the server forgot (dropped)
        or one of a closed client is let go."""
        with self._lock:
            keep = not dropped and not self._closed
            if keep:
                self._idle.append(region)
            else:
                self._regions.remove(region)
        if dropped:
            region.close()
        elif not keep:
            self._unregister(region)

    def _register(self, timeout):
        """(a registered region, None) or (None, whether the refusal is final)."""
        target = self._client.target
        if not is_local_target(target):
            log.debug("shared memory not used: target %r is not on this host; using the socket",
                      target)
            return None, True
        name = f"linalgd-py-{os.getpid()}-{next(_COUNTER)}-{secrets.token_hex(4)}"
        try:
            region = shared_memory.SharedMemory(name=name, create=True, size=self._bytes)
        except (OSError, ValueError) as e:
            log.debug("shared memory not used: cannot create a %d-byte region: %s; using the "
                      "socket", self._bytes, e)
            return None, True
        try:
            self._client._invoke("RegisterSharedMemory", pb.RegisterSharedMemoryRequest(
                name=region.name, key="/" + region.name, size=region.size), timeout)
        except Exception as e:  # noqa: BLE001  any refusal means: use the socket
            _discard(region)
            log.debug("shared memory not used: RegisterSharedMemory: %s; using the socket", e)
            # A server not up yet may accept later; anything else is final.
            return None, not isinstance(e, (Unavailable, DeadlineExceeded))
        region.unlink()  # the server has mapped it; leave no name behind
        log.debug("shared memory: region %s of %d bytes registered", region.name, region.size)
        return region, False

    def _unregister(self, region):
        try:
            self._client._stub.UnregisterSharedMemory(
                pb.UnregisterSharedMemoryRequest(name=region.name), timeout=2.0,
                metadata=self._client._metadata or None)
        except Exception:  # noqa: BLE001  best effort; the server drops it with us
            pass
        region.close()

    def close(self):
        """Unregisters the idle regions now, the others when their calls end."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            for region in idle:
                self._regions.remove(region)
        for region in idle:
            self._unregister(region)

    # -- calls ----------------------------------------------------------------

    def call(self, method, req, operands, out_dtype, out_shape, out_field, timeout, as_torch):
        """Runs method with operands (name -> (array, DType)) and the output in
        the region. Returns (response, output array), or None: use the socket."""
        if out_shape is None or any(arr.ndim < 1 for arr, _ in operands.values()):
            return None
        out_bytes = math.prod(out_shape) * tensors.itemsize(out_dtype)
        need = align_up(out_bytes) + sum(align_up(arr.nbytes) for arr, _ in operands.values())
        region = self._acquire(timeout)
        if region is None:
            if self._regions:
                log.debug("%s: every shared-memory region is busy; using the socket", method)
            return None
        dropped = False
        try:
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
                dropped = True
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
            self._release(region, dropped)


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
