#!/usr/bin/python3
"""Writes the seed corpus of the fuzz targets (tests/fuzz/corpus/<target>/)
and the known-crash reproducers (tests/fuzz/regressions/<target>-<what>).
Deterministic: rerunning rewrites the same files. Protobuf messages are
encoded by hand (wire format), so no generated Python module is needed."""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
F32, F64, F16 = 1, 2, 3


def varint(v):
    v &= (1 << 64) - 1
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(num, value):
    """A protobuf field: int -> varint, bytes -> length-delimited, float -> double."""
    if isinstance(value, float):
        return varint(num << 3 | 1) + struct.pack("<d", value)
    if isinstance(value, int):
        return varint(num << 3 | 0) + varint(value)
    return varint(num << 3 | 2) + varint(len(value)) + value


def tensor(dtype, shape, data):
    packed = b"".join(varint(d) for d in shape)
    return field(1, dtype) + field(2, packed) + field(3, data)


def f32(*v):
    return struct.pack("<%df" % len(v), *v)


def f64(*v):
    return struct.pack("<%dd" % len(v), *v)


def csr_input(flags, rows, cols, offsets, indices, values):
    w = "q" if flags & 1 else "i"
    v = "f" if flags & 2 else "d"
    return (bytes([flags, rows, cols]) + struct.pack("<%d%s" % (len(offsets), w), *offsets)
            + struct.pack("<%d%s" % (len(indices), w), *indices)
            + struct.pack("<%d%s" % (len(values), v), *values))


def csr_proto(index_type, rows, offsets, indices, values):
    w = "<%di" if index_type == 1 else "<%dq"
    return (field(1, rows) + field(2, rows) + field(3, index_type)
            + field(4, struct.pack(w % len(offsets), *offsets))
            + field(5, struct.pack(w % len(indices), *indices)) + field(6, F64)
            + field(7, f64(*values)))


def shm_ref(offset, n, region=b"r"):
    """A SharedMemoryRef; fuzz_requests points region names not starting with '!' at its region."""
    return field(1, region) + field(2, offset) + field(3, n)


def shm_tensor(dtype, shape, offset, n, region=b"r"):
    packed = b"".join(varint(d) for d in shape)
    return field(1, dtype) + field(2, packed) + field(5, shm_ref(offset, n, region))


def header(dtype, shape, total, placement=b"host"):
    packed = b"".join(varint(d) for d in shape)
    return field(1, dtype) + field(2, packed) + field(3, placement) + field(5, total)


def npy(descr, shape, data, version=1):
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    text = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, dims)
    size_bytes = 2 if version == 1 else 4
    pad = (-(6 + 2 + size_bytes + len(text) + 1)) % 64
    text = text + " " * pad + "\n"
    size = struct.pack("<H" if version == 1 else "<I", len(text))
    return b"\x93NUMPY" + bytes([version, 0]) + size + text.encode() + data


def upload(dtype, elements, ops):
    return bytes([dtype]) + struct.pack("<HI", elements, 0) + ops


def claim(offset, n):
    return bytes([0]) + struct.pack("<qq", offset, n)


