"""numpy / torch arrays <-> linalgd.v1.Tensor.

Wire format (DESIGN.md section 5): dtype, shape, row-major little-endian bytes.
Encoding copies a non-contiguous, big-endian or Fortran-ordered input into C
order once; decoding returns a fresh, writable array of the response's dtype
and shape. bfloat16 needs the optional ml_dtypes package (or torch).
"""
import math
import sys
from typing import Optional

import numpy as np

from ._stubs import pb
from .enums import DType, parse
from .errors import DataLoss, InvalidArgument

BFLOAT16: Optional[np.dtype]
try:  # optional: numpy has no bfloat16 of its own
    import ml_dtypes as _ml_dtypes
    BFLOAT16 = np.dtype(_ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - depends on the environment
    _ml_dtypes = None
    BFLOAT16 = None

_NUMPY_TO_DTYPE = {np.dtype(np.float32): DType.F32, np.dtype(np.float64): DType.F64,
                   np.dtype(np.float16): DType.F16, np.dtype(np.complex64): DType.C64,
                   np.dtype(np.complex128): DType.C128}
if BFLOAT16 is not None:
    _NUMPY_TO_DTYPE[BFLOAT16] = DType.BF16
_DTYPE_TO_NUMPY = {v: k for k, v in _NUMPY_TO_DTYPE.items()}
_ITEMSIZE = {DType.F32: 4, DType.F64: 8, DType.F16: 2, DType.BF16: 2, DType.C64: 8,
             DType.C128: 16}
_DTYPE_NAMES = {"float32": DType.F32, "f32": DType.F32, "float": DType.F32,
                "float64": DType.F64, "f64": DType.F64, "double": DType.F64,
                "float16": DType.F16, "f16": DType.F16, "half": DType.F16,
                "bfloat16": DType.BF16, "bf16": DType.BF16,
                "complex64": DType.C64, "c64": DType.C64, "cfloat": DType.C64,
                "complex128": DType.C128, "c128": DType.C128, "cdouble": DType.C128}


def _torch():
    """The torch module if the caller has imported it (never imports it)."""
    return sys.modules.get("torch")


def is_torch(x):
    torch = _torch()
    return torch is not None and isinstance(x, torch.Tensor)


def parse_dtype(value, field):
    """A DType from None, a DType/int/str, a numpy dtype or a torch dtype."""
    if value is None:
        return DType.UNSPECIFIED
    torch = _torch()
    if torch is not None and isinstance(value, torch.dtype):
        value = str(value).replace("torch.", "")
    if isinstance(value, str):
        name = value.strip().lower()
        if name in _DTYPE_NAMES:
            return _DTYPE_NAMES[name]
        return parse(DType, value, field)
    if isinstance(value, (DType, int)) and not isinstance(value, bool):
        return parse(DType, value, field)
    try:
        dt = np.dtype(value)
    except TypeError:
        raise InvalidArgument(f"{field}: {value!r} is not a dtype") from None
    if dt not in _NUMPY_TO_DTYPE:
        raise InvalidArgument(f"{field}: dtype {dt} is not supported; use {_supported()}")
    return _NUMPY_TO_DTYPE[dt]


def _supported():
    return "float16, float32, float64, complex64, complex128" + (
        ", bfloat16" if BFLOAT16 is not None else " (bfloat16 needs ml_dtypes)")


def host_copy(t):
    """A CPU copy of a torch tensor on another device (CUDA), made in one
    device-to-host copy into pinned (page-locked) memory: to("cpu",
    non_blocking=True) allocates the destination pinned, then the tensor's
    stream is synchronized before the bytes are read."""
    host = t.to("cpu", non_blocking=True)
    if t.device.type == "cuda":
        _torch().cuda.current_stream(t.device).synchronize()
    return host


def _torch_to_numpy(t, field):
    torch = _torch()
    t = t.detach()
    if t.device.type != "cpu":
        t = host_copy(t)
    if t.dtype == torch.bfloat16:
        raw = t.contiguous().view(torch.int16).numpy()
        return raw, DType.BF16
    if t.is_complex():  # a lazily conjugated view (t.conj()) has no numpy form
        t = t.resolve_conj()
    return t.numpy(), None


def torch_device(*xs):
    """The device of the first torch tensor among xs, or None when none is torch."""
    for x in xs:
        if is_torch(x):
            return x.device
    return None


def to_device(out, device):
    """out (a torch CPU tensor when device is not None) moved to device."""
    if device is None or device.type == "cpu" or not is_torch(out):
        return out
    return out.to(device)


def to_numpy(x, field):
    """(array, DType) for a numpy array, torch CPU tensor or array-like. An ndarray subclass
    (np.matrix, say) comes back as a plain ndarray of its buffer; a masked array is refused
    (InvalidArgument)."""
    wire = None
    if is_torch(x):
        x, wire = _torch_to_numpy(x, field)
    elif isinstance(x, np.ma.MaskedArray):
        # Its buffer holds the values under the mask, which the socket replaced by the fill
        # value (tobytes) and shared memory sent as they are: the server has no masks, so the
        # caller says what a masked entry is.
        raise InvalidArgument(
            f"{field}: a numpy masked array; linalgd computes with every entry: pass "
            f"{field}.filled(value) to give the masked entries a value, or "
            f"numpy.asarray({field}) to use the values under the mask")
    elif isinstance(x, np.ndarray):
        # A view of the same buffer: the client's own reshapes and views (an upload's
        # reshape(-1), a vector b's column) keep np.matrix 2-D.
        x = x.view(np.ndarray)
    else:
        try:
            x = np.asarray(x)
        except (TypeError, ValueError) as e:  # ragged nested lists, say
            raise InvalidArgument(f"{field}: not an array: {e}") from None
        if x.dtype.kind in "iub":  # python lists of ints: compute in float64
            x = x.astype(np.float64)
    if wire is None:
        dt = x.dtype.newbyteorder("=") if x.dtype.byteorder not in "=|" else x.dtype
        if dt not in _NUMPY_TO_DTYPE:
            raise InvalidArgument(
                f"{field}: dtype {x.dtype} is not supported; use {_supported()}")
        wire = _NUMPY_TO_DTYPE[dt]
    return x, wire


def encode_array(arr, wire, field):
    """A pb.Tensor holding arr's elements inline (one C-order little-endian copy).

    arr, wire: as returned by to_numpy.
    """
    if arr.ndim < 1:
        raise InvalidArgument(f"{field}: needs at least 1 dimension, got a scalar")
    little = arr.dtype.newbyteorder("<")
    if arr.dtype != little or not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr, dtype=little)
    return pb.Tensor(dtype=int(wire), shape=arr.shape, data=arr.tobytes())


