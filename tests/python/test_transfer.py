"""Parallel multi-part uploads and ranged downloads of the Python client (transfer.py)."""
import ctypes
import random
import threading
import zlib

import numpy as np
import pytest

import linalgd
from linalgd import _crc32c, _wire, transfer


@pytest.fixture
def small_parts(server):
    """A client that streams from 64 KiB on, in parts of at least 16 KiB, in
    chunks of 5000 bytes (not a divisor of any part), over 4 connections."""
    with linalgd.Client(server.target, timeout=30.0) as c:
        c.stream_threshold = 64 << 10
        c.transfer_part_min_bytes = 16 << 10
        c.transfer_connections = 4
        c.chunk_bytes = 5000
        yield c


@pytest.fixture
def calls(monkeypatch):
    """Records the part uploads (connection, offset, bytes) and ranged downloads."""
    seen = {"parts": [], "ranges": []}
    put, rng = transfer.Transfer._stream_put, transfer.Transfer._range_job

    def stream_put(self, index, header, raw, begin, end, deadline):
        if header.upload_id:
            seen["parts"].append((index, header.offset, header.total_bytes))
        return put(self, index, header, raw, begin, end, deadline)

    def range_job(self, tensor_id, index, r, chunk, dest, deadline):
        seen["ranges"].append((index, r))
        return rng(self, tensor_id, index, r, chunk, dest, deadline)

    monkeypatch.setattr(transfer.Transfer, "_stream_put", stream_put)
    monkeypatch.setattr(transfer.Transfer, "_range_job", range_job)
    return seen


def test_crc32c_known_value_and_combine():
    assert _crc32c.crc32c(b"123456789") == 0xE3069283  # the CRC32C check value
    data = np.random.default_rng(0).integers(0, 256, 100_003, dtype=np.uint8).tobytes()
    whole = _crc32c.crc32c(data)
    assert _crc32c._extend_numpy(0, data) == whole  # the fallback agrees with the backend
    for cut in (0, 1, 63, 64, 4097, len(data)):
        a, b = data[:cut], data[cut:]
        assert _crc32c.combine(_crc32c.crc32c(a), _crc32c.crc32c(b), len(b)) == whole
        assert _crc32c.extend(_crc32c.crc32c(a), b) == whole


def test_crc32c_backends_agree():
    data = np.random.default_rng(7).integers(0, 256, 300_001, dtype=np.uint8)
    want = _crc32c._extend_numpy(0, memoryview(data))
    library, path = _crc32c._load_library()
    if path is not None:  # the repository's liblinalgd_crc32c.so (a build's lib/)
        assert library(0, memoryview(data)) == want
        assert library(_crc32c.crc32c(data[:5]), memoryview(data[5:])) == want
    crc32c = pytest.importorskip("crc32c")
    assert crc32c.crc32c(data.tobytes()) == want


def test_crc32c_library_is_called_without_the_gil():
    """ctypes releases the GIL around a CDLL function's call and keeps it for a
    PyDLL one (FUNCFLAG_PYTHONAPI): the parts' CRC32Cs run on several cores."""
    library, path = _crc32c._load_library()
    if path is None:
        pytest.skip("no liblinalgd_crc32c.so (build the repository's common/ library)")
    assert not library.function._flags_ & ctypes._FUNCFLAG_PYTHONAPI
    assert ctypes.pythonapi.PyBytes_FromStringAndSize._flags_ & ctypes._FUNCFLAG_PYTHONAPI


def test_split_ranges_cover_the_tensor():
    assert transfer.split_ranges(10, 4, 0) == [(0, 3), (3, 6), (6, 8), (8, 10)]
    assert transfer.split_ranges(100, 8, 40) == [(0, 50), (50, 100)]
    assert transfer.split_ranges(30, 8, 40) == [(0, 30)]
    assert transfer.split_ranges(0, 8, 40) == [(0, 0)]


@pytest.mark.parametrize("dtype,shape", [(np.float16, (333, 257)), (np.float32, (1001, 97)),
                                         (np.float64, (3, 123, 517)), (np.float64, (70001,))])
