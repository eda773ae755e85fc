"""What linalgd.Client and linalgd.aio.Client share: every method's request
building and response decoding, written once as a generator.

An operation is a generator that yields effects (the I/O it needs) and receives
their results; its return value is the method's. The sync client performs each
effect by blocking (driver.run_sync), the asyncio client by awaiting; the two
differ in nothing else. Effects:

    Invoke(method, request, timeout)  one RPC with retries -> its response
    PutMany(items, deadline, near)    uploads (transfer.py) -> [TensorInfo]; near:
                                      the ids the same request names (with
                                      replicas, the uploads go where they are)
    Get(tensor_id, deadline)          a resident tensor's (TensorInfo, raw bytes)
    Drop(ids, deadline)               best-effort deletes, all of them by deadline (see
                                      cleanup_deadline); never raises
    Shm(args)                         the shared-memory path (sync client only)
                                      -> (response, array) or None
    Probe(service, timeout)           one health check that waits for the channel
                                      to connect, no retries -> the status name
    Sleep(seconds)                    time.sleep or asyncio.sleep

`client` is a ClientBase (its options, _arg, _large, _check_size); an
exception raised while performing an effect is thrown into the generator at
the yield, so try/finally in an operation works as in straight-line code.

A method's timeout is one deadline, taken when the operation starts: each of
its steps (uploads, the RPC and its retries, the fetch of a kept result, a
factorization made again) gets what is left of it, not a timeout of its own.
"""
import logging
import math
import numbers
import time
from typing import Any, Generator, List, NamedTuple, Optional, Sequence, Tuple, TypeVar, Union

from . import _health, shm, tensors
from ._stubs import pb
from .enums import ComputeMode, Epilogue, SolveMethod, parse
from ._procs import cleanup_deadline
from ._replicas import request_ids
from .errors import (DataLoss, DeadlineExceeded, InvalidArgument, LinalgdError, ReplicaGone,
                     ResourceExhausted, store_refusal)
from .remote import Factor, RemoteTensor
from .results import ExecutionInfo, MatmulResult, ServerInfo, SolveResult
from .sparse import (Preconditioner, SparseMethod, SparseSolveResult, check_b_dtype,
                     complex_b_for, encode_csr, is_scipy_sparse, to_scipy_like)
from .store import TEMPORARY_TTL, TensorInfo, id_of, put_item

_log = logging.getLogger("linalgd")

# What a response needs beyond its result's bytes (ExecutionInfo, a solve's
# numerics), as the server counts it before sending a kept result inline.
RESPONSE_MARGIN_BYTES = 64 << 10
# protobuf's hard limit on one message (as _base.PROTOBUF_LIMIT).
_PROTOBUF_LIMIT = 2**31 - 1


class _Default:
    def __repr__(self):
        return "<the client's timeout>"


DEFAULT = _Default()  # timeout=DEFAULT: the client's timeout
_WITH_BIAS = {Epilogue.NONE: Epilogue.BIAS, Epilogue.RELU: Epilogue.RELU_BIAS,
              Epilogue.GELU: Epilogue.GELU_BIAS}


class Invoke(NamedTuple):
    method: str  # a Linalg method name, or "Health"
    request: Any
    timeout: Any  # seconds, None or DEFAULT


class PutMany(NamedTuple):
    items: List[Tuple[Any, memoryview]]  # (PutTensorHeader, raw) from store.put_item
    deadline: Optional[float]  # time.monotonic() seconds
    near: Sequence[str] = ()  # ids of the request the uploads are for


class Get(NamedTuple):
    tensor_id: str
    deadline: Optional[float]


class Drop(NamedTuple):
    ids: Sequence[str]
    deadline: float  # time.monotonic() seconds, for all of them: cleanup_deadline()


class Shm(NamedTuple):
    args: tuple  # shm.SharedMemoryPath.call's arguments


class Probe(NamedTuple):
    service: str
    timeout: float


class Sleep(NamedTuple):
    seconds: float


# The operations both clients offer as methods.
METHODS = ("matmul", "solve", "lstsq", "server_info", "health", "sparse_solve", "put",
           "put_info", "get", "delete", "list_tensors", "factorize", "release_factor",
           "wait_for_server")


