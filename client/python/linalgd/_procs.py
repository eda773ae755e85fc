"""Transfer worker processes (Client(transfer_processes=N)): the parts of a
large PutTensor / GetTensor move in processes of their own, so grpcio's
per-message copies, which hold the GIL, run under N interpreters' locks
instead of the caller's one.

The caller copies a tensor's bytes once into a POSIX shared-memory segment
(multiprocessing.shared_memory) for an upload; each worker sends its range of
the segment on a PutTensor stream of its own grpc channel, with the wire
messages and per-part CRC32C of transfer.py. A download's workers write their
ranges into a segment and return each range's CRC32C; the caller copies the
segment out once. A transfer that fails unlinks its segment before the call
returns; one that succeeds leaves it to the pool's SegmentCache for the next
transfer (at most two, 1 GiB in all), which close() unlinks. (A process that
exits without close() leaves them to multiprocessing's resource tracker,
which unlinks them.)

Workers are started with the 'spawn' context (a fresh interpreter: a process
forked after grpc started its threads can hang), lazily on the first large
transfer of a Client, and stopped by Client.close(). A worker that dies, or
that has not answered by its task's deadline plus DEADLINE_GRACE_SECONDS,
fails the part with TransferWorkerError and is replaced by a fresh process on
the next task. A worker builds its channels from a ChannelSpec: the target,
TLS certificates as PEM bytes, channel options, metadata (the bearer token
included) and wait_for_ready, so TLS, auth and replica routing (the target
is the replica's address) work as on the caller's channels. Credentials
handed over as a grpc.ChannelCredentials object cannot be rebuilt in another
process: such a client moves its transfers on threads (a warning says so).

Thread safe: the transfer threads of one Client share its pool; a worker runs
one task at a time.
"""
import contextlib
import dataclasses
import logging
import mmap
import multiprocessing
import multiprocessing.connection
import os
import pickle
import queue
import secrets
import signal
import threading
import time
from multiprocessing import shared_memory
from typing import Any, Dict, List, Optional, Sequence, Tuple

import grpc

from .errors import Internal, TransferWorkerError, error_class

DEADLINE_GRACE_SECONDS = 5.0  # past a task's deadline before its worker counts as stuck
SEGMENT_PREFIX = "linalgd-xfer-"  # /dev/shm/<prefix><pid>-<random>
_SERVICE = "/linalgd.v1.Linalg/"
_log = logging.getLogger("linalgd")


@dataclasses.dataclass(frozen=True)
class ChannelSpec:
    """What a worker needs to build a channel like the caller's (picklable)."""
    tls: Optional[Tuple[Optional[bytes], Optional[bytes], Optional[bytes]]]  # ca, key, cert PEM
    options: Tuple[Tuple[str, Any], ...]
    metadata: Tuple[Tuple[str, Any], ...]  # str values, bytes for "-bin" keys
    wait_for_ready: bool


def channel_spec(tls_pems, credentials, options: Sequence, metadata: Sequence,
                 wait_for_ready: bool) -> Optional[ChannelSpec]:
    """The ChannelSpec of a client's channels, or None (with a warning) when a
    worker could not rebuild them: credentials given as an object, or channel
    options that do not pickle."""
    if credentials is not None and tls_pems is None:
        _log.warning("transfer_processes: credentials= (a grpc.ChannelCredentials) cannot be "
                     "passed to worker processes; transfers use threads. Give tls_ca, "
                     "tls_cert and tls_key instead to use the processes.")
        return None
    spec = ChannelSpec(tls_pems, tuple((o[0], o[1]) for o in options),
                       tuple((m[0], m[1]) for m in metadata), bool(wait_for_ready))
    try:
        pickle.dumps(spec)
    except Exception as e:  # noqa: BLE001  any option a worker cannot receive
        _log.warning("transfer_processes: the channel options cannot be passed to worker "
                     "processes (%s); transfers use threads", e)
        return None
    return spec


