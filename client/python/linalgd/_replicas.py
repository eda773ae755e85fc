"""Several linalgd replicas behind one target: which addresses, which replica
owns an id, and which replica is least loaded. No I/O here but name resolution;
the client's router (_routing.py) makes the calls.

Targets with replicas: "ipv4:A:P,B:Q,..." (or ipv6:) with more than one
address, and "dns:///name:port" (resolved with socket.getaddrinfo, again every
refresh interval and when a call finds no usable replica). Any other target,
an ipv4:/ipv6: list of one address included, is one channel as before.

Ids minted by a server started with --replica-id X are "X-" + 32 hex digits;
X names the replica that holds the object. Every response carries trailing
metadata linalgd-replica (the id) and linalgd-draining: 1 while it drains;
a request that carries LOAD_REQUEST (a client routing over replicas sends it
with every call) is answered with linalgd-queue-depth and
linalgd-predicted-wait-us too (its load).
"""
import dataclasses
import re
import socket
import threading
from typing import Callable, Dict, Generic, Iterable, List, Optional, Sequence, Tuple, TypeVar

REPLICA_KEY = "linalgd-replica"
QUEUE_DEPTH_KEY = "linalgd-queue-depth"
PREDICTED_WAIT_KEY = "linalgd-predicted-wait-us"
DRAINING_KEY = "linalgd-draining"
OWNER_KEY = "linalgd-owner-replica"
LOAD_REQUEST = (("linalgd-load", "1"),)  # request metadata: send the load keys back

_ID = re.compile(r"([a-z0-9]{1,16})-[0-9a-f]{32}")
_ID_FIELDS = ("id", "resident_id", "factor_id", "upload_id", "region_id")


def owner_of(resource_id: str) -> Optional[str]:
    """The replica id an id names ("X" of "X-<32 hex>"), or None for a plain id."""
    m = _ID.fullmatch(resource_id or "")
    return m.group(1) if m else None


def request_ids(message) -> List[str]:
    """The ids a request names (operands, factor, upload, region), in field order."""
    out = []
    for field, value in message.ListFields():
        if field.message_type is not None:
            # By the value, not the descriptor: FieldDescriptor.label is gone
            # in protobuf 7 (upb), and is_repeated is not in Debian's 4.21.
            values = (value,) if hasattr(value, "ListFields") else value
            for v in values:
                if not hasattr(v, "ListFields"):  # a map
                    break
                out.extend(request_ids(v))
        elif field.name in _ID_FIELDS and isinstance(value, str):
            out.append(value)
    return out


def metadata_value(metadata, key: str) -> Optional[str]:
    for k, v in metadata or ():
        if k == key:
            return v.decode() if isinstance(v, bytes) else v
    return None


@dataclasses.dataclass(frozen=True)
class ListTarget:
    """ipv4:/ipv6: with several addresses; each is a gRPC target of its own."""
    addresses: Tuple[str, ...]

    def resolve(self) -> List[str]:
        return list(self.addresses)


@dataclasses.dataclass(frozen=True)
class DnsTarget:
    """dns:///name:port: the addresses getaddrinfo gives for name."""
    host: str
    port: int

    def resolve(self) -> List[str]:
        out = []
        for family, _, _, _, sockaddr in socket.getaddrinfo(self.host, self.port,
                                                            type=socket.SOCK_STREAM):
            if family == socket.AF_INET:
                address = f"ipv4:{sockaddr[0]}:{sockaddr[1]}"
            elif family == socket.AF_INET6:
                address = f"ipv6:[{sockaddr[0]}]:{sockaddr[1]}"
            else:
                continue
            if address not in out:
                out.append(address)
        return out


def parse_target(target: str):
    """A ListTarget or DnsTarget for a target with replicas; None for one address."""
    for scheme in ("ipv4:", "ipv6:"):
        if target.startswith(scheme):
            parts = [p.strip() for p in target[len(scheme):].split(",") if p.strip()]
            if len(parts) < 2:
                return None
            return ListTarget(tuple(scheme + p for p in parts))
    if not target.startswith("dns:"):
        return None
    rest = target[len("dns:"):]
    if rest.startswith("//"):
        rest = rest[2:].split("/", 1)[1] if "/" in rest[2:] else ""  # drops an authority
    host, sep, port = rest.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"target {target!r}: a replica set is dns:///name:port")
    return DnsTarget(host.strip("[]"), int(port))


@dataclasses.dataclass(frozen=True)
class ReplicaState:
    """What a client knows of one replica (Client.replicas())."""
    address: str
    replica_id: Optional[str]  # None until learned
    queue_depth: Optional[int]  # from its latest response; None before one
    predicted_wait_us: Optional[int]
    draining: bool  # its latest response said linalgd-draining: 1, or health NOT_SERVING
    reachable: bool  # False after a failed connection, until a health check passes
    resolved: bool  # still among the target's addresses
    calls: int  # responses seen from it (errors included)

    @property
    def usable(self) -> bool:
        """Takes new work (stateless calls, uploads)."""
        return self.resolved and self.reachable and not self.draining