Op = Generator[Any, Any, Any]
T = TypeVar("T")
# An operation whose result is a T (what the client method returns).
Gen = Generator[Any, Any, T]


def _scalar_parts(value, field):
    """(real, imaginary) of a real or complex scalar (numpy and torch scalars too)."""
    try:
        z = complex(value)
    except (TypeError, ValueError):
        raise InvalidArgument(f"{field}: {value!r} is not a number") from None
    return z.real, z.imag


def seconds_arg(value: Any, field: str) -> float:
    """value (a real number of seconds) as a float; InvalidArgument naming field for anything
    else (a bool, a string, NaN)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidArgument(f"{field}: {value!r} is not a number of seconds")
    seconds = float(value)
    if math.isnan(seconds):
        raise InvalidArgument(f"{field}: NaN is not a number of seconds")
    return seconds


def integer_arg(value: Any, field: str, low: int, high: int) -> int:
    """value (an integer in [low, high]) as an int; InvalidArgument naming field otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidArgument(f"{field}: {value!r} is not an integer")
    number = int(value)
    if not low <= number <= high:
        raise InvalidArgument(f"{field}: {number} is outside [{low}, {high}]")
    return number


def real_arg(value: Any, field: str) -> float:
    """value (a real number) as a float; InvalidArgument naming field for anything else (a
    bool, a string); NaN passes, for the server to refuse naming its own rule."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidArgument(f"{field}: {value!r} is not a real number")
    return float(value)


def priority_arg(priority: Any) -> int:
    """A request's priority field (int32)."""
    return integer_arg(priority, "priority", -2**31, 2**31 - 1)


def timeout_seconds(timeout: Any, field: str = "timeout") -> Optional[float]:
    """timeout as seconds, None for no deadline (None or infinity); zero or less is a deadline
    already passed. InvalidArgument naming field for anything but a real number."""
    if timeout is None:
        return None
    seconds = seconds_arg(timeout, field)
    return None if seconds == math.inf else seconds


def _timeout(client, timeout):
    return client.timeout if timeout is DEFAULT else timeout


def _or_default(timeout):
    """The timeout= of the store and factor methods, where None means the client's."""
    return DEFAULT if timeout is None else timeout


def _deadline(client, timeout):
    """The time.monotonic() deadline of a call of timeout seconds (DEFAULT: the client's), or
    None."""
    seconds = timeout_seconds(_timeout(client, timeout))
    return None if seconds is None else time.monotonic() + seconds


def time_left(deadline: Optional[float]) -> float:
    """The timeout= that ends a step by deadline (time.monotonic(); None: no deadline): the
    seconds left, zero or less once it has passed, math.inf for none. Not None, which the
    store and factor methods read as the client's timeout."""
    return math.inf if deadline is None else deadline - time.monotonic()


# -- shared steps ---------------------------------------------------------


def encode_operands(client, req, operands, deadline) -> Op:
    """Fills req's operand fields: a RemoteTensor by id, an array at or above
    stream_threshold uploaded (all of them at once, in parallel parts) and
    named by id, the rest inline. The uploads ask the server to evict nothing
    for them (no_evict), so they never push out what the caller stored.
    Returns the ids of the uploads, for Drop."""
    large = []
    for name, (arr, wire) in operands.items():
        field = getattr(req, name)
        if isinstance(arr, RemoteTensor):
            field.CopyFrom(arr.to_proto())
        elif client._large(arr.nbytes):
            large.append((name, put_item(arr, wire, ttl=TEMPORARY_TTL, no_evict=True)))
        else:
            field.CopyFrom(tensors.encode_array(arr, wire, name))
    if not large:
        return []
    infos = yield PutMany([item for _, item in large], deadline, request_ids(req))
    for (name, _), info in zip(large, infos):
        getattr(req, name).resident_id = info.id
    return [info.id for info in infos]


def _server_limits(client, timeout) -> Op:
    """GetServerInfo's limits, asked once and kept on the client."""
    limits = getattr(client, "_server_limits", None)
    if limits is None:
        info = yield Invoke("GetServerInfo", pb.GetServerInfoRequest(), timeout)
        limits = client._server_limits = info.limits
        client._server_message_limit = limits.max_message_bytes or _PROTOBUF_LIMIT
    return limits


