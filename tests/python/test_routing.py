"""One client over several replicas (an ipv4: list or a dns: name): calls naming
an id go to the replica that owns it, stateless calls to the least loaded one,
and the loss of a replica fails only the calls that need it, with an error that
says so. Real servers on loopback ports, each with its own --replica-id."""
import concurrent.futures
import math
import re
import signal
import socket
import threading
import time

import grpc
import numpy as np
import pytest

import linalgd
from linalgd import _replicas

RNG = np.random.default_rng(23)


def _three(start_server, *r2_flags):
    servers = {rid: start_server("--replica-id", rid, *(r2_flags if rid == "r2" else ()))
               for rid in ("r0", "r1", "r2")}
    target = "ipv4:" + ",".join(s.target for s in servers.values())
    return servers, target


def _owner(resource_id):
    return resource_id.split("-", 1)[0]


def _spd(n):
    m = RNG.standard_normal((n, n))
    return m @ m.T + n * np.eye(n)


def test_targets_parse():
    assert _replicas.parse_target("localhost:5001") is None
    assert _replicas.parse_target("ipv4:127.0.0.1:5001") is None
    assert _replicas.parse_target("ipv4:127.0.0.1:5001,127.0.0.1:5002").addresses == (
        "ipv4:127.0.0.1:5001", "ipv4:127.0.0.1:5002")
    assert _replicas.parse_target("ipv6:[::1]:1,[::1]:2").addresses == ("ipv6:[::1]:1",
                                                                         "ipv6:[::1]:2")
    dns = _replicas.parse_target("dns:///localhost:5003")
    assert (dns.host, dns.port) == ("localhost", 5003)
    assert "ipv4:127.0.0.1:5003" in dns.resolve()
    with pytest.raises(ValueError, match="dns:///name:port"):
        _replicas.parse_target("dns:///localhost")
    assert _replicas.owner_of("r0-" + "a" * 32) == "r0"
    assert _replicas.owner_of("a" * 32) is None


def test_ids_route_to_their_replica_and_stateless_calls_spread(start_server):
    servers, target = _three(start_server)
    with linalgd.Client(target, timeout=10.0) as c:
        a = _spd(8)
        tensors = [c.put(RNG.standard_normal((8, 8))) for _ in range(6)]
        factors = [c.factorize(a) for _ in range(3)]
        owners = {_owner(t.id) for t in tensors} | {_owner(f.id) for f in factors}
        assert owners == {"r0", "r1", "r2"}, owners  # round robin while the load is unknown
        b = RNG.standard_normal((8, 2))
        for i in range(100):
            t, f = tensors[i % 6], factors[i % 3]
            if i % 3 == 0:
                np.testing.assert_allclose(c.get(t), c.get(t.id))
            elif i % 3 == 1:
                np.testing.assert_allclose(c.matmul(t, np.eye(8)), t.get(), rtol=1e-12)
            else:
                np.testing.assert_allclose(a @ f.solve(b), b, atol=1e-9)
        # A kept result stays where its operands are and is fetched from there.
        kept = c.matmul(tensors[0], tensors[0], keep=True)
        assert _owner(kept.id) == _owner(tensors[0].id)
        np.testing.assert_allclose(kept.get(), tensors[0].get() @ tensors[0].get())
        listed = {t.id for t in c.list_tensors()}  # every replica's
        assert {t.id for t in tensors} | {f.id for f in factors} <= listed
        for t in tensors:
            c.delete(t)
        for f in factors:
            f.release()
        assert not {t.id for t in tensors} & {t.id for t in c.list_tensors()}
        states = {s.replica_id: s for s in c.replicas()}
        assert set(states) == {"r0", "r1", "r2"}
        assert all(s.usable for s in states.values())
        # The client asks for the load (linalgd-load) and every replica sent it.
        assert all(s.queue_depth is not None and s.predicted_wait_us is not None
                   for s in states.values()), states