SEEDS = {
    "fuzz_csr": {
        "identity_i32_f64": csr_input(0, 3, 3, [0, 1, 2, 3], [0, 1, 2], [1.0, 2.0, 3.0]),
        "unsorted_dups_i64_f64": csr_input(1, 2, 2, [0, 3, 4], [1, 0, 1, 1], [1, 2, 3, 4]),
        "tridiag_i32_f32": csr_input(2, 4, 4, [0, 2, 5, 8, 10],
                                     [0, 1, 0, 1, 2, 1, 2, 3, 2, 3],
                                     [2, -1, -1, 2, -1, -1, 2, -1, -1, 2]),
        "rect_i64_f32": csr_input(3, 2, 5, [0, 2, 3], [4, 0, 2], [1, 2, 3]),
        "empty_rows": csr_input(0, 3, 3, [0, 0, 1, 1], [2], [5.0]),
    },
    "fuzz_requests": {
        "matmul": b"\x00" + field(1, tensor(F32, [2, 3], f32(*range(6))))
        + field(2, tensor(F32, [3, 2], f32(*range(6)))),
        "matmul_broadcast_bias": b"\x00" + field(1, tensor(F64, [2, 1, 2, 2], f64(*range(8))))
        + field(2, tensor(F64, [1, 3, 2, 2], f64(*range(12))))
        + field(4, tensor(F64, [2], f64(1, 2))) + field(9, 4) + field(6, 1),
        "matmul_c_keep": b"\x00" + field(1, tensor(F16, [2, 2], bytes(8)))
        + field(2, tensor(F16, [2, 2], bytes(8))) + field(3, tensor(F32, [1, 2], f32(1, 2)))
        + field(11, F32) + field(20, 1),
        "solve": b"\x01" + field(1, tensor(F64, [2, 2], f64(4, 1, 1, 3)))
        + field(2, tensor(F64, [2, 1], f64(1, 2))) + field(3, 2),
        "solve_batched_lstsq": b"\x01" + field(1, tensor(F32, [2, 3, 2], f32(*range(12))))
        + field(2, tensor(F32, [3, 1], f32(1, 2, 3))) + field(3, 4),
        "sparse_solve": b"\x02" + field(1, csr_proto(1, 3, [0, 2, 4, 5], [0, 1, 0, 1, 2],
                                                     [4, 1, 1, 3, 2]))
        + field(2, tensor(F64, [3, 1], f64(1, 2, 3))),
        "sparse_solve_cg_i64": b"\x02" + field(1, csr_proto(2, 2, [0, 2, 4], [1, 0, 0, 1],
                                                            [1, 4, 1, 3]))
        + field(2, tensor(F64, [2, 2], f64(1, 2, 3, 4))) + field(3, 4) + field(4, 1),
        "matmul_empty_k_c_bias": b"\x00" + field(1, tensor(F32, [0, 2, 0], b""))
        + field(2, tensor(F32, [0, 3], b"")) + field(3, tensor(F32, [1, 3], f32(1, 2, 3)))
        + field(4, tensor(F32, [3], f32(1, 1, 1))) + field(9, 4),
        "solve_empty_batch": b"\x01" + field(1, tensor(F64, [0, 3, 3], b""))
        + field(2, tensor(F64, [3, 0], b"")),
        "sparse_solve_empty": b"\x02" + field(1, csr_proto(1, 0, [0], [], []))
        + field(2, tensor(F64, [0, 2], b"")),
        "put_header_empty": b"\x04" + field(1, header(F64, [0, 5], 0)),
        "factorize": b"\x03" + field(1, tensor(F64, [2, 2], f64(4, 1, 1, 3))) + field(2, 2),
        "put_header": b"\x04" + field(1, header(F32, [4], 16)),
        "put_chunk": b"\x04" + field(2, b"abcd"),
        "start_upload": b"\x05" + field(1, header(F64, [3, 3], 72, b"gpu:0")),
        "matmul_shm": b"\x00" + field(1, shm_tensor(F32, [2, 3], 0, 24))
        + field(2, shm_tensor(F32, [3, 2], 24, 24)) + field(22, shm_ref(48, 16)),
        "matmul_shm_out_over_a": b"\x00" + field(1, shm_tensor(F64, [2, 2], 64, 32))
        + field(2, tensor(F64, [2, 2], f64(1, 2, 3, 4))) + field(22, shm_ref(72, 32)),
        "matmul_shm_unknown": b"\x00" + field(1, shm_tensor(F32, [1, 1], 0, 4, b"!x"))
        + field(2, tensor(F32, [1, 1], f32(1))),
        "solve_shm": b"\x01" + field(1, shm_tensor(F64, [2, 2], 0, 32))
        + field(2, shm_tensor(F64, [2, 1], 1048560, 16)) + field(23, shm_ref(32, 16)),
        "factorize_shm": b"\x03" + field(1, shm_tensor(F64, [2, 2], 8, 32)) + field(2, 2),
        "resident_a": b"\x00" + field(1, field(1, F32) + field(4, b"0123456789abcdef" * 2))
        + field(2, tensor(F32, [1, 1], f32(1))),
    },
    "fuzz_upload": {
        "two_parts": upload(0, 8, claim(0, 16) + claim(16, 16) + b"\x01\x01\x03"),
        "out_of_order": upload(1, 5, claim(24, 16) + claim(0, 24) + b"\x01\x01\x03"),
        "unclaim_retry": upload(2, 10, claim(0, 20) + b"\x02" + claim(0, 10) + claim(10, 10)
                                + b"\x01\x01\x03"),
        "overlap_abort": upload(0, 4, claim(0, 12) + claim(8, 8) + b"\x03\x04"),
    },
    "fuzz_client_readers": {
        "npy_f4": b"\x00" + npy("<f4", [2, 3], f32(*range(6))),
        "npy_f8_v2": b"\x00" + npy("<f8", [3], f64(1, 2, 3), version=2),
        "npy_f2_scalar": b"\x00" + npy("<f2", [], bytes(2)),
        "npy_header": b"\x01{'descr': '<f8', 'fortran_order': False, 'shape': (4, 5), }",
        "mm_general": b"\x02%%MatrixMarket matrix coordinate real general\n% c\n3 3 4\n"
                      b"1 1 2.5\n2 2 -1\n3 1 4e2\n3 3 1\n",
        "mm_symmetric_pattern": b"\x03%%MatrixMarket matrix coordinate pattern symmetric\n"
                                b"3 3 3\n1 1\n2 1\n3 2\n",
        "mm_skew_integer": b"\x02%%MatrixMarket matrix coordinate integer skew-symmetric\n"
                           b"2 2 1\n2 1 3\n",
    },
}