# -- shared-memory segments (caller side) --------------------------------------

def new_segment(nbytes: int) -> shared_memory.SharedMemory:
    """A fresh segment of nbytes (at least 1) named SEGMENT_PREFIX<pid>-<random>."""
    name = f"{SEGMENT_PREFIX}{os.getpid()}-{secrets.token_hex(8)}"
    return shared_memory.SharedMemory(name=name, create=True, size=max(1, nbytes))


def drop_segment(segment: shared_memory.SharedMemory) -> None:
    """Unmaps and unlinks segment (a view still held elsewhere keeps the
    mapping alive until it goes; the name is gone at once)."""
    try:
        segment.close()
    except BufferError:
        pass
    segment.unlink()


class SegmentCache:
    """Segments of finished transfers, kept for the next ones: a fresh
    segment's pages are allocated as they are first written (here 0.24 s for
    256 MiB, against 0.023 s to copy into pages already there). At most
    MAX_SEGMENTS idle ones of MAX_BYTES in all; unlinked when pushed out and
    by close()."""

    MAX_SEGMENTS = 2
    MAX_BYTES = 1 << 30

    def __init__(self):
        self._lock = threading.Lock()
        self._idle = []  # guarded by _lock
        self._closed = False  # guarded by _lock

    def take(self, nbytes: int) -> shared_memory.SharedMemory:
        """An idle segment of nbytes to twice that, else a new one of nbytes."""
        with self._lock:
            fits = [s for s in self._idle if nbytes <= s.size <= 2 * max(nbytes, 1)]
            if fits:
                segment = min(fits, key=lambda s: s.size)
                self._idle.remove(segment)
                return segment
        return new_segment(nbytes)

    def give_back(self, segment: shared_memory.SharedMemory) -> None:
        """Keeps segment for a later take(), or unlinks it (or the oldest kept)."""
        kept = False
        with self._lock:
            if not self._closed and segment.size <= self.MAX_BYTES:
                self._idle.append(segment)
                kept = True
            while (len(self._idle) > self.MAX_SEGMENTS or
                   sum(s.size for s in self._idle) > self.MAX_BYTES):
                drop_segment(self._idle.pop(0))
        if not kept:
            drop_segment(segment)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for segment in idle:
            drop_segment(segment)


# -- the pool (caller side) ----------------------------------------------------

class _Worker:
    """One worker process and the caller's end of its pipe."""

    def __init__(self, context, index: int, spec: ChannelSpec):
        self.index = index
        self.conn, child = context.Pipe()
        self.process = context.Process(target=serve, args=(child, spec), daemon=True,
                                       name=f"linalgd-transfer-{index}")
        self.process.start()
        child.close()

    def call(self, task: tuple, deadline: Optional[float]) -> tuple:
        """Sends task and waits for the worker's reply; TransferWorkerError when
        it dies or has not answered DEADLINE_GRACE_SECONDS after deadline. Any
        other exception (KeyboardInterrupt) stops the worker too: its reply
        would otherwise answer the next task."""
        try:
            return self._call(task, deadline)
        except TransferWorkerError:
            raise
        except BaseException:
            self.stop()
            raise

    def _call(self, task: tuple, deadline: Optional[float]) -> tuple:
        try:
            self.conn.send(task)
        except (OSError, EOFError):
            raise self._lost(task, "is gone") from None
        while True:
            wait = None if deadline is None else max(
                0.0, deadline + DEADLINE_GRACE_SECONDS - time.monotonic())
            ready = multiprocessing.connection.wait([self.conn, self.process.sentinel], wait)
            if self.conn in ready:
                try:
                    return self.conn.recv()
                except (OSError, EOFError):
                    raise self._lost(task, "closed its pipe") from None
            if ready:
                raise self._lost(task, "exited")
            if deadline is not None and time.monotonic() >= deadline + DEADLINE_GRACE_SECONDS:
                raise self._lost(task, f"has not answered {DEADLINE_GRACE_SECONDS:g} s past "
                                       "the call's deadline")

    def _lost(self, task: tuple, what: str) -> TransferWorkerError:
        self.stop()
        return TransferWorkerError(
            f"transfer worker process {self.index} (pid {self.process.pid}) {what} during "
            f"{describe(task)} (exit status {self.process.exitcode}); the part failed and "
            "the worker is replaced", method=task[0])

    def alive(self) -> bool:
        return self.process.is_alive()

    def stop(self) -> None:
        """Stops the process (asks, then kills) and closes the pipe."""
        if self.process.is_alive():
            try:
                self.conn.send(None)
            except (OSError, EOFError):
                pass
            self.process.join(1.0)
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.conn.close()


