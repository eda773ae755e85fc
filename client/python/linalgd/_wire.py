"""Protobuf wire format for the bulk bytes of PutTensor and GetTensor messages.

A chunk message is a small protobuf message plus one large bytes field. grpc
python takes and hands back serialized messages as bytes and copies them with
the GIL held (once per sent byte; per received byte once or more, by grpcio
version); building a PutTensorRequest or parsing a GetTensorResponse through
protobuf would add GIL-held copies of the bulk bytes on top (the message
construction, SerializeToString; on download the parse into a bytes field).
BytesField avoids those:

- encode(data, message) is message.SerializeToString() (the small fields, by
  protobuf) followed by the bulk field as the wire format has it (key, varint
  length, the bytes), in one bytes object filled by ctypes.memmove, which
  releases the GIL: the chunk's one copy on this side runs while other threads
  hold it. It is byte-identical to protobuf's serialization of the message with
  the field set when no field of `message` is numbered above the bulk field
  (PutTensorRequest.chunk has no other field in its message: always).
- decode(buf) finds the bulk field in a received message, hands it back as a
  memoryview of buf (no copy) and has protobuf parse everything else (the other
  fields, unknown ones included, a few bytes): the result is what protobuf's
  own parse gives (the last occurrence of the bulk field wins, the others merge
  as protobuf merges them), except that the bulk bytes stay out of the message.
  A malformed buffer (a truncated or overlong varint, a length past the end,
  an invalid wire type or field number) raises DataLoss naming the field and
  the numbers; nothing is read outside buf.

The field number and wire type come from the generated descriptor.
"""
import ctypes
from typing import Tuple

import numpy as np
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError

from ._stubs import pb
from .errors import DataLoss

# Wire types (protobuf encoding), by the descriptor's field type.
VARINT, FIXED64, LENGTH_DELIMITED, START_GROUP, END_GROUP, FIXED32 = 0, 1, 2, 3, 4, 5
_WIRE_TYPE = {
    FieldDescriptor.TYPE_DOUBLE: FIXED64, FieldDescriptor.TYPE_FIXED64: FIXED64,
    FieldDescriptor.TYPE_SFIXED64: FIXED64, FieldDescriptor.TYPE_FLOAT: FIXED32,
    FieldDescriptor.TYPE_FIXED32: FIXED32, FieldDescriptor.TYPE_SFIXED32: FIXED32,
    FieldDescriptor.TYPE_STRING: LENGTH_DELIMITED, FieldDescriptor.TYPE_BYTES: LENGTH_DELIMITED,
    FieldDescriptor.TYPE_MESSAGE: LENGTH_DELIMITED, FieldDescriptor.TYPE_GROUP: START_GROUP,
}  # every other type (the integers, bool, enum) is a varint
_MAX_VARINT_BYTES = 10  # 64 bits, 7 per byte

_new_bytes = ctypes.pythonapi.PyBytes_FromStringAndSize  # (NULL, n): n bytes to fill in
_new_bytes.restype = ctypes.py_object
_new_bytes.argtypes = (ctypes.c_void_p, ctypes.c_ssize_t)


def varint(n: int) -> bytes:
    """The base-128 varint of a non-negative n, as protobuf writes lengths and keys."""
    out = bytearray()
    while True:
        bits = n & 0x7F
        n >>= 7
        if not n:
            out.append(bits)
            return bytes(out)
        out.append(bits | 0x80)


def wire_type(field) -> int:
    """The wire type of a FieldDescriptor's values (unpacked)."""
    return _WIRE_TYPE.get(field.type, VARINT)


def address(buf) -> int:
    """The address of a contiguous buffer's first byte (read-only buffers too)."""
    return np.frombuffer(buf, np.uint8).ctypes.data