def test_large_upload_parts_stay_on_one_replica(start_server):
    servers, target = _three(start_server)
    with linalgd.Client(target, timeout=20.0) as c:
        c.stream_threshold = 1 << 20
        c.transfer_part_min_bytes = 256 << 10
        x = RNG.standard_normal((512, 1024))  # 4 MiB: parts over several connections
        for _ in range(3):
            t = c.put(x)
            np.testing.assert_array_equal(c.get(t), x)
            y = c.matmul(x[:, :512], np.eye(512))  # a temporary upload, then the call
            np.testing.assert_allclose(y, x[:, :512])
            # The upload of an operand goes where the call's remote operand is.
            w = c.put(np.eye(1024) * 2.0)
            np.testing.assert_allclose(c.matmul(x, w), 2.0 * x)


def test_foreign_id_is_rerouted_to_its_owner(start_server):
    servers, target = _three(start_server)
    with linalgd.Client(servers["r0"].target) as single:
        t = single.put(np.eye(3))
    with linalgd.Client(target) as c:
        # The request names ids of two replicas: r1 refuses and names r0, once.
        u = c.put(np.ones((3, 3)))
        while _owner(u.id) == "r0":
            u = c.put(np.ones((3, 3)))
        np.testing.assert_array_equal(c.get(t.id), np.eye(3))
        with pytest.raises(linalgd.FailedPrecondition, match="belongs to replica"):
            c.matmul(u, t)


@pytest.mark.parametrize("how", ["kill", "terminate"])  # SIGKILL, or SIGTERM's drain and exit
def test_loss_of_a_replica(start_server, how):
    servers, target = _three(start_server)
    # No retries: a stateless call survives the loss only by failing over at once.
    with linalgd.Client(target, timeout=10.0, retries=0) as c:
        tensors = [c.put(np.full((4, 4), float(i))) for i in range(6)]
        victim = _owner(tensors[0].id)
        lost = [t for t in tensors if _owner(t.id) == victim]
        kept = [t for t in tensors if _owner(t.id) != victim]
        failures, stop = [], threading.Event()

        def stateless():
            while not stop.is_set():
                try:
                    np.testing.assert_allclose(c.matmul(np.eye(4), np.full((4, 4), 2.0)), 2.0)
                except Exception as e:  # noqa: BLE001  counted, asserted below
                    failures.append(e)
        workers = [threading.Thread(target=stateless) for _ in range(3)]
        for w in workers:
            w.start()
        getattr(servers[victim].proc, how)()
        servers[victim].proc.wait()
        for i in range(30):
            np.testing.assert_allclose(c.matmul(np.eye(4), np.ones((4, 4))), 1.0)
            if i % 5 == 0:  # new tensors go to the replicas that are left
                t = c.put(np.eye(2))
                assert _owner(t.id) != victim
                t.delete()
        stop.set()
        for w in workers:
            w.join()
        assert not failures, failures[:3]
        address = servers[victim].target
        for t in lost:
            with pytest.raises(linalgd.Unavailable) as e:
                c.get(t)
            assert isinstance(e.value, linalgd.ReplicaGone)
            assert f"replica {victim} (ipv4:{address}) that owns id {t.id} is gone" in str(e.value)
            with pytest.raises(linalgd.ReplicaGone, match=f"replica {victim} "):
                c.matmul(t, np.eye(4))
        for t in kept:
            np.testing.assert_array_equal(c.get(t), t.get())
        state = {s.replica_id: s for s in c.replicas()}[victim]
        assert not state.usable


def test_an_unknown_replica_is_gone_too(start_server):
    servers, target = _three(start_server)
    with linalgd.Client(target) as c:
        with pytest.raises(linalgd.ReplicaGone, match="replica r9 that owns id r9-"):
            c.get("r9-" + "0" * 32)


def test_slow_replica_gets_fewer_calls(start_server):
    servers, target = _three(start_server, "--inject-faults", "all:matmul:stall=150ms")
    with linalgd.Client(target, timeout=20.0) as c:
        x = np.ones((4, 4))

        def call(_):
            return c.matmul(x, x)
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            list(pool.map(call, range(90)))
        calls = {s.replica_id: s.calls for s in c.replicas()}
    # Round robin would give r2 a third (30); the slow one must get a clear minority.
    print("calls per replica:", calls)
    assert calls["r2"] < 0.2 * sum(calls.values()), calls


