"""Shared memory with a same-host linalgd server (server flag --allow-shm).

The protocol is the C++ client's (client/src/shm_path.cc, shm_region.cc):
regions are memfds created on first use, sealed against resizing
(F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) and handed to the server over
its Unix socket (SCM_RIGHTS; the path from GetServerInfo's shm_socket, or
shared_memory_socket=), which answers with a region id and a secret; calls
name the region by both. Closing the socket (or this process ending)
releases the region on the server; nothing is left in /dev/shm.
A call takes an idle region, or registers another while there are fewer than
shared_memory_regions, writes its operands into it at 64-byte-aligned
offsets, sends Tensor.shm references instead of bytes, asks for the result in
the rest of the region (out_shm) and copies it out before giving the region
back. A call that finds every region busy, operands that do not fit, a remote
target or a server that refuses registration all take the socket instead,
said at debug level on the "linalgd" logger.

A region is given back for reuse only when its call is over on the server: it
succeeded, or the server answered with one of _FINAL_CODES. A call that ends
any other way (its deadline passed, it was cancelled, the connection broke, an
exception while it waited) may still be running there, and may write its
result into the region later: that region is dropped (its socket closed, so
the server unmaps it when its last call ends; unmapped here at once) and never
used again. The next call that finds no idle region registers a replacement,
so a client never holds more than shared_memory_regions regions; a retry of
the failed call takes a region like any call, and one that finds none takes
the socket with a request that names no region.
"""
import fcntl
import logging
import math
import mmap
import os
import select
import socket
import threading
import time

import grpc
import numpy as np

from . import tensors
from ._stubs import pb
from .errors import (DeadlineExceeded, FailedPrecondition, Internal, NotFound, Unavailable,
                     from_rpc_error)

log = logging.getLogger("linalgd")

ALIGN = 64
DEFAULT_SHARED_MEMORY_BYTES = 256 << 20
_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
_REGISTER_TIMEOUT = 10.0  # seconds, at most, for the socket's answer
# Statuses that end a call for good on the server (its own refusals and
# failures) or before it was sent (gRPC's local refusals): the server will not
# touch the call's region again. Any other end may leave it writing there.
_FINAL_CODES = frozenset({
    grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.NOT_FOUND, grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED,
    grpc.StatusCode.OUT_OF_RANGE, grpc.StatusCode.ALREADY_EXISTS,
    grpc.StatusCode.UNIMPLEMENTED})
_FORGOTTEN = "not a registered shared-memory region"  # NOT_FOUND: the server restarted


class Region:
    """A sealed memfd of nbytes, mapped here and registered through the
    server's Unix socket at path (kept open: closing it releases the region)."""

    def __init__(self, path, nbytes, timeout):
        fd = os.memfd_create("linalgd", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        self._sock = None
        try:
            os.ftruncate(fd, nbytes)
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS)
            self._map = mmap.mmap(fd, nbytes)
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            self._sock.connect(path)
            try:
                socket.send_fds(self._sock, [b"REGISTER"], [fd])
            except OSError:
                # A server that refused the connection (--shm-max-connections)
                # sent why before closing it: say that instead.
                self._sock.setblocking(False)
                reply = self._recv_reply()
                if reply.startswith("ERR "):
                    raise FailedPrecondition(f"shared memory refused by the server: {reply}")
                raise
        except BaseException:
            if self._sock is not None:
                self._sock.close()
            if getattr(self, "_map", None) is not None:
                self._map.close()
            raise
        finally:
            os.close(fd)  # the server has its own mapping
        self.size = nbytes
        self.buf = memoryview(self._map)
        self.name, self.secret, self.pinned = self._answer(timeout)

    def _recv_reply(self):
        """One message from the server's socket, "" when closed. A server that
        closed with our REGISTER unread left ECONNRESET ahead of the reply it
        had queued: read on once."""
        for attempt in (0, 1):
            try:
                return self._sock.recv(1024).decode("utf-8", "replace")
            except ConnectionResetError:
                if attempt:
                    return ""
                self._sock.setblocking(False)
            except BlockingIOError:
                return ""
        return ""

    def _answer(self, timeout):
        wait = _REGISTER_TIMEOUT if timeout is None else max(0.0, min(timeout, _REGISTER_TIMEOUT))
        if not select.select([self._sock], [], [], wait)[0]:
            self.close()
            raise DeadlineExceeded("shared memory: no answer from the server's socket")
        reply = self._recv_reply()
        fields = reply.split(" ")  # OK id secret size pinned, or ERR CODE message
        if len(fields) == 5 and fields[0] == "OK":
            return fields[1], fields[2], fields[4] == "1"
        self.close()
        raise FailedPrecondition(f"shared memory refused by the server: {reply or 'closed'}")

    def ref(self, offset, nbytes):
        return pb.SharedMemoryRef(region=self.name, secret=self.secret, offset=offset,
                                  bytes=nbytes)

    def close(self):
        """Releases the region on the server, then unmaps it here."""
        self._sock.close()
        self.buf.release()
        self._map.close()


