"""linalgd.Client's calls over several replicas (a target _replicas.parse_target
accepts): one channel set per address, each call sent where it belongs.

- A call naming an id (an operand, factor or upload id; GetTensor, DeleteTensor,
  ReleaseFactor) goes to the replica that owns it, whose replica id is learned
  at first use (GetServerInfo, then every response's linalgd-replica). When
  that replica is unreachable, the call fails with ReplicaGone (an
  Unavailable) naming the replica, its address and the id. A replica no
  longer resolved (a draining pod leaves DNS first) still takes the calls
  naming its ids while it answers, as in the C++ client; no other work.
- ListTensors asks every reachable replica and returns all their tensors.
- A stateless call (and an upload of new tensors) goes to the least-loaded
  usable replica; one that fails UNAVAILABLE, or that the connection or a
  replica shutting down dropped (CANCELLED without linalgd's metadata), is
  retried at once on another (RetryPolicy.failovers), then by the retry policy.
- FAILED_PRECONDITION naming the owner (linalgd-owner-replica) is re-sent once
  to that owner.
- A replica is unusable after a failed connection, while its responses say
  linalgd-draining: 1, or while its health is NOT_SERVING; every refresh
  interval (and when no replica is usable) the unusable ones get a health
  check and a dns: target is resolved again.

The router's calls are generators of effects, as the operations of _ops.py
are: linalgd.Client performs them by blocking, linalgd.aio.Client by awaiting,
so both route alike. Effects (besides _ops.Sleep):

    Unary(replica, method, request, deadline, wait_for_ready)
        one attempt of a unary RPC -> (response, trailing metadata)
    Upload(replica, items, deadline)     transfer.put_many on replica's connections
    Download(replica, tensor_id, deadline)  transfer.get on replica's connections

Thread safe: the replica set takes a lock; calls run on the caller's thread.
"""
import time
from typing import Any, Callable, Generator, NamedTuple, Optional, Sequence

import grpc

from . import _health, _ops
from ._replicas import (OWNER_KEY, QUEUE_DEPTH_KEY, REPLICA_KEY, ListTarget, Replica,
                        ReplicaSet, metadata_value, owner_of, request_ids)
from ._stubs import pb, pb_grpc
from .errors import InvalidArgument, LinalgdError, ReplicaGone, Unavailable, from_rpc_error
from .transfer import Transfer

PROBE_SECONDS = 1.0  # a health check or id lookup of one replica
Op = Generator[Any, Any, Any]


class Unary(NamedTuple):
    replica: Any
    method: str  # a Linalg method name, or "Health"
    request: Any
    deadline: Optional[float]
    wait_for_ready: Optional[bool]  # None: the client's option


class Upload(NamedTuple):
    replica: Any
    items: Any
    deadline: Optional[float]


class Download(NamedTuple):
    replica: Any
    tensor_id: str
    deadline: Optional[float]


class ChannelReplica(Replica):
    """A replica with its channel, stub and health check, and the connections of
    its parallel transfers (transfer.py): make_channel(address, 0) carries the
    calls; make_transfer_channel(address, i) the transfers' connection i, where
    connection 0 is the calls' channel when make_transfer_channel is None."""

    def __init__(self, address: str, client: Any, make_channel: Callable[[str, int], Any],
                 make_transfer_channel: Optional[Callable[[str, int], Any]] = None):
        super().__init__(address)
        self.channel = make_channel(address, 0)
        make_transfer = make_transfer_channel or make_channel
        self._transfer_channel = (make_transfer_channel(address, 0) if make_transfer_channel
                                  else None)
        self.transfer = Transfer(client, self._transfer_channel or self.channel,
                                 lambda i: make_transfer(address, i), address)
        self.stub = pb_grpc.LinalgStub(self.channel)
        self.health = self.channel.unary_unary(
            _health.CHECK_METHOD,
            request_serializer=_health.HealthCheckRequest.SerializeToString,
            response_deserializer=_health.HealthCheckResponse.FromString)

    def rpc(self, method: str):
        return self.health if method == "Health" else getattr(self.stub, method)

    def close(self) -> Any:
        """Closes the transfers' connections; returns the calls' channel (an
        asyncio channel's close() is a coroutine: the client closes it)."""
        self.transfer.close()
        if self._transfer_channel is not None:
            self._transfer_channel.close()
        return self.channel


