"""CRC32C (Castagnoli), as the server and the C++ client compute it (common/crc32c.h).

extend(crc, data) continues a checksum over a buffer (any object with the
buffer protocol: bytes, memoryview, numpy array); combine(crc_a, crc_b, len_b)
is the checksum of a + b from those of a and b, without the bytes, so parts
checked on their own add up to the whole tensor's checksum, in any order of
arrival.

The bytes are checksummed, in this order of preference, by the repository's
liblinalgd_crc32c.so (the C++ code of common/crc32c.cc, SSE4.2; a ctypes call
releases the GIL, so parts are checksummed on several cores at once): the path
in $LINALGD_CRC32C_LIBRARY, else one beside this file, else build/lib,
build-py/lib or build-gpu/lib of the checkout this package sits in; else
google_crc32c or the crc32c package (Debian: python3-crc32c); else a numpy
table method (far slower: bench/python_transfer.py prints the backend with its
figures). BACKEND names the one in use. combine() is pure Python: O(log len_b)
multiplications in GF(2)[x].
"""
import ctypes
import os
from typing import Optional

import numpy as np

POLY = 0x82F63B78  # reflected Castagnoli polynomial

_extend_native = None
BACKEND = "numpy"
_HERE = os.path.dirname(os.path.abspath(__file__))
_LIBRARY = "liblinalgd_crc32c.so"


def _library_candidates():
    env = os.environ.get("LINALGD_CRC32C_LIBRARY")
    if env:
        return [env]
    repo = os.path.dirname(os.path.dirname(os.path.dirname(_HERE)))  # client/python/linalgd
    return [os.path.join(_HERE, _LIBRARY)] + [os.path.join(repo, build, "lib", _LIBRARY)
                                              for build in ("build", "build-py", "build-gpu")]


def _load_library():
    for path in _library_candidates():
        if not os.path.exists(path):
            continue
        try:
            lib = ctypes.CDLL(path)
            fn = lib.linalgd_crc32c_extend
        except (OSError, AttributeError):
            continue
        fn.argtypes = (ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t)
        fn.restype = ctypes.c_uint32

        def extend_with_library(crc, data, fn=fn):
            arr = np.frombuffer(data, np.uint8)  # a view: read-only buffers too
            return fn(crc, arr.ctypes.data, arr.size)

        extend_with_library.function = fn  # a CDLL function: called without the GIL
        return extend_with_library, path
    return None, None


_extend_native, _path = _load_library()
if _extend_native is not None:
    BACKEND = f"liblinalgd_crc32c ({_path})"
try:  # pragma: no cover - depends on the environment
    import google_crc32c as _google

    if _extend_native is None and getattr(_google, "implementation", "c") == "c":
        _extend_native = lambda crc, data: _google.extend(crc, data)  # noqa: E731
        BACKEND = "google_crc32c"
except ImportError:  # pragma: no cover
    pass
if _extend_native is None:
    try:  # pragma: no cover - depends on the environment
        import crc32c as _icrar

        _extend_native = lambda crc, data: _icrar.crc32c(data, crc)  # noqa: E731
        BACKEND = "crc32c" + ("" if getattr(_icrar, "hardware_based", False) else " (software)")
    except ImportError:  # pragma: no cover
        pass


def _multmodp(a, b):
    """a * b mod P in GF(2)[x], reflected (bit 31 is x^0). REQUIRES: a != 0."""
    m = 1 << 31
    p = 0
    while True:
        if a & m:
            p ^= b
            if (a & (m - 1)) == 0:
                return p
        m >>= 1
        b = (b >> 1) ^ POLY if b & 1 else b >> 1


_X2N = [1 << 30]  # x^(2^k) mod P: x^1, x^2, x^4, ...
for _ in range(31):
    _X2N.append(_multmodp(_X2N[-1], _X2N[-1]))


def _x8nmodp(n):
    """x^(8 n) mod P: the effect of n zero bytes on a CRC register."""
    p = 1 << 31  # x^0
    k = 3
    while n:
        if n & 1:
            p = _multmodp(_X2N[k & 31], p)
        n >>= 1
        k += 1
    return p


def combine(crc_a: int, crc_b: int, len_b: int) -> int:
    """CRC32C of a + b from CRC32C(a), CRC32C(b) and len(b) bytes."""
    if len_b <= 0:
        return crc_a
    return _multmodp(_x8nmodp(len_b), crc_a) ^ crc_b


def _byte_table():
    t = np.zeros(256, np.uint32)
    for b in range(256):
        c = b
        for _ in range(8):
            c = (c >> 1) ^ (POLY if c & 1 else 0)
        t[b] = c
    return t


_BLOCK = 64
_tables: Optional[np.ndarray] = None  # [k][byte]: a byte followed by k zero bytes


def _numpy_tables():
    global _tables
    if _tables is None:
        t = np.zeros((_BLOCK, 256), np.uint32)
        t[0] = _byte_table()
        for k in range(1, _BLOCK):
            prev = t[k - 1]
            t[k] = t[0][prev & 0xFF] ^ (prev >> 8)  # one more zero byte
        _tables = t
    return _tables


def _shift(v, nbytes):
    """The raw register v after nbytes zero bytes (vectorised over v)."""
    x = _x8nmodp(nbytes)
    out = np.zeros_like(v)
    for bit in range(32):  # multiplication by the constant x, bit by bit of v
        term = np.uint32(_multmodp(x, 1 << bit))  # bit j of v is x^(31 - j)
        out ^= np.where((v >> np.uint32(bit)) & np.uint32(1), term, np.uint32(0))
    return out


def _extend_numpy(crc, data):
    arr = np.frombuffer(data, np.uint8)
    tables = _numpy_tables()
    head = len(arr) % _BLOCK
    state = crc ^ 0xFFFFFFFF  # the raw register
    for b in arr[:head].tolist():
        state = int(tables[0][(state ^ b) & 0xFF]) ^ (state >> 8)
    blocks = arr[head:].reshape(-1, _BLOCK)
    if len(blocks) == 0:
        return state ^ 0xFFFFFFFF
    v = np.empty(len(blocks), np.uint32)  # each block's raw CRC from a zero register
    flat = tables[::-1].reshape(-1)  # row i: the table of byte position i in a block
    offsets = np.arange(_BLOCK, dtype=np.intp) * 256
    for s in range(0, len(blocks), 1 << 14):  # bounded temporaries (8 MiB of indices)
        idx = blocks[s:s + (1 << 14)].astype(np.intp)
        idx += offsets
        v[s:s + (1 << 14)] = np.bitwise_xor.reduce(np.take(flat, idx), axis=1)
    span = _BLOCK
    while len(v) > 1:  # pairwise: crc(AB) = shift(crc(A), |B|) ^ crc(B)
        if len(v) & 1:  # a leading zero block leaves a zero register unchanged
            v = np.concatenate([np.zeros(1, np.uint32), v])
        v = _shift(v[0::2], span) ^ v[1::2]
        span *= 2
    body = int(v[0])
    total = len(arr) - head
    state = int(_shift(np.array([state], np.uint32), total)[0]) ^ body
    return state ^ 0xFFFFFFFF


def extend(crc: int, data) -> int:
    """CRC32C of (the bytes crc covers) + data; extend(0, b) is CRC32C(b)."""
    mv = memoryview(data).cast("B") if not isinstance(data, bytes) else data
    if len(mv) == 0:
        return crc
    if _extend_native is not None:
        return _extend_native(crc, mv)
    return _extend_numpy(crc, mv)


def crc32c(data) -> int:
    return extend(0, data)
