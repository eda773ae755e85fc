#!/usr/bin/env python3
"""Real-Prometheus integration test of linalgd's metrics.

Starts Debian's `prometheus` on loopback, scraping a live target every second,
sends known traffic, waits for a scrape taken after the traffic, then checks
through Prometheus's HTTP API that the ingested series match the traffic.

  --fixture BIN   target: tests/metrics/metrics_fixture (the metrics library
                  alone; traffic written to its stdin)
  --server BIN    target: build/bin/linalgd (--disable-gpu); traffic: Matmul
                  RPCs through Python gRPC stubs generated from the proto

Exit 0 when every check passed, 1 on a failure.
"""
import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=2.0):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


class Prometheus:
    """A prometheus process on 127.0.0.1 scraping `target` every second."""

    def __init__(self, target, workdir):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = os.path.join(workdir, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: linalgd\n"
                    f"    static_configs:\n      - targets: ['{target}']\n")
        binary = shutil.which("prometheus") or "/usr/bin/prometheus"
        self.log = open(os.path.join(workdir, "prometheus.log"), "w")
        self.proc = subprocess.Popen(
            [binary, f"--config.file={config}",
             f"--storage.tsdb.path={os.path.join(workdir, 'data')}",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self.log, stderr=subprocess.STDOUT)
        self._wait_ready()

    def _wait_ready(self, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("prometheus exited; see prometheus.log")
            try:
                http_get(self.url + "/-/ready")
                return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("prometheus not ready after %ss" % timeout)

    def query(self, expr):
        """Instant query; returns the list of (labels, value) results."""
        url = self.url + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        body = json.loads(http_get(url))
        if body.get("status") != "success":
            raise RuntimeError(f"query {expr!r}: {body}")
        return [(r["metric"], float(r["value"][1])) for r in body["data"]["result"]]

    def scalar(self, expr):
        results = self.query(expr)
        return results[0][1] if results else None

    def target_health(self):
        body = json.loads(http_get(self.url + "/api/v1/targets"))
        active = body["data"]["activeTargets"]
        return [(t["health"], t.get("lastError", "")) for t in active]

    def wait_for_scrape_after(self, t0, timeout=20):
        """Waits until the target's last scrape started after time t0."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            value = self.scalar('timestamp(up{job="linalgd"})')
            if value is not None and value > t0 + 0.01:
                return True
            time.sleep(0.25)
        return False

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def expect(self, name, got, want):
        ok = got is not None and (got == want if not callable(want) else want(got))
        self.passed += ok
        self.failed += not ok
        print(("PASS" if ok else "FAIL") + f": {name}: got {got}"
              + ("" if callable(want) else f", want {want}"))

    def summary(self):
        print(f"{self.passed} passed, {self.failed} failed")
        return 0 if self.failed == 0 else 1


# (command sent to the fixture) lines of known traffic.
FIXTURE_TRAFFIC = (
    ["request Matmul OK cpu 0.002"] * 7
    + ["request Matmul INVALID_ARGUMENT none 0.0001"] * 3
    + ['request we"ird\\op OK gpu:0 0.3',
       "queue_wait cpu 0.004", "queue_wait cpu 0.006",
       "compute Solve cpu 0.02", "batch Matmul gpu:0 12",
       "fallback Solve memory_budget", "fallback Solve memory_budget",
       "flops Matmul cpu 268435456", "received grpc 3145728",
       "sent shm 1048576", "queue_depth gpu:0 5", "healthy gpu:0 0"])


def fixture_checks(prom, checks):
    q = prom.scalar
    checks.expect("requests OK", q('linalgd_requests_total{op="Matmul",code="OK",backend="cpu"}'), 7)
    checks.expect("requests INVALID_ARGUMENT",
                  q('linalgd_requests_total{op="Matmul",code="INVALID_ARGUMENT",backend="none"}'), 3)
    checks.expect("escaped label value", q('linalgd_requests_total{op="we\\"ird\\\\op"}'), 1)
    checks.expect("duration count",
                  q('linalgd_request_duration_seconds_count{op="Matmul",backend="cpu"}'), 7)
    checks.expect("duration sum", q('linalgd_request_duration_seconds_sum{op="Matmul",backend="cpu"}'),
                  lambda v: abs(v - 0.014) < 1e-9)
    checks.expect("duration +Inf bucket",
                  q('linalgd_request_duration_seconds_bucket{op="Matmul",backend="cpu",le="+Inf"}'), 7)
    checks.expect("median in (0.001, 0.0025]",
                  q('histogram_quantile(0.5, linalgd_request_duration_seconds_bucket{op="Matmul",backend="cpu"})'),
                  lambda v: 0.001 < v <= 0.0025)
    checks.expect("queue wait count", q('linalgd_queue_wait_seconds_count{backend="cpu"}'), 2)
    checks.expect("compute count", q('linalgd_compute_seconds_count{op="Solve",backend="cpu"}'), 1)
    checks.expect("batch size le=16", q('linalgd_batch_size_bucket{op="Matmul",le="16"}'), 1)
    checks.expect("fallbacks", q('linalgd_cpu_fallbacks_total{op="Solve",reason="memory_budget"}'), 2)
    checks.expect("flops", q('linalgd_flops_total{op="Matmul",backend="cpu"}'), 268435456)
    checks.expect("received bytes", q('linalgd_received_bytes_total{transport="grpc"}'), 3145728)
    checks.expect("sent bytes", q('linalgd_sent_bytes_total{transport="shm"}'), 1048576)
    checks.expect("queue depth", q('linalgd_queue_depth{device="gpu:0"}'), 5)
    checks.expect("device unhealthy", q('linalgd_device_healthy{device="gpu:0"}'), 0)
    checks.expect("build info", q('linalgd_build_info{version="fixture",commit="fixturecommit"}'), 1)


def run_fixture(binary, workdir):
    proc = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline().strip()
        if not first.startswith("metrics_address="):
            print(f"FAIL: fixture said {first!r}")
            return 1
        prom = Prometheus(first.split("=", 1)[1], workdir)
        try:
            return drive_fixture(proc, prom)
        finally:
            prom.stop()
    finally:
        if proc.poll() is None:
            proc.stdin.close()
            proc.wait(timeout=10)


def drive_fixture(proc, prom):
    checks = Checks()
    if not prom.wait_for_scrape_after(0):
        print("FAIL: prometheus never scraped the fixture")
        return 1
    for line in FIXTURE_TRAFFIC:
        proc.stdin.write(line + "\n")
        proc.stdin.flush()
        answer = proc.stdout.readline().strip()
        if answer != "ok":
            print(f"FAIL: fixture answered {answer!r} to {line!r}")
            return 1
    t_end = time.time()
    checks.expect("scrape after traffic", prom.wait_for_scrape_after(t_end), True)
    checks.expect("target health", prom.target_health(), [("up", "")])
    fixture_checks(prom, checks)
    return checks.summary()


def generate_stubs(workdir):
    """Python gRPC stubs for proto/linalgd/v1/linalgd.proto, in workdir: with
    Debian's protoc + grpc_python_plugin, else python3-grpc-tools."""
    proto = os.path.join(REPO, "proto/linalgd/v1/linalgd.proto")
    protoc, plugin = shutil.which("protoc"), shutil.which("grpc_python_plugin")
    if protoc and plugin:
        cmd = [protoc, f"-I{os.path.join(REPO, 'proto')}", f"--python_out={workdir}",
               f"--grpc_out={workdir}", f"--plugin=protoc-gen-grpc={plugin}", proto]
    else:
        cmd = [sys.executable, "-m", "grpc_tools.protoc", "--experimental_allow_proto3_optional",
               f"-I{os.path.join(REPO, 'proto')}", f"--python_out={workdir}",
               f"--grpc_python_out={workdir}", proto]
    subprocess.run(cmd, check=True)
    sys.path.insert(0, workdir)
    from linalgd.v1 import linalgd_pb2, linalgd_pb2_grpc
    return linalgd_pb2, linalgd_pb2_grpc


def send_server_traffic(address, workdir, n_ok, n_bad):
    """n_ok valid 2x2 f32 Matmuls, n_bad with mismatched inner dimensions.
    Returns the tensor payload bytes sent."""
    import grpc
    pb, pb_grpc = generate_stubs(workdir)
    channel = grpc.insecure_channel(address)
    grpc.channel_ready_future(channel).result(timeout=30)
    stub = pb_grpc.LinalgStub(channel)
    f32 = pb.DTYPE_F32

    def tensor(rows, cols):
        return pb.Tensor(dtype=f32, shape=[rows, cols], data=bytes(4 * rows * cols))

    payload = 0
    for _ in range(n_ok):
        stub.Matmul(pb.MatmulRequest(a=tensor(2, 2), b=tensor(2, 2)), timeout=30)
        payload += 32
    for _ in range(n_bad):
        try:
            stub.Matmul(pb.MatmulRequest(a=tensor(2, 3), b=tensor(2, 3)), timeout=30)
            raise RuntimeError("a 2x3 @ 2x3 Matmul succeeded")
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.INVALID_ARGUMENT:
                raise
    channel.close()
    return payload


def server_serves_metrics(metrics_address, timeout=15):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            # linalgd_build_info always has a series; prometheus-cpp leaves out
            # families without one (linalgd_requests_total before any RPC).
            return "linalgd_build_info" in http_get(f"http://{metrics_address}/metrics")
        except OSError:
            time.sleep(0.25)
    return False


def logged_port(path, pattern, proc, timeout=20.0):
    """The port `pattern` captures in the server's log at `path` once logged (None if the
    server exits or `timeout` passes first)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        with open(path, errors="replace") as f:
            m = re.search(pattern, f.read())
        if m:
            return int(m.group(1))
        time.sleep(0.05)
    return None


def run_server(binary, workdir):
    # Ports 0: the kernel picks free ones at the server's binds, and its log names them (a port
    # picked beforehand could be another test's server by then, and its counts not ours).
    path = os.path.join(workdir, "linalgd.log")
    log = open(path, "w")
    proc = subprocess.Popen(
        [binary, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
         "--disable-gpu", "--log-level", "info"],
        stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, LINALGD_DISABLE_GPU="1"))
    try:
        n_ok, n_bad = 5, 3
        grpc_port = logged_port(path, r"listening on port (\d+) ", proc)
        metrics_port = logged_port(path, r"metrics on http://127\.0\.0\.1:(\d+)/", proc)
        if grpc_port is None or metrics_port is None:
            print(f"FAIL: {binary} did not log its ports:\n{open(path).read()[-2000:]}")
            return 1
        grpc_address = f"127.0.0.1:{grpc_port}"
        metrics_address = f"127.0.0.1:{metrics_port}"
        if not server_serves_metrics(metrics_address):
            print(f"FAIL: {binary} serves no linalgd metrics on --metrics-listen")
            return 1
        prom = Prometheus(metrics_address, workdir)
        try:
            if not prom.wait_for_scrape_after(0):
                print("FAIL: prometheus never scraped linalgd")
                return 1
            payload = send_server_traffic(grpc_address, workdir, n_ok, n_bad)
            return server_checks(prom, time.time(), n_ok, n_bad, payload)
        finally:
            prom.stop()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def server_checks(prom, t_end, n_ok, n_bad, payload):
    checks = Checks()
    q = prom.scalar
    checks.expect("scrape after traffic", prom.wait_for_scrape_after(t_end), True)
    checks.expect("target health", prom.target_health(), [("up", "")])
    checks.expect("Matmul OK", q('sum(linalgd_requests_total{op="Matmul",code="OK"})'), n_ok)
    checks.expect("Matmul INVALID_ARGUMENT",
                  q('sum(linalgd_requests_total{op="Matmul",code="INVALID_ARGUMENT"})'), n_bad)
    checks.expect("duration count",
                  q('sum(linalgd_request_duration_seconds_count{op="Matmul"})'), n_ok + n_bad)
    checks.expect("OK Matmuls ran on the CPU",
                  q('sum(linalgd_requests_total{op="Matmul",code="OK",backend="cpu"})'), n_ok)
    checks.expect("received bytes >= payload",
                  q('sum(linalgd_received_bytes_total)'), lambda v: v >= payload)
    checks.expect("sent bytes >= results", q('sum(linalgd_sent_bytes_total)'),
                  lambda v: v >= n_ok * 16)
    checks.expect("queue waits observed", q('sum(linalgd_queue_wait_seconds_count{backend="cpu"})'), n_ok)
    checks.expect("computes observed", q('sum(linalgd_compute_seconds_count{op="Matmul",backend="cpu"})'), n_ok)
    checks.expect("cpu lane exported", q('count(linalgd_queue_capacity{device="cpu"})'), 1)
    checks.expect("build info", q('count(linalgd_build_info)'), 1)
    return checks.summary()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--fixture")
    group.add_argument("--server")
    parser.add_argument("--keep", action="store_true", help="keep the work dir")
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="linalgd-prom-")
    try:
        if args.fixture:
            return run_fixture(args.fixture, workdir)
        return run_server(args.server, workdir)
    except Exception as e:  # report, then fail
        print(f"FAIL: {type(e).__name__}: {e}")
        for name in ("prometheus.log", "linalgd.log"):
            path = os.path.join(workdir, name)
            if os.path.exists(path):
                print(f"--- {name} (tail)")
                print("".join(open(path).readlines()[-20:]))
        return 1
    finally:
        if args.keep:
            print(f"work dir kept: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
