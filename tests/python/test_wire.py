"""The chunk messages' wire format (linalgd/_wire.py) against protobuf's own
serialization and parse; no server."""
import warnings

import numpy as np
import pytest
from google.protobuf.message import DecodeError

import linalgd
from linalgd import _wire
from linalgd._stubs import pb

EDGE_SIZES = [0, 1, 127, 128, 16383, 16384, (2 << 20) + 1]


def _random_bytes(n, seed):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


def _key(number, wire):
    return _wire.varint(number << 3 | wire)


def _length_delimited(number, data):
    return _key(number, _wire.LENGTH_DELIMITED) + _wire.varint(len(data)) + data


def test_field_numbers_and_wire_types_come_from_the_descriptor():
    put = pb.PutTensorRequest.DESCRIPTOR.fields_by_name["chunk"]
    get = pb.GetTensorResponse.DESCRIPTOR.fields_by_name["chunk"]
    assert _wire.PUT_CHUNK.number == put.number and _wire.GET_CHUNK.number == get.number
    assert _wire.PUT_CHUNK.tag == _key(put.number, _wire.LENGTH_DELIMITED)
    with pytest.raises(TypeError, match="offset is not a bytes field"):
        _wire.BytesField(pb.GetTensorResponse, "offset")


@pytest.mark.parametrize("n", [1, 127, 128, 300, 16383, 16384, 2097151, 2097152, 1 << 40])
def test_varint_is_protobufs(n):
    assert _wire.varint(0) == b"\x00"
    # int64 field 20 of GetTensorResponse: key, then protobuf's varint of n
    encoded = pb.GetTensorResponse(offset=n).SerializeToString()
    assert encoded == _key(20, _wire.VARINT) + _wire.varint(n)


@pytest.mark.parametrize("n", EDGE_SIZES)
def test_chunk_encoding_is_byte_identical_to_protobufs(n):
    data = _random_bytes(n + 5, n)
    part = memoryview(np.frombuffer(data, np.uint8))[5:]  # a slice at an offset, read-only
    encoded = _wire.PUT_CHUNK.encode(part)
    assert isinstance(encoded, bytes)
    assert encoded == pb.PutTensorRequest(chunk=data[5:]).SerializeToString()
    assert _wire.PUT_CHUNK.encode(data[5:]) == encoded  # from bytes too


def test_chunk_encoding_of_a_writable_float_view():
    x = np.arange(1000, dtype=np.float64)
    view = memoryview(x)[3:517]  # format "d", writable
    want = pb.PutTensorRequest(chunk=x[3:517].tobytes()).SerializeToString()
    assert _wire.PUT_CHUNK.encode(view) == want


def test_encoding_with_the_small_fields_of_a_message():
    data = _random_bytes(1000, 1)
    info = pb.TensorInfo(id="abc", bytes=1000, crc32c=7)
    # GetTensorResponse has offset (20) above chunk (2): protobuf orders by
    # number, this appends; both parse to the same message
    encoded = _wire.GET_CHUNK.encode(data, pb.GetTensorResponse(info=info, offset=4096))
    assert pb.GetTensorResponse.FromString(encoded) == pb.GetTensorResponse(
        info=info, chunk=data, offset=4096)
    # with nothing numbered above the bulk field the bytes are protobuf's
    assert _wire.GET_CHUNK.encode(data, pb.GetTensorResponse(info=info)) == \
        pb.GetTensorResponse(info=info, chunk=data).SerializeToString()


def _same_as_protobuf(buf):
    """decode(buf) gives what protobuf's parse does; returns the chunk."""
    message, chunk = _wire.GET_CHUNK.decode(buf)
    want = pb.GetTensorResponse.FromString(buf)
    assert isinstance(chunk, memoryview) and bytes(chunk) == want.chunk
    assert message.chunk == b""
    want.ClearField("chunk")
    assert message == want
    assert message.SerializeToString() == want.SerializeToString()  # unknown fields kept too
    return chunk


@pytest.mark.parametrize("n", EDGE_SIZES)
def test_decoding_protobufs_messages(n):
    data = _random_bytes(n, n + 1)
    info = pb.TensorInfo(id="0123", dtype=pb.DTYPE_F32, shape=[3, 5], bytes=60, crc32c=99)
    for message in (pb.GetTensorResponse(chunk=data),
                    pb.GetTensorResponse(info=info, chunk=data, offset=12345)):
        buf = message.SerializeToString()
        chunk = _same_as_protobuf(buf)
        assert chunk.obj is buf  # a view of the received buffer, no copy