class ProcessPool:
    """size worker processes, started on first use; run(task) on an idle one."""

    def __init__(self, size: int, spec: ChannelSpec):
        self._context = multiprocessing.get_context("spawn")
        self._spec = spec
        self._idle: "queue.Queue[int]" = queue.Queue()  # the indices of idle workers
        self._lock = threading.Lock()
        self._workers: List[Optional[_Worker]] = [None] * size  # guarded by _lock
        self._closed = False  # guarded by _lock
        self.segments = SegmentCache()
        for index in range(size):
            self._idle.put(index)

    def size(self) -> int:
        return len(self._workers)

    def pids(self) -> list:
        """The worker processes running now."""
        with self._lock:
            return [w.process.pid for w in self._workers if w is not None and w.alive()]

    def run(self, task: tuple, deadline: Optional[float]) -> tuple:
        """The reply of a worker to task (see serve); TransferWorkerError when
        the worker fails (it is replaced on the next task)."""
        index = self._idle.get()
        try:
            return self._worker(index).call(task, deadline)
        finally:
            self._idle.put(index)

    def _worker(self, index: int) -> _Worker:
        """Worker index, started (again) when it is not running."""
        with self._lock:
            if self._closed:
                raise Internal("the client's transfer processes are closed")
            worker = self._workers[index]
            if worker is None or not worker.alive():
                if worker is not None:
                    worker.stop()
                worker = _Worker(self._context, index, self._spec)
                self._workers[index] = worker
            return worker

    def close(self) -> None:
        with self._lock:
            self._closed = True
            workers, self._workers = self._workers, [None] * len(self._workers)
        for worker in workers:
            if worker is not None:
                worker.stop()
        self.segments.close()

    @contextlib.contextmanager
    def segment(self, nbytes: int):
        """A segment of at least nbytes for one transfer, kept for the next one
        when the block ends normally and unlinked when it raises."""
        segment = self.segments.take(nbytes)
        try:
            yield segment
        except BaseException:
            drop_segment(segment)
            raise
        self.segments.give_back(segment)


def describe(task: tuple) -> str:
    kind, target = task[0], task[1]
    if kind == "PutTensor":
        return f"PutTensor part [{task[4]}, {task[5]}) to {target}"
    return f"GetTensor {task[2]} range [{task[3]}, {task[3] + task[4]}) from {target}"


def put_task(target: str, header: bytes, segment: str, begin: int, end: int, chunk: int,
             deadline: Optional[float]) -> tuple:
    """A PutTensor stream of segment[begin:end] after the serialized PutTensorHeader."""
    return ("PutTensor", target, header, segment, begin, end, chunk, deadline)


def get_task(target: str, tensor_id: str, offset: int, length: int, chunk: int, segment: str,
             deadline: Optional[float]) -> tuple:
    """A ranged GetTensor written into segment[offset:offset + length]."""
    return ("GetTensor", target, tensor_id, offset, length, chunk, segment, deadline)