def test_recreate_factor_survives_its_replica(start_server):
    servers, target = _three(start_server)
    with linalgd.Client(target, timeout=10.0) as c:
        a = _spd(6)
        b = RNG.standard_normal(6)
        f = c.factorize(a, recreate=True)
        plain = c.factorize(a)
        while _owner(plain.id) != _owner(f.id):
            plain = c.factorize(a)
        first = _owner(f.id)
        np.testing.assert_allclose(a @ f.solve(b), b, atol=1e-9)
        servers[first].proc.kill()
        servers[first].proc.wait()
        # Solves at once from several threads: one factorizes again, all succeed.
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            xs = list(pool.map(lambda _: f.solve(b), range(4)))
        for x in xs:
            np.testing.assert_allclose(a @ x, b, atol=1e-9)
        assert _owner(f.id) != first and re.fullmatch(r"r\d-[0-9a-f]{32}", f.id)
        with pytest.raises(linalgd.ReplicaGone):
            plain.solve(b)
        with pytest.raises(linalgd.InvalidArgument, match="recreate"):
            c.factorize(c.put(a), recreate=True)


def test_dns_target_skips_unreachable_addresses(start_server):
    s = start_server("--replica-id", "d0")
    port = s.target.rsplit(":", 1)[1]
    with linalgd.Client(f"dns:///localhost:{port}", timeout=10.0) as c:
        for _ in range(5):  # localhost may also resolve to ::1, where no one listens
            t = c.put(np.eye(2))
            assert _owner(t.id) == "d0"
            np.testing.assert_array_equal(c.get(t), np.eye(2))
        assert c.server_info().replica_id == "d0"


def test_single_address_has_no_replica_set(server):
    with linalgd.Client(server.target) as c:
        assert c.replicas() == []
    with pytest.raises(ValueError, match="use_shared_memory needs one"):
        linalgd.Client("ipv4:127.0.0.1:1,127.0.0.1:2", use_shared_memory=True)


def test_draining_metadata_takes_a_replica_out_of_rotation():
    replicas = _replicas.ReplicaSet(["a", "b"], lambda address: _replicas.Replica(address))
    a, b = replicas.all()
    replicas.observe(a, (("linalgd-replica", "ra"), ("linalgd-draining", "1")))
    replicas.observe(b, (("linalgd-replica", "rb"), ("linalgd-queue-depth", "3")))
    assert [replicas.pick() for _ in range(3)] == [b, b, b]
    assert replicas.by_replica_id("ra") is a
    replicas.observe(a, (("linalgd-queue-depth", "0"), ("linalgd-predicted-wait-us", "0")))
    assert replicas.pick() is a  # no longer draining, and less loaded
    assert grpc.StatusCode.UNAVAILABLE == linalgd.ReplicaGone.code


def test_malformed_load_metadata_keeps_the_last_good_load():
    replicas = _replicas.ReplicaSet(["a", "b"], lambda address: _replicas.Replica(address))
    a, b = replicas.all()
    replicas.observe(a, (("linalgd-queue-depth", "5"), ("linalgd-predicted-wait-us", "900")))
    replicas.observe(b, (("linalgd-queue-depth", "0"), ("linalgd-predicted-wait-us", "10")))
    for bad in ("", "x", "1e3", "0x10", " ", "9" * 5000):
        replicas.observe(b, (("linalgd-queue-depth", bad), ("linalgd-predicted-wait-us", bad)))
    assert (b.queue_depth, b.predicted_wait_us) == (0, 10)
    assert replicas.pick() is b  # still the less loaded one
    replicas.observe(b, (("linalgd-queue-depth", "7"), ("linalgd-predicted-wait-us", "5000")))
    assert replicas.pick() is a


