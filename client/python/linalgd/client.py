"""linalgd.Client: numpy (and torch) in, numpy (and torch) out, over gRPC.

Thread safety: a Client may be shared by threads; it holds one gRPC channel
(plus the transfer connections and threads it opens on first use) and no
per-call state.

Large tensors: an operand of stream_threshold bytes or more is uploaded first
(in parallel parts over several connections, transfer.py) and named by id; a
result that large is kept on the server and fetched the same way. Smaller
operands travel inline; a request above max_message_bytes is refused
client-side with ResourceExhausted naming the sizes.

Remote objects: put() returns a RemoteTensor, accepted as an operand wherever
an array is; keep=True leaves a result on the server as one; factorize()
returns a Factor (remote.py).

Shared memory (use_shared_memory=True, a same-host server started with
--allow-shm): matmul and solve operands and results go through one memfd
region per Client instead of the socket; see shm.py.
"""
import math
import time
from typing import Any, Optional, Union

import grpc

from . import _health, shm, tensors
from .remote import Factor, RemoteTensor
from .transfer import Transfer
from ._stubs import pb, pb_grpc
from .enums import ComputeMode, Epilogue, SolveMethod, parse
from .errors import DeadlineExceeded, InvalidArgument, ResourceExhausted, from_rpc_error
from .results import ExecutionInfo, MatmulResult, ServerInfo, SolveResult
from ._tls import tls_credentials
from .retry import RetryPolicy
from .sparse import SparseMixin
from .store import TEMPORARY_TTL, StoreMixin, put_item

DEFAULT_TARGET = "localhost:50051"
# What an operand may be: a numpy array (or anything numpy.asarray takes), a
# torch CPU tensor, or a RemoteTensor (put(), keep=True).
Operand = Union[Any, RemoteTensor]
# protobuf's hard limit is 2 GiB - 1; keep headroom for the non-data fields.
PROTOBUF_LIMIT = 2**31 - 1
DEFAULT_MAX_MESSAGE_BYTES = PROTOBUF_LIMIT - (1 << 20)
_DEFAULT = object()
_WITH_BIAS = {Epilogue.NONE: Epilogue.BIAS, Epilogue.RELU: Epilogue.RELU_BIAS,
              Epilogue.GELU: Epilogue.GELU_BIAS}


def _make_channel(target, credentials, options):
    return (grpc.secure_channel(target, credentials, options) if credentials
            else grpc.insecure_channel(target, options))


def _scalar_parts(value, field):
    """(real, imaginary) of a real or complex scalar (numpy and torch scalars too)."""
    try:
        z = complex(value)
    except (TypeError, ValueError):
        raise InvalidArgument(f"{field}: {value!r} is not a number") from None
    return z.real, z.imag


def _bearer(token):
    """The authorization metadata of `token` (none for None)."""
    if token is None:
        return ()
    if not token or any(c <= " " or c > "~" for c in token):
        raise ValueError("token: printable ASCII without spaces, not empty")
    return (("authorization", "Bearer " + token),)


