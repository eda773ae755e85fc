"""Large tensors over several TCP connections at once, as the C++ client moves them
(client/src/parallel_transfer.cc).

Upload: a tensor of at least `Client.stream_threshold` bytes is split into up
to `Client.transfer_connections` parts of at least `transfer_part_min_bytes`;
StartUpload names the whole tensor's CRC32C, each part goes on a PutTensor
stream of its own connection with the CRC32C of the part alone, and
FinishUpload checks that the parts cover the tensor and that their CRCs
combine to the whole's. Smaller tensors (and a server without multi-part
uploads) go in one PutTensor stream.

Download: the first GetTensor stream asks for the whole tensor; when its first
message shows at least `stream_threshold` bytes, the other ranges come over
ranged GetTensor streams on the other connections and the first stream is
cancelled at the end of its range. Every range is written straight into one
numpy buffer and checksummed as it arrives; the combined CRC32C must match the
server's.

Zero copy where Python allows: chunks are sliced from the caller's array with
memoryview (one copy into each message, none of the whole tensor), received
chunks are copied once into the result (ctypes.memmove, without the GIL), and
neither direction goes through protobuf objects for the bulk bytes (_wire.py
writes and finds the chunk field on the wire, by the descriptor's field
number, and leaves the small fields to protobuf). grpc
releases the GIL while it waits on the network, so the parts of one tensor,
and the tensors of one call, move on threads at once; but grpcio copies every
sent message once and builds every received one with the GIL held (a bytes
object per received slice, about 64 KiB each, then one joined copy): per byte
one GIL-held copy up and two down, the part of a transfer no number of
threads spreads out.

build_ahead and place_behind (off by default, bench/python_transfer.py
--sweep times them) take this module's own copy of each chunk off a stream's
path: the next upload message is built on a helper thread while grpc sends
the one before, and a received chunk is copied and checksummed on one while
the stream waits for the next.

Thread safety: one Transfer per Client, shared by its threads.
"""
import concurrent.futures
import contextlib
import ctypes
import threading
import zlib
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import grpc
import numpy as np

from . import _crc32c, _procs, _wire, tensors
from ._stubs import pb
from .errors import DataLoss, Unimplemented, from_rpc_error

_SERVICE = "/linalgd.v1.Linalg/"


def _identity(b):
    return b


def _settled(fn):
    """fn as a job that returns the exception it raises instead of raising it."""
    def job():
        try:
            return fn()
        except Exception as e:  # noqa: BLE001  the caller raises it, once the others are in
            return e
    return job


def _schedule(jobs):
    """The order in which part jobs are handed to the threads (tests reorder them)."""
    return jobs


def split_ranges(total: int, max_parts: int, min_part: int) -> List[Tuple[int, int]]:
    """[0, total) in at most max_parts contiguous (begin, end) ranges of nearly
    equal size, none under min_part bytes (one range when total < 2 * min_part)."""
    by_size = total // min_part if min_part > 0 else total
    parts = max(1, min(max_parts, by_size))
    out, begin = [], 0
    for i in range(parts):
        size = total // parts + (1 if i < total % parts else 0)
        out.append((begin, begin + size))
        begin += size
    return out


def copy_into(dest, data):
    """dest[:len(data)] = data with the GIL released (ctypes.memmove), so the
    copy, and the page faults of a fresh destination, run while the other
    parts' threads hold the GIL (a memoryview assignment holds it throughout:
    on a 16-core host the downloads' copies and faults took turns). dest: a
    writable contiguous buffer of at least len(data) bytes."""
    n = len(data)
    if n > len(dest):
        raise ValueError(f"copy_into: {n} bytes do not fit in {len(dest)}")
    if n:
        ctypes.memmove(_wire.address(dest), _wire.address(data), n)


def _chunk_message(data):
    """A serialized PutTensorRequest{chunk: data}: one copy of data, made with
    the GIL released (_wire.BytesField.encode)."""
    return _wire.PUT_CHUNK.encode(data)


