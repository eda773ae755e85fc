"""tune_malloc(): glibc's malloc keeps freed chunk-sized buffers for reuse.

Every message of a large transfer passes through buffers of about chunk_bytes
(2 MiB) that live for one message: the chunk message this client builds,
grpcio's copy of it, grpc's receive slices and the bytes grpcio builds of each
received message. glibc serves such sizes with fresh mmap()s, or from a
thread's arena that it trims (madvise) once its free top passes the trim
threshold, so nearly every buffer is new memory: the kernel zeroes and maps
each page on first touch, and the copies grpcio makes with the GIL held take
those page faults while holding it. On a shared 2-core machine that was most
of the client's system time on a 64 MiB get (bench/python_transfer.py
--tune-malloc measures it).

tune_malloc() sets glibc's M_MMAP_THRESHOLD (allocations below it come from
the heap) and M_TRIM_THRESHOLD (free memory an arena keeps) through mallopt(3),
so those buffers are reused. It is process-wide and permanent (it also turns
off glibc's dynamic threshold), and the price is memory: each malloc arena may
keep up to trim_threshold bytes that were freed. So it is opt-in, called by
the application, never by the client on its own. The same settings can be
given at start-up with GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:
glibc.malloc.trim_threshold=67108864.
"""
import ctypes

M_TRIM_THRESHOLD = -1  # mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
MAX_MMAP_THRESHOLD = 32 << 20  # glibc's upper bound on 64-bit (HEAP_MAX_SIZE / 2)
_INT_MAX = (1 << 31) - 1


def _mallopt():
    """libc's mallopt, or None (not glibc-like: macOS, Windows)."""
    try:
        fn = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):
        return None
    fn.argtypes = (ctypes.c_int, ctypes.c_int)
    fn.restype = ctypes.c_int
    return fn


def tune_malloc(mmap_threshold: int = MAX_MMAP_THRESHOLD,
                trim_threshold: int = 64 << 20) -> bool:
    """Sets malloc's mmap and trim thresholds for this process (see the module
    docstring). True when the C library took both; False when it has no
    mallopt or refused one (musl's does nothing and says so)."""
    if not 0 < mmap_threshold <= MAX_MMAP_THRESHOLD:
        raise ValueError(f"mmap_threshold: {mmap_threshold} is outside (0, "
                         f"{MAX_MMAP_THRESHOLD}] (glibc's bound)")
    if not 0 <= trim_threshold <= _INT_MAX:
        raise ValueError(f"trim_threshold: {trim_threshold} is outside [0, {_INT_MAX}]")
    mallopt = _mallopt()
    if mallopt is None:
        return False
    took_mmap = mallopt(M_MMAP_THRESHOLD, mmap_threshold) == 1
    return mallopt(M_TRIM_THRESHOLD, trim_threshold) == 1 and took_mmap