def test_parallel_round_trip_is_byte_exact(small_parts, calls, dtype, shape):
    x = np.random.default_rng(1).standard_normal(shape).astype(dtype)
    x.reshape(-1)[::997] = np.nan  # payload bits, not values: NaNs must survive too
    assert x.nbytes % small_parts.transfer_part_min_bytes != 0
    t = small_parts.put(x)
    back = small_parts.get(t)
    assert back.dtype == x.dtype and back.shape == x.shape
    assert back.tobytes() == x.tobytes()
    parts = sorted(calls["parts"])
    assert len(parts) == 4 and {p[0] for p in parts} == {0, 1, 2, 3}
    assert sum(p[2] for p in parts) == x.nbytes
    assert [i for i, _ in calls["ranges"]] == [1, 2, 3]
    t.delete()


def test_non_contiguous_and_big_endian_inputs(small_parts):
    x = np.arange(300 * 200, dtype=">f8").reshape(300, 200)[:, ::2]
    t = small_parts.put(x)
    np.testing.assert_array_equal(t.get(), x)
    t.delete()


def _reversed_run_all(self, fns):
    """Runs the jobs one at a time, last first; results in the jobs' order."""
    out = [fn() for fn in reversed(fns)]
    return out[::-1]


def test_parts_in_any_order(small_parts, calls, monkeypatch):
    x = np.random.default_rng(2).standard_normal((257, 301))
    monkeypatch.setattr(transfer.Transfer, "run_all", _reversed_run_all)
    t = small_parts.put(x)
    offsets = [p[1] for p in calls["parts"]]
    assert offsets == sorted(offsets, reverse=True) and len(offsets) == 4
    back = small_parts.get(t)  # the ranges are read last first too
    assert back.tobytes() == x.tobytes()
    monkeypatch.undo()
    shuffled = random.Random(3)  # and shuffled, on the threads
    monkeypatch.setattr(transfer, "_schedule", lambda jobs: shuffled.sample(jobs, len(jobs)))
    t2 = small_parts.put(x)
    np.testing.assert_array_equal(small_parts.get(t2), x)


def test_corrupted_part_is_data_loss_and_the_upload_is_aborted(small_parts, monkeypatch):
    x = np.random.default_rng(4).standard_normal((200, 300))
    real = transfer._chunk_message
    hits = []

    def corrupt(data):
        if not hits:  # flip one byte of the first chunk sent, after its CRC was taken
            hits.append(1)
            data = bytes(data)
            data = bytes([data[0] ^ 1]) + data[1:]
        return real(data)

    aborted = []
    abort = transfer.Transfer._abort
    monkeypatch.setattr(transfer, "_chunk_message", corrupt)
    monkeypatch.setattr(transfer.Transfer, "_abort",
                        lambda self, upload_id, deadline: (aborted.append(upload_id),
                                                           abort(self, upload_id, deadline)))
    before = {t.id for t in small_parts.list_tensors()}
    with pytest.raises(linalgd.DataLoss, match="CRC32C of the part"):
        small_parts.put(x)
    assert len(aborted) == 1
    monkeypatch.undo()
    assert {t.id for t in small_parts.list_tensors()} == before
    t = small_parts.put(x)  # the client is still usable
    np.testing.assert_array_equal(t.get(), x)
    t.delete()


def test_failing_part_surfaces_its_error(small_parts, monkeypatch):
    x = np.ones((200, 300))
    put = transfer.Transfer._stream_put

    def failing(self, index, header, raw, begin, end, deadline):
        if header.upload_id and header.offset > 0:
            header.offset += 8  # overlaps the next part or runs past the end
        return put(self, index, header, raw, begin, end, deadline)

    monkeypatch.setattr(transfer.Transfer, "_stream_put", failing)
    with pytest.raises(linalgd.LinalgdError) as e:
        small_parts.put(x)
    assert e.value.method == "PutTensor" or e.value.method == "FinishUpload"


@pytest.mark.parametrize("place_behind", [False, True])
def test_corrupted_download_is_data_loss(small_parts, monkeypatch, place_behind):
    small_parts._transfer.place_behind = place_behind
    x = np.random.default_rng(5).standard_normal((200, 300))
    t = small_parts.put(x)
    real = transfer.decode_get_response
    flipped = []

    def corrupt(buf):
        head, chunk = real(buf)
        if len(chunk) and not flipped:
            flipped.append(1)
            chunk = memoryview(bytes([chunk[0] ^ 0x80]) + bytes(chunk[1:]))
        return head, chunk

    monkeypatch.setattr(transfer, "decode_get_response", corrupt)
    with pytest.raises(linalgd.DataLoss, match="CRC32C mismatch"):
        t.get()
    monkeypatch.undo()
    np.testing.assert_array_equal(t.get(), x)