def message_limit(client, timeout) -> Op:
    """The largest message both ends take: the client's max_message_bytes and
    the server's (GetServerInfo's limits.max_message_bytes)."""
    yield from _server_limits(client, timeout)
    return min(client.max_message_bytes, client._server_message_limit, _PROTOBUF_LIMIT)


# Operands of fewer elements are sent without asking the server's limit.
_ELEMENTS_WORTH_ASKING = 1 << 24


def check_elements(client, operands, deadline) -> Op:
    """InvalidArgument naming the operand when an array has more elements than
    the server takes in one tensor (GetServerInfo's limits.max_elements, asked
    only for an operand of 2^24 elements or more), before it is copied: a
    view of a few bytes (numpy.broadcast_to, as_strided with zero strides)
    would otherwise be expanded to all its elements here first."""
    for name, (arr, _) in operands.items():
        if isinstance(arr, RemoteTensor) or arr.size < _ELEMENTS_WORTH_ASKING:
            continue
        limits = yield from _server_limits(client, time_left(deadline))
        if limits.max_elements and arr.size > limits.max_elements:
            raise InvalidArgument(
                f"{name}: shape {tuple(arr.shape)} has {arr.size} elements, more than the "
                f"server's max_elements {limits.max_elements} for one tensor; nothing was sent")


def encode_inline_instead(client, method, req, operands, refused, deadline) -> Op:
    """After the store refused the call's uploads (refused: the
    RESOURCE_EXHAUSTED with linalgd-store-refused; put_many deleted what it
    had stored): every operand inline when the request then fits the message
    limit of both ends, else refused again, its message naming the bytes and
    the limit."""
    for name, (arr, wire) in operands.items():
        if not isinstance(arr, RemoteTensor) and client._large(arr.nbytes):
            getattr(req, name).CopyFrom(tensors.encode_array(arr, wire, name))
    size = req.ByteSize()
    limit = yield from message_limit(client, time_left(deadline))
    if size > limit:
        raise type(refused)(
            f"{refused.message}; the operands are too large to send inline instead: the "
            f"request would be {size} bytes, over the {limit}-byte message limit (the smaller "
            f"of the client's max_message_bytes {client.max_message_bytes} and the server's "
            f"{client._server_message_limit})", code=refused.code, method=refused.method,
            attempts=refused.attempts, trailing_metadata=refused.trailing_metadata,
            retry_after=refused.retry_after)
    _log.debug("%s: the store refused its operands' uploads (%s); sending them inline "
               "instead, a request of %d bytes", method, refused.message, size)


def call_with_operands(client, method, req, operands, deadline) -> Op:
    """method's call with operands encoded (encode_operands), all by deadline; the
    uploads are deleted afterwards, whatever the outcome."""
    temps = []
    try:
        try:
            temps = yield from encode_operands(client, req, operands, deadline)
        except ResourceExhausted as e:
            if store_refusal(e) is None:
                raise
            yield from encode_inline_instead(client, method, req, operands, e, deadline)
        return (yield Invoke(method, req, time_left(deadline)))
    finally:
        if temps:
            yield Drop(temps, cleanup_deadline(deadline))


def keep_or_inline(client, req, keep, out_bytes) -> None:
    """Sets req.keep_result for a result of about out_bytes: kept when asked
    (keep) or large; a large one not asked to be kept may come inline instead
    when the store refuses to keep it (inline_if_store_refuses) and it fits
    the client's max_message_bytes (the server checks its own)."""
    req.keep_result = bool(keep) or client._large(out_bytes)
    req.inline_if_store_refuses = (req.keep_result and not keep and
                                   out_bytes + RESPONSE_MARGIN_BYTES <= client.max_message_bytes)


def result_bytes(shape, wire) -> int:
    """The bytes of a result of shape (as the server shapes it: shm.matmul_out_shape,
    shm.solve_out_shape) and DType wire; 0 for shape None, operands the server refuses."""
    return 0 if shape is None else math.prod(shape) * tensors.itemsize(wire)


def note_inline_result(method, t) -> None:
    """Logs a result the server sent inline although it was to be kept."""
    if t.WhichOneof("source") != "resident_id":
        _log.debug("%s: the store refused to keep its result; the server sent it inline "
                   "(%d bytes)", method, len(t.data))


