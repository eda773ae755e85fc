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


def start_linalgd(*flags):
    """The server binary on a free loopback port: (process, "127.0.0.1:PORT")."""
    proc = subprocess.Popen(
        [os.path.join(BIN, "linalgd"), "--listen", "127.0.0.1:0", "--metrics-listen", "",
         "--cpu-workers", "2", "--blas-threads", "2", *flags],
        stderr=subprocess.STDOUT, stdout=subprocess.PIPE, text=True)
    port = None
    deadline = time.time() + 30
    while port is None and time.time() < deadline:
        line = proc.stdout.readline()
        m = re.search(r"listening on port (\d+)", line)
        if m:
            port = int(m.group(1))
    assert port, "server did not start"
    return proc, f"127.0.0.1:{port}"


def stop_linalgd(proc):
    proc.terminate()
    assert proc.wait(timeout=30) == 0


@pytest.fixture(scope="module")
def server():
    proc, target = start_linalgd("--reflection")
    yield target
    stop_linalgd(proc)


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


# --- the store: put, get, rm, ls, factorize, solve --factor, @ID, --keep-result ---

def put(server, path, *flags):
    r = cli(server, "put", path, *flags)
    assert r.returncode == 0, r.stderr + r.stdout
    tensor_id = r.stdout.split()[0]
    assert re.fullmatch(r"[0-9a-f]{32}", tensor_id), r.stdout
    return tensor_id


def test_put_get_round_trip_and_ls(server):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((37, 53)).astype(np.float32)
    with tempfile.TemporaryDirectory() as d:
        np.save(f"{d}/x.npy", x)
        tensor_id = put(server, f"{d}/x.npy", "--ttl", "1h", "--placement", "host")
        r = cli(server, "get", tensor_id, "-o", f"{d}/y.npy")
        assert r.returncode == 0, r.stderr
        y = np.load(f"{d}/y.npy")
    assert y.dtype == np.float32 and np.array_equal(x, y)
    r = cli(server, "ls")
    assert r.returncode == 0, r.stderr
    line = next(l for l in r.stdout.splitlines() if l.startswith(tensor_id))
    assert "tensor" in line and "[37,53]" in line and str(x.nbytes) in line
    assert "bytes used" in r.stdout


def test_rm_then_get_is_not_found(server):
    with tempfile.TemporaryDirectory() as d:
        np.save(f"{d}/x.npy", np.arange(12.0).reshape(3, 4))
        tensor_id = put(server, f"{d}/x.npy")
        r = cli(server, "rm", tensor_id)
        assert r.returncode == 0 and "deleted" in r.stdout, r.stderr
        r = cli(server, "get", tensor_id, "-o", f"{d}/y.npy")
    assert r.returncode == 1
    assert "NOT_FOUND" in r.stderr
    assert tensor_id not in cli(server, "ls").stdout
    r = cli(server, "rm", tensor_id)
    assert r.returncode == 1 and "NOT_FOUND" in r.stderr


def test_put_bad_ttl_is_usage_error(server):
    with tempfile.TemporaryDirectory() as d:
        np.save(f"{d}/x.npy", np.ones((2, 2)))
        r = cli(server, "put", f"{d}/x.npy", "--ttl", "soon")
    assert r.returncode == 2 and "--ttl" in r.stderr


def test_put_no_evict_is_refused_where_a_plain_put_evicts():
    proc, target = start_linalgd("--store-bytes", str(3 << 20))
    try:
        with tempfile.TemporaryDirectory() as d:
            np.save(f"{d}/x.npy", np.ones((256, 1024)))  # 2 MiB of the store's 3
            first = put(target, f"{d}/x.npy")
            r = cli(target, "put", f"{d}/x.npy", "--no-evict")
            assert r.returncode == 1 and "RESOURCE_EXHAUSTED" in r.stderr, r.stderr
            assert "2097152" in r.stderr and "--store-bytes=3145728" in r.stderr, r.stderr
            assert first in cli(target, "ls").stdout
            second = put(target, f"{d}/x.npy")  # without the flag: evicts the first
            listing = cli(target, "ls").stdout
            assert second in listing and first not in listing
    finally:
        stop_linalgd(proc)


