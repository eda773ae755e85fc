"""linalgd.aio.Client: the linalgd.Client API on grpc.aio, for asyncio programs.

    import asyncio, numpy as np, linalgd.aio
    async def main():
        async with linalgd.aio.Client("localhost:50051") as c:
            ys = await asyncio.gather(*(c.matmul(x, w) for x in batches))

Every method of linalgd.Client that talks to the server is a coroutine here,
with the same arguments, results and exceptions (matmul, solve, lstsq,
sparse_solve, factorize, put, put_info, get, delete, list_tensors,
release_factor, server_info, health, wait_for_server); both clients run the
same operations (_ops.py), this one by awaiting. Retries wait with
asyncio.sleep, so other tasks run meanwhile. Cancelling the awaiting task
cancels the RPC in flight (the server sees CANCELLED) and deletes the
temporary uploads the call made.

put() returns an aio.RemoteTensor and factorize() an aio.Factor: their get(),
delete(), solve() and release() are coroutines, and `async with` frees them.

Large tensors (stream_threshold bytes or more) move as in linalgd.Client, in
parallel parts over several TCP connections (transfer.py), on a worker thread
(asyncio.to_thread) with sync gRPC channels of this client's own, so the event
loop keeps running meanwhile. Such a transfer is not interrupted by a
cancellation: it ends at its deadline or when it completes, and what it stored
is then deleted in the background.

Several replicas ("ipv4:A:P,B:Q" or "dns:///name:port") are routed as by
linalgd.Client (_routing.py: the same code, its calls awaited here).

Not here: shared memory (use linalgd.Client(use_shared_memory=True)) and a
caller's channel= (the client makes its own channels: one grpc.aio channel for
the calls, sync ones for large transfers).

Create and use a Client inside the event loop that runs its calls (grpc.aio
binds a channel to the loop); close it with `await client.close()` or
`async with`.
"""
import asyncio
import time
from typing import Any, Optional, Set

import grpc

from . import _health, _ops, _procs, _replicas, remote
from ._base import (DEFAULT_MAX_MESSAGE_BYTES, ClientBase, advance, async_method,
                    async_method_as)
from ._base import channel_options as _channel_options
from ._routing import ChannelReplica, Download, Router, Unary, Upload
from ._stubs import pb, pb_grpc
from ._tls import credentials_of, tls_pems
from .client import _ROUTED, DEFAULT_TARGET, Operand
from .errors import from_rpc_error
from .retry import RetryPolicy
from .transfer import Transfer

__all__ = ["Client", "RemoteTensor", "Factor", "Operand"]


class RemoteTensor(remote.RemoteTensor):
    """A tensor held by the server (see linalgd.RemoteTensor); get() and delete()
    are coroutines and `async with` deletes it."""

    # A coroutine where the synchronous class returns None: an async client's
    # objects are used only as such (type checkers see this class).
    async def delete(self, *, timeout: Optional[float] = None) -> None:  # type: ignore[override]
        await self._client.delete(self.id, timeout=timeout)

    def __enter__(self):
        raise TypeError("a linalgd.aio.RemoteTensor needs `async with`")

    async def __aenter__(self) -> "RemoteTensor":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.delete()


class Factor(remote.Factor):
    """A factorization held by the server (see linalgd.Factor); solve() and
    release() are coroutines and `async with` releases it."""

    async def release(self, *, timeout: Optional[float] = None) -> None:  # type: ignore[override]
        self._finalizer.detach()
        self._released = True
        await self._client.release_factor(self._id, timeout=timeout)

    def __enter__(self):
        raise TypeError("a linalgd.aio.Factor needs `async with`")

    async def __aenter__(self) -> "Factor":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if not self._released:
            await self.release()


def _sync_channel(target, credentials, options):
    return (grpc.secure_channel(target, credentials, options) if credentials
            else grpc.insecure_channel(target, options))