def fetch_kept(client, t, field, as_torch, deadline) -> Op:
    """Decodes t, streaming it back by the call's deadline (and deleting it) when it was
    kept."""
    if t.WhichOneof("source") != "resident_id":
        return tensors.decode(t, field, as_torch=as_torch)
    try:
        return (yield from _fetch(t.resident_id, deadline, field, as_torch))
    finally:
        yield Drop([t.resident_id], cleanup_deadline(deadline))


def remote_result(client, t, field) -> RemoteTensor:
    """The RemoteTensor of a result kept with keep=True."""
    if t.WhichOneof("source") != "resident_id":
        raise DataLoss(f"{field}: keep=True, but the server sent the bytes")
    return client._remote_tensor(t.resident_id, t.dtype, t.shape)


# -- matmul, solve ---------------------------------------------------------


def matmul(client, a: Any, b: Any, c: Any = None, *, bias: Any = None,
           transpose_a: bool = False, transpose_b: bool = False,
           alpha: Optional[complex] = None, beta: Optional[complex] = None,
           epilogue: Any = None, compute_mode: Any = None, output_dtype: Any = None,
           allow_non_finite: bool = False, priority: int = 0, timeout: Any = DEFAULT,
           return_info: bool = False, keep: bool = False) -> Op:
    """epilogue(alpha * op(a) @ op(b) + beta * c + bias), numpy.matmul shapes.

    a: [..., M, K] ([..., K, M] with transpose_a); b: [..., K, N] ([..., N, K]
    with transpose_b); batch dims broadcast. A 1-D a or b is promoted and
    the added dim removed from the result, as numpy.matmul does.
    c: broadcasts to the output; beta defaults to 1 with c, else 0.
    alpha, beta: real, or complex for complex64/complex128 operands.
    bias: [N] / [1, N] per output column or [M, 1] per row; given a bias,
        epilogue none/relu/gelu becomes bias/relu_bias/gelu_bias.
    epilogue, compute_mode: enum member, int or name ("relu_bias", "tf32").
    output_dtype: default a's dtype; numpy/torch dtype or "float32" etc.
    a, b, c, bias: arrays, torch tensors (CPU or CUDA) or RemoteTensors.
    keep: leave the output on the server and return its RemoteTensor.
    Returns the output array (torch on a's or b's device if either is torch),
    or a MatmulResult (out, info) with return_info=True.
    """
    deadline = _deadline(client, timeout)
    ep = parse(Epilogue, epilogue, "epilogue")
    if bias is not None:
        ep = _WITH_BIAS.get(ep, ep)
    a_arr, a_wire = client._arg(a, "a", min_ndim=2)
    b_arr, b_wire = client._arg(b, "b", min_ndim=2)
    squeeze = []
    if a_arr.ndim == 1:
        a_arr = a_arr.reshape((-1, 1) if transpose_a else (1, -1))
        squeeze.append(-2)
    if b_arr.ndim == 1:
        b_arr = b_arr.reshape((1, -1) if transpose_b else (-1, 1))
        squeeze.append(-1)
    if keep and squeeze:
        raise InvalidArgument("matmul: keep=True needs a and b of at least 2 dimensions")
    req = pb.MatmulRequest(
        transpose_a=bool(transpose_a), transpose_b=bool(transpose_b), epilogue=int(ep),
        compute_mode=int(parse(ComputeMode, compute_mode, "compute_mode")),
        output_dtype=int(tensors.parse_dtype(output_dtype, "output_dtype")),
        allow_non_finite=bool(allow_non_finite), priority=priority_arg(priority))
    operands = {"a": (a_arr, a_wire), "b": (b_arr, b_wire)}
    if c is not None:
        c_arr, c_wire = client._arg(c, "c")
        operands["c"] = (c_arr.reshape(1, -1) if c_arr.ndim == 1 else c_arr, c_wire)
    if bias is not None:
        operands["bias"] = client._arg(bias, "bias")
    if alpha is not None:
        req.alpha, req.alpha_imag = _scalar_parts(alpha, "alpha")
    if beta is not None:
        req.beta, req.beta_imag = _scalar_parts(beta, "beta")
    yield from check_elements(client, operands, deadline)
    device = tensors.torch_device(a, b)
    as_torch = device is not None
    done = None
    if client._shm_usable(operands, keep) and a_arr.ndim >= 2 and b_arr.ndim >= 2:
        out_dtype = req.output_dtype or a_wire
        done = yield Shm(("Matmul", req, operands, out_dtype,
                          shm.matmul_out_shape(a_arr, b_arr, transpose_a, transpose_b),
                          "out", deadline, as_torch))
    if done is not None:
        resp, out = done
    else:  # the socket, taken, keeps the call's deadline
        resp, out = yield from _matmul_socket(client, req, operands, a_arr, b_arr, transpose_a,
                                              transpose_b, deadline, as_torch, keep)
    for axis in squeeze:
        out = out.squeeze(axis)
    if not keep:
        out = tensors.to_device(out, device)
    if return_info:
        return MatmulResult(out, ExecutionInfo.from_proto(resp.info))
    return out


