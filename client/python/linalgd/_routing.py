"""linalgd.Client's calls over several replicas (a target _replicas.parse_target
accepts): one channel set per address, each call sent where it belongs.

- A call naming an id (an operand, factor or upload id; GetTensor, DeleteTensor,
  ReleaseFactor) goes to the replica that owns it, whose replica id is learned
  at first use (GetServerInfo, then every response's linalgd-replica). When
  that replica is unreachable or no longer resolved, the call fails with
  ReplicaGone (an Unavailable) naming the replica, its address and the id.
- A stateless call (and an upload of new tensors) goes to the least-loaded
  usable replica; one that fails UNAVAILABLE is retried at once on another
  (RetryPolicy.failovers), then by the retry policy.
- FAILED_PRECONDITION naming the owner (linalgd-owner-replica) is re-sent once
  to that owner.
- A replica is unusable after a failed connection, while its responses say
  linalgd-draining: 1, or while its health is NOT_SERVING; every refresh
  interval (and when no replica is usable) the unusable ones get a health
  check and a dns: target is resolved again.

Thread safe: the replica set takes a lock; calls run on the caller's thread.
"""
import time
from typing import Any, Callable, Optional, Sequence

import grpc

from . import _health
from ._replicas import (OWNER_KEY, REPLICA_KEY, ListTarget, Replica, ReplicaSet, metadata_value,
                        owner_of, request_ids)
from ._stubs import pb, pb_grpc
from .errors import LinalgdError, ReplicaGone, Unavailable, from_rpc_error
from .transfer import Transfer

PROBE_SECONDS = 1.0  # a health check or id lookup of one replica


class ChannelReplica(Replica):
    """A replica with its channel (connection 0), stub, health check and
    parallel-transfer channels."""

    def __init__(self, address: str, client: Any, make_channel: Callable[[str, int], Any]):
        super().__init__(address)
        self.channel = make_channel(address, 0)
        self.transfer = Transfer(client, self.channel, lambda i: make_channel(address, i))
        self.stub = pb_grpc.LinalgStub(self.channel)
        self.health = self.channel.unary_unary(
            _health.CHECK_METHOD,
            request_serializer=_health.HealthCheckRequest.SerializeToString,
            response_deserializer=_health.HealthCheckResponse.FromString)

    def rpc(self, method: str):
        return self.health if method == "Health" else getattr(self.stub, method)

    def close(self) -> None:
        self.transfer.close()
        self.channel.close()


def answered(error: LinalgdError) -> bool:
    """Whether the server answered (False: the connection failed)."""
    if error.code != grpc.StatusCode.UNAVAILABLE:
        return True
    return (metadata_value(error.trailing_metadata, REPLICA_KEY) is not None or
            error.retry_after is not None)