def encode(x, field):
    """A pb.Tensor from a numpy array, torch CPU tensor or array-like."""
    return encode_array(*to_numpy(x, field), field)


def decode(t, field, as_torch=False):
    """A fresh writable numpy array (or torch tensor) from a pb.Tensor."""
    wire = DType(t.dtype) if t.dtype in DType._value2member_map_ else None
    if wire not in _ITEMSIZE:
        raise DataLoss(f"{field}: response has unknown dtype {t.dtype}")
    shape = tuple(int(d) for d in t.shape)
    if any(d < 0 for d in shape):
        raise DataLoss(f"{field}: response has negative shape {shape}")
    expected = math.prod(shape) * _ITEMSIZE[wire]
    which = t.WhichOneof("source")
    if which != "data":
        raise DataLoss(f"{field}: response carries its data as {which!r}, not inline bytes")
    if len(t.data) != expected:
        raise DataLoss(f"{field}: response has {len(t.data)} bytes, shape {shape} "
                       f"{wire.name} needs {expected}")
    return _copy_out(t.data, 0, wire, shape, field, as_torch)


def decode_from(t, buf, field, as_torch=False):
    """As decode(), for a pb.Tensor whose data lies in buf (a shared-memory
    region): t.shm names (offset, bytes) in buf. The result is a copy; no view
    into buf survives the call."""
    wire = DType(t.dtype) if t.dtype in DType._value2member_map_ else None
    if wire not in _ITEMSIZE:
        raise DataLoss(f"{field}: response has unknown dtype {t.dtype}")
    shape = tuple(int(d) for d in t.shape)
    if any(d < 0 for d in shape):
        raise DataLoss(f"{field}: response has negative shape {shape}")
    expected = math.prod(shape) * _ITEMSIZE[wire]
    ref = t.shm
    if ref.offset < 0 or ref.bytes != expected or ref.offset + ref.bytes > len(buf):
        raise DataLoss(f"{field}: response shm (offset {ref.offset}, {ref.bytes} bytes) does "
                       f"not hold shape {shape} {wire.name} inside the {len(buf)}-byte region")
    return _copy_out(buf, ref.offset, wire, shape, field, as_torch)