def _matmul_socket(client, req, operands, a_arr, b_arr, transpose_a, transpose_b, deadline,
                   as_torch, keep) -> Op:
    client._check_size(operands)
    out_shape = None  # scalars are refused below
    if a_arr.ndim >= 2 and b_arr.ndim >= 2:
        out_shape = shm.matmul_out_shape(a_arr, b_arr, transpose_a, transpose_b)
    keep_or_inline(client, req, keep,
                   result_bytes(out_shape, req.output_dtype or operands["a"][1]))
    resp = yield from call_with_operands(client, "Matmul", req, operands, deadline)
    if keep:
        return resp, remote_result(client, resp.out, "out")
    if req.keep_result:
        note_inline_result("Matmul", resp.out)
    return resp, (yield from fetch_kept(client, resp.out, "out", as_torch, deadline))


def solve(client, a: Any, b: Any, *, method: Any = None, no_fallback: bool = False,
          allow_non_finite: bool = False, priority: int = 0, timeout: Any = DEFAULT,
          return_info: bool = False, factor: Union[None, str, Factor] = None,
          rcond: Optional[float] = None, keep: bool = False) -> Op:
    """x with a @ x = b. a: [..., M, N]; b: [..., M, K] or [M]; batch dims broadcast.

    method: auto (default), lu, cholesky, qr, lstsq. A singular, numerically
    singular (rcond below the server's threshold) or non-SPD a falls back
    (cholesky -> lu -> lstsq) unless no_fallback, which raises
    FailedPrecondition instead. Returns x (torch on a's or b's device if either
    is torch), or a SolveResult (x, method_used, fallback, residual, info,
    rcond and, for lstsq, residuals, rank, singular_values) with return_info.
    a, b: arrays, torch tensors (CPU or CUDA) or RemoteTensors.
    factor: a Factor from factorize(), or its id; a must then be None.
    rcond: numpy.linalg.lstsq's cutoff for the SVD (default eps * max(M, N)).
    keep: leave x on the server and return its RemoteTensor.
    """
    deadline = _deadline(client, timeout)
    if factor is not None and a is not None:
        raise InvalidArgument("solve: give a or factor, not both")
    b_arr, b_wire = client._arg(b, "b")
    vector = b_arr.ndim == 1
    if vector:
        b_arr, b_wire = client._arg(b, "b", min_ndim=2)  # refuses a 1-D RemoteTensor
        b_arr = b_arr.reshape(-1, 1)
    req = pb.SolveRequest(method=int(parse(SolveMethod, method, "method")),
                          no_fallback=bool(no_fallback),
                          allow_non_finite=bool(allow_non_finite), priority=priority_arg(priority))
    if rcond is not None:
        req.rcond = real_arg(rcond, "rcond")
    operands = {"b": (b_arr, b_wire)}
    a_arr = None
    if factor is not None:
        req.factor_id = factor.id if isinstance(factor, Factor) else factor
    else:
        a_arr, a_wire = client._arg(a, "a", min_ndim=2)
        operands = {"a": (a_arr, a_wire), **operands}
    yield from check_elements(client, operands, deadline)
    device = tensors.torch_device(a, b)
    as_torch = device is not None
    done = None
    if client._shm_usable(operands, keep):
        out_dtype = max((w for _, w in operands.values()), key=tensors.itemsize)
        done = yield Shm(("Solve", req, operands, out_dtype, shm.solve_out_shape(a_arr, b_arr),
                          "x", deadline, as_torch))
    if done is not None:
        resp, x = done
    else:  # the socket, taken, keeps the call's deadline
        client._check_size(operands)
        keep_or_inline(client, req, keep, result_bytes(shm.solve_out_shape(a_arr, b_arr),
                                                         b_wire))
        resp = yield from _solve_call(client, req, operands, deadline, factor)
        if keep:
            x = remote_result(client, resp.x, "x")
        else:
            if req.keep_result:
                note_inline_result("Solve", resp.x)
            x = yield from fetch_kept(client, resp.x, "x", as_torch, deadline)
    batch_shape = tuple(x.shape[:-2])
    if vector and not keep:
        x = x.squeeze(-1)
    if not keep:
        x = tensors.to_device(x, device)
    if not return_info:
        return x
    return SolveResult.from_proto(x, resp, batch_shape)