class Router:
    """The replica set of one linalgd.Client and the calls over it."""

    def __init__(self, client: Any, spec: Any, make_channel: Callable[[str, int], Any],
                 refresh_interval: float):
        self._client = client
        self._spec = spec
        self._refresh_interval = refresh_interval
        self._resolved_at = time.monotonic()
        self._learned = False
        self.set = ReplicaSet(spec.resolve(),
                              lambda address: ChannelReplica(address, client, make_channel))

    def close(self) -> None:
        for replica in self.set.all():
            replica.close()

    # -- one attempt ----------------------------------------------------------

    def _on(self, replica: ChannelReplica, fn: Callable[[], Any]) -> Any:
        """The result of fn() -> (result, trailing metadata), a call to replica
        counted in its load; a failed connection marks it unreachable."""
        self.set.begin(replica)
        try:
            result, metadata = fn()
        except LinalgdError as e:
            ok = answered(e)
            self.set.end(replica, ok, e.trailing_metadata)
            if not ok:
                self.set.set_reachable(replica, False)
            raise
        except BaseException:
            self.set.end(replica, False)
            raise
        self.set.end(replica, True, metadata)
        return result

    def _unary(self, replica: ChannelReplica, method: str, request: Any,
               deadline: Optional[float], wait_for_ready: Optional[bool] = None) -> Any:
        kwargs = self._client._call_kwargs(deadline)
        if wait_for_ready is not None:
            kwargs["wait_for_ready"] = wait_for_ready

        def call():
            try:
                response, rpc_call = replica.rpc(method).with_call(request, **kwargs)
            except grpc.RpcError as e:
                raise from_rpc_error(e, method) from None
            return response, rpc_call.trailing_metadata()
        return self._on(replica, call)

    # -- the replica set ------------------------------------------------------

    def _start(self, deadline: Optional[float]) -> None:
        """At first use: every replica's id; then, every refresh interval, a
        new resolution and health checks of the unusable replicas."""
        if not self._learned:
            self._learned = True
            self._learn(deadline)
        elif time.monotonic() - self._resolved_at >= self._refresh_interval:
            self._refresh(deadline)

    def _refresh(self, deadline: Optional[float]) -> None:
        self._resolved_at = time.monotonic()
        if not isinstance(self._spec, ListTarget):
            try:
                self.set.update(self._spec.resolve())
            except OSError:
                pass  # keep the addresses we have
        self._readmit(deadline)
        self._learn(deadline)

    def _probe_deadline(self, deadline: Optional[float]) -> float:
        end = time.monotonic() + PROBE_SECONDS
        return end if deadline is None else min(end, deadline)

    def _learn(self, deadline: Optional[float]) -> None:
        """GetServerInfo of each resolved replica whose id is not known yet."""
        for replica in self.set.all():
            if replica.resolved and replica.replica_id is None:
                try:
                    info = self._unary(replica, "GetServerInfo", pb.GetServerInfoRequest(),
                                       self._probe_deadline(deadline), wait_for_ready=False)
                except LinalgdError:
                    continue  # unreachable (marked so) or not answering: later
                replica.replica_id = info.replica_id or replica.replica_id

    def _readmit(self, deadline: Optional[float]) -> None:
        """Health checks of the resolved replicas that take no work: SERVING
        ones take work again."""
        for replica in self.set.all():
            if replica.resolved and not replica.usable():
                status = self._health(replica, self._probe_deadline(deadline))
                replica.draining = status != "SERVING"

    def _health(self, replica: ChannelReplica, deadline: Optional[float]) -> str:
        try:
            resp = self._unary(replica, "Health", _health.HealthCheckRequest(), deadline,
                               wait_for_ready=False)
        except LinalgdError as e:
            return e.code.name if e.code else "ERROR"
        return _health.status_name(resp.status)

    def pick(self, exclude: Sequence[Replica], deadline: Optional[float]) -> ChannelReplica:
        """The least-loaded usable replica; when there is none, resolves and
        checks again, then raises Unavailable naming every replica's state."""
        replica = self.set.pick(exclude)
        if replica is None:
            self._refresh(deadline)
            replica = self.set.pick(exclude) or self.set.pick()
        if replica is None:
            raise Unavailable(f"no usable replica of {self._client.target}: "
                              f"{self.set.describe()}")
        return replica

    def owner(self, resource_id: str, deadline: Optional[float]) -> Optional[ChannelReplica]:
        """The replica that owns resource_id (None for an id without a replica
        prefix); ReplicaGone when no resolved replica has that id."""
        rid = owner_of(resource_id)
        if rid is None:
            return None
        replica = self.set.by_replica_id(rid)
        if replica is None or not replica.resolved:
            self._refresh(deadline)
            replica = self.set.by_replica_id(rid)
        if replica is None:
            raise ReplicaGone(f"replica {rid} that owns id {resource_id} is gone: no replica of "
                              f"{self._client.target} has that id ({self.set.describe()})")
        if not replica.resolved:
            raise ReplicaGone(f"{replica.name()} that owns id {resource_id} is gone: no longer "
                              f"among the addresses of {self._client.target}")
        return replica

    def _lost(self, replica: ChannelReplica, error: LinalgdError,
              deadline: Optional[float]) -> bool:
        """Whether a failed call shows the replica gone: the connection failed
        and a health check fails too."""
        if error.code != grpc.StatusCode.UNAVAILABLE or answered(error):
            return False
        status = self._health(replica, self._probe_deadline(deadline))
        return status not in ("SERVING", "NOT_SERVING")

    def _gone(self, replica: ChannelReplica, resource_id: str, error: LinalgdError,
              method: str) -> ReplicaGone:
        return ReplicaGone(f"{replica.name()} that owns id {resource_id} is gone: {error.message}",
                           method=method, attempts=error.attempts)

    def _rerouted(self, error: LinalgdError, replica: ChannelReplica,
                  deadline: Optional[float]) -> Optional[ChannelReplica]:
        """The owner a FAILED_PRECONDITION names, when it is another known replica."""
        if error.code != grpc.StatusCode.FAILED_PRECONDITION:
            return None
        rid = metadata_value(error.trailing_metadata, OWNER_KEY)
        if not rid:
            return None
        try:
            other = self.owner(f"{rid}-{'0' * 32}", deadline)
        except ReplicaGone:
            return None
        return other if other is not replica else None

    # -- calls ----------------------------------------------------------------

    def invoke(self, method: str, request: Any, timeout: Any) -> Any:
        """One RPC with retries, sent to the owner of the first id it names, else
        to the least-loaded replica."""
        deadline = self._client._deadline(timeout)
        self._start(deadline)
        owned = [i for i in request_ids(request) if owner_of(i)]
        return self.run(method, owned[0] if owned else None, deadline,
                        lambda replica: self._unary(replica, method, request, deadline))

    def run(self, method: str, resource_id: Optional[str], deadline: Optional[float],
            attempt_on: Callable[[ChannelReplica], Any]) -> Any:
        """attempt_on(replica) with the retry policy: on the owner of
        resource_id, or (None) on the least-loaded replica, failing over."""
        replica = self.owner(resource_id, deadline) if resource_id else None
        bound = replica is not None
        replica = replica or self.pick((), deadline)
        policy, tried, failovers, rerouted, attempt = self._client.retry_policy, [], 0, False, 0
        while True:
            attempt += 1
            try:
                return attempt_on(replica)
            except LinalgdError as e:
                error = e
            error.attempts = attempt
            other = None if rerouted else self._rerouted(error, replica, deadline)
            if other is not None:
                replica, rerouted = other, True
                continue
            if bound and self._lost(replica, error, deadline):
                raise self._gone(replica, resource_id, error, method) from None
            if not bound and policy.should_fail_over(error, failovers):
                tried.append(replica)
                other = self.set.pick(tried)
                if other is not None:
                    replica, failovers = other, failovers + 1
                    continue
            time.sleep(self._client._retry_delay(error, attempt, deadline))
            if not bound and not replica.usable():
                replica = self.pick((), deadline)

    def put_many(self, items: Any, deadline: Optional[float],
                 near: Sequence[str] = ()) -> Any:
        """Uploads (transfer.put_many) to the owner of the first id in near
        (another operand of the same call), else to the least-loaded replica;
        every part of one upload goes to that replica."""
        self._start(deadline)
        owned = [i for i in near if owner_of(i)]
        return self.run("PutTensor", owned[0] if owned else None, deadline,
                        lambda replica: self._on(
                            replica, lambda: (replica.transfer.put_many(items, deadline), ())))

    def get(self, tensor_id: str, deadline: Optional[float]) -> Any:
        """transfer.get on the replica that owns tensor_id."""
        self._start(deadline)
        return self.run("GetTensor", tensor_id if owner_of(tensor_id) else None, deadline,
                        lambda replica: self._on(
                            replica, lambda: (replica.transfer.get(tensor_id, deadline), ())))

    def probe(self, service: str, timeout: float) -> str:
        """A health check of a usable replica that waits for it to connect."""
        replica = self.pick((), time.monotonic() + timeout)
        try:
            resp = replica.health(_health.HealthCheckRequest(service=service), timeout=timeout,
                                  wait_for_ready=True)
        except grpc.RpcError as e:
            raise from_rpc_error(e, "Health") from None
        return _health.status_name(resp.status)

    def release_in_background(self, factor_id: str, metadata: Any, keep: Callable) -> None:
        """ReleaseFactor on the factor's replica, without waiting."""
        rid = owner_of(factor_id)
        replica = self.set.by_replica_id(rid) if rid else None
        if replica is None:
            return  # its replica is unknown: the server's TTL frees it
        future = replica.stub.ReleaseFactor.future(pb.ReleaseFactorRequest(factor_id=factor_id),
                                                   timeout=10.0, metadata=metadata)
        keep(future)
