"""linalgd.Client: numpy (and torch) in, numpy (and torch) out, over gRPC.

The methods' request building and response decoding live in _ops.py, shared
with the asyncio client (linalgd.aio.Client); this class performs their I/O by
blocking.

Thread safety: a Client may be shared by threads; it holds one gRPC channel
(plus the transfer connections and threads it opens on first use), or one per
replica of a replica-set target (_routing.py), and no per-call state.

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
import logging
import time
from typing import Any, List, Optional, Set, Union

import grpc

from . import _health, _ops, _replicas, shm
from ._base import (DEFAULT_MAX_MESSAGE_BYTES, PROTOBUF_LIMIT, ClientBase, advance,
                    sync_method)
from ._base import channel_options as _channel_options
from ._routing import ChannelReplica, Download, Router, Unary, Upload
from .remote import RemoteTensor
from .transfer import Transfer
from ._stubs import pb, pb_grpc
from .errors import from_rpc_error
from ._tls import credentials_of, tls_pems
from .retry import RetryPolicy

DEFAULT_TARGET = "localhost:50051"
_log = logging.getLogger("linalgd")
# The effects of _ops.py a client over several replicas routes (_routing.py).
_ROUTED = (_ops.Invoke, _ops.PutMany, _ops.Get, _ops.Probe, _ops.Shm)
# What an operand may be: a numpy array (or anything numpy.asarray takes), a
# torch tensor (CPU or CUDA), or a RemoteTensor (put(), keep=True).
Operand = Union[Any, RemoteTensor]
__all__ = ["Client", "DEFAULT_TARGET", "DEFAULT_MAX_MESSAGE_BYTES", "PROTOBUF_LIMIT",
           "Operand"]


def _make_channel(target, credentials, options):
    return (grpc.secure_channel(target, credentials, options) if credentials
            else grpc.insecure_channel(target, options))


class Client(ClientBase):
    """A connection to one linalgd server.

    target: "host:port" (or any gRPC target string): one server. Several
        replicas: "ipv4:HOST:PORT,HOST:PORT,..." or "dns:///NAME:PORT" (every
        address NAME resolves to, again every refresh_interval seconds): calls
        naming an id go to the replica that owns it, the others to the least
        loaded one (_routing.py; replicas() shows the set).
    timeout: default deadline of a call in seconds, covering all of it (its
        uploads, retries and the fetch of a large result; the deletes of its
        temporaries after a failure get 0.5 s more at most); None or math.inf
        for no deadline. Every method takes timeout= to
        override it (zero or less: a deadline already passed; not a number:
        InvalidArgument before anything is sent).
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
        anyone on the path reads it). None: the LINALGD_TOKEN environment
        variable when set, as the CLI does.
    max_message_bytes: largest request or response; default just under 2 GiB.
    wait_for_ready: wait (until the deadline) for a connecting channel instead
        of failing fast with UNAVAILABLE.
    channel: an existing grpc.Channel to use instead of target (not closed by
        close()).
    refresh_interval: seconds between resolutions of a dns: replica target
        (and health checks of replicas that take no work).
    use_shared_memory: carry matmul/solve operands and results through a
        shared-memory region (a sealed memfd) of shared_memory_bytes handed to a
        same-host server (--allow-shm) over its Unix socket: shared_memory_socket,
        or by default the path GetServerInfo reports. A region serves one call at a time: calls made at
        once from several threads register up to shared_memory_regions of them.
        Falls back to the socket, silently (logger "linalgd", debug level), for
        a remote target, a server that refuses, tensors that do not fit, or
        while other threads' calls hold every region.
    transfer_processes: move the parts of large tensors (stream_threshold
        bytes or more, in more than one part) in this many worker processes,
        each with its own gRPC channel and interpreter lock, through a
        shared-memory segment (_procs.py); started on the first such transfer,
        stopped by close(); at most 64. 0 (the default): on this process's threads. The
        workers are 'spawn'ed: a script that makes a Client at import time
        needs the usual `if __name__ == "__main__":` guard. Credentials given
        as credentials= cannot be passed to a worker: use tls_ca, tls_cert,
        tls_key (else transfers stay on threads, with a warning); with
        channel=, transfers stay on threads too (with a warning).
    """

    # The operations of _ops.METHODS, each with its op's parameters, docstring
    # and result (a test checks that every one is here).
    matmul = sync_method(_ops.matmul)
    solve = sync_method(_ops.solve)
    lstsq = sync_method(_ops.lstsq)
    server_info = sync_method(_ops.server_info)
    health = sync_method(_ops.health)
    sparse_solve = sync_method(_ops.sparse_solve)
    put = sync_method(_ops.put)
    put_info = sync_method(_ops.put_info)
    get = sync_method(_ops.get)
    delete = sync_method(_ops.delete)
    list_tensors = sync_method(_ops.list_tensors)
    factorize = sync_method(_ops.factorize)
    release_factor = sync_method(_ops.release_factor)
    wait_for_server = sync_method(_ops.wait_for_server)

    def __init__(self, target: str = DEFAULT_TARGET, *, timeout: Optional[float] = 30.0,
                 retries: int = 5, retry_policy: Optional[RetryPolicy] = None,
                 credentials: Optional[grpc.ChannelCredentials] = None,
                 tls_ca: Optional[str] = None, tls_cert: Optional[str] = None,
                 tls_key: Optional[str] = None, token: Optional[str] = None,
                 metadata: Any = (), max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                 wait_for_ready: bool = False, channel: Optional[grpc.Channel] = None,
                 channel_options: Any = (), use_shared_memory: bool = False,
                 shared_memory_bytes: int = shm.DEFAULT_SHARED_MEMORY_BYTES,
                 shared_memory_regions: int = 1, shared_memory_socket: Optional[str] = None,
                 refresh_interval: float = 30.0, transfer_processes: int = 0) -> None:
        self._init_options(target, timeout, retries, retry_policy, metadata, max_message_bytes,
                           wait_for_ready, token)
        self._background: Set[Any] = set()  # grpc futures of calls no one waits for (remote.py)
        self._owns_channel = channel is None
        pems = tls_pems(tls_ca, tls_cert, tls_key)
        if pems is not None and (credentials is not None or channel is not None):
            raise ValueError("tls_ca/tls_cert/tls_key exclude credentials= and channel=")
        credentials = credentials or credentials_of(pems)
        replicas = _replicas.parse_target(target) if channel is None else None
        options = _channel_options(self.retry_policy, self.max_message_bytes, channel_options)
        if credentials is not None and isinstance(replicas, _replicas.DnsTarget):
            options.append(("grpc.ssl_target_name_override", replicas.host))
        if channel is None:
            self._init_processes(transfer_processes, pems, credentials, options)
        elif transfer_processes:
            _log.warning("transfer_processes: a client handed channel= moves its transfers on "
                         "threads (a worker process cannot rebuild that channel)")
        self._router = None
        if replicas is not None:
            if use_shared_memory:
                raise ValueError("use_shared_memory needs one same-host server, not the "
                                 f"replicas of {target!r}")
            self._metadata += _replicas.LOAD_REQUEST
            self._router = self._replica_router(replicas, credentials, options,
                                                refresh_interval)
            self._shm = None
            return
        if channel is None:
            channel = _make_channel(target, credentials, options)
            factory = (lambda i, o=options, c=credentials: _make_channel(
                target, c, [*o, ("linalgd.transfer_connection", i)]))
        else:
            factory = None  # a caller's channel: one connection
        self._channel = channel
        self._transfer = Transfer(self, channel, factory, target if factory else None)
        self._stub = pb_grpc.LinalgStub(channel)
        self._health_check = channel.unary_unary(
            _health.CHECK_METHOD,
            request_serializer=_health.HealthCheckRequest.SerializeToString,
            response_deserializer=_health.HealthCheckResponse.FromString)
        self._shm_socket = shared_memory_socket
        self._shm = (shm.SharedMemoryPath(self, shared_memory_bytes, shared_memory_regions)
                     if use_shared_memory else None)

    def _replica_router(self, replicas, credentials, options, refresh_interval):
        def make(address, i):
            return _make_channel(address, credentials,
                                 [*options, ("linalgd.transfer_connection", i)] if i else options)
        return Router(self, replicas, lambda address: ChannelReplica(address, self, make),
                      refresh_interval)

    def replicas(self) -> List[_replicas.ReplicaState]:
        """The replicas of a replica-set target (ReplicaStates: address, replica
        id, latest load, draining, reachable, calls); [] for one server."""
        return [r.state() for r in self._router.set.all()] if self._router else []

    # -- lifecycle ---------------------------------------------------------

    @property
    def shared_memory_active(self) -> bool:
        """True once a shared-memory region is registered with the server."""
        return self._shm is not None and self._shm.active

    def close(self) -> None:
        self._closed = True
        self._close_processes()
        if self._router is not None:
            for channel in self._router.close():
                channel.close()
            return
        if self._shm is not None:
            self._shm.close()
        self._transfer.close()
        if self._owns_channel:
            self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self):
        return f"linalgd.Client({self.target!r}, timeout={self.timeout})"

    # -- internals ---------------------------------------------------------

    def _run(self, op: _ops.Op) -> Any:
        """Runs an operation of _ops.py, performing each of its effects by blocking."""
        self._check_open()
        done, value = advance(op, None, None)
        while not done:
            try:
                result, error = self._perform(value), None
            except BaseException as e:  # noqa: BLE001  thrown into op, which re-raises
                result, error = None, e
            done, value = advance(op, result, error)
        return value

    def _perform(self, effect: Any) -> Any:
        if self._router is not None and isinstance(effect, _ROUTED):
            return self._run(self._router.route(effect))
        if isinstance(effect, Unary):
            return self._unary_on(effect)
        if isinstance(effect, Upload):
            return effect.replica.transfer.put_many(effect.items, effect.deadline)
        if isinstance(effect, Download):
            return effect.replica.transfer.get(effect.tensor_id, effect.deadline)
        if isinstance(effect, _ops.Invoke):
            return self._invoke(effect.method, effect.request, effect.timeout)
        if isinstance(effect, _ops.PutMany):
            return self._transfer.put_many(effect.items, effect.deadline)
        if isinstance(effect, _ops.Get):
            return self._transfer.get(effect.tensor_id, effect.deadline)
        if isinstance(effect, _ops.Drop):
            return self._drop(effect.ids, effect.deadline)
        if isinstance(effect, _ops.Shm):
            if self._shm is None:  # Shm effects come only from a client with the path on
                raise TypeError(f"{effect!r} without shared memory")
            return self._shm.call(*effect.args)
        if isinstance(effect, _ops.Probe):
            try:
                resp = self._health_check(_health.HealthCheckRequest(service=effect.service),
                                          timeout=effect.timeout, wait_for_ready=True)
            except grpc.RpcError as e:
                raise from_rpc_error(e, "Health") from None
            return _health.status_name(resp.status)
        if isinstance(effect, _ops.Sleep):
            return time.sleep(effect.seconds)
        raise TypeError(f"unknown effect {effect!r}")

    def _unary_on(self, effect: Unary) -> Any:
        """One attempt of a routed unary call: (response, trailing metadata)."""
        kwargs = self._call_kwargs(effect.deadline)
        if effect.wait_for_ready is not None:
            kwargs["wait_for_ready"] = effect.wait_for_ready
        try:
            response, call = effect.replica.rpc(effect.method).with_call(effect.request, **kwargs)
        except grpc.RpcError as e:
            raise from_rpc_error(e, effect.method) from None
        return response, call.trailing_metadata()

    def _drop(self, ids, deadline):
        """Deletes ids, all by deadline (_procs.cleanup_deadline): what is left then, the TTL
        frees."""
        for i in ids:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                self.delete(i, timeout=left)
            except Exception:  # noqa: BLE001  best effort; the TTL covers it
                pass

    def _release_in_background(self, factor_id: str) -> None:
        """ReleaseFactor without waiting (a Factor's finalizer, remote.py)."""
        stub = self._stub
        if self._router is not None:
            replica = self._router.owner_known(factor_id)
            if replica is None:
                return  # the server's TTL frees it
            stub = replica.stub
        self._hold(stub.ReleaseFactor.future(
            pb.ReleaseFactorRequest(factor_id=factor_id), timeout=10.0,
            metadata=self._metadata or None))

    def _hold(self, future):
        """Keeps a grpc future no one waits for until it is done."""
        # A grpc future cancels its call when collected: hold it until it is done.
        self._background.add(future)
        future.add_done_callback(self._background.discard)

    def _invoke(self, method, request, timeout, rpc=None):
        """Calls method with retries; the deadline covers every attempt."""
        rpc = rpc or (self._health_check if method == "Health" else getattr(self._stub, method))
        deadline = self._deadline(timeout)
        attempt = 0
        while True:
            attempt += 1
            try:
                return rpc(request, **self._call_kwargs(deadline))
            except grpc.RpcError as e:
                error = from_rpc_error(e, method, attempt)
            time.sleep(self._retry_delay(error, attempt, deadline))