def _solve_call(client, req, operands, deadline, factor) -> Op:
    """The Solve call; a Factor made with recreate=True whose replica is gone
    is factorized again (on another replica) and the call made once more, all by
    deadline."""
    try:
        return (yield from call_with_operands(client, "Solve", req, operands, deadline))
    except ReplicaGone:
        if not isinstance(factor, Factor) or factor._source is None:
            raise
    if req.factor_id == factor.id:  # else another call has made it again already
        source, options = factor._source
        fresh = yield from factorize(client, source, timeout=time_left(deadline), recreate=True,
                                     **options)
        factor._adopt(fresh)
    req.factor_id = factor.id
    return (yield from call_with_operands(client, "Solve", req, operands, deadline))


def lstsq(client, a: Any, b: Any, rcond: Optional[float] = None,
          **kwargs) -> Gen[Tuple[Any, Any, int, Any]]:
    """numpy.linalg.lstsq through the server's SVD: (x, residuals, rank, s).

    Batched a and b ([..., M, N], [..., M, K]) give batched outputs.
    Other keyword arguments go to solve().
    """
    r = yield from solve(client, a, b, method="lstsq", rcond=rcond, return_info=True, **kwargs)
    return r.x, r.residuals, r.rank, r.singular_values


def server_info(client, *, timeout: Any = DEFAULT) -> Gen[ServerInfo]:
    """Version, backends, devices and limits of the server (a ServerInfo)."""
    return ServerInfo.from_proto((yield Invoke("GetServerInfo", pb.GetServerInfoRequest(),
                                               timeout)))


def health(client, service: str = "", *, timeout: Any = DEFAULT) -> Gen[str]:
    """grpc.health.v1 status: "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN" or "UNKNOWN".

    service: "" for the whole server, or e.g. "linalgd.v1.Linalg".
    """
    resp = yield Invoke("Health", _health.HealthCheckRequest(service=service), timeout)
    return _health.status_name(resp.status)


def wait_for_server(client, timeout: float = 10.0, service: str = "") -> Gen[None]:
    """Returns once health is SERVING; raises DeadlineExceeded after timeout s."""
    seconds = timeout_seconds(timeout)
    deadline = math.inf if seconds is None else time.monotonic() + seconds
    last = "no answer"
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise DeadlineExceeded(f"{client.target} not SERVING after {timeout} s ({last})",
                                   method="Health")
        try:
            last = yield Probe(service, min(remaining, 1.0))
            if last == "SERVING":
                return
        except LinalgdError as e:
            last = f"{e.code.name if e.code else 'ERROR'}: {e.message}"
        yield Sleep(min(0.05, max(0.0, deadline - time.monotonic())))


# -- resident tensors and factors -------------------------------------------


def put(client, x: Any, *, placement: Optional[str] = None, ttl: Optional[float] = None,
        timeout: Optional[float] = None, no_evict: bool = False) -> Gen[RemoteTensor]:
    """Uploads x (numpy/torch/array-like) and returns its RemoteTensor.

    placement: "host" (default) or "gpu:N"; ttl: seconds from the last use
    (default the server's --store-ttl). Pass the RemoteTensor (or its
    .id to get/delete) instead of an array; see linalgd.remote.
    no_evict: when the store (or the tenant's quota) is full, refuse the
    upload (RESOURCE_EXHAUSTED naming the bytes) instead of evicting the
    least recently used tensors; by default a put evicts them.
    """
    arr, wire = tensors.to_numpy(x, "tensor")
    info = yield from put_info(client, arr, placement=placement, ttl=ttl, timeout=timeout,
                               no_evict=no_evict, _wire=wire)
    return client._remote_tensor(info.id, info.dtype, info.shape, info)


