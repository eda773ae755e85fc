"""Result objects: the output array(s) plus how the server ran the request."""
import dataclasses
from typing import Any, Dict, List, Optional, Tuple

from .enums import SolveMethod


@dataclasses.dataclass(frozen=True)
class ExecutionInfo:
    backend: str  # "cpu" or "gpu:N"
    queue_time_ns: int
    run_time_ns: int
    batch_size: int
    fallback_reason: str  # empty unless the request left its first choice

    @property
    def queue_time(self):
        """Seconds."""
        return self.queue_time_ns * 1e-9

    @property
    def run_time(self):
        """Seconds."""
        return self.run_time_ns * 1e-9

    @classmethod
    def from_proto(cls, m):
        return cls(m.backend, m.queue_time_ns, m.run_time_ns, m.batch_size, m.fallback_reason)


@dataclasses.dataclass(frozen=True)
class MatmulResult:
    out: Any  # numpy.ndarray, or torch.Tensor when given torch
    info: ExecutionInfo

    def __array__(self, dtype=None):
        import numpy as np
        return np.asarray(self.out, dtype=dtype)


@dataclasses.dataclass(frozen=True)
class SolveResult:
    x: Any
    method_used: SolveMethod
    fallback: str  # empty, or why the requested method was not the one used
    residual: float  # max over batch of ||a x - b|| / (||a|| ||x|| + ||b||)
    info: ExecutionInfo
    # Smallest reciprocal 1-norm condition estimate over the batch (LU or
    # Cholesky; s_min / s_max for SVD-solved members); None when there is none.
    rcond: Optional[float] = None
    # method="lstsq" only, as numpy.linalg.lstsq returns them (float64):
    # residuals [batch..., K] (empty when rank < N or M <= N), rank [batch...]
    # (an int without batch dims), singular_values [batch..., min(M, N)].
    residuals: Any = None
    rank: Any = None
    singular_values: Any = None

    def __array__(self, dtype=None):
        import numpy as np
        return np.asarray(self.x, dtype=dtype)

    @classmethod
    def from_proto(cls, x, resp, batch_shape):
        """x plus a SolveResponse's fields; batch_shape: x's leading dims."""
        import numpy as np
        extra = {}
        if resp.HasField("lstsq"):
            l = resp.lstsq
            q = len(l.singular_values) // max(1, int(np.prod(batch_shape, dtype=np.int64)))
            res = np.asarray(l.residuals, dtype=np.float64)
            rank = np.asarray(l.rank, dtype=np.int64).reshape(batch_shape)
            extra = dict(
                residuals=res.reshape(tuple(batch_shape) + (-1,)) if res.size else res,
                rank=int(rank) if rank.ndim == 0 else rank,
                singular_values=np.asarray(l.singular_values, dtype=np.float64).reshape(
                    tuple(batch_shape) + (q,)))
        return cls(x, SolveMethod(resp.method_used), resp.fallback, resp.residual,
                   ExecutionInfo.from_proto(resp.info),
                   rcond=resp.rcond if resp.HasField("rcond") else None, **extra)


@dataclasses.dataclass(frozen=True)
class Device:
    index: int
    name: str
    compute_capability: str
    total_memory_bytes: int
    budget_bytes: int
    healthy: bool
    status: str


def _dtype_name(message, dtype: int) -> str:
    """'f32' for DTYPE_F32, ... (the enum of `message`'s proto file)."""
    enum = message.DESCRIPTOR.file.enum_types_by_name["DType"]
    return enum.values_by_number[dtype].name[len("DTYPE_"):].lower()


@dataclasses.dataclass(frozen=True)
class Limits:
    max_message_bytes: int
    cpu_threshold: int
    op_timeout_seconds: float
    gpu_memory_fraction: float
    cpu_threads: int
    max_elements: int
    # (op, dtype) -> the largest dim below which such jobs run on the CPU:
    # ("matmul" | "solve", "f32" | "f64"); measured at start-up when
    # cpu_thresholds_measured (--cpu-threshold auto with a GPU).
    cpu_thresholds: Dict[Tuple[str, str], int] = dataclasses.field(default_factory=dict)
    cpu_thresholds_measured: bool = False


@dataclasses.dataclass(frozen=True)
class ServerInfo:
    version: str
    backends: Tuple[str, ...]
    devices: List[Device]
    limits: Limits
    gpu_status: str
    shm_socket: str = ""  # the shared-memory Unix socket (--allow-shm), else ""
    replica_id: str = ""  # --replica-id: the prefix of the ids this server mints, else ""
    draining: bool = False  # the replica drains (--drain-grace): send new work elsewhere
    raw: Any = dataclasses.field(repr=False, compare=False, default=None)  # the proto

    @classmethod
    def from_proto(cls, m):
        devices = [Device(d.index, d.name, d.compute_capability, d.total_memory_bytes,
                          d.budget_bytes, d.healthy, d.status) for d in m.devices]
        lim = m.limits
        thresholds = {(t.op, _dtype_name(m, t.dtype)): t.threshold for t in lim.cpu_thresholds}
        limits = Limits(lim.max_message_bytes, lim.cpu_threshold, lim.op_timeout_seconds,
                        lim.gpu_memory_fraction, lim.cpu_threads, lim.max_elements,
                        thresholds, lim.cpu_thresholds_measured)
        return cls(m.version, tuple(m.backends), devices, limits, m.gpu_status,
                   shm_socket=m.shm_socket, replica_id=m.replica_id, draining=m.draining,
                   raw=m)