def _copy_out(buf, offset, wire, shape, field, as_torch):
    """A fresh writable native-order array (or torch tensor) of shape from buf[offset:]."""
    count = math.prod(shape)
    if as_torch:
        return _decode_torch(buf, offset, count, wire, shape)
    if wire not in _DTYPE_TO_NUMPY:
        raise InvalidArgument(f"{field}: the result is bfloat16; install ml_dtypes to "
                              "receive it as numpy, or pass output_dtype='float32'")
    dt = _DTYPE_TO_NUMPY[wire].newbyteorder("<")
    arr = np.frombuffer(buf, dtype=dt, count=count, offset=offset).reshape(shape)
    return arr.astype(_DTYPE_TO_NUMPY[wire], copy=True)  # writable, native order


def _decode_torch(buf, offset, count, wire, shape):
    torch = _torch()
    if wire == DType.BF16:
        raw = np.frombuffer(buf, dtype="<i2", count=count, offset=offset).reshape(shape).copy()
        return torch.from_numpy(raw).view(torch.bfloat16)
    dt = _DTYPE_TO_NUMPY[wire]
    return torch.from_numpy(np.frombuffer(buf, dtype=dt.newbyteorder("<"), count=count,
                                          offset=offset).reshape(shape).astype(dt, copy=True))


def itemsize(wire):
    """Bytes per element of a DType."""
    return _ITEMSIZE[DType(wire)]


def empty_bytes(nbytes):
    """A fresh uint8 array of nbytes, to receive a tensor's bytes in place."""
    return np.empty(int(nbytes), np.uint8)


def from_bytes(raw, wire, shape, field, as_torch=False):
    """raw (a uint8 array holding little-endian elements) as an array of wire's
    dtype and shape, without a copy on little-endian hosts; torch if as_torch."""
    wire = DType(wire) if wire in DType._value2member_map_ else None
    if wire not in _ITEMSIZE:
        raise DataLoss(f"{field}: response has unknown dtype {wire}")
    shape = tuple(int(d) for d in shape)
    if len(raw) != math.prod(shape) * _ITEMSIZE[wire]:
        raise DataLoss(f"{field}: {len(raw)} bytes do not hold shape {shape} {wire.name}")
    if as_torch:
        torch = _torch()
        if wire == DType.BF16:
            return torch.from_numpy(raw.view("<i2").reshape(shape)).view(torch.bfloat16)
        return torch.from_numpy(raw.view(_DTYPE_TO_NUMPY[wire].newbyteorder("<"))
                                .reshape(shape).astype(_DTYPE_TO_NUMPY[wire], copy=False))
    if wire not in _DTYPE_TO_NUMPY:
        raise InvalidArgument(f"{field}: the result is bfloat16; install ml_dtypes to "
                              "receive it as numpy, or pass output_dtype='float32'")
    dt = _DTYPE_TO_NUMPY[wire]
    return raw.view(dt.newbyteorder("<")).reshape(shape).astype(dt, copy=False)


def numpy_dtype(wire):
    """The numpy dtype of a DType, or None (bfloat16 without ml_dtypes)."""
    return _DTYPE_TO_NUMPY.get(DType(wire))