def put_info(client, x: Any, *, placement: Optional[str] = None, ttl: Optional[float] = None,
             timeout: Optional[float] = None, no_evict: bool = False,
             _wire: Any = None) -> Gen[TensorInfo]:
    """As put(), returning the server's TensorInfo."""
    arr, wire = tensors.to_numpy(x, "tensor") if _wire is None else (x, _wire)
    if ttl is not None:
        ttl = seconds_arg(ttl, "ttl")
    deadline = _deadline(client, _or_default(timeout))
    yield from check_elements(client, {"tensor": (arr, wire)}, deadline)
    [info] = yield PutMany([put_item(arr, wire, placement, ttl, no_evict)], deadline)
    return TensorInfo.from_proto(info)


def get(client, tensor: Union[str, RemoteTensor], *, timeout: Optional[float] = None,
        as_torch: bool = False) -> Op:
    """The resident tensor (a RemoteTensor or its id) as a fresh numpy array."""
    return (yield from _fetch(id_of(tensor), _deadline(client, _or_default(timeout)), "tensor",
                              as_torch))


def _fetch(tensor_id, deadline, field, as_torch) -> Op:
    """The resident tensor tensor_id, streamed back by deadline, decoded (field names it in
    errors)."""
    info, raw = yield Get(tensor_id, deadline)
    return tensors.from_bytes(raw, info.dtype, info.shape, field, as_torch=as_torch)


def delete(client, tensor: Union[str, RemoteTensor], *,
           timeout: Optional[float] = None) -> Gen[None]:
    """Deletes a resident tensor (a RemoteTensor or its id)."""
    yield Invoke("DeleteTensor", pb.DeleteTensorRequest(id=id_of(tensor)),
                 _or_default(timeout))


def list_tensors(client, *, all_tenants: bool = False,
                 timeout: Optional[float] = None) -> Gen[List[TensorInfo]]:
    """The caller's tensors and factors (TensorInfos); all_tenants: every
    tenant's (an admin tenant only, else PERMISSION_DENIED), each naming its tenant."""
    resp = yield Invoke("ListTensors", pb.ListTensorsRequest(all_tenants=bool(all_tenants)),
                        _or_default(timeout))
    return [TensorInfo.from_proto(t) for t in resp.tensors]


def factorize(client, a: Any, *, method: Any = None, no_fallback: bool = False,
              ttl: Optional[float] = None, allow_non_finite: bool = False,
              timeout: Optional[float] = None, recreate: bool = False) -> Gen[Factor]:
    """Factorizes square a (LU or Cholesky; an array or RemoteTensor) on the
    server; returns a Factor: f.solve(b), f.rcond, f.method, f.release(),
    `with`, released when collected. solve(None, b, factor=f or id) works too.
    recreate: the Factor keeps a (an array, not a RemoteTensor) and, when the
    replica that holds the factorization is gone, factorizes a again on
    another replica and retries the solve once.
    """
    if recreate and isinstance(a, RemoteTensor):
        raise InvalidArgument(f"factorize: recreate=True needs an array a, not the remote "
                              f"tensor {a.id} (it is gone with its replica)")
    deadline = _deadline(client, _or_default(timeout))
    req = pb.FactorizeRequest(method=int(parse(SolveMethod, method, "method")),
                              no_fallback=bool(no_fallback),
                              ttl_seconds=0.0 if ttl is None else seconds_arg(ttl, "ttl"),
                              allow_non_finite=bool(allow_non_finite))
    operand = client._arg(a, "a")
    yield from check_elements(client, {"a": operand}, deadline)
    resp = yield from call_with_operands(client, "Factorize", req, {"a": operand}, deadline)
    factor = client._factor(resp, ExecutionInfo.from_proto(resp.info))
    if recreate:
        factor._source = (operand[0], dict(method=method, no_fallback=no_fallback, ttl=ttl,
                                           allow_non_finite=allow_non_finite))
    return factor