@pytest.mark.parametrize("method", ["auto", "lu", "cholesky"])
def test_factorize_then_solve_with_factor(server, method):
    rng = np.random.default_rng(5)
    m = rng.standard_normal((60, 60))
    a = m @ m.T + 60 * np.eye(60)
    with tempfile.TemporaryDirectory() as d:
        np.save(f"{d}/a.npy", a)
        r = cli(server, "factorize", f"{d}/a.npy", "--method", method)
        assert r.returncode == 0, r.stderr + r.stdout
        factor_id = r.stdout.split()[0]
        assert "n=60" in r.stdout
        assert ("method=lu" if method == "lu" else "method=cholesky") in r.stdout
        assert factor_id in cli(server, "ls").stdout
        for k in (1, 3):
            b = rng.standard_normal((60, k))
            np.save(f"{d}/b.npy", b)
            r = cli(server, "solve", "--factor", factor_id, f"{d}/b.npy", "-o", f"{d}/x.npy")
            assert r.returncode == 0, r.stderr + r.stdout
            x = np.load(f"{d}/x.npy")
            assert rel(x, np.linalg.solve(a, b)) < 1e-12
        r = cli(server, "release-factor", factor_id)
        assert r.returncode == 0, r.stderr
        r = cli(server, "solve", "--factor", factor_id, f"{d}/b.npy", "-o", f"{d}/x.npy")
    assert r.returncode == 1 and "NOT_FOUND" in r.stderr


def test_resident_operands_and_keep_result(server):
    rng = np.random.default_rng(6)
    a = rng.standard_normal((40, 30))
    b = rng.standard_normal((30, 20))
    with tempfile.TemporaryDirectory() as d:
        np.save(f"{d}/a.npy", a)
        np.save(f"{d}/b.npy", b)
        a_id = put(server, f"{d}/a.npy")
        r = cli(server, "matmul", f"@{a_id}", f"{d}/b.npy", "-o", f"{d}/c.npy")
        assert r.returncode == 0, r.stderr + r.stdout
        assert rel(np.load(f"{d}/c.npy"), a @ b) < 1e-12
        r = cli(server, "matmul", f"@{a_id}", f"{d}/b.npy", "--keep-result")
        assert r.returncode == 0, r.stderr + r.stdout
        c_id = r.stdout.split()[0]
        assert re.fullmatch(r"[0-9a-f]{32}", c_id), r.stdout
        r = cli(server, "get", c_id, "-o", f"{d}/c2.npy")
        assert r.returncode == 0, r.stderr
        assert rel(np.load(f"{d}/c2.npy"), a @ b) < 1e-12
        # A square system from resident A and B, X kept then fetched.
        sq = a[:30, :30] + 30 * np.eye(30)
        np.save(f"{d}/sq.npy", sq)
        sq_id = put(server, f"{d}/sq.npy")
        b_id = put(server, f"{d}/b.npy")
        r = cli(server, "solve", f"@{sq_id}", f"@{b_id}", "--keep-result")
        assert r.returncode == 0, r.stderr + r.stdout
        x_id = r.stdout.split()[0]
        r = cli(server, "get", x_id, "-o", f"{d}/x.npy")
        assert r.returncode == 0, r.stderr
        assert rel(np.load(f"{d}/x.npy"), np.linalg.solve(sq, b)) < 1e-12
        assert cli(server, "rm", a_id, c_id, sq_id, b_id, x_id).returncode == 0


def test_unknown_resident_operand_and_bad_flags(server):
    with tempfile.TemporaryDirectory() as d:
        np.save(f"{d}/b.npy", np.ones((3, 3)))
        r = cli(server, "matmul", "@" + "0" * 32, f"{d}/b.npy", "-o", f"{d}/c.npy")
        assert r.returncode == 1 and "NOT_FOUND" in r.stderr
        r = cli(server, "matmul", f"{d}/b.npy", f"{d}/b.npy")  # neither -o nor --keep-result
        assert r.returncode == 2
        r = cli(server, "solve", "--factor", "f" * 32, f"{d}/b.npy", f"{d}/b.npy", "-o", "x.npy")
        assert r.returncode == 2


# numpy arrays with a zero dimension (an empty mini-batch) go through like others.
@pytest.mark.parametrize("a_shape,b_shape", [((0, 4, 3), (3, 5)), ((6, 0), (0, 2)), ((0,), (0, 3))])
def test_matmul_of_empty_arrays(server, a_shape, b_shape):
    a, b = np.ones(a_shape), np.ones(b_shape)
    with tempfile.TemporaryDirectory() as d:
        np.save(f"{d}/a.npy", a)
        np.save(f"{d}/b.npy", b)
        r = cli(server, "matmul", f"{d}/a.npy", f"{d}/b.npy", "-o", f"{d}/c.npy")
        assert r.returncode == 0, r.stderr + r.stdout
        c = np.load(f"{d}/c.npy")
    ref = a @ b
    assert c.shape == ref.shape and np.array_equal(c, ref)