def test_single_stream_below_the_threshold(small_parts, calls):
    x = np.arange(1000, dtype=np.float32).reshape(10, 100)  # 4000 bytes
    t = small_parts.put(x)
    np.testing.assert_array_equal(t.get(), x)
    assert calls["parts"] == [] and calls["ranges"] == []


def test_large_matmul_and_solve_operands_go_in_parts(small_parts, calls):
    before = {t.id for t in small_parts.list_tensors()}
    rng = np.random.default_rng(6)
    a = rng.standard_normal((150, 160))  # 192000 bytes: parts
    b = rng.standard_normal((160, 170))
    out = small_parts.matmul(a, b)
    np.testing.assert_allclose(out, a @ b, rtol=1e-12, atol=1e-12)
    starts = {p[2] for p in calls["parts"] if p[1] == 0}
    assert len(calls["parts"]) == 8 and len(starts) == 2  # 4 parts of each operand
    assert len(calls["ranges"]) == 3  # the result came back in 4 ranges
    sq = rng.standard_normal((130, 130)) + 130 * np.eye(130)
    rhs = rng.standard_normal((130, 70))
    np.testing.assert_allclose(small_parts.solve(sq, rhs), np.linalg.solve(sq, rhs),
                               rtol=1e-10, atol=1e-12)
    assert {t.id for t in small_parts.list_tensors()} == before  # temporaries deleted


def test_crc32_fallback_for_a_single_stream(small_parts, monkeypatch):
    """Without a native CRC32C a single-stream upload is checked with zlib's CRC-32."""
    monkeypatch.setattr(_crc32c, "BACKEND", "numpy")
    x = np.arange(12.0).reshape(3, 4)
    headers = []
    put = transfer.Transfer._stream_put

    def spy(self, index, header, raw, begin, end, deadline):
        headers.append(header)
        return put(self, index, header, raw, begin, end, deadline)

    monkeypatch.setattr(transfer.Transfer, "_stream_put", spy)
    t = small_parts.put(x)
    assert headers[0].HasField("crc32") and headers[0].crc32 == zlib.crc32(x.tobytes())
    np.testing.assert_array_equal(t.get(), x)


def test_copy_into_writes_at_the_destination_and_refuses_overflow():
    dest = np.zeros(16, np.uint8)
    src = bytes(range(1, 7))
    transfer.copy_into(memoryview(dest)[5:], memoryview(src)[1:])  # a read-only source too
    assert dest.tolist() == [0] * 5 + [2, 3, 4, 5, 6] + [0] * 6
    transfer.copy_into(memoryview(dest)[0:0], b"")
    with pytest.raises(ValueError, match="7 bytes do not fit in 6"):
        transfer.copy_into(memoryview(dest)[10:], bytes(7))


def test_download_is_written_in_place_without_the_gil(small_parts, monkeypatch):
    """Every received chunk goes into the result's own buffer once, through
    copy_into (ctypes.memmove, which releases the GIL), and the result is
    that buffer, not a copy of it."""
    x = np.random.default_rng(6).standard_normal((300, 200))
    t = small_parts.put(x)
    buffers, copied = [], []
    empty, copy = linalgd.tensors.empty_bytes, transfer.copy_into
    monkeypatch.setattr(linalgd.tensors, "empty_bytes",
                        lambda n: buffers.append(empty(n)) or buffers[-1])
    monkeypatch.setattr(transfer, "copy_into",
                        lambda dest, data: (copied.append(len(data)), copy(dest, data)))
    back = t.get()
    np.testing.assert_array_equal(back, x)
    assert len(buffers) == 1 and np.shares_memory(back, buffers[0])
    assert sum(copied) == x.nbytes and len(copied) > 4  # chunks of 5000 bytes over 4 ranges


def test_upload_chunks_are_views_of_the_callers_array(small_parts, monkeypatch):
    x = np.random.default_rng(7).standard_normal((300, 200))
    real, views = transfer._chunk_message, []

    def chunk_message(data):
        views.append(np.shares_memory(np.frombuffer(data, np.uint8), x))
        return real(data)

    monkeypatch.setattr(transfer, "_chunk_message", chunk_message)
    t = small_parts.put(x)
    assert views and all(views)
    np.testing.assert_array_equal(t.get(), x)


