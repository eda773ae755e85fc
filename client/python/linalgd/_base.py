"""ClientBase: the options and helpers linalgd.Client and linalgd.aio.Client
share, and the two ways of turning an operation of _ops.py into a method.

A client class declares each operation of _ops.METHODS as a method,
`matmul = sync_method(_ops.matmul)` (or async_method), and implements
_perform(effect) for each effect of _ops.py; type checkers see each method's
parameters and result (sync_method and async_method keep them);
the retry decision (_retry_delay) is shared too, so the sync and the asyncio
client differ only in blocking versus awaiting.
"""
import functools
import inspect
import os
import re
import threading
import time
from typing import (TYPE_CHECKING, Any, Awaitable, Callable, Generator, List, Optional,
                    Sequence, Tuple, Type, TypeVar)

from . import _ops, _procs, tensors
from .errors import FailedPrecondition, InvalidArgument, LinalgdError, ResourceExhausted
from .remote import Factor, RemoteTensor
from .retry import RetryPolicy
from .store import DEFAULT_CHUNK_BYTES

# protobuf's hard limit is 2 GiB - 1; keep headroom for the non-data fields.
PROTOBUF_LIMIT = 2**31 - 1
DEFAULT_MAX_MESSAGE_BYTES = PROTOBUF_LIMIT - (1 << 20)

R = TypeVar("R")
if TYPE_CHECKING:  # typing_extensions' stubs come with the type checker
    from typing_extensions import Concatenate, ParamSpec
    P = ParamSpec("P")


def channel_options(policy: RetryPolicy, max_message_bytes: int,
                    extra: Any = ()) -> List[Tuple[str, Any]]:
    """gRPC channel options of a client's own channels.

    gRPC's own reconnect backoff (1 s, growing to 120 s) and its re-resolution
    delay (the resolver waits seconds after a failed connect, even for an IP
    literal) would make every retry of a restarting server fail fast; pace
    them like the retry policy.

    gRPC's own retries are off: the client retries by its policy (and fails
    over between replicas), and grpc core's transparent retry lost calls. On
    grpcio 1.51 the first GetTensor stream on a connection whose server had
    sent GOAWAY and exited (a drained replica) was retried inside core and
    then never ended, its deadline ignored; without the retry it fails at once
    with UNAVAILABLE ("GOAWAY received").
    """
    pace_ms = max(10, int(policy.initial_backoff * 1000))
    return [("grpc.max_send_message_length", max_message_bytes),
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.enable_retries", 0),
            ("grpc.initial_reconnect_backoff_ms", pace_ms),
            ("grpc.dns_min_time_between_resolutions_ms", pace_ms),
            ("grpc.max_reconnect_backoff_ms", max(10, int(policy.max_backoff * 1000))),
            *extra]


def advance(op: _ops.Op, result: Any, error: Optional[BaseException]) -> Tuple[bool, Any]:
    """Resumes op with an effect's result (or throws its error in):
    (True, op's return value) when op is done, else (False, its next effect)."""
    try:
        return False, (op.throw(error) if error is not None else op.send(result))
    except StopIteration as stop:
        return True, stop.value


def _like(method: Any, op: Any) -> Any:
    """method with op's name, docstring and signature, less the generator return type."""
    functools.update_wrapper(method, op)
    sig = inspect.signature(op)
    method.__signature__ = sig.replace(return_annotation=inspect.Signature.empty)
    return method


def _check_timeout(kwargs: dict) -> None:
    """A method's timeout= checked before its op starts (InvalidArgument): a bad one must fail
    the call alone, not a step it shares with others (registering a shared-memory region)."""
    timeout = kwargs.get("timeout")
    if timeout is not _ops.DEFAULT:
        _ops.timeout_seconds(timeout)


def sync_method(
        op: "Callable[Concatenate[Any, P], Generator[Any, Any, R]]"
) -> "Callable[Concatenate[Any, P], R]":
    """A blocking client method running op (signature and docstring are op's)."""
    def method(self, *args, **kwargs):
        _check_timeout(kwargs)
        return self._run(op(self, *args, **kwargs))
    return _like(method, op)


def async_method(
        op: "Callable[Concatenate[Any, P], Generator[Any, Any, R]]"
) -> "Callable[Concatenate[Any, P], Awaitable[R]]":
    """A coroutine client method running op (signature and docstring are op's)."""
    async def method(self, *args, **kwargs):
        _check_timeout(kwargs)
        return await self._run(op(self, *args, **kwargs))
    return _like(method, op)