class Client(ClientBase):
    """An asyncio connection to one linalgd server.

    Arguments as linalgd.Client's (target, timeout, retries, retry_policy,
    credentials, tls_ca, tls_cert, tls_key, metadata, max_message_bytes,
    wait_for_ready, channel_options, refresh_interval, transfer_processes); no
    channel= and no shared memory.
    Safe to share between the tasks of one event loop.
    """

    _remote_tensor_class = RemoteTensor
    _factor_class = Factor

    # The operations of _ops.METHODS, each with its op's parameters, docstring
    # and result (a test checks that every one is here).
    matmul = async_method(_ops.matmul)
    solve = async_method(_ops.solve)
    lstsq = async_method(_ops.lstsq)
    server_info = async_method(_ops.server_info)
    health = async_method(_ops.health)
    sparse_solve = async_method(_ops.sparse_solve)
    put = async_method_as(_ops.put, RemoteTensor)
    put_info = async_method(_ops.put_info)
    get = async_method(_ops.get)
    delete = async_method(_ops.delete)
    list_tensors = async_method(_ops.list_tensors)
    factorize = async_method_as(_ops.factorize, Factor)
    release_factor = async_method(_ops.release_factor)
    wait_for_server = async_method(_ops.wait_for_server)

    def __init__(self, target: str = DEFAULT_TARGET, *, timeout: Optional[float] = 30.0,
                 retries: int = 5, retry_policy: Optional[RetryPolicy] = None,
                 credentials: Optional[grpc.ChannelCredentials] = None,
                 tls_ca: Optional[str] = None, tls_cert: Optional[str] = None,
                 tls_key: Optional[str] = None, token: Optional[str] = None,
                 metadata: Any = (), max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                 wait_for_ready: bool = False, channel_options: Any = (),
                 refresh_interval: float = 30.0, transfer_processes: int = 0) -> None:
        self._init_options(target, timeout, retries, retry_policy, metadata, max_message_bytes,
                           wait_for_ready, token)
        pems = tls_pems(tls_ca, tls_cert, tls_key)
        if pems is not None and credentials is not None:
            raise ValueError("tls_ca/tls_cert/tls_key exclude credentials=")
        credentials = credentials or credentials_of(pems)
        options = _channel_options(self.retry_policy, self.max_message_bytes, channel_options)
        # Tasks no one awaits (releases and deletes).
        self._background: Set["asyncio.Future[Any]"] = set()
        replicas = _replicas.parse_target(target)
        if credentials is not None and isinstance(replicas, _replicas.DnsTarget):
            options.append(("grpc.ssl_target_name_override", replicas.host))
        self._init_processes(transfer_processes, pems, credentials, options)
        self._router = None
        if replicas is not None:
            self._metadata += _replicas.LOAD_REQUEST
            self._router = Router(self, replicas,
                                  lambda address: self._replica(address, credentials, options),
                                  refresh_interval)
            return
        self._channel = (grpc.aio.secure_channel(target, credentials, options) if credentials
                         else grpc.aio.insecure_channel(target, options))
        self._stub = pb_grpc.LinalgStub(self._channel)
        self._health_check = self._channel.unary_unary(
            _health.CHECK_METHOD,
            request_serializer=_health.HealthCheckRequest.SerializeToString,
            response_deserializer=_health.HealthCheckResponse.FromString)

        def factory(i, o=options, c=credentials):
            return _sync_channel(target, c, [*o, ("linalgd.transfer_connection", i)])
        self._transfer_channel = factory(0)
        self._transfer = Transfer(self, self._transfer_channel, factory, target)

    def _replica(self, address: str, credentials: Any, options: Any) -> ChannelReplica:
        """A replica of a replica-set target: a grpc.aio channel for the calls,
        sync ones for its large transfers."""
        def calls(a, i):
            return (grpc.aio.secure_channel(a, credentials, options) if credentials
                    else grpc.aio.insecure_channel(a, options))

        def transfers(a, i):
            return _sync_channel(a, credentials, [*options, ("linalgd.transfer_connection", i)])
        return ChannelReplica(address, self, calls, transfers)

    async def replicas(self) -> list:
        """The replicas of a replica-set target (see linalgd.Client.replicas)."""
        return [r.state() for r in self._router.set.all()] if self._router else []

    # -- lifecycle ---------------------------------------------------------

    async def close(self) -> None:
        """Closes the channels, after up to 1 s for background releases and deletes."""
        if self._background:
            await asyncio.wait(list(self._background), timeout=1.0)
        self._closed = True
        self._close_processes()
        if self._router is not None:
            for channel in self._router.close():
                await channel.close()
            return
        self._transfer.close()
        self._transfer_channel.close()
        await self._channel.close()

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"linalgd.aio.Client({self.target!r}, timeout={self.timeout})"

    # -- internals ---------------------------------------------------------

    async def _run(self, op: _ops.Op) -> Any:
        """Runs an operation of _ops.py, performing each of its effects by awaiting."""
        self._check_open()
        done, value = advance(op, None, None)
        while not done:
            try:
                result, error = await self._perform(value), None
            except BaseException as e:  # noqa: BLE001  thrown into op, which re-raises
                result, error = None, e
            done, value = advance(op, result, error)
        return value

    async def _perform(self, effect: Any) -> Any:
        if self._router is not None and isinstance(effect, _ROUTED):
            return await self._run(self._router.route(effect))
        if isinstance(effect, Unary):
            return await self._unary_on(effect)
        if isinstance(effect, Upload):
            return await self._put_many(effect.items, effect.deadline, effect.replica.transfer)
        if isinstance(effect, Download):
            return await asyncio.to_thread(effect.replica.transfer.get, effect.tensor_id,
                                           effect.deadline)
        if isinstance(effect, _ops.Invoke):
            return await self._invoke(effect.method, effect.request, effect.timeout)
        if isinstance(effect, _ops.PutMany):
            return await self._put_many(effect.items, effect.deadline)
        if isinstance(effect, _ops.Get):
            return await asyncio.to_thread(self._transfer.get, effect.tensor_id,
                                           effect.deadline)
        if isinstance(effect, _ops.Drop):
            return await self._drop(effect.ids, effect.deadline)
        if isinstance(effect, _ops.Probe):
            try:
                resp = await self._health_check(
                    _health.HealthCheckRequest(service=effect.service), timeout=effect.timeout,
                    wait_for_ready=True)
            except grpc.RpcError as e:
                raise from_rpc_error(e, "Health") from None
            return _health.status_name(resp.status)
        if isinstance(effect, _ops.Sleep):
            return await asyncio.sleep(effect.seconds)
        raise TypeError(f"linalgd.aio.Client cannot perform {effect!r}")

    async def _unary_on(self, effect: Unary) -> Any:
        """One attempt of a routed unary call: (response, trailing metadata)."""
        kwargs = self._call_kwargs(effect.deadline)
        if effect.wait_for_ready is not None:
            kwargs["wait_for_ready"] = effect.wait_for_ready
        call = effect.replica.rpc(effect.method)(effect.request, **kwargs)
        try:
            return await call, await call.trailing_metadata()
        except grpc.RpcError as e:
            raise from_rpc_error(e, effect.method) from None

    async def _put_many(self, items, deadline, transfer=None) -> Any:
        """transfer.put_many on a worker thread. When the awaiting task is
        cancelled, the thread's uploads still complete (or fail); what they
        stored is then deleted, in the background."""
        transfer = transfer or self._transfer
        uploads = asyncio.ensure_future(asyncio.to_thread(transfer.put_many, items, deadline))
        try:
            return await asyncio.shield(uploads)
        except asyncio.CancelledError:
            uploads.add_done_callback(self._drop_uploads)
            raise

    def _drop_uploads(self, uploads: "asyncio.Future") -> None:
        if uploads.cancelled() or uploads.exception() is not None or self._closed:
            return
        task = asyncio.ensure_future(self._drop([info.id for info in uploads.result()],
                                                _procs.cleanup_deadline(None)))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _drop(self, ids, deadline) -> None:
        """Deletes ids, all by deadline (_procs.cleanup_deadline): what is left then, the TTL
        frees."""
        for i in ids:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                await self.delete(i, timeout=left)
            except Exception:  # noqa: BLE001  best effort; the TTL covers it
                pass

    def _release_in_background(self, factor_id: str) -> None:
        """ReleaseFactor without waiting (a Factor's finalizer, remote.py); only
        from the event loop's thread, else the server's TTL frees it."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        stub = self._stub if self._router is None else getattr(
            self._router.owner_known(factor_id), "stub", None)
        if stub is None:
            return  # its replica is unknown: the server's TTL frees it
        call = stub.ReleaseFactor(pb.ReleaseFactorRequest(factor_id=factor_id),
                                  timeout=10.0, metadata=self._metadata or None)

        async def wait():
            try:
                await call
            except grpc.RpcError:
                pass
        task = loop.create_task(wait())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _invoke(self, method: str, request: Any, timeout: Any) -> Any:
        """Calls method with retries; the deadline covers every attempt."""
        rpc = self._health_check if method == "Health" else getattr(self._stub, method)
        deadline = self._deadline(timeout)
        attempt = 0
        while True:
            attempt += 1
            try:
                return await rpc(request, **self._call_kwargs(deadline))
            except grpc.RpcError as e:
                error = from_rpc_error(e, method, attempt)
            await asyncio.sleep(self._retry_delay(error, attempt, deadline))