def decode_get_response(buf):
    """(the GetTensorResponse without its chunk, the chunk: a memoryview of buf)."""
    return _wire.GET_CHUNK.decode(buf)


def _built_ahead(builder, views):
    """_chunk_message of each view, in order, each built on the builder
    executor while the message before it is out with grpc: a stream asks for
    its next message only once the previous one was sent, so building it then
    (one copy of the chunk) leaves the connection idle for that long."""
    pending = None
    for view in views:
        following = builder.submit(_chunk_message, view)
        if pending is not None:
            yield pending.result()
        pending = following
    if pending is not None:
        yield pending.result()


class _Placed:
    """Chunks copied into dest at their offsets and checksummed in order: at
    once, or (helper: an executor) each on the helper while the caller
    receives the next; at most one is in flight, so the CRC32C chains."""

    def __init__(self, dest, helper):
        self._dest, self._helper = dest, helper
        self._crc, self._pending = 0, None

    def _place(self, crc, at, data):
        copy_into(self._dest[at:at + len(data)], data)
        return _crc32c.extend(crc, data)

    def add(self, at, data):
        if self._helper is None:
            self._crc = self._place(self._crc, at, data)
            return
        crc = self.crc()
        self._pending = self._helper.submit(self._place, crc, at, data)

    def crc(self):
        """The CRC32C of every chunk added, once they are all in place."""
        if self._pending is not None:
            self._crc, self._pending = self._pending.result(), None
        return self._crc


def _check_crc(tensor_id, info, ranges, crcs):
    """DataLoss unless the CRC32Cs of ranges, combined, are the server's."""
    crc = 0
    for (begin, end), part in zip(ranges, crcs):
        crc = _crc32c.combine(crc, part, end - begin)
    if info.crc32c and crc != info.crc32c:
        raise DataLoss(f"GetTensor {tensor_id}: CRC32C mismatch ({crc} received, the "
                       f"server says {info.crc32c})")


class _NoRanges(Exception):
    """The server ignored a GetTensor range (an older server)."""