def answered(error: LinalgdError) -> bool:
    """Whether linalgd answered: False for an UNAVAILABLE or CANCELLED without
    linalgd's trailing metadata, which the connection or a server shutting down
    gave (linalgd's own answers all carry its load metadata)."""
    if error.code not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED):
        return True
    metadata = error.trailing_metadata
    return (metadata_value(metadata, REPLICA_KEY) is not None or
            metadata_value(metadata, QUEUE_DEPTH_KEY) is not None or
            error.retry_after is not None)


class Router:
    """The replica set of one client and the calls over it (generators of effects)."""

    def __init__(self, client: Any, spec: Any, make_replica: Callable[[str], "ChannelReplica"],
                 refresh_interval: float):
        self._client = client
        self._spec = spec
        self._refresh_interval = _ops.seconds_arg(refresh_interval, "refresh_interval")
        if self._refresh_interval < 0:  # 0: a resolution before every call
            raise InvalidArgument(f"refresh_interval: {refresh_interval} s; it must be 0 or more")
        self._resolved_at = time.monotonic()
        self._learned = False
        self._resolve_error = ""  # why the latest resolution failed, if it did
        self.set: ReplicaSet[ChannelReplica] = ReplicaSet(self._resolve() or (), make_replica)

    def _resolve(self) -> Optional[list]:
        """The target's addresses now; None when resolution fails (a dns: name
        not known yet, say: the calls then fail naming the error)."""
        try:
            addresses = self._spec.resolve()
        except OSError as e:
            self._resolve_error = f"resolving {self._client.target}: {e}"
            return None
        self._resolve_error = "" if addresses else f"{self._client.target} resolves to nothing"
        return addresses

    def close(self) -> list:
        """Closes the transfers; returns the calls' channels, for the client to close."""
        return [replica.close() for replica in self.set.all()]

    # -- one attempt ----------------------------------------------------------

    def _on(self, replica: ChannelReplica, effect: Any) -> Op:
        """The result of effect, a call to replica, counted in its load; a failed
        connection marks it unreachable. A Unary's trailing metadata update
        the replica's id and load."""
        self.set.begin(replica)
        try:
            result = yield effect
        except LinalgdError as e:
            ok = answered(e)
            self.set.end(replica, ok, e.trailing_metadata)
            if not ok:
                self.set.set_reachable(replica, False)
            raise
        except BaseException:
            self.set.end(replica, False)
            raise
        if isinstance(effect, Unary):
            result, metadata = result
            self.set.end(replica, True, metadata)
        else:
            self.set.end(replica, True)
        return result

    def _unary(self, replica: ChannelReplica, method: str, request: Any,
               deadline: Optional[float], wait_for_ready: Optional[bool] = None) -> Op:
        return (yield from self._on(replica, Unary(replica, method, request, deadline,
                                                   wait_for_ready)))

    # -- the replica set ------------------------------------------------------

    def _start(self, deadline: Optional[float]) -> Op:
        """At first use: every replica's id; then, every refresh interval, a
        new resolution and health checks of the unusable replicas."""
        if not self._learned:
            self._learned = True
            yield from self._learn(deadline)
        elif time.monotonic() - self._resolved_at >= self._refresh_interval:
            yield from self._refresh(deadline)

    def _refresh(self, deadline: Optional[float]) -> Op:
        self._resolved_at = time.monotonic()
        if not isinstance(self._spec, ListTarget):
            addresses = self._resolve()
            if addresses is not None:  # else keep the addresses we have
                self.set.update(addresses)
        yield from self._readmit(deadline)
        yield from self._learn(deadline)

    def _probe_deadline(self, deadline: Optional[float]) -> float:
        end = time.monotonic() + PROBE_SECONDS
        return end if deadline is None else min(end, deadline)

    def _learn(self, deadline: Optional[float], replicas: Optional[list] = None) -> Op:
        """GetServerInfo of each resolved replica whose id is not known yet (or
        of each of replicas)."""
        for replica in replicas or self.set.all():
            if replica.resolved and (replicas or replica.replica_id is None):
                try:
                    info = yield from self._unary(replica, "GetServerInfo",
                                                  pb.GetServerInfoRequest(),
                                                  self._probe_deadline(deadline), False)
                except LinalgdError:
                    continue  # unreachable (marked so) or not answering: later
                replica.replica_id = info.replica_id or replica.replica_id

    def _readmit(self, deadline: Optional[float]) -> Op:
        """Health checks of the resolved replicas that take no work: SERVING
        ones take work again."""
        for replica in self.set.all():
            if replica.resolved and not replica.usable():
                status = yield from self._health(replica, self._probe_deadline(deadline))
                replica.draining = status != "SERVING"

    def _health(self, replica: ChannelReplica, deadline: Optional[float],
                wait_for_ready: bool = False) -> Op:
        try:
            resp = yield from self._unary(replica, "Health", _health.HealthCheckRequest(),
                                          deadline, wait_for_ready)
        except LinalgdError as e:
            return e.code.name if e.code else "ERROR"
        return _health.status_name(resp.status)

    def pick(self, exclude: Sequence[ChannelReplica], deadline: Optional[float]) -> Op:
        """The least-loaded usable replica; when there is none, resolves and
        checks again, then raises Unavailable naming every replica's state."""
        replica = self.set.pick(exclude)
        if replica is None:
            yield from self._refresh(deadline)
            replica = self.set.pick(exclude) or self.set.pick()
        if replica is None:
            raise Unavailable(f"no usable replica of {self._client.target}: "
                              f"{self.set.describe() or self._resolve_error}")
        return replica

    def owner(self, resource_id: str, deadline: Optional[float]) -> Op:
        """The replica that owns resource_id (None for an id without a replica
        prefix); ReplicaGone when no replica has that id, or when the one that
        has it is no longer resolved and its connection failed. One no longer
        resolved that still answers is kept for its ids (a failing call then
        shows it gone: run, _lost)."""
        rid = owner_of(resource_id)
        if rid is None:
            return None
        replica = self.set.by_replica_id(rid)
        if replica is None:
            yield from self._refresh(deadline)
            replica = self.set.by_replica_id(rid)
        if replica is None:
            raise ReplicaGone(f"replica {rid} that owns id {resource_id} is gone: no replica of "
                              f"{self._client.target} has that id ({self.set.describe()})")
        if not replica.resolved and not replica.reachable:
            raise ReplicaGone(f"{replica.name()} that owns id {resource_id} is gone: no longer "
                              f"among the addresses of {self._client.target}, and its "
                              "connection failed")
        return replica

    def _lost(self, replica: ChannelReplica, error: LinalgdError,
              deadline: Optional[float]) -> Op:
        """Whether a failed call shows the replica gone: the connection failed
        and a health check that waits up to PROBE_SECONDS for it to connect
        fails too. The replica then counts as lost (later calls naming its ids
        fail at once) until a health check passes again (_readmit)."""
        if error.code != grpc.StatusCode.UNAVAILABLE or answered(error):
            return False
        status = yield from self._health(replica, self._probe_deadline(deadline), True)
        if status in ("SERVING", "NOT_SERVING"):
            return False
        self.set.set_reachable(replica, False, lost=True)
        return True

    def _rerouted(self, error: LinalgdError, replica: ChannelReplica,
                  deadline: Optional[float]) -> Op:
        """The owner a FAILED_PRECONDITION names (linalgd-owner-replica), when it
        is another replica. When the client knows no other replica by that id
        (the one that answered was believed to be it), every replica's id is
        learned again first."""
        rid = (metadata_value(error.trailing_metadata, OWNER_KEY)
               if error.code == grpc.StatusCode.FAILED_PRECONDITION else None)
        if not rid:
            return None
        if self.set.by_replica_id(rid) in (None, replica):
            yield from self._learn(deadline, self.set.all())
        try:
            other = yield from self.owner(f"{rid}-{'0' * 32}", deadline)
        except ReplicaGone:
            return None
        return other if other is not replica else None

    # -- calls ----------------------------------------------------------------

    def invoke(self, method: str, request: Any, timeout: Any) -> Op:
        """One RPC with retries, sent to the owner of the first id it names, else
        to the least-loaded replica."""
        deadline = self._client._deadline(timeout)
        yield from self._start(deadline)
        if method == "ListTensors":
            return (yield from self._list_everywhere(request, deadline))
        owned = [i for i in request_ids(request) if owner_of(i)]
        return (yield from self.run(
            method, owned[0] if owned else None, deadline,
            lambda replica: self._unary(replica, method, request, deadline)))

    def run(self, method: str, resource_id: Optional[str], deadline: Optional[float],
            attempt_on: Callable[[ChannelReplica], Op]) -> Op:
        """attempt_on(replica) with the retry policy: on the owner of
        resource_id, or (None) on the least-loaded replica, failing over."""
        replica = (yield from self.owner(resource_id, deadline)) if resource_id else None
        bound = replica is not None
        if not bound:
            replica = yield from self.pick((), deadline)
        policy, tried, failovers, rerouted, attempt = self._client.retry_policy, [], 0, False, 0
        while True:
            attempt += 1
            if bound and replica.lost:
                raise ReplicaGone(f"{replica.name()} that owns id {resource_id} is gone: it "
                                  "stopped answering", method=method, attempts=attempt)
            try:
                return (yield from attempt_on(replica))
            except LinalgdError as e:
                error = e
            error.attempts = attempt
            other = None if rerouted else (yield from self._rerouted(error, replica, deadline))
            if other is not None:
                replica, rerouted = other, True
                continue
            if bound and (yield from self._lost(replica, error, deadline)):
                raise ReplicaGone(f"{replica.name()} that owns id {resource_id} is gone: "
                                  f"{error.message}", method=method, attempts=attempt) from None
            dropped = not answered(error) and failovers < policy.failovers
            if not bound and (dropped or policy.should_fail_over(error, failovers)):
                tried.append(replica)
                other = self.set.pick(tried)
                if other is not None:
                    replica, failovers = other, failovers + 1
                    continue
            yield _ops.Sleep(self._client._retry_delay(error, attempt, deadline))
            if not bound and not replica.usable():
                replica = yield from self.pick((), deadline)

    def _list_everywhere(self, request: Any, deadline: Optional[float]) -> Op:
        """ListTensors of every reachable replica, in one response (bytes summed)."""
        out, errors = pb.ListTensorsResponse(), []
        for replica in self.set.all():
            if not replica.resolved or replica.lost:
                continue
            try:
                resp = yield from self._unary(replica, "ListTensors", request, deadline)
            except LinalgdError as e:
                if answered(e):
                    raise
                errors.append(f"{replica.name()}: {e.message}")
                continue
            out.tensors.extend(resp.tensors)
            out.used_bytes += resp.used_bytes
            out.capacity_bytes += resp.capacity_bytes
        if errors and not out.capacity_bytes and not out.tensors:
            raise Unavailable(f"ListTensors: no replica of {self._client.target} answered "
                              f"({'; '.join(errors)})", method="ListTensors")
        return out

    def put_many(self, items: Any, deadline: Optional[float], near: Sequence[str] = ()) -> Op:
        """Uploads (transfer.put_many) to the owner of the first id in near
        (another operand of the same call), else to the least-loaded replica;
        every part of one upload goes to that replica."""
        yield from self._start(deadline)
        owned = [i for i in near if owner_of(i)]
        return (yield from self.run(
            "PutTensor", owned[0] if owned else None, deadline,
            lambda replica: self._on(replica, Upload(replica, items, deadline))))

    def get(self, tensor_id: str, deadline: Optional[float]) -> Op:
        """transfer.get on the replica that owns tensor_id."""
        yield from self._start(deadline)
        return (yield from self.run(
            "GetTensor", tensor_id if owner_of(tensor_id) else None, deadline,
            lambda replica: self._on(replica, Download(replica, tensor_id, deadline))))

    def probe(self, service: str, timeout: float) -> Op:
        """A health check of a usable replica that waits for it to connect."""
        deadline = time.monotonic() + timeout
        replica = yield from self.pick((), deadline)
        resp = yield from self._unary(replica, "Health",
                                      _health.HealthCheckRequest(service=service), deadline,
                                      True)
        return _health.status_name(resp.status)

    def route(self, effect: Any) -> Op:
        """The routed form of an effect of _ops.py (Invoke, PutMany, Get, Probe)."""
        if isinstance(effect, _ops.Invoke):
            return self.invoke(effect.method, effect.request, effect.timeout)
        if isinstance(effect, _ops.PutMany):
            return self.put_many(effect.items, effect.deadline, effect.near)
        if isinstance(effect, _ops.Get):
            return self.get(effect.tensor_id, effect.deadline)
        if isinstance(effect, _ops.Probe):
            return self.probe(effect.service, effect.timeout)
        raise TypeError(f"no shared memory over replicas: {effect!r}")

    def owner_known(self, resource_id: str) -> Optional[ChannelReplica]:
        """The replica known to own resource_id, without any call (finalizers)."""
        rid = owner_of(resource_id)
        return self.set.by_replica_id(rid) if rid else None