def release_factor(client, factor: Union[str, Factor], *,
                   timeout: Optional[float] = None) -> Gen[None]:
    """Frees a factor (a Factor or its id) on the server."""
    yield Invoke("ReleaseFactor", pb.ReleaseFactorRequest(factor_id=id_of(factor)),
                 _or_default(timeout))


# -- sparse ---------------------------------------------------------------


def sparse_solve(client, a: Any, b: Any, *, method: Any = None, preconditioner: Any = None,
                 tol: float = 0.0, max_iter: int = 0, x0: Any = None, no_fallback: bool = False,
                 allow_non_finite: bool = False, priority: int = 0, timeout: Any = DEFAULT,
                 return_info: bool = False) -> Op:
    """x with a @ x = b for a sparse square a (n x n) and b [n] or [n, k].

    a: scipy.sparse (any format) or (indptr, indices, data, shape) in CSR.
    b: dense, or scipy.sparse (then x is a sparse CSR, as spsolve returns).

    method: auto (default; cholesky for a symmetric a with a positive
    diagonal, else lu), cholesky, lu, qr, cg, bicgstab, gmres.
    preconditioner (iterative methods): none, jacobi, ilu0, ic0.
    tol, max_iter: iterative stopping rule (0: the server's defaults).
    x0: the iterative methods' starting point, shaped like b (default zeros).
    A failed method falls back (cholesky -> lu -> qr; iterative -> direct)
    unless no_fallback, which raises FailedPrecondition instead.
    a's values are sent in b's dtype (a real b is first promoted to complex
    when a is complex). Returns x (torch on b's device when b is a torch
    tensor, as matmul and solve do), or a SparseSolveResult
    with return_info. b and x0 may be RemoteTensors (put()), named by id;
    a b or x0 of stream_threshold bytes or more is uploaded in parts first.
    """
    deadline = _deadline(client, timeout)
    sparse_b = b if is_scipy_sparse(b) else None
    if sparse_b is not None:
        b = sparse_b.toarray()
    b_arr, b_wire = client._arg(b, "b")
    vector = b_arr.ndim == 1
    if vector:
        b_arr, b_wire = client._arg(b, "b", min_ndim=2)  # refuses a 1-D RemoteTensor
        b_arr = b_arr.reshape(-1, 1)
    if not isinstance(b_arr, RemoteTensor):  # a complex a: a real b is promoted, not cut
        promoted = complex_b_for(a, b_arr)
        if promoted is not None:
            b_arr, b_wire = client._arg(promoted, "b")
    check_b_dtype(b_wire)  # a's values go in b's dtype
    req = pb.SparseSolveRequest(
        a=encode_csr(a, dtype=b_arr.dtype),
        method=int(parse(SparseMethod, method, "method")),
        preconditioner=int(parse(Preconditioner, preconditioner, "preconditioner")),
        tolerance=real_arg(tol, "tol"),
        max_iterations=integer_arg(max_iter, "max_iter", -2**63, 2**63 - 1),
        no_fallback=bool(no_fallback),
        allow_non_finite=bool(allow_non_finite), priority=priority_arg(priority))
    operands = {"b": (b_arr, b_wire)}
    yield from check_elements(client, operands, deadline)
    if x0 is not None:  # shaped like b (the server checks), sent in b's dtype
        x0_arr, x0_wire = client._arg(x0, "x0")
        yield from check_elements(client, {"x0": (x0_arr, x0_wire)}, deadline)
        if isinstance(x0_arr, RemoteTensor):  # named by id, as it is
            operands["x0"] = (x0_arr, x0_wire)
        else:
            if vector:
                x0_arr = x0_arr.reshape(-1, 1)
            operands["x0"] = (x0_arr.astype(b_arr.dtype, copy=False), b_wire)
    resp = yield from call_with_operands(client, "SparseSolve", req, operands, deadline)
    device = tensors.torch_device(b)
    x = tensors.decode(resp.x, "x", as_torch=device is not None)
    if vector:
        x = x.squeeze(-1)
    x = tensors.to_device(x, device)
    if sparse_b is not None:
        x = to_scipy_like(x, sparse_b)
    if not return_info:
        return x
    return SparseSolveResult(x, SparseMethod(resp.method_used),
                             Preconditioner(resp.preconditioner_used), resp.iterations,
                             resp.residual, resp.fallback, resp.dense_path,
                             ExecutionInfo.from_proto(resp.info))