class BytesField:
    """One bytes field of a generated message type, read and written on the wire
    without protobuf touching its bytes (see the module docstring)."""

    def __init__(self, message_type, name: str):
        descriptor = message_type.DESCRIPTOR
        field = descriptor.fields_by_name[name]
        if field.type != FieldDescriptor.TYPE_BYTES:
            raise TypeError(f"{descriptor.full_name}.{name} is not a bytes field")
        self.message_type = message_type
        self.number = field.number
        self.wire_type = wire_type(field)
        self.tag = varint(self.number << 3 | self.wire_type)
        self._descriptor = descriptor
        self.what = f"{descriptor.name}.{name} (field {self.number})"

    # -- encoding ------------------------------------------------------------

    def encode(self, data, message=None) -> bytes:
        """message (the small fields; None: none) serialized, then data as this
        field, in one new bytes object. data: any contiguous buffer (a
        memoryview slice of the caller's array: not copied before this)."""
        head = (message.SerializeToString() if message is not None else b"") + self.tag
        n = memoryview(data).nbytes
        head += varint(n)
        out = _new_bytes(None, len(head) + n)  # filled before anything else sees it
        at = address(out)
        ctypes.memmove(at, head, len(head))
        if n:  # a ctypes foreign call: without the GIL
            ctypes.memmove(at + len(head), address(data), n)
        return out

    # -- decoding ------------------------------------------------------------

    def decode(self, buf) -> Tuple[object, memoryview]:
        """(the message without this field, parsed by protobuf; this field's
        bytes, a memoryview of buf, empty when absent) of a serialized message."""
        mv = memoryview(buf).cast("B") if not isinstance(buf, bytes) else memoryview(buf)
        size, i, kept_from = len(mv), 0, 0
        rest, found = [], mv[0:0]
        while i < size:
            start = i
            key, i = self._varint_at(mv, i, None, "a field key")
            number, wire = key >> 3, key & 7
            if number == self.number and wire == self.wire_type:
                length, i = self._varint_at(mv, i, number, "the length")
                self._check_fits(mv, i, length, number)
                if start > kept_from:
                    rest.append(mv[kept_from:start])
                found, i = mv[i:i + length], i + length
                kept_from = i
            else:
                i = self._skip(mv, i, number, wire)
        if kept_from == 0:  # no bulk field: protobuf parses all of it
            return self._parse(buf if isinstance(buf, bytes) else mv.tobytes()), found
        rest.append(mv[kept_from:])
        return self._parse(b"".join(rest)), found

    def _parse(self, data: bytes):
        try:
            return self.message_type.FromString(data)
        except DecodeError as e:
            raise DataLoss(f"{self._descriptor.name}: the fields other than {self.what} do not "
                           f"parse ({len(data)} bytes): {e}") from None

    def _field(self, number):
        """How an error names field `number`."""
        if number is None:
            return self._descriptor.name
        field = self._descriptor.fields_by_number.get(number)
        name = f".{field.name}" if field is not None else " unknown field"
        return f"{self._descriptor.name}{name} (field {number})"

    def _varint_at(self, mv, i, number, what):
        result = shift = 0
        for k in range(i, min(i + _MAX_VARINT_BYTES, len(mv))):
            b = mv[k]
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result, k + 1
            shift += 7
        why = "is truncated" if len(mv) - i < _MAX_VARINT_BYTES else \
            f"runs over {_MAX_VARINT_BYTES} bytes"
        raise DataLoss(f"{self._field(number)}: the varint of {what} at byte {i} of the "
                       f"{len(mv)}-byte message {why}")

    def _check_fits(self, mv, i, length, number):
        if length > len(mv) - i:
            raise DataLoss(f"{self._field(number)}: {length} bytes at byte {i} run past the end "
                           f"of the {len(mv)}-byte message")

    def _skip(self, mv, i, number, wire):
        """The index past the value of field `number` (wire type `wire`) at i."""
        if number == 0:
            raise DataLoss(f"{self._descriptor.name}: field number 0 at byte {i} of the "
                           f"{len(mv)}-byte message")
        if wire == VARINT:
            return self._varint_at(mv, i, number, "the value")[1]
        if wire in (FIXED64, FIXED32):
            width = 8 if wire == FIXED64 else 4
            self._check_fits(mv, i, width, number)
            return i + width
        if wire == LENGTH_DELIMITED:
            length, i = self._varint_at(mv, i, number, "the length")
            self._check_fits(mv, i, length, number)
            return i + length
        if wire == START_GROUP:
            return self._skip_group(mv, i, number)
        raise DataLoss(f"{self._field(number)}: wire type {wire} at byte {i} of the "
                       f"{len(mv)}-byte message is not a field's")

    def _skip_group(self, mv, i, number):
        while i < len(mv):
            key, i = self._varint_at(mv, i, number, "a key inside the group")
            inner, wire = key >> 3, key & 7
            if wire == END_GROUP:
                if inner != number:
                    raise DataLoss(f"{self._field(number)}: the group ends with field {inner}'s "
                                   f"end at byte {i} of the {len(mv)}-byte message")
                return i
            i = self._skip(mv, i, inner, wire)
        raise DataLoss(f"{self._field(number)}: the group is not ended by the end of the "
                       f"{len(mv)}-byte message")


PUT_CHUNK = BytesField(pb.PutTensorRequest, "chunk")
GET_CHUNK = BytesField(pb.GetTensorResponse, "chunk")