def seconds_left(deadline):
    """The timeout= of a call that must end by deadline (time.monotonic(); None: no deadline):
    zero or less once it has passed."""
    return None if deadline is None else deadline - time.monotonic()


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
        # Regions dropped and not yet replaced: a replacement's refusal is not
        # final (the server may not have released the dropped one yet).
        self._dropped = 0
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
            replacing = self._dropped > 0
            if replacing:
                self._dropped -= 1
        region, final = None, True
        try:
            region, final = self._register(timeout)
        finally:
            with self._lock:
                late = self._registration_ended(region, final, replacing)
        if late is not None:
            self._unregister(late)
            return None
        return region

    def _registration_ended(self, region, final, replacing):
        """Books a registration's outcome; returns region if the client closed meanwhile
        (to unregister). REQUIRES: self._lock is held."""
        self._pending -= 1
        self._registered.notify_all()
        if region is None:
            # A replacement's refusal changes neither: the server may not
            # have seen the dropped region go yet.
            if replacing:
                pass
            elif self._regions:
                self._cap = len(self._regions)  # the server takes no more
            else:
                self._refused = final
        elif self._closed:
            return region
        else:
            self._regions.append(region)
        return None

    def _release(self, region, drop=False):
        """Gives a call's region back; one to drop (the server forgot it, or
        may still write into it) or one of a closed client is let go."""
        with self._lock:
            keep = not drop and not self._closed
            if keep:
                self._idle.append(region)
            else:
                self._regions.remove(region)
                self._dropped += drop
        if not keep:
            self._unregister(region)

    def _register(self, timeout):
        """(a registered region, None) or (None, whether the refusal is final)."""
        target = self._client.target
        if not is_local_target(target):
            log.debug("shared memory not used: target %r is not on this host; using the socket",
                      target)
            return None, True
        try:
            path = self._client._shm_socket or self._client.server_info(timeout=timeout).shm_socket
            if not path:
                raise FailedPrecondition(
                    "the server takes no shared memory (start linalgd with --allow-shm)")
            wait = timeout if isinstance(timeout, (int, float)) else self._client.timeout
            region = Region(path, self._bytes, wait)
        except Exception as e:  # noqa: BLE001  any refusal means: use the socket
            log.debug("shared memory not used: %s; using the socket", e)
            # A server not up yet may accept later; anything else is final.
            return None, not isinstance(e, (Unavailable, DeadlineExceeded))
        log.debug("shared memory: region %s of %d bytes registered%s", region.name, region.size,
                  " (pinned)" if region.pinned else "")
        return region, False

    def _unregister(self, region):
        region.close()  # closing its socket releases it on the server

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

    def call(self, method, req, operands, out_dtype, out_shape, out_field, deadline, as_torch):
        """Runs method with operands (name -> (array, DType)) and the output in
        the region, by deadline (time.monotonic(), or None), with the
        client's retries. Returns (response, output array), or None: use the
        socket, with req as it was before (no reference to any region)."""
        result = self._call(method, req, operands, out_dtype, out_shape, out_field, deadline,
                            as_torch)
        if result is None:
            # An attempt before the fallback pointed req's operands and out_shm at its region,
            # now dropped (the server refuses a call naming it) or given back (another call's
            # by now: the result would land in that call's bytes).
            self._unwrite(req, operands)
        return result

    def _call(self, method, req, operands, out_dtype, out_shape, out_field, deadline, as_torch):
        if out_shape is None or any(arr.ndim < 1 for arr, _ in operands.values()):
            return None
        out_bytes = math.prod(out_shape) * tensors.itemsize(out_dtype)
        need = align_up(out_bytes) + sum(align_up(arr.nbytes) for arr, _ in operands.values())
        attempt = 0
        while True:
            region = self._acquire(seconds_left(deadline))
            if region is None:
                if self._regions:
                    log.debug("%s: every shared-memory region is busy; using the socket", method)
                return None
            if need > region.size:
                self._release(region)
                log.debug("%s: %d bytes do not fit the %d-byte shared-memory region; using "
                          "the socket", method, need, region.size)
                return None
            attempt += 1
            result, error = self._attempt(region, method, req, operands, out_field, deadline,
                                          as_torch, attempt)
            if error is None:
                return result
            time.sleep(self._client._retry_delay(error, attempt, deadline))  # or raises error

    def _attempt(self, region, method, req, operands, out_field, deadline, as_torch, attempt):
        """One attempt of call on region, which it gives back, or drops when the
        server may still write into it: (result or None, None), or (None, the
        attempt's error)."""
        drop = forgotten = False
        try:
            self._write(region, req, operands)
            drop = True  # until the call is known to be over on the server
            try:
                resp = getattr(self._client._stub, method)(
                    req, **self._client._call_kwargs(deadline))
            except grpc.RpcError as e:
                error = from_rpc_error(e, method, attempt)
                drop = error.code not in _FINAL_CODES
                forgotten = isinstance(error, NotFound) and _FORGOTTEN in str(error)
                if forgotten:
                    # The server forgot the region (it restarted): register a new one next time.
                    log.debug("%s: %s; using the socket", method, error)
                    drop = True
                    return None, None
                return None, error
            drop = False
            return (resp, self._read(region, resp, method, out_field, as_torch)), None
        finally:
            if drop and not forgotten:
                log.debug("%s: shared-memory region %s dropped: its call may still be "
                          "running on the server", method, region.name)
            self._release(region, drop)

    @staticmethod
    def _write(region, req, operands):
        """Writes operands into region; points req's fields and out_shm at it."""
        cursor = 0
        buf = region.buf
        for field, (arr, wire) in operands.items():
            dst = np.ndarray(arr.shape, dtype=arr.dtype.newbyteorder("<"), buffer=buf,
                             offset=cursor)
            dst[...] = arr  # one copy, C order, little-endian
            del dst
            getattr(req, field).CopyFrom(pb.Tensor(
                dtype=int(wire), shape=arr.shape,
                shm=region.ref(cursor, arr.nbytes)))
            cursor += align_up(arr.nbytes)
        req.keep_result = False
        req.out_shm.CopyFrom(region.ref(cursor, region.size - cursor))

    @staticmethod
    def _unwrite(req, operands):
        """Clears what _write set in req: the operands' and the output's region references."""
        for field in operands:
            if getattr(req, field).WhichOneof("source") == "shm":
                req.ClearField(field)
        req.ClearField("out_shm")
        req.ClearField("keep_result")

    @staticmethod
    def _read(region, resp, method, out_field, as_torch):
        """The output of resp: a copy of it out of region, or decoded inline."""
        out = getattr(resp, out_field)
        if out.WhichOneof("source") != "shm":
            return tensors.decode(out, out_field, as_torch=as_torch)
        if out.shm.region != region.name:
            raise Internal(f"{method}: the server answered with shm region "
                           f"{out.shm.region!r}, not this client's {region.name!r}")
        return tensors.decode_from(out, region.buf, out_field, as_torch=as_torch)


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