class Replica:
    """One address of the set. The router's replica adds channels (_routing.py)."""

    def __init__(self, address: str):
        self.address = address
        self.replica_id: Optional[str] = None
        self.queue_depth: Optional[int] = None
        self.predicted_wait_us: Optional[int] = None
        self.draining = False
        self.reachable = True
        self.lost = False  # unreachable, and a health check failed too
        self.resolved = True
        self.inflight = 0  # this client's calls in progress there
        self.calls = 0

    def usable(self) -> bool:
        return self.resolved and self.reachable and not self.draining

    def score(self) -> Tuple[int, int]:
        """Lower is less loaded: (predicted wait, jobs queued plus this client's
        calls in flight); an unknown load counts as none."""
        return (self.predicted_wait_us or 0, (self.queue_depth or 0) + self.inflight)

    def state(self) -> ReplicaState:
        return ReplicaState(self.address, self.replica_id, self.queue_depth,
                            self.predicted_wait_us, self.draining, self.reachable, self.resolved,
                            self.calls)

    def name(self) -> str:
        return f"replica {self.replica_id} ({self.address})" if self.replica_id else self.address


def _int(value: Optional[str]) -> Optional[int]:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


R = TypeVar("R", bound=Replica)


class ReplicaSet(Generic[R]):
    """The replicas of one target, thread safe. make(address) -> R, a Replica."""

    def __init__(self, addresses: Iterable[str], make: Callable[[str], R]):
        self._make = make
        self._lock = threading.Lock()
        self._replicas: Dict[str, R] = {}  # by address; guarded by _lock
        self._next = 0  # round robin among the least loaded; guarded by _lock
        self.update(addresses)

    def all(self) -> List[R]:
        with self._lock:
            return list(self._replicas.values())

    def update(self, addresses: Iterable[str]) -> List[R]:
        """Makes the replica set the resolved addresses; returns the new replicas.
        Replicas no longer resolved stay known (their ids are reported as gone)."""
        addresses = list(addresses)
        new = []
        with self._lock:
            for replica in self._replicas.values():
                replica.resolved = replica.address in addresses
            for address in addresses:
                if address not in self._replicas:
                    replica = self._make(address)
                    self._replicas[address] = replica
                    new.append(replica)
        return new

    def by_replica_id(self, replica_id: str) -> Optional[R]:
        """The replica with that id, a resolved one first."""
        with self._lock:
            found = [r for r in self._replicas.values() if r.replica_id == replica_id]
        found.sort(key=lambda r: not r.resolved)
        return found[0] if found else None

    def pick(self, exclude: Sequence[R] = ()) -> Optional[R]:
        """The usable replica with the least load; ties in turn. None if none is usable."""
        with self._lock:
            usable = [r for r in self._replicas.values() if r.usable() and r not in exclude]
            if not usable:
                return None
            best = min(r.score() for r in usable)
            tied = [r for r in usable if r.score() == best]
            self._next += 1
            return tied[self._next % len(tied)]

    def begin(self, replica: R) -> None:
        with self._lock:
            replica.inflight += 1

    def end(self, replica: R, answered: bool, metadata=()) -> None:
        """A call to replica ended: answered by the server (success or its
        error, with these trailing metadata) or not (a transport failure)."""
        with self._lock:
            replica.inflight -= 1
            if answered:
                replica.calls += 1
                replica.reachable, replica.lost = True, False
        if answered:
            self.observe(replica, metadata)

    def set_reachable(self, replica: R, reachable: bool, lost: Optional[bool] = None) -> None:
        """lost: None leaves it as it is."""
        with self._lock:
            replica.reachable = reachable
            if lost is not None:
                replica.lost = lost

    def observe(self, replica: R, metadata) -> None:
        """Takes the replica's id, load and draining flag from a response's trailing metadata."""
        rid = metadata_value(metadata, REPLICA_KEY)
        with self._lock:
            if rid:
                replica.replica_id = rid
            depth = _int(metadata_value(metadata, QUEUE_DEPTH_KEY))
            wait = _int(metadata_value(metadata, PREDICTED_WAIT_KEY))
            if depth is not None:
                replica.queue_depth = depth
            if wait is not None:
                replica.predicted_wait_us = wait
            replica.draining = metadata_value(metadata, DRAINING_KEY) == "1"

    def describe(self) -> str:
        """Every replica and why it takes no work, for an error message."""
        parts = []
        for r in self.all():
            why = [w for w, bad in (("not resolved", not r.resolved),
                                    ("unreachable", not r.reachable),
                                    ("draining", r.draining)) if bad]
            parts.append(f"{r.name()}: {', '.join(why) or 'usable'}")
        return "; ".join(parts)