def test_decoding_fields_in_any_order_unknown_fields_and_repeats():
    data, other = _random_bytes(5000, 2), _random_bytes(300, 3)
    info_a = pb.TensorInfo(id="a", shape=[2], bytes=8).SerializeToString()
    info_b = pb.TensorInfo(crc32c=5, shape=[4]).SerializeToString()
    unknown = [_key(7, _wire.VARINT) + _wire.varint(1 << 35),
               _key(8, _wire.FIXED64) + bytes(range(8)),
               _key(9, _wire.FIXED32) + b"\x01\x02\x03\x04",
               _length_delimited(10, b"an unknown bytes field"),
               _key(11, _wire.START_GROUP) + _key(1, _wire.VARINT) + b"\x05"
               + _key(12, _wire.START_GROUP) + _key(12, _wire.END_GROUP)
               + _key(11, _wire.END_GROUP)]
    offset = _key(20, _wire.VARINT) + _wire.varint(777)
    cases = [
        offset + _length_delimited(2, data) + _length_delimited(1, info_a),  # reversed
        _length_delimited(2, other) + offset + _length_delimited(2, data),  # repeated: last wins
        _length_delimited(2, data) + _length_delimited(2, b""),  # an empty last one wins too
        _length_delimited(1, info_a) + _length_delimited(2, data) + _length_delimited(1, info_b),
        b"".join(unknown) + _length_delimited(2, data) + b"".join(reversed(unknown)) + offset,
        _key(2, _wire.VARINT) + b"\x07" + _length_delimited(2, data),  # chunk's number, wrong type
        b"".join(unknown),  # no chunk at all
        b"",
    ]
    for buf in cases:
        _same_as_protobuf(buf)
    message, chunk = _wire.GET_CHUNK.decode(cases[3])
    assert message.info.id == "a" and message.info.crc32c == 5  # merged, as protobuf merges
    assert list(message.info.shape) == [2, 4]
    assert bytes(_wire.GET_CHUNK.decode(cases[1])[1]) == data


def _protobuf_refuses(buf):
    """protobuf raises DecodeError, or (4.21's C++ parser, an end-group tag or
    field 0 at the top) warns that it stopped early."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            pb.GetTensorResponse.FromString(buf)
        except DecodeError:
            return True
    return any(issubclass(w.category, RuntimeWarning) for w in seen)


@pytest.mark.parametrize("buf,match", [
    (_key(2, 2) + b"\x80", r"GetTensorResponse\.chunk \(field 2\): the varint of the length at "
                           r"byte 1 of the 2-byte message is truncated"),
    (_key(2, 2) + _wire.varint(1000) + bytes(10),
     r"GetTensorResponse\.chunk \(field 2\): 1000 bytes at byte 3 run past the end of the "
     r"13-byte message"),
    (_key(20, 0) + b"\xff" * 11, r"GetTensorResponse\.offset \(field 20\): the varint of the "
                                 r"value at byte 2 of the 13-byte message runs over 10 bytes"),
    (_key(20, 0) + b"\xff\xff", r"GetTensorResponse\.offset \(field 20\): the varint of the value"
                                r" at byte 2 of the 4-byte message is truncated"),
    (b"\x80", r"GetTensorResponse: the varint of a field key at byte 0 of the 1-byte message is "
              r"truncated"),
    (_length_delimited(1, b"ab")[:-1], r"GetTensorResponse\.info \(field 1\): 2 bytes at byte 2 "
                                       r"run past the end of the 3-byte message"),
    (_key(8, _wire.FIXED64) + bytes(7), r"GetTensorResponse unknown field \(field 8\): 8 bytes "
                                        r"at byte 1 run past the end of the 8-byte message"),
    (_key(9, _wire.FIXED32) + bytes(3), r"unknown field \(field 9\): 4 bytes at byte 1 run past"),
    (_key(5, 6), r"unknown field \(field 5\): wire type 6 at byte 1 of the 1-byte message is "
                 r"not a field's"),
    (_key(5, _wire.END_GROUP), r"wire type 4 at byte 1"),
    (_key(5, _wire.START_GROUP) + _key(6, _wire.END_GROUP),
     r"unknown field \(field 5\): the group ends with field 6's end"),
    (_key(5, _wire.START_GROUP) + _key(1, 0) + b"\x01", r"the group is not ended"),
    (_key(0, 0) + b"\x01", r"field number 0 at byte 1"),
    (_length_delimited(1, b"\x0a\x05ab"), r"GetTensorResponse: the fields other than "
                                          r"GetTensorResponse\.chunk \(field 2\) do not parse"),
])
def test_malformed_buffers_raise_data_loss_naming_the_field(buf, match):
    assert _protobuf_refuses(buf)
    with pytest.raises(linalgd.DataLoss, match=match):
        _wire.GET_CHUNK.decode(buf)


def test_every_truncation_of_a_message_is_refused_or_parses_as_protobuf():
    info = pb.TensorInfo(id="x" * 40, shape=[300, 200], bytes=480000, crc32c=1234567)
    buf = pb.GetTensorResponse(info=info, chunk=_random_bytes(200, 4), offset=1 << 33) \
        .SerializeToString()
    for cut in range(len(buf)):
        prefix = buf[:cut]
        if _protobuf_refuses(prefix):  # so must decode
            with pytest.raises(linalgd.DataLoss):
                _wire.GET_CHUNK.decode(prefix)
            continue
        want = pb.GetTensorResponse.FromString(prefix)
        message, chunk = _wire.GET_CHUNK.decode(prefix)
        assert bytes(chunk) == want.chunk
