"""linalgd-cli against numpy: start the real server binary on a free port,
run `linalgd-cli matmul` and `solve` on .npy files, compare with numpy.

Run: LINALGD_BIN=build/bin /usr/bin/python3 -m pytest -q tests/integration/cli_numpy_test.py
"""
import os
import re
import subprocess
import tempfile
import time

import numpy as np
import pytest

BIN = os.environ.get("LINALGD_BIN", "build/bin")


@pytest.fixture(scope="module")
def server():
    proc = subprocess.Popen(
        [os.path.join(BIN, "linalgd"), "--listen", "127.0.0.1:0", "--metrics-listen", "",
         "--cpu-workers", "2", "--blas-threads", "2"],
        stderr=subprocess.STDOUT, stdout=subprocess.PIPE, text=True)
    port = None
    deadline = time.time() + 30
    while port is None and time.time() < deadline:
        line = proc.stdout.readline()
        m = re.search(r"listening on port (\d+)", line)
        if m:
            port = int(m.group(1))
    assert port, "server did not start"
    yield f"127.0.0.1:{port}"
    proc.terminate()
    assert proc.wait(timeout=30) == 0


def cli(target, *args):
    return subprocess.run([os.path.join(BIN, "linalgd-cli"), "--target", target, *args],
                          capture_output=True, text=True, timeout=60)


def rel(x, ref):
    return np.linalg.norm(x - ref) / np.linalg.norm(ref)


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.float32, 1e-5)])
def test_matmul_matches_numpy(server, dtype, tol):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 40, 30)).astype(dtype)
    b = rng.standard_normal((30, 20)).astype(dtype)
    bias = rng.standard_normal(20).astype(dtype)
    with tempfile.TemporaryDirectory() as d:
        np.save(f"{d}/a.npy", a)
        np.save(f"{d}/b.npy", b)
        np.save(f"{d}/bias.npy", bias)
        r = cli(server, "matmul", f"{d}/a.npy", f"{d}/b.npy", "-o", f"{d}/c.npy", "--alpha", "0.5",
                "--epilogue", "relu_bias", "--bias", f"{d}/bias.npy")
        assert r.returncode == 0, r.stderr + r.stdout
        c = np.load(f"{d}/c.npy")
    ref = np.maximum(0.5 * (a.astype(np.float64) @ b.astype(np.float64)) + bias, 0)
    assert c.dtype == dtype and c.shape == (3, 40, 20)
    assert rel(c, ref) < tol


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.float32, 1e-5)])
@pytest.mark.parametrize("method", ["auto", "lu", "qr", "lstsq"])
def test_solve_matches_numpy(server, dtype, tol, method):
    rng = np.random.default_rng(2)
    a = (rng.standard_normal((50, 50)) + 50 * np.eye(50)).astype(dtype)
    b = rng.standard_normal((50, 3)).astype(dtype)
    with tempfile.TemporaryDirectory() as d:
        np.save(f"{d}/a.npy", a)
        np.save(f"{d}/b.npy", b)
        r = cli(server, "solve", f"{d}/a.npy", f"{d}/b.npy", "-o", f"{d}/x.npy", "--method", method)
        assert r.returncode == 0, r.stderr + r.stdout
        x = np.load(f"{d}/x.npy")
    ref = np.linalg.solve(a.astype(np.float64), b.astype(np.float64))
    assert x.dtype == dtype
    assert rel(x, ref) < tol


def test_cholesky_on_spd(server):
    rng = np.random.default_rng(3)
    m = rng.standard_normal((30, 30))
    a = m @ m.T + 30 * np.eye(30)
    b = rng.standard_normal((30, 2))
    with tempfile.TemporaryDirectory() as d:
        np.save(f"{d}/a.npy", a)
        np.save(f"{d}/b.npy", b)
        r = cli(server, "solve", f"{d}/a.npy", f"{d}/b.npy", "-o", f"{d}/x.npy")
        assert r.returncode == 0, r.stderr
        assert "cholesky" in (r.stdout + r.stderr)
        x = np.load(f"{d}/x.npy")
    assert rel(x, np.linalg.solve(a, b)) < 1e-12


def test_errors_print_code_and_exit_nonzero(server):
    with tempfile.TemporaryDirectory() as d:
        np.save(f"{d}/a.npy", np.ones((4, 3)))
        np.save(f"{d}/b.npy", np.ones((4, 3)))
        r = cli(server, "matmul", f"{d}/a.npy", f"{d}/b.npy", "-o", f"{d}/c.npy")
    assert r.returncode != 0
    assert "INVALID_ARGUMENT" in r.stderr and "b.shape" in r.stderr


def test_health_and_info(server):
    r = cli(server, "health")
    assert r.returncode == 0 and "SERVING" in r.stdout
    r = cli(server, "info")
    assert r.returncode == 0 and "cpu" in r.stdout


def test_reflection_lists_services(server):
    import grpc
    with grpc.insecure_channel(server) as channel:
        call = channel.stream_stream(
            "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
            request_serializer=lambda x: x, response_deserializer=lambda x: x)
        # ServerReflectionRequest{list_services: ""}: field 7, length-delimited, empty.
        responses = list(call(iter([b"\x3a\x00"]), timeout=10))
    assert len(responses) == 1
    assert b"linalgd.v1.Linalg" in responses[0]
    assert b"grpc.health.v1.Health" in responses[0]