# Known crashes, named <target>-<what> (scripts/fuzz.sh runs each through its
# target first).
REGRESSIONS = {
    # int64 row_offsets [0, 2^40, 2] with nnz 2: CheckIndices walks
    # col_indices up to 2^40 before the decreasing offset is seen.
    "fuzz_csr-int64-offset-past-nnz": csr_input(1, 2, 1, [0, 1 << 40, 2], [0, 0], [1.0, 1.0]),
    # The same through SparseSolve: PrepareSparseSolve passes it (byte
    # counts match), CompleteSparseSolve's ValidateCsr reads past col_indices.
    # nnz 3: the 24-byte string's heap block (31 bytes) ends inside the 4th
    # index, so ASan sees the read whatever the slack bytes hold.
    "fuzz_requests-sparse-solve-offset-past-nnz": b"\x02"
    + field(1, csr_proto(2, 2, [0, 1 << 40, 3], [0, 0, 0], [1, 1, 1]))
    + field(2, tensor(F64, [2, 1], f64(1, 2))),
    # [8192,1,1,1] x [1,8192,1,1]: PlanMatmul's BatchOffsets allocates
    # 2 x 8192^2 offsets (1 GiB) before the out-shape limit is checked.
    "fuzz_requests-matmul-broadcast-batch": b"\x00"
    + field(1, tensor(F16, [8192, 1, 1, 1], bytes(2 * 8192)))
    + field(2, tensor(F16, [1, 8192, 1, 1], bytes(2 * 8192))),
    # A symmetric 1 x 3 matrix: entry (1, 2) is mirrored to (2, 1), outside
    # the one row; ToCsr increments offsets[2] of a 2-entry vector.
    "fuzz_client_readers-mm-symmetric-not-square": b"\x03%%MatrixMarket matrix coordinate "
    b"pattern symmetric\n1 3 1\n1 2\n",
    # Skew-symmetric 2 x 1: (2, 1) is mirrored to (1, 2); the returned CSR
    # holds column index 1 in a 1-column matrix (found by fuzz_client_readers).
    "fuzz_client_readers-mm-skew-not-square": b"\x02%%MatrixMarket matrix coordinate "
    b"integer skew-symmetric\n2 1 1\n2 1 3\n",
}


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def main():
    for target, seeds in SEEDS.items():
        for name, data in seeds.items():
            write(os.path.join(HERE, "corpus", target, name), data)
    for name, data in REGRESSIONS.items():
        write(os.path.join(HERE, "regressions", name), data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