def async_method_as(
        op: "Callable[Concatenate[Any, P], Generator[Any, Any, Any]]", result: Type[R]
) -> "Callable[Concatenate[Any, P], Awaitable[R]]":
    """async_method(op), whose result type checkers see as `result` (the async
    client's RemoteTensor and Factor, which op makes through the client)."""
    return async_method(op)


def _bearer(token: Optional[str]) -> tuple:
    """The authorization metadata of `token` (none for None). None falls back
    to the LINALGD_TOKEN environment variable, as the CLI does (the environment
    keeps a token off the process list); an empty variable counts as unset."""
    if token is None:
        token = os.environ.get("LINALGD_TOKEN") or None
    if token is None:
        return ()
    if not token or any(c <= " " or c > "~" for c in token):
        raise ValueError("token: printable ASCII without spaces, not empty")
    return (("authorization", "Bearer " + token),)


_METADATA_KEY = re.compile(r"[0-9a-z_.-]+")


def _checked_metadata(metadata: Any) -> tuple:
    """metadata as a tuple of (key, value) pairs, each as gRPC takes it (keys of lowercase
    letters, digits, '-', '_' and '.'; values printable ASCII, bytes for keys ending in -bin):
    ValueError naming the entry here, not at every call."""
    if isinstance(metadata, (str, bytes, dict)):
        raise ValueError(f"metadata: {metadata!r}; give (key, value) pairs")
    pairs = []
    for pair in metadata:
        if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise ValueError(f"metadata: {pair!r} is not a (key, value) pair")
        key, value = pair
        if not isinstance(key, str) or not _METADATA_KEY.fullmatch(key):
            raise ValueError(f"metadata: key {key!r}: lowercase letters, digits, '-', '_', '.'")
        if key.endswith("-bin"):
            if not isinstance(value, bytes):
                raise ValueError(f"metadata: {key}: a -bin key's value is bytes")
        elif not isinstance(value, str) or any(c < " " or c > "~" for c in value):
            raise ValueError(f"metadata: {key}: the value is not printable ASCII text")
        pairs.append((key, value))
    return tuple(pairs)


# Each transfer worker is a Python interpreter with its own channel, all
# started at the first large transfer; a tensor moves in at most
# transfer_connections parts, so more workers than that only cost memory.
MAX_TRANSFER_PROCESSES = 64