def test_solve_and_store_of_empty_arrays(server):
    with tempfile.TemporaryDirectory() as d:
        np.save(f"{d}/a.npy", np.empty((0, 0)))
        np.save(f"{d}/b.npy", np.empty((0, 3)))
        r = cli(server, "solve", f"{d}/a.npy", f"{d}/b.npy", "-o", f"{d}/x.npy")
        assert r.returncode == 0, r.stderr + r.stdout
        assert np.load(f"{d}/x.npy").shape == (0, 3)
        tensor_id = put(server, f"{d}/b.npy")
        r = cli(server, "get", tensor_id, "-o", f"{d}/y.npy")
        assert r.returncode == 0, r.stderr
        y = np.load(f"{d}/y.npy")
    assert y.shape == (0, 3) and y.dtype == np.float64


# --- TLS: --tls-ca, --tls-cert, --tls-key against a server requiring client certificates ---

def test_tls_flags_against_mutual_tls(tmp_path):
    subprocess.run(["tests/tls/make_test_certs.sh", str(tmp_path)], check=True, capture_output=True)
    pem = {name: str(tmp_path / name) for name in
           ("ca.pem", "server.pem", "server.key", "client.pem", "client.key")}
    proc, target = start_linalgd("--tls-cert", pem["server.pem"], "--tls-key", pem["server.key"],
                                 "--tls-client-ca", pem["ca.pem"])
    try:
        ca = ["--tls-ca", pem["ca.pem"]]
        mine = ca + ["--tls-cert", pem["client.pem"], "--tls-key", pem["client.key"]]
        r = cli(target, *mine, "health")
        assert r.returncode == 0 and "SERVING" in r.stdout, r.stderr
        a = np.arange(6.0).reshape(2, 3)
        np.save(tmp_path / "a.npy", a)
        np.save(tmp_path / "b.npy", np.ascontiguousarray(a.T))
        r = cli(target, *mine, "matmul", str(tmp_path / "a.npy"), str(tmp_path / "b.npy"),
                "-o", str(tmp_path / "c.npy"))
        assert r.returncode == 0, r.stderr + r.stdout
        np.testing.assert_allclose(np.load(tmp_path / "c.npy"), a @ a.T)
        for flags in ([], ca):  # plaintext; TLS without a client certificate
            r = cli(target, *flags, "info")
            assert r.returncode != 0 and "UNAVAILABLE" in r.stderr, r.stderr
    finally:
        stop_linalgd(proc)


# --- complex64 / complex128 .npy files ---

def crandn(rng, *shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


@pytest.mark.parametrize("dtype,tol", [(np.complex128, 1e-12), (np.complex64, 1e-5)])
def test_complex_matmul_and_solve_files(server, dtype, tol):
    rng = np.random.default_rng(8)
    a = crandn(rng, 2, 20, 15).astype(dtype)
    b = crandn(rng, 15, 10).astype(dtype)
    s = (crandn(rng, 20, 20) + 20 * np.eye(20)).astype(dtype)
    rhs = crandn(rng, 20, 3).astype(dtype)
    with tempfile.TemporaryDirectory() as d:
        for name, arr in (("a", a), ("b", b), ("s", s), ("rhs", rhs)):
            np.save(f"{d}/{name}.npy", arr)
        r = cli(server, "matmul", f"{d}/a.npy", f"{d}/b.npy", "-o", f"{d}/c.npy", "--alpha", "0.5",
                "--alpha-imag", "2")
        assert r.returncode == 0, r.stderr + r.stdout
        c = np.load(f"{d}/c.npy")
        r = cli(server, "solve", f"{d}/s.npy", f"{d}/rhs.npy", "-o", f"{d}/x.npy")
        assert r.returncode == 0, r.stderr + r.stdout
        x = np.load(f"{d}/x.npy")
    ref = (0.5 + 2j) * (a.astype(np.complex128) @ b.astype(np.complex128))
    assert c.dtype == dtype and c.shape == (2, 20, 10)
    assert rel(c, ref) < tol
    assert x.dtype == dtype
    assert rel(x, np.linalg.solve(s.astype(np.complex128), rhs.astype(np.complex128))) < 100 * tol


def test_complex_put_get_round_trip(server):
    x = crandn(np.random.default_rng(9), 7, 5).astype(np.complex64)
    with tempfile.TemporaryDirectory() as d:
        np.save(f"{d}/x.npy", x)
        tensor_id = put(server, f"{d}/x.npy")
        r = cli(server, "get", tensor_id, "-o", f"{d}/y.npy")
        assert r.returncode == 0, r.stderr
        y = np.load(f"{d}/y.npy")
    assert y.dtype == np.complex64 and np.array_equal(x, y)