class Client(StoreMixin, SparseMixin):
    """A connection to one linalgd server.

    target: "host:port" (or any gRPC target string).
    timeout: default deadline of a call in seconds, covering all its retries;
        None for no deadline. Every method takes timeout= to override it.
    retries: extra attempts on UNAVAILABLE / RESOURCE_EXHAUSTED (see
        retry_policy for the backoff; a server retry-after-ms hint wins).
    credentials: grpc.ChannelCredentials for TLS; None for plaintext.
    tls_ca, tls_cert, tls_key: paths of PEM files, instead of credentials: the
        CA that signed the server's certificate (None: the system's roots), and
        this client's certificate and key for a server that requires them
        (mTLS). Any of them set: TLS.
    metadata: (key, value) pairs sent with every call.
    token: the tenant's bearer token for a server with --auth-tokens, sent as
        "authorization: Bearer TOKEN" with every call (use TLS: in plaintext
        anyone on the path reads it).
    max_message_bytes: largest request or response; default just under 2 GiB.
    wait_for_ready: wait (until the deadline) for a connecting channel instead
        of failing fast with UNAVAILABLE.
    channel: an existing grpc.Channel to use instead of target (not closed by
        close()).
    use_shared_memory: carry matmul/solve operands and results through a
        shared-memory region (a sealed memfd) of shared_memory_bytes handed to a
        same-host server (--allow-shm) over its Unix socket: shared_memory_socket,
        or by default the path GetServerInfo reports. A region serves one call at a time: calls made at
        once from several threads register up to shared_memory_regions of them.
        Falls back to the socket, silently (logger "linalgd", debug level), for
        a remote target, a server that refuses, tensors that do not fit, or
        while other threads' calls hold every region.
    """

    def __init__(self, target=DEFAULT_TARGET, *, timeout=30.0, retries=5, retry_policy=None,
                 credentials=None, tls_ca=None, tls_cert=None, tls_key=None, token=None,
                 metadata=(), max_message_bytes=DEFAULT_MAX_MESSAGE_BYTES,
                 wait_for_ready=False, channel=None, channel_options=(),
                 use_shared_memory=False, shared_memory_bytes=shm.DEFAULT_SHARED_MEMORY_BYTES,
                 shared_memory_regions=1, shared_memory_socket=None):
        if timeout is not None and timeout <= 0:
            raise ValueError("timeout must be positive or None")
        self.target = target
        self.timeout = timeout
        self.retry_policy = retry_policy or RetryPolicy(retries=retries)
        self.max_message_bytes = int(max_message_bytes)
        # Operands and results of at least this many bytes are streamed
        # (PutTensor / keep_result + GetTensor) instead of travelling inline.
        self.stream_threshold = 64 << 20
        # Such a tensor moves in up to transfer_connections parts of at least
        # transfer_part_min_bytes, part i over TCP connection i (transfer.py).
        self.transfer_connections = 8
        self.transfer_part_min_bytes = 8 << 20
        self._closed = False
        self._background = set()  # grpc futures of calls no one waits for (remote.py)
        self._metadata = tuple(metadata) + _bearer(token)
        self._wait_for_ready = wait_for_ready
        self._owns_channel = channel is None
        tls = tls_credentials(tls_ca, tls_cert, tls_key)
        if tls is not None and (credentials is not None or channel is not None):
            raise ValueError("tls_ca/tls_cert/tls_key exclude credentials= and channel=")
        credentials = credentials or tls
        if channel is None:
            # gRPC's own reconnect backoff (1 s, growing to 120 s) and its re-resolution
            # delay (the resolver waits seconds after a failed connect, even for an IP
            # literal) would make every retry of a restarting server fail fast; pace
            # them like the retry policy.
            policy = self.retry_policy
            pace_ms = max(10, int(policy.initial_backoff * 1000))
            options = [("grpc.max_send_message_length", self.max_message_bytes),
                       ("grpc.max_receive_message_length", self.max_message_bytes),
                       ("grpc.initial_reconnect_backoff_ms", pace_ms),
                       ("grpc.dns_min_time_between_resolutions_ms", pace_ms),
                       ("grpc.max_reconnect_backoff_ms", max(10, int(policy.max_backoff * 1000))),
                       *channel_options]
            channel = _make_channel(target, credentials, options)
            factory = (lambda i, o=options, c=credentials: _make_channel(
                target, c, [*o, ("linalgd.transfer_connection", i)]))
        else:
            factory = None  # a caller's channel: one connection
        self._channel = channel
        self._transfer = Transfer(self, channel, factory)
        self._stub = pb_grpc.LinalgStub(channel)
        self._health_check = channel.unary_unary(
            _health.CHECK_METHOD,
            request_serializer=_health.HealthCheckRequest.SerializeToString,
            response_deserializer=_health.HealthCheckResponse.FromString)
        self._shm_socket = shared_memory_socket
        self._shm = (shm.SharedMemoryPath(self, shared_memory_bytes, shared_memory_regions)
                     if use_shared_memory else None)

    # -- lifecycle ---------------------------------------------------------

    @property
    def shared_memory_active(self):
        """True once a shared-memory region is registered with the server."""
        return self._shm is not None and self._shm.active

    def close(self):
        self._closed = True
        if self._shm is not None:
            self._shm.close()
        self._transfer.close()
        if self._owns_channel:
            self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"linalgd.Client({self.target!r}, timeout={self.timeout})"

    # -- RPCs --------------------------------------------------------------

    def matmul(self, a: Operand, b: Operand, c: Optional[Operand] = None, *,
               bias: Optional[Operand] = None, transpose_a: bool = False,
               transpose_b: bool = False, alpha: Optional[float] = None,
               beta: Optional[float] = None, epilogue: Any = None, compute_mode: Any = None,
               output_dtype: Any = None, allow_non_finite: bool = False, priority: int = 0,
               timeout: Any = _DEFAULT, return_info: bool = False,
               keep: bool = False) -> Union[Any, RemoteTensor, MatmulResult]:
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
        a, b, c, bias: arrays, torch tensors or RemoteTensors (put(), keep=True).
        keep: leave the output on the server and return its RemoteTensor.
        Returns the output array (torch if a or b is torch), or a MatmulResult
        (out, info) with return_info=True.
        """
        ep = parse(Epilogue, epilogue, "epilogue")
        if bias is not None:
            ep = _WITH_BIAS.get(ep, ep)
        a_arr, a_wire = self._arg(a, "a", min_ndim=2)
        b_arr, b_wire = self._arg(b, "b", min_ndim=2)
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
            allow_non_finite=bool(allow_non_finite), priority=int(priority))
        operands = {"a": (a_arr, a_wire), "b": (b_arr, b_wire)}
        if c is not None:
            c_arr, c_wire = self._arg(c, "c")
            operands["c"] = (c_arr.reshape(1, -1) if c_arr.ndim == 1 else c_arr, c_wire)
        if bias is not None:
            operands["bias"] = self._arg(bias, "bias")
        if alpha is not None:
            req.alpha, req.alpha_imag = _scalar_parts(alpha, "alpha")
        if beta is not None:
            req.beta, req.beta_imag = _scalar_parts(beta, "beta")
        as_torch = tensors.is_torch(a) or tensors.is_torch(b)
        done = None
        if self._shm_usable(operands, keep) and a_arr.ndim >= 2 and b_arr.ndim >= 2:
            out_dtype = req.output_dtype or a_wire
            done = self._shm.call("Matmul", req, operands, out_dtype,
                                  shm.matmul_out_shape(a_arr, b_arr, transpose_a, transpose_b),
                                  "out", timeout, as_torch)
        if done is not None:
            resp, out = done
        else:
            resp, out = self._matmul_socket(req, operands, a_arr, b_arr, transpose_a,
                                            transpose_b, timeout, as_torch, keep)
        for axis in squeeze:
            out = out.squeeze(axis)
        if return_info:
            return MatmulResult(out, ExecutionInfo.from_proto(resp.info))
        return out

    def _matmul_socket(self, req, operands, a_arr, b_arr, transpose_a, transpose_b, timeout,
                       as_torch, keep):
        self._check_size(operands)
        out_bytes = 0  # an estimate (broadcasting aside); scalars are refused below
        if a_arr.ndim >= 2 and b_arr.ndim >= 2:
            out_bytes = (max(math.prod(a_arr.shape[:-2]), math.prod(b_arr.shape[:-2])) *
                         a_arr.shape[-1 if transpose_a else -2] *
                         b_arr.shape[-2 if transpose_b else -1] * a_arr.itemsize)
        req.keep_result = bool(keep) or self._large(out_bytes)
        resp = self._call_with_operands("Matmul", req, operands, timeout)
        if keep:
            return resp, self._remote_result(resp.out, "out")
        return resp, self._fetch_kept(resp.out, "out", as_torch)

    def solve(self, a: Optional[Operand], b: Operand, *, method: Any = None,
              no_fallback: bool = False, allow_non_finite: bool = False, priority: int = 0,
              timeout: Any = _DEFAULT, return_info: bool = False,
              factor: Union[None, str, Factor] = None, rcond: Optional[float] = None,
              keep: bool = False) -> Union[Any, RemoteTensor, SolveResult]:
        """x with a @ x = b. a: [..., M, N]; b: [..., M, K] or [M]; batch dims broadcast.

        method: auto (default), lu, cholesky, qr, lstsq. A singular, numerically
        singular (rcond below the server's threshold) or non-SPD a falls back
        (cholesky -> lu -> lstsq) unless no_fallback, which raises
        FailedPrecondition instead. Returns x (torch if a or b is torch), or a
        SolveResult (x, method_used, fallback, residual, info, rcond and, for
        lstsq, residuals, rank, singular_values) with return_info.
        a, b: arrays, torch tensors or RemoteTensors (put(), keep=True).
        factor: a Factor from factorize(), or its id; a must then be None.
        rcond: numpy.linalg.lstsq's cutoff for the SVD (default eps * max(M, N)).
        keep: leave x on the server and return its RemoteTensor.
        """
        if factor is not None and a is not None:
            raise InvalidArgument("solve: give a or factor, not both")
        b_arr, b_wire = self._arg(b, "b")
        vector = b_arr.ndim == 1
        if vector:
            b_arr, b_wire = self._arg(b, "b", min_ndim=2)  # refuses a 1-D RemoteTensor
        if vector:
            b_arr = b_arr.reshape(-1, 1)
        req = pb.SolveRequest(method=int(parse(SolveMethod, method, "method")),
                              no_fallback=bool(no_fallback),
                              allow_non_finite=bool(allow_non_finite), priority=int(priority))
        if rcond is not None:
            req.rcond = float(rcond)
        operands = {"b": (b_arr, b_wire)}
        a_arr = None
        if factor is not None:
            req.factor_id = factor.id if isinstance(factor, Factor) else factor
        else:
            a_arr, a_wire = self._arg(a, "a", min_ndim=2)
            operands = {"a": (a_arr, a_wire), **operands}
        as_torch = tensors.is_torch(a) or tensors.is_torch(b)
        done = None
        if self._shm_usable(operands, keep):
            a_used = a_arr
            out_dtype = max((w for _, w in operands.values()), key=tensors.itemsize)
            done = self._shm.call("Solve", req, operands, out_dtype,
                                  shm.solve_out_shape(a_used, b_arr), "x", timeout, as_torch)
        if done is not None:
            resp, x = done
        else:
            self._check_size(operands)
            req.keep_result = bool(keep) or self._large(b_arr.nbytes)
            resp = self._call_with_operands("Solve", req, operands, timeout)
            if keep:
                x = self._remote_result(resp.x, "x")
            else:
                x = self._fetch_kept(resp.x, "x", as_torch)
        batch_shape = tuple(x.shape[:-2])
        if vector and not keep:
            x = x.squeeze(-1)
        if not return_info:
            return x
        return SolveResult.from_proto(x, resp, batch_shape)

    def lstsq(self, a, b, rcond=None, **kwargs):
        """numpy.linalg.lstsq through the server's SVD: (x, residuals, rank, s).

        Batched a and b ([..., M, N], [..., M, K]) give batched outputs.
        Other keyword arguments go to solve().
        """
        r = self.solve(a, b, method="lstsq", rcond=rcond, return_info=True, **kwargs)
        return r.x, r.residuals, r.rank, r.singular_values

    def server_info(self, *, timeout=_DEFAULT):
        """Version, backends, devices and limits of the server (a ServerInfo)."""
        return ServerInfo.from_proto(
            self._invoke("GetServerInfo", pb.GetServerInfoRequest(), timeout))

    def health(self, service="", *, timeout=_DEFAULT):
        """grpc.health.v1 status: "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN" or "UNKNOWN".

        service: "" for the whole server, or e.g. "linalgd.v1.Linalg".
        """
        resp = self._invoke("Health", _health.HealthCheckRequest(service=service), timeout,
                            rpc=self._health_check)
        return _health.status_name(resp.status)

    def wait_for_server(self, timeout=10.0, service=""):
        """Blocks until health is SERVING; raises DeadlineExceeded after timeout s."""
        deadline = time.monotonic() + timeout
        last = "no answer"
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DeadlineExceeded(f"{self.target} not SERVING after {timeout} s ({last})",
                                       method="Health")
            try:
                last = self._health_check(_health.HealthCheckRequest(service=service),
                                          timeout=min(remaining, 1.0), wait_for_ready=True)
                last = _health.status_name(last.status)
                if last == "SERVING":
                    return
            except grpc.RpcError as e:
                last = f"{e.code().name}: {e.details()}"
            time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))

    # -- internals ---------------------------------------------------------

    def _large(self, nbytes):
        return bool(self.stream_threshold) and nbytes >= self.stream_threshold

    def _deadline(self, timeout):
        """The absolute time.monotonic() deadline of a call of timeout seconds, or None."""
        timeout = self.timeout if timeout is _DEFAULT else timeout
        return None if timeout is None else time.monotonic() + timeout

    def _call_kwargs(self, deadline):
        """Keyword arguments of one gRPC call that ends by deadline."""
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        return {"timeout": remaining, "metadata": self._metadata or None,
                "wait_for_ready": self._wait_for_ready or None}

    def _arg(self, x, field, min_ndim=1):
        """(array or RemoteTensor, DType) of an operand."""
        if isinstance(x, RemoteTensor):
            if x.ndim < min_ndim:
                raise InvalidArgument(f"{field}: the remote tensor {x.id} has shape {x.shape}; "
                                      f"a remote {field} needs at least {min_ndim} dimensions")
            return x, x.wire
        return tensors.to_numpy(x, field)

    def _shm_usable(self, operands, keep):
        return (self._shm is not None and not keep and
                not any(isinstance(arr, RemoteTensor) for arr, _ in operands.values()))

    def _encode_operands(self, req, operands, timeout):
        """Fills req's operand fields: a RemoteTensor by id, an array at or above
        stream_threshold uploaded (all of them at once, in parallel parts) and
        named by id, the rest inline. Returns the ids of the uploads, for _drop."""
        large = []
        for name, (arr, wire) in operands.items():
            field = getattr(req, name)
            if isinstance(arr, RemoteTensor):
                field.CopyFrom(arr.to_proto())
            elif self._large(arr.nbytes):
                large.append((name, put_item(arr, wire, ttl=TEMPORARY_TTL)))
            else:
                field.CopyFrom(tensors.encode_array(arr, wire, name))
        if not large:
            return []
        infos = self._transfer.put_many([item for _, item in large], self._deadline(timeout))
        for (name, _), info in zip(large, infos):
            getattr(req, name).resident_id = info.id
        return [info.id for info in infos]

    def _call_with_operands(self, method, req, operands, timeout):
        temps = []
        try:
            temps = self._encode_operands(req, operands, timeout)
            return self._invoke(method, req, timeout)
        finally:
            self._drop(temps)

    def _check_size(self, operands):
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

    def _invoke(self, method, request, timeout, rpc=None):
        """Calls method with retries; the deadline covers every attempt."""
        rpc = rpc or getattr(self._stub, method)
        timeout = self.timeout if timeout is _DEFAULT else timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        attempt = 0
        while True:
            attempt += 1
            remaining = None if deadline is None else deadline - time.monotonic()
            try:
                return rpc(request, timeout=remaining, metadata=self._metadata or None,
                           wait_for_ready=self._wait_for_ready or None)
            except grpc.RpcError as e:
                error = from_rpc_error(e, method, attempt)
            if not self.retry_policy.should_retry(error, attempt):
                raise error
            delay = self.retry_policy.delay(attempt, error.retry_after)
            if deadline is not None and time.monotonic() + delay >= deadline:
                raise error
            time.sleep(delay)