def test_asyncio_client_routes_alike(start_server):
    import asyncio
    import linalgd.aio
    servers, target = _three(start_server)

    async def main():
        async with linalgd.aio.Client(target, timeout=10.0) as c:
            a = _spd(5)
            tensors = [await c.put(np.full((3, 3), float(i))) for i in range(3)]
            assert {_owner(t.id) for t in tensors} == {"r0", "r1", "r2"}
            f = await c.factorize(a, recreate=True)
            victim = _owner(f.id)
            results = await asyncio.gather(*(c.get(t) for t in tensors for _ in range(10)))
            assert [r[0, 0] for r in results] == [float(i) for i in range(3) for _ in range(10)]
            servers[victim].proc.kill()
            servers[victim].proc.wait()
            outs = await asyncio.gather(*(c.matmul(np.eye(3), np.eye(3)) for _ in range(20)))
            assert all(np.array_equal(o, np.eye(3)) for o in outs)
            b = np.ones(5)
            np.testing.assert_allclose(a @ await f.solve(b), b, atol=1e-9)
            assert _owner(f.id) != victim
            for t in tensors:
                if _owner(t.id) == victim:
                    with pytest.raises(linalgd.ReplicaGone, match=f"replica {victim} "):
                        await c.get(t)
                else:
                    assert (await c.get(t)).shape == (3, 3)
            states = {s.replica_id: s.usable for s in await c.replicas()}
            assert states == {"r0": victim != "r0", "r1": victim != "r1", "r2": victim != "r2"}
            assert all(s.queue_depth is not None for s in await c.replicas()
                       if s.replica_id != victim)
    asyncio.run(main())


def test_owner_named_by_a_wrong_replica_is_learned_again(start_server):
    a = start_server("--replica-id", "r0")
    b = start_server("--replica-id", "r1")
    ports = [s.target.rsplit(":", 1)[1] for s in (a, b)]
    with linalgd.Client(f"ipv4:{a.target},{b.target}", timeout=10.0) as c:
        c.put(np.ones(1))  # learns r0 at a's address, r1 at b's
        for s in (a, b):
            s.proc.kill()
            s.proc.wait()
        # The replicas come back at each other's addresses.
        start_server("--replica-id", "r1", port=int(ports[0]))
        start_server("--replica-id", "r0", port=int(ports[1]))
        with linalgd.Client(b.target) as single:
            t = single.put(np.eye(2))
        assert _owner(t.id) == "r0"
        # Sent to a's address (r1 now), refused naming r0, sent again to b's.
        np.testing.assert_array_equal(c.get(t.id), np.eye(2))
        assert {s.replica_id: s.address for s in c.replicas()} == {
            "r1": f"ipv4:{a.target}", "r0": f"ipv4:{b.target}"}


def fake_dns(monkeypatch, servers):
    """Resolves every name to the targets of servers (a dict id -> Server) as
    it is when asked, by socket.getaddrinfo's answer: a dns: target over
    loopback servers on ports of their own, without a hosts file."""
    def getaddrinfo(host, port, *args, **kwargs):
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", s.port))
                for s in servers.values()]
    monkeypatch.setattr(_replicas.socket, "getaddrinfo", getaddrinfo)