def result_of(reply: tuple, method: str) -> Any:
    """A worker's reply's value, or its failure raised as the matching LinalgdError
    ("norange" replies return None: the server ignored the range)."""
    kind = reply[0]
    if kind == "ok":
        return reply[1]
    if kind == "norange":
        return None
    if kind == "rpc":
        code = getattr(grpc.StatusCode, reply[1], grpc.StatusCode.UNKNOWN)
        return _raise(error_class(code)(reply[2] or reply[1], code=code, method=method,
                                        trailing_metadata=reply[3]))
    return _raise(error_class(getattr(grpc.StatusCode, reply[1], grpc.StatusCode.UNKNOWN))(
        reply[2], method=method))


def _raise(error: Exception):
    raise error


# -- the worker (its own process) ----------------------------------------------

def serve(conn, spec: ChannelSpec) -> None:
    """A worker's loop: a task in, a reply out, until None or the pipe closes.
    Replies: ("ok", value), ("norange",), ("rpc", code name, details,
    trailing metadata) or ("error", code name, message)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's to handle
    channels: Dict[Any, Any] = {}  # by task[1]
    try:
        while True:
            try:
                task = conn.recv()
            except (EOFError, OSError):
                return
            if task is None:
                return
            reply = _reply(task, channels, spec)
            try:
                conn.send(reply)
            except pickle.PicklingError as e:
                conn.send(("error", "INTERNAL", f"{describe(task)}: unpicklable reply: {e}"))
    finally:
        for channel in channels.values():
            channel.close()


def _reply(task: tuple, channels: dict, spec: ChannelSpec) -> tuple:
    from .errors import LinalgdError
    try:
        channel = channels.get(task[1])
        if channel is None:
            channel = channels[task[1]] = _channel(task[1], spec)
        if task[0] == "PutTensor":
            return ("ok", _put(channel, spec, *task[2:]))
        return _get(channel, spec, *task[2:])
    except grpc.RpcError as e:
        metadata = tuple((str(k), v) for k, v in e.trailing_metadata() or ())
        return ("rpc", e.code().name, e.details(), metadata)
    except LinalgdError as e:
        return ("error", e.code.name if e.code else "UNKNOWN", e.message)
    except Exception as e:  # noqa: BLE001  reported to the caller, which raises it
        return ("error", "INTERNAL", f"{describe(task)}: {type(e).__name__}: {e}")


def _channel(target: str, spec: ChannelSpec) -> grpc.Channel:
    from ._tls import credentials_of
    options = list(spec.options)
    if spec.tls is None:
        return grpc.insecure_channel(target, options)
    return grpc.secure_channel(target, credentials_of(spec.tls), options)


# Seconds beyond which a deadline goes to gRPC as none (about three years): grpcio (1.51) made
# a timeout of 1e10 s or more a deadline already passed, and every such call failed at once.
NO_DEADLINE_BEYOND = 1e8


def grpc_timeout(deadline: Optional[float]) -> Optional[float]:
    """gRPC's timeout= for a call that must end by deadline (time.monotonic()), or None.

    gRPC keeps deadlines to the millisecond, rounding up: a deadline that has just passed would
    become one still to come, and the call would run and succeed. One that has passed goes as a
    second ago, which gRPC ends at once with DEADLINE_EXCEEDED. One more than
    NO_DEADLINE_BEYOND seconds ahead goes as none."""
    if deadline is None:
        return None
    remaining = deadline - time.monotonic()
    if remaining > NO_DEADLINE_BEYOND:
        return None
    return remaining if remaining > 0 else -1.0


# Deleting what a call stored for itself (its uploads, a kept result, an upload it
# aborts) is best effort: the server's TTL frees whatever is left. So the deletes get
# the call's time left, and CLEANUP_GRACE_SECONDS more, so that a call that failed at
# its deadline still frees its tensors on a live server (a delete takes milliseconds),
# while a server that is gone or stalled delays the caller's exception by at most
# that much past the deadline. Without a deadline, CLEANUP_MAX_SECONDS from now, for
# all the deletes together (each used to have 10 s, so a killed server kept a call
# that had timed out waiting 10 s per temporary).
CLEANUP_GRACE_SECONDS = 0.5
CLEANUP_MAX_SECONDS = 10.0


def cleanup_deadline(deadline: Optional[float]) -> float:
    """The time.monotonic() deadline of the best-effort deletes after a call that ends by
    deadline (None: no deadline): the earlier of deadline + CLEANUP_GRACE_SECONDS and
    CLEANUP_MAX_SECONDS from now."""
    latest = time.monotonic() + CLEANUP_MAX_SECONDS
    return latest if deadline is None else min(latest, deadline + CLEANUP_GRACE_SECONDS)


def _call_kwargs(spec: ChannelSpec, deadline: Optional[float]) -> dict:
    return {"timeout": grpc_timeout(deadline), "metadata": spec.metadata or None,
            "wait_for_ready": spec.wait_for_ready or None}


class _Mapped:
    """Bytes [begin, end) of segment (a name under /dev/shm), as a memoryview:
    mapped alone, and with MAP_POPULATE, so the worker's page table is filled in
    one call rather than a fault per page."""

    def __init__(self, name: str, begin: int, end: int):
        start = begin - begin % mmap.ALLOCATIONGRANULARITY
        fd = os.open(os.path.join("/dev/shm", name), os.O_RDWR)
        try:
            self._map = mmap.mmap(fd, max(1, end - start), offset=start,
                                  flags=mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0))
        finally:
            os.close(fd)
        self.view = memoryview(self._map)[begin - start:end - start]

    def __enter__(self):
        return self.view

    def __exit__(self, *exc):
        self.view.release()
        try:
            self._map.close()
        except BufferError:  # a slice still held: unmapped when it goes
            pass


def _put(channel, spec: ChannelSpec, header: bytes, segment: str, begin: int, end: int,
         chunk: int, deadline: Optional[float]) -> bytes:
    """PutTensor of segment[begin:end]; the serialized PutTensorResponse."""
    from . import transfer
    from ._stubs import pb
    put = channel.stream_unary(_SERVICE + "PutTensor", request_serializer=transfer._identity,
                               response_deserializer=transfer._identity)
    with _Mapped(segment, begin, end) as data:
        def messages():
            yield pb.PutTensorRequest(header=pb.PutTensorHeader.FromString(header)) \
                .SerializeToString()
            for off in range(0, end - begin, chunk):
                yield transfer._chunk_message(data[off:min(off + chunk, end - begin)])
        return put(messages(), **_call_kwargs(spec, deadline))


def _get(channel, spec: ChannelSpec, tensor_id: str, offset: int, length: int, chunk: int,
         segment: str, deadline: Optional[float]) -> tuple:
    """A ranged GetTensor into segment[offset:offset + length]: ("ok", its
    CRC32C), or ("norange",) when the server ignored the range."""
    from . import _crc32c, transfer
    from ._stubs import pb
    get = channel.unary_stream(_SERVICE + "GetTensor",
                               request_serializer=pb.GetTensorRequest.SerializeToString,
                               response_deserializer=transfer._identity)
    request = pb.GetTensorRequest(id=tensor_id, chunk_bytes=chunk, offset=offset, length=length)
    stream = get(request, **_call_kwargs(spec, deadline))
    try:
        with _Mapped(segment, offset, offset + length) as dest:
            got, crc = 0, 0
            for i, message in enumerate(stream):
                head, data = transfer.decode_get_response(message)
                if i == 0 and head.offset != offset:
                    return ("norange",)
                if got + len(data) > length:
                    return ("error", "DATA_LOSS", f"GetTensor {tensor_id}: range [{offset}, "
                            f"{offset + length}) carried more than its {length} bytes")
                transfer.copy_into(dest[got:got + len(data)], data)
                crc = _crc32c.extend(crc, data)
                got += len(data)
                del data
        if got != length:
            return ("error", "DATA_LOSS", f"GetTensor {tensor_id}: range [{offset}, "
                    f"{offset + length}) carried {got} bytes, expected {length}")
        return ("ok", crc)
    finally:
        stream.cancel()