@pytest.mark.parametrize("n", [0, 1, 127, 128, 5000, 1 << 20])
def test_chunk_message_is_a_put_tensor_request(n):
    data = np.random.default_rng(n).integers(0, 256, n + 3, dtype=np.uint8)
    part = memoryview(data)[3:]  # a slice at an offset, as the uploads send
    msg = transfer._chunk_message(part)
    assert isinstance(msg, bytes)
    parsed = linalgd._stubs.pb.PutTensorRequest.FromString(msg)
    assert parsed.WhichOneof("part") == "chunk"
    assert parsed.chunk == data[3:].tobytes()
    assert msg == linalgd._stubs.pb.PutTensorRequest(chunk=data[3:].tobytes()).SerializeToString()


def _items(*arrays):
    return [linalgd.store.put_item(*linalgd.tensors.to_numpy(x, "x")) for x in arrays]


def test_several_uploads_start_and_finish_at_once(small_parts, monkeypatch):
    """StartUpload and FinishUpload of the tensors of one call are in flight
    together (each waits at a barrier for the other), not one after another."""
    xs = [np.random.default_rng(s).standard_normal((150, 200)) for s in (11, 12)]
    barriers = {name: threading.Barrier(2, timeout=20.0) for name in ("StartUpload",
                                                                      "FinishUpload")}
    unary = transfer.Transfer._unary

    def meeting(self, name, request, response_type, deadline):
        if name in barriers:
            barriers[name].wait()  # broken (an error) unless both calls get here
        return unary(self, name, request, response_type, deadline)

    monkeypatch.setattr(transfer.Transfer, "_unary", meeting)
    infos = small_parts._transfer.put_many(_items(*xs), None)
    monkeypatch.undo()
    for x, info in zip(xs, infos):
        np.testing.assert_array_equal(small_parts.get(info.id), x)
        small_parts.delete(info.id)


def test_a_failing_start_aborts_the_uploads_that_started(small_parts, monkeypatch):
    xs = [np.random.default_rng(s).standard_normal((150, 200)) for s in (13, 14)]
    unary, abort = transfer.Transfer._unary, transfer.Transfer._abort
    starts, aborted = [], []

    def second_start_fails(self, name, request, response_type, deadline):
        if name == "StartUpload":
            with lock:
                starts.append(request.header.total_bytes)
                if len(starts) == 2:
                    raise linalgd.Unavailable("StartUpload: refused by the test", method="StartUpload")
        return unary(self, name, request, response_type, deadline)

    lock = threading.Lock()
    monkeypatch.setattr(transfer.Transfer, "_unary", second_start_fails)
    monkeypatch.setattr(transfer.Transfer, "_abort",
                        lambda self, upload_id, deadline: (aborted.append(upload_id),
                                                           abort(self, upload_id, deadline)))
    before = {t.id for t in small_parts.list_tensors()}
    with pytest.raises(linalgd.Unavailable, match="refused by the test"):
        small_parts._transfer.put_many(_items(*xs), None)
    assert len(starts) == 2 and len(aborted) == 1  # the one that started, and only it
    monkeypatch.undo()
    assert {t.id for t in small_parts.list_tensors()} == before


def test_build_ahead_sends_the_same_bytes_from_helper_threads(small_parts, monkeypatch):
    small_parts._transfer.build_ahead = True
    x = np.random.default_rng(15).standard_normal((257, 301))
    real, built = transfer._chunk_message, []

    def chunk_message(data, *rest):
        built.append((threading.current_thread().name, len(data)))
        return real(data, *rest)

    monkeypatch.setattr(transfer, "_chunk_message", chunk_message)
    t = small_parts.put(x)
    assert sum(n for _, n in built) == x.nbytes
    assert len(built) > 4 and all(name.startswith("linalgd-chunks") for name, _ in built)
    monkeypatch.undo()
    assert small_parts.get(t).tobytes() == x.tobytes()