def test_an_owner_no_longer_resolved_serves_its_ids_until_it_fails(start_server, monkeypatch):
    servers, _ = _three(start_server)
    resolved = dict(servers)
    fake_dns(monkeypatch, resolved)
    with linalgd.Client("dns:///replicas.test:50051", timeout=10.0, retries=0,
                        refresh_interval=0.0) as c:  # resolved again at every call
        tensors = [c.put(np.full((2, 2), float(i))) for i in range(6)]
        assert {_owner(t.id) for t in tensors} == {"r0", "r1", "r2"}
        mine = [t for t in tensors if _owner(t.id) == "r0"]
        del resolved["r0"]  # r0 leaves DNS (a draining pod does first) but still answers
        r0 = f"ipv4:127.0.0.1:{servers['r0'].port}"
        assert all(_owner(c.put(np.eye(2)).id) != "r0" for _ in range(6))  # no new work
        state = {s.address: s for s in c.replicas()}[r0]
        assert not state.resolved and state.reachable and not state.usable
        # As the C++ client: calls naming r0's ids still go there while it answers.
        for t in mine:
            np.testing.assert_array_equal(c.get(t), np.full((2, 2), float(tensors.index(t))))
        np.testing.assert_array_equal(c.matmul(mine[0], np.eye(2)), mine[0].get())
        c.delete(mine[-1])
        servers["r0"].proc.kill()
        servers["r0"].proc.wait()
        with pytest.raises(linalgd.ReplicaGone, match=f"replica r0 \\({r0}\\) that owns id "
                                                      f"{mine[0].id} is gone"):
            returns_by(lambda: c.get(mine[0]), 30.0)
        with pytest.raises(linalgd.ReplicaGone, match="replica r0 .* is gone"):
            c.get(mine[0])  # at once, now that it is known lost
        others = [t for t in tensors if _owner(t.id) != "r0"]
        for t in others:
            np.testing.assert_array_equal(c.get(t), np.full((2, 2), float(tensors.index(t))))


def test_dns_name_that_does_not_resolve_fails_calls_not_the_constructor():
    with linalgd.Client("dns:///no-such-host.invalid:5000", timeout=5.0) as c:
        assert c.replicas() == []
        with pytest.raises(linalgd.Unavailable, match="resolving dns:///no-such-host.invalid"):
            c.matmul(np.eye(2), np.eye(2))


def test_a_draining_replica_gets_no_new_work_and_serves_its_ids(start_server):
    servers, target = _three(start_server, "--drain-grace", "60")  # r2 drains on SIGTERM
    with linalgd.Client(target, timeout=10.0, retries=0) as c:
        tensors = [c.put(np.full((2, 2), float(i))) for i in range(3)]
        mine = next(t for t in tensors if _owner(t.id) == "r2")
        before = {s.replica_id: s for s in c.replicas()}["r2"].calls
        servers["r2"].proc.send_signal(signal.SIGTERM)  # drains: health NOT_SERVING
        assert wait_until_not_serving(servers["r2"])
        # New work goes to the others (the first call r2 refuses fails over at once).
        for _ in range(12):
            np.testing.assert_allclose(c.matmul(np.eye(2), np.eye(2)), np.eye(2))
            assert _owner(c.put(np.eye(2)).id) != "r2"
        state = {s.replica_id: s for s in c.replicas()}["r2"]
        assert state.draining and not state.usable and state.calls <= before + 1, state
        # What r2 stores stays readable until its store is empty.
        np.testing.assert_array_equal(c.get(mine), np.full((2, 2), float(tensors.index(mine))))
        c.delete(mine)
        servers["r2"].proc.wait(30)  # the store is empty: the drain ends
        with pytest.raises(linalgd.ReplicaGone, match="replica r2 "):
            returns_by(lambda: c.get(mine, timeout=3.0), 30.0)


def returns_by(fn, seconds):
    """fn()'s result (or its exception), failing the test when fn has not
    returned after seconds (a call that ignores its deadline hangs, else)."""
    out = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001  re-raised on the test's thread
            out["error"] = e
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"still running {seconds} s later, past its deadline")
    if "error" in out:
        raise out["error"]
    return out["value"]


def wait_until_not_serving(server, timeout=10.0):
    with linalgd.Client(server.target, retries=0) as c:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if c.health(timeout=1.0) == "NOT_SERVING":
                return True
            time.sleep(0.05)
    return False


@pytest.mark.parametrize("interval,says", [
    (math.nan, "refresh_interval: NaN is not a number of seconds"),
    ("30", "refresh_interval: '30' is not a number of seconds"),
    (-1.0, "refresh_interval: -1.0 s; it must be 0 or more"),
])
def test_a_refresh_interval_that_is_not_a_number_of_seconds_is_refused(interval, says):
    """NaN compared false with every elapsed time: the replica set was never resolved again."""
    with pytest.raises(linalgd.InvalidArgument, match=says):
        linalgd.Client("ipv4:127.0.0.1:1,127.0.0.1:2", refresh_interval=interval)