class ClientBase:
    """Options and request-side helpers of both clients (see Client's docstring)."""

    chunk_bytes = DEFAULT_CHUNK_BYTES
    _shm: Optional[Any] = None  # the sync client's shm.SharedMemoryPath, when on
    _remote_tensor_class = RemoteTensor
    _factor_class = Factor

    def _init_options(self, target: str, timeout: Optional[float], retries: int,
                      retry_policy: Optional[RetryPolicy], metadata: Any,
                      max_message_bytes: int, wait_for_ready: bool,
                      token: Optional[str] = None) -> None:
        timeout = _ops.timeout_seconds(timeout)
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout: {timeout} s; it must be positive, infinite or None")
        self.target = target
        self.timeout = timeout
        self.retry_policy = retry_policy or RetryPolicy(retries=retries)
        # gRPC's channel options are C ints: a larger limit is PROTOBUF_LIMIT.
        self.max_message_bytes = min(
            _ops.integer_arg(max_message_bytes, "max_message_bytes", 1, 2**63 - 1),
            PROTOBUF_LIMIT)
        # Operands and results of at least this many bytes are streamed
        # (PutTensor / keep_result + GetTensor) instead of travelling inline.
        # 4 MiB, as the C++ client's ClientOptions.stream_threshold_bytes: one
        # large unary message crosses slower than the streamed parts.
        self.stream_threshold = 4 << 20
        # Such a tensor moves in up to transfer_connections parts of at least
        # transfer_part_min_bytes, part i over TCP connection i (transfer.py).
        # 4, not the C++ client's 8: grpcio copies every message under the GIL,
        # and on a 16-core H200 host 4 connections moved a 4096^2 f32 round
        # trip at 1.80 GB/s against 1.33 with 8 and 1.28 with 16
        # (bench/results/2026-12-04-h200-run15).
        self.transfer_connections = 4
        self.transfer_part_min_bytes = 8 << 20
        self._closed = False
        self._metadata = _checked_metadata(metadata) + _bearer(token)
        self._wait_for_ready = wait_for_ready
        self.transfer_processes = 0
        # How transfer worker processes build their channels.
        self._worker_spec: Optional["_procs.ChannelSpec"] = None
        self._pool_lock = threading.Lock()
        # The transfer worker processes, once started; guarded by _pool_lock.
        self._pool: Optional["_procs.ProcessPool"] = None

    def _init_processes(self, processes: int, tls_pems: Any, credentials: Any,
                        options: Any) -> None:
        """transfer_processes: the parts of large tensors move in that many
        worker processes (_procs.py), started on first use; 0: on threads."""
        processes = int(processes)
        if processes < 0 or processes > MAX_TRANSFER_PROCESSES:
            raise ValueError(f"transfer_processes must be 0 to {MAX_TRANSFER_PROCESSES}, "
                             f"not {processes}")
        self.transfer_processes = processes
        if processes:
            self._worker_spec = _procs.channel_spec(tls_pems, credentials, options,
                                                    self._metadata, self._wait_for_ready)

    def _transfer_pool(self) -> Optional["_procs.ProcessPool"]:
        """The transfer worker processes (started now if not yet), or None: transfers
        on threads (transfer_processes 0, credentials a worker cannot rebuild, closed)."""
        if not self.transfer_processes or self._worker_spec is None:
            return None
        with self._pool_lock:
            if self._closed:
                return None
            if self._pool is None:
                self._pool = _procs.ProcessPool(self.transfer_processes, self._worker_spec)
            return self._pool

    def _close_processes(self) -> None:
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def _large(self, nbytes: int) -> bool:
        return bool(self.stream_threshold) and nbytes >= self.stream_threshold

    def _deadline(self, timeout: Any) -> Optional[float]:
        """The absolute time.monotonic() deadline of a call of timeout seconds, or None."""
        return _ops._deadline(self, timeout)

    def _call_kwargs(self, deadline: Optional[float]) -> dict:
        """Keyword arguments of one gRPC call that ends by deadline."""
        return {"timeout": _procs.grpc_timeout(deadline), "metadata": self._metadata or None,
                "wait_for_ready": self._wait_for_ready or None}

    def _retry_delay(self, error: LinalgdError, attempt: int,
                     deadline: Optional[float]) -> float:
        """Seconds to wait before retrying the failed attempt; raises error when
        the policy says no or the wait would pass the deadline."""
        if not self.retry_policy.should_retry(error, attempt):
            raise error
        delay = self.retry_policy.delay(attempt, error.retry_after)
        if deadline is not None and time.monotonic() + delay >= deadline:
            raise error
        return delay

    def _check_open(self) -> None:
        """FailedPrecondition for a call begun after close() (gRPC would say only that its
        channel is closed); calls already running when close() came end as gRPC ends them."""
        if self._closed:
            raise FailedPrecondition(f"the client of {self.target} is closed: calls after "
                                     "close() are refused (make a new Client)")

    def _arg(self, x: Any, field: str, min_ndim: int = 1) -> Tuple[Any, Any]:
        """(array or RemoteTensor, DType) of an operand."""
        if isinstance(x, RemoteTensor):
            if x.ndim < min_ndim:
                raise InvalidArgument(f"{field}: the remote tensor {x.id} has shape {x.shape}; "
                                      f"a remote {field} needs at least {min_ndim} dimensions")
            return x, x.wire
        return tensors.to_numpy(x, field)

    def _shm_usable(self, operands: dict, keep: bool) -> bool:
        return (self._shm is not None and not keep and
                not any(isinstance(arr, RemoteTensor) for arr, _ in operands.values()))

    def _check_size(self, operands: dict) -> None:
        sizes = {name: arr.nbytes for name, (arr, _) in operands.items()
                 if not isinstance(arr, RemoteTensor) and not self._large(arr.nbytes)}
        total = sum(sizes.values())
        limit = min(self.max_message_bytes, PROTOBUF_LIMIT)
        if total > limit:
            parts = ", ".join(f"{k} {v} B" for k, v in sizes.items())
            raise ResourceExhausted(
                f"request operands total {total} bytes ({parts}), over the {limit}-byte "
                f"message limit; operands of stream_threshold ({self.stream_threshold}) bytes "
                "or more are streamed (PutTensor): lower it to stream these")

    def _remote_tensor(self, tensor_id: str, wire: int, shape: Any,
                       info: Any = None) -> RemoteTensor:
        return self._remote_tensor_class(self, tensor_id, wire, shape, info)

    def _factor(self, resp: Any, info: Any) -> Factor:
        return self._factor_class(self, resp, info)