class Transfer:
    """Parallel PutTensor / GetTensor for one Client (see the module docstring).

    channel: the client's channel (connection 0). channel_factory(i): a new
    channel with a TCP connection of its own, for connection i >= 1; None
    when the client was handed a channel (then everything uses connection 0).
    target: the server's address, for the client's transfer worker processes
    (_procs.py); None: parts move on threads only.
    """

    def __init__(self, client, channel, channel_factory: Optional[Callable[[int], grpc.Channel]],
                 target: Optional[str] = None):
        self._client = client
        self._factory = channel_factory
        self._target = target
        self._lock = threading.Lock()
        self._channels = {0: channel}  # guarded by _lock
        self._owned: List[Any] = []  # channels made here, closed by close(); guarded by _lock
        self._pool = None  # guarded by _lock
        self.multipart = True  # False once the server refused StartUpload
        self.ranged = True  # False once the server ignored a range
        # Upload streams build chunk message k + 1 on a helper thread while
        # grpc sends message k (see _built_ahead); off by default until measured.
        self.build_ahead = False
        # Downloads copy and checksum chunk k on a helper thread while they wait
        # for chunk k + 1 (see _Placed); off by default until measured.
        self.place_behind = False
        self._builders = None  # guarded by _lock

    # -- plumbing ------------------------------------------------------------

    def connections(self):
        return max(1, int(self._client.transfer_connections)) if self._factory else 1

    def _methods(self, index):
        with self._lock:
            channel = self._channels.get(index)
            if channel is None:
                channel = self._factory(index)
                self._channels[index] = channel
                self._owned.append(channel)
        return channel

    def _rpc(self, index, kind, name, ser, de):
        return getattr(self._methods(index), kind)(_SERVICE + name, request_serializer=ser,
                                                  response_deserializer=de)

    def _executor(self):
        """The transfer threads (parts, CRCs, unary calls of several tensors)."""
        return self._threads("_pool", "linalgd-transfer")

    def _builder(self):
        """The threads that build upload chunk messages ahead (build_ahead) and
        place downloaded chunks (place_behind)."""
        return self._threads("_builders", "linalgd-chunks")

    def _threads(self, attr, prefix):
        with self._lock:
            if getattr(self, attr) is None:
                setattr(self, attr, concurrent.futures.ThreadPoolExecutor(
                    max_workers=max(4, 2 * self.connections()), thread_name_prefix=prefix))
            return getattr(self, attr)

    def run_all(self, fns: Sequence[Callable[[], object]]):
        """Runs fns at once on the transfer threads; their results in order, or
        the first exception in order after all have finished."""
        if len(fns) == 1:
            return [fns[0]()]
        futures = [self._executor().submit(fn) for fn in fns]
        concurrent.futures.wait(futures)
        return [f.result() for f in futures]

    def _call_kwargs(self, deadline):
        return self._client._call_kwargs(deadline)

    def close(self):
        with self._lock:
            pools = (self._pool, self._builders)
            self._pool = self._builders = None
            owned, self._owned = self._owned, []
            self._channels = {0: self._channels[0]}
        for pool in pools:
            if pool is not None:
                pool.shutdown(wait=False)
        for channel in owned:
            channel.close()

    def _processes(self):
        """The client's transfer worker processes, or None (parts on threads)."""
        return None if self._target is None else self._client._transfer_pool()

    def parts_of(self, nbytes):
        c = self._client
        if not c._large(nbytes):
            return [(0, nbytes)]
        return split_ranges(nbytes, self.connections(), int(c.transfer_part_min_bytes))

    # -- upload --------------------------------------------------------------

    def _stream_put(self, index, header, raw, begin, end, deadline):
        chunk = max(1, int(self._client.chunk_bytes))

        views = (raw[off:min(off + chunk, end)] for off in range(begin, end, chunk))
        builder = self._builder() if self.build_ahead else None

        def messages():
            yield pb.PutTensorRequest(header=header).SerializeToString()
            if builder is None:
                yield from (_chunk_message(view) for view in views)
            else:
                yield from _built_ahead(builder, views)

        put = self._rpc(index, "stream_unary", "PutTensor", _identity,
                        pb.PutTensorResponse.FromString)
        try:
            return put(messages(), **self._call_kwargs(deadline))
        except grpc.RpcError as e:
            raise from_rpc_error(e, "PutTensor") from None

    def _unary(self, name, request, response_type, deadline):
        rpc = self._rpc(0, "unary_unary", name, type(request).SerializeToString,
                        response_type.FromString)
        try:
            return rpc(request, **self._call_kwargs(deadline))
        except grpc.RpcError as e:
            raise from_rpc_error(e, name) from None

    def _abort(self, upload_id, deadline):
        """AbortUpload by deadline (_procs.cleanup_deadline). It had none, so with
        wait_for_ready a server that was gone could hold the caller indefinitely."""
        try:
            self._unary("AbortUpload", pb.AbortUploadRequest(upload_id=upload_id),
                        pb.AbortUploadResponse, deadline)
        except Exception:  # noqa: BLE001  best effort; the upload's TTL covers it
            pass

    def put_many(self, items, deadline) -> List[pb.TensorInfo]:
        """Uploads every (header, raw) at once; raw is a flat uint8 memoryview of
        the tensor's little-endian bytes, header a PutTensorHeader without the
        checksum. Returns the server's TensorInfo of each, in order."""
        plans = [self.parts_of(len(raw)) if self.multipart else [(0, len(raw))]
                 for _, raw in items]
        jobs = [(j, r) for j, ranges in enumerate(plans) for r in ranges]
        crcs = self.run_all([self._crc_job(items[j][1], r, len(plans[j])) for j, r in jobs])
        part_crc = dict(zip(jobs, crcs))
        uploads: Dict[int, str] = {}  # upload ids by item, until each is finished
        try:
            with contextlib.ExitStack() as held:
                infos = self._put_parts(items, plans, part_crc, uploads, held, deadline)
            return infos
        finally:
            if uploads:
                cleanup = _procs.cleanup_deadline(deadline)
                for upload_id in uploads.values():
                    self._abort(upload_id, cleanup)

    def _put_parts(self, items, plans, part_crc, uploads, held, deadline):
        """put_many's uploads, once the parts' CRC32Cs are known; fills uploads
        {tensor index: upload id} while they are not finished. held: an
        ExitStack that keeps worker processes' segments until the end."""
        self._start_all(items, plans, part_crc, uploads, deadline)
        pool = self._processes() if uploads else None
        segments = self._segments_of(pool, items, uploads, held)
        sends = []
        for j, ranges in enumerate(plans):
            for i, r in enumerate(ranges):
                send = (self._send_job(items[j], r, i, uploads.get(j), part_crc[(j, r)],
                                       deadline) if j not in segments else
                        self._process_send_job(pool, segments[j], items[j][1], r,
                                               uploads[j], part_crc[(j, r)], deadline))
                sends.append(((j, r), send))
        order = _schedule(sends)
        results = dict(zip((key for key, _ in order),
                           self.run_all([_settled(fn) for _, fn in order])))
        stored = {j: results[(j, ranges[0])] for j, ranges in enumerate(plans)
                  if j not in uploads}
        stored = {j: r.tensor if not isinstance(r, Exception) else r for j, r in stored.items()}
        if not any(isinstance(r, Exception) for r in results.values()):
            stored.update(zip(list(uploads), self.run_all(
                [_settled(self._finish_job(uploads, j, deadline)) for j in list(uploads)])))
        failed = [r for r in [*results.values(), *stored.values()] if isinstance(r, Exception)]
        if failed:  # what did get stored is of no use without the rest
            self._delete_stored([t.id for t in stored.values() if not isinstance(t, Exception)],
                                _procs.cleanup_deadline(deadline))
            raise failed[0]
        return [stored[j] for j in range(len(plans))]

    def _delete_stored(self, ids, deadline):
        """Deletes ids, all by deadline (_procs.cleanup_deadline)."""
        for tensor_id in ids:
            try:
                self._unary("DeleteTensor", pb.DeleteTensorRequest(id=tensor_id),
                            pb.DeleteTensorResponse, deadline)
            except Exception:  # noqa: BLE001  best effort; the tensor's TTL covers it
                pass

    def _segments_of(self, pool, items, uploads, held):
        """With transfer worker processes (pool): {tensor index: a shared-memory
        segment for its bytes} of each tensor of several parts (uploads), each
        held (an ExitStack) by the pool's segment(); else {}."""
        if pool is None:
            return {}
        return {j: held.enter_context(pool.segment(len(items[j][1]))) for j in uploads}

    def _process_send_job(self, pool, segment, raw, r, upload_id, crc, deadline):
        """Part r of a multi-part upload: its bytes copied from raw into segment
        (on this part's thread, without the GIL, so the parts' copies overlap),
        then sent by a worker process."""
        def job():
            copy_into(segment.buf[r[0]:r[1]], raw[r[0]:r[1]])
            h = pb.PutTensorHeader(upload_id=upload_id, offset=r[0], total_bytes=r[1] - r[0],
                                   crc32c=crc[1])
            task = _procs.put_task(self._target, h.SerializeToString(), segment.name, r[0], r[1],
                                   max(1, int(self._client.chunk_bytes)), deadline)
            reply = pool.run(task, deadline)
            return pb.PutTensorResponse.FromString(_procs.result_of(reply, "PutTensor"))
        return job

    def _start_all(self, items, plans, part_crc, uploads, deadline):
        """StartUpload for every tensor of several parts, at once; fills
        uploads {tensor index: upload id}. A server without multi-part uploads
        gets those tensors in one stream each (plans and part_crc change to
        match). Raises the first error after every call has ended, with the
        uploads that did start in `uploads` (to be aborted)."""
        multi = [j for j, ranges in enumerate(plans) if len(ranges) > 1]

        def job(j):
            try:
                return self._start(items[j][0], plans[j], part_crc, j, deadline)
            except Exception as e:  # noqa: BLE001  raised below, once the others are in
                return e
        started = self.run_all([lambda j=j: job(j) for j in multi])
        for j, upload_id in zip(multi, started):
            if isinstance(upload_id, str):
                uploads[j] = upload_id
            elif upload_id is None:  # no multi-part uploads: one stream
                plans[j] = [(0, len(items[j][1]))]
                part_crc[(j, plans[j][0])] = None
        for error in started:
            if isinstance(error, Exception):
                raise error

    def _finish_job(self, uploads, j, deadline):
        def job():
            resp = self._unary("FinishUpload", pb.FinishUploadRequest(upload_id=uploads[j]),
                               pb.PutTensorResponse, deadline)
            del uploads[j]  # committed: nothing left to abort
            return resp.tensor
        return job

    def _crc_job(self, raw, r, nparts):
        def job():
            data = raw[r[0]:r[1]]
            if nparts == 1 and _crc32c.BACKEND == "numpy":
                return ("crc32", zlib.crc32(data) & 0xFFFFFFFF)  # the server takes CRC-32 too
            return ("crc32c", _crc32c.extend(0, data))
        return job

    def _start(self, header, ranges, part_crc, j, deadline):
        whole = 0
        for r in ranges:
            whole = _crc32c.combine(whole, part_crc[(j, r)][1], r[1] - r[0])
        start = pb.PutTensorHeader()
        start.CopyFrom(header)
        start.crc32c = whole
        try:
            return self._unary("StartUpload", pb.StartUploadRequest(header=start),
                               pb.StartUploadResponse, deadline).upload_id
        except Unimplemented:
            self.multipart = False
            return None

    def _send_job(self, item, r, index, upload_id, crc, deadline):
        header, raw = item

        def job():
            h = pb.PutTensorHeader()
            if upload_id is None:
                h.CopyFrom(header)
                kind, value = crc if crc is not None else ("crc32c", _crc32c.extend(0, raw))
                setattr(h, kind, value)
            else:
                h.upload_id, h.offset, h.total_bytes, h.crc32c = upload_id, r[0], r[1] - r[0], crc[1]
            return self._stream_put(index % self.connections(), h, raw, r[0], r[1], deadline)
        return job

    # -- download ------------------------------------------------------------

    def get(self, tensor_id, deadline) -> Tuple[pb.TensorInfo, np.ndarray]:
        """(the server's TensorInfo, a fresh uint8 array of the tensor's bytes)."""
        try:
            return self._get(tensor_id, deadline, self.ranged)
        except _NoRanges:
            self.ranged = False
            return self._get(tensor_id, deadline, False)

    def _stream(self, index, request, deadline):
        get = self._rpc(index, "unary_stream", "GetTensor", pb.GetTensorRequest.SerializeToString,
                        _identity)
        return get(request, **self._call_kwargs(deadline))

    def _get(self, tensor_id, deadline, ranged):
        chunk = int(self._client.chunk_bytes)
        leader = self._stream(0, pb.GetTensorRequest(id=tensor_id, chunk_bytes=chunk), deadline)
        try:
            head, first = decode_get_response(next(leader))
        except StopIteration:
            raise DataLoss(f"GetTensor {tensor_id}: the stream carried no message") from None
        except grpc.RpcError as e:
            raise from_rpc_error(e, "GetTensor") from None
        except DataLoss:
            leader.cancel()
            raise
        if not head.HasField("info"):
            leader.cancel()
            raise DataLoss(f"GetTensor {tensor_id}: the first message carries no info")
        info = head.info
        total = int(info.bytes)
        ranges = self.parts_of(total) if ranged else [(0, total)]
        pool = self._processes() if len(ranges) > 1 else None
        if pool is not None:
            leader.cancel()
            return info, self._get_by_processes(pool, tensor_id, info, first, ranges, chunk,
                                                deadline)
        raw = tensors.empty_bytes(total)
        dest = memoryview(raw)
        jobs = [lambda: self._read_leader(leader, first, dest[0:ranges[0][1]], len(ranges) == 1)]
        for i, r in enumerate(ranges[1:], start=1):
            jobs.append(self._range_job(tensor_id, i, r, chunk, dest, deadline))
        try:
            crcs = self.run_all(jobs)
        finally:
            leader.cancel()
        _check_crc(tensor_id, info, ranges, crcs)
        return info, raw

    def _get_by_processes(self, pool, tensor_id, info, first, ranges, chunk, deadline):
        """The tensor's bytes: the leader's first chunk (bytes [0, len(first))),
        then the rest of ranges, each fetched by a worker process into a
        shared-memory segment and copied out by its part's thread."""
        total = int(info.bytes)
        raw = tensors.empty_bytes(total)
        copy_into(raw, first)
        with pool.segment(total) as segment:
            rest = [(max(begin, len(first)), end) for begin, end in ranges if end > len(first)]
            crcs = self.run_all([self._process_range_job(pool, tensor_id, r, chunk, segment,
                                                         raw, deadline) for r in rest])
        if any(crc is None for crc in crcs):
            raise _NoRanges()
        _check_crc(tensor_id, info, [(0, len(first))] + rest, [_crc32c.extend(0, first)] + crcs)
        return raw

    def _process_range_job(self, pool, tensor_id, r, chunk, segment, raw, deadline):
        """Range r fetched by a worker into segment, then copied into raw
        (without the GIL, while the other ranges still move); its CRC32C, or
        None when the server ignored the range."""
        def job():
            task = _procs.get_task(self._target, tensor_id, r[0], r[1] - r[0], chunk,
                                   segment.name, deadline)
            crc = _procs.result_of(pool.run(task, deadline), "GetTensor")
            if crc is not None:
                copy_into(memoryview(raw)[r[0]:r[1]], segment.buf[r[0]:r[1]])
            return crc
        return job

    def _range_job(self, tensor_id, index, r, chunk, dest, deadline):
        def job():
            req = pb.GetTensorRequest(id=tensor_id, chunk_bytes=chunk, offset=r[0],
                                      length=r[1] - r[0])
            stream = self._stream(index, req, deadline)
            try:
                head, data = decode_get_response(next(stream))
                if head.offset != r[0]:
                    raise _NoRanges()
                return self._place_all(stream, data, dest[r[0]:r[1]], True, f"range {r}")
            except StopIteration:
                raise DataLoss(f"GetTensor {tensor_id}: range {r} came with no message") from None
            except grpc.RpcError as e:
                raise from_rpc_error(e, "GetTensor") from None
            finally:
                stream.cancel()
        return job

    def _read_leader(self, leader, first, dest, whole):
        try:
            return self._place_all(leader, first, dest, whole, "the first range")
        except grpc.RpcError as e:
            raise from_rpc_error(e, "GetTensor") from None

    def _place_all(self, stream, data, dest, to_end, what):
        """Writes data, then the stream's further chunks, into dest; returns their
        CRC32C. to_end: the stream must end exactly when dest is full; else it is
        read only until dest is full. With place_behind, chunk k is copied and
        checksummed on a helper thread while this one waits for chunk k + 1."""
        helper = self._builder() if self.place_behind else None
        placed = _Placed(dest, helper)
        got, size = 0, len(dest)
        while True:
            n = len(data)
            if not to_end and got + n > size:  # the first stream's last chunk runs past its range
                data, n = data[:size - got], size - got
            if got + n > size:
                raise DataLoss(f"GetTensor: {what} carried more than its {size} bytes")
            placed.add(got, data)
            got += n
            if got == size and not to_end:
                return placed.crc()
            try:
                data = decode_get_response(next(stream))[1]
            except StopIteration:
                break
        if got != size:
            raise DataLoss(f"GetTensor: {what} carried {got} bytes, expected {size}")
        return placed.crc()