def test_build_ahead_corrupted_chunk_is_data_loss(small_parts, monkeypatch):
    small_parts._transfer.build_ahead = True
    x = np.random.default_rng(16).standard_normal((200, 300))
    real, hits = transfer._chunk_message, []

    def corrupt(data, *rest):
        if not hits:
            hits.append(1)
            data = bytes(data)
            data = bytes([data[0] ^ 1]) + data[1:]
        return real(data, *rest)

    monkeypatch.setattr(transfer, "_chunk_message", corrupt)
    with pytest.raises(linalgd.DataLoss, match="CRC32C of the part"):
        small_parts.put(x)
    monkeypatch.undo()
    np.testing.assert_array_equal(small_parts.put(x).get(), x)


def test_place_behind_writes_every_chunk_from_helper_threads(small_parts, monkeypatch):
    x = np.random.default_rng(17).standard_normal((257, 301))
    t = small_parts.put(x)
    small_parts._transfer.place_behind = True
    real, placed = transfer.copy_into, []

    def copy_into(dest, data):
        placed.append((threading.current_thread().name, len(data)))
        real(dest, data)

    monkeypatch.setattr(transfer, "copy_into", copy_into)
    assert small_parts.get(t).tobytes() == x.tobytes()
    assert sum(n for _, n in placed) == x.nbytes
    assert len(placed) > 4 and all(name.startswith("linalgd-chunks") for name, _ in placed)


def test_default_stream_threshold_is_the_cpp_clients(client, monkeypatch):
    """4 MiB, as ClientOptions.stream_threshold_bytes: an operand of 4 MiB is
    uploaded before the call, one a row smaller travels inline."""
    assert client.stream_threshold == 4 << 20
    uploaded = []
    put_many = transfer.Transfer.put_many

    def record(self, items, deadline):
        uploaded.extend(len(raw) for _, raw in items)
        return put_many(self, items, deadline)

    monkeypatch.setattr(transfer.Transfer, "put_many", record)
    b = np.ones((1024, 2), dtype=np.float32)
    big = np.ones((1024, 1024), dtype=np.float32)  # 4 MiB
    np.testing.assert_array_equal(client.matmul(big, b), big @ b)
    assert uploaded == [4 << 20]
    uploaded.clear()
    small = big[:1023]
    np.testing.assert_array_equal(client.matmul(small, b), small @ b)
    assert uploaded == []


@pytest.mark.parametrize("n", [1, 127, 128, 16383, 16384, (2 << 20) + 1])
def test_chunks_of_the_wire_formats_edge_sizes_round_trip(small_parts, n):
    """Messages whose chunk is n bytes (a length varint of one, two or three
    bytes at its edges), then a shorter last one, up and down, in parts."""
    small_parts.chunk_bytes = n
    nbytes = (3 * n + 6) // 2 * 2  # three chunks and a few bytes, in whole f16 elements
    x = np.frombuffer(np.random.default_rng(n).bytes(nbytes), np.float16)
    t = small_parts.put(x)
    assert small_parts.get(t).tobytes() == x.tobytes()
    t.delete()


def test_empty_tensor_round_trips(small_parts):
    x = np.zeros((0, 7), np.float32)
    t = small_parts.put(x)
    back = small_parts.get(t)
    assert back.shape == (0, 7) and back.dtype == np.float32
    t.delete()


@pytest.mark.parametrize("cut", ["varint", "length"])
def test_malformed_download_message_is_data_loss_naming_the_field(small_parts, monkeypatch, cut):
    x = np.random.default_rng(18).standard_normal((200, 300))
    t = small_parts.put(x)
    stream = transfer.Transfer._stream

    class Truncated:
        """The stream's second message cut inside the chunk's length varint, or
        its length left pointing past the end."""

        def __init__(self, it):
            self._it, self._seen = it, 0
            self.cancel = it.cancel

        def __iter__(self):
            return self

        def __next__(self):
            message = next(self._it)
            self._seen += 1
            if self._seen == 2:
                at = message.index(_wire.GET_CHUNK.tag) + 1
                message = message[:at + 1] if cut == "varint" else message[:-1]
            return message

    monkeypatch.setattr(transfer.Transfer, "_stream",
                        lambda self, *a: Truncated(stream(self, *a)))
    why = "is truncated" if cut == "varint" else "run past the end"
    with pytest.raises(linalgd.DataLoss, match=rf"GetTensorResponse\.chunk \(field 2\).*{why}"):
        t.get()
    monkeypatch.undo()
    np.testing.assert_array_equal(t.get(), x)  # the client is still usable
    t.delete()
