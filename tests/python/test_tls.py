"""TLS and the listening rules against the real server binary: certificates
made at test time with openssl (tests/tls/make_test_certs.sh); TLS and mTLS
through linalgd.Client(tls_ca=, tls_cert=, tls_key=); plaintext refused off
loopback unless --insecure (and then a metric says so); reflection only with
--reflection; /metrics behind basic auth."""
import base64
import hashlib
import json
import os
import subprocess
import urllib.error
import urllib.request

import grpc
import numpy as np
import pytest

import linalgd
from conftest import REPO, free_port, server_binary

MAKE_CERTS = os.path.join(REPO, "tests", "tls", "make_test_certs.sh")


def make_certs(directory):
    subprocess.run([MAKE_CERTS, str(directory)], check=True, capture_output=True)
    return {name: str(directory / name) for name in
            ("ca.pem", "server.pem", "server.key", "client.pem", "client.key")}


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("tls-a"))


@pytest.fixture(scope="module")
def other_certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("tls-b"))


def tls_flags(c, client_ca=False):
    flags = ["--tls-cert", c["server.pem"], "--tls-key", c["server.key"]]
    return flags + (["--tls-client-ca", c["ca.pem"]] if client_ca else [])


def client_tls(c, cert=True):
    kwargs = {"tls_ca": c["ca.pem"]}
    if cert:
        kwargs.update(tls_cert=c["client.pem"], tls_key=c["client.key"])
    return kwargs


def matmul_ok(target, **kwargs):
    a = np.arange(6.0).reshape(2, 3)
    with linalgd.Client(target, timeout=5.0, retries=0, **kwargs) as c:
        np.testing.assert_allclose(c.matmul(a, a.T), a @ a.T)


def test_tls_client_with_the_ca_succeeds_and_plaintext_fails(start_server, certs, other_certs):
    s = start_server(*tls_flags(certs), tls_ca=certs["ca.pem"])
    matmul_ok(s.target, tls_ca=certs["ca.pem"])
    with pytest.raises(linalgd.Unavailable):
        matmul_ok(s.target)
    with pytest.raises(linalgd.Unavailable):
        matmul_ok(s.target, tls_ca=other_certs["ca.pem"])


def test_mtls_requires_a_client_certificate(start_server, certs, other_certs):
    s = start_server(*tls_flags(certs, client_ca=True), **client_tls(certs))
    matmul_ok(s.target, **client_tls(certs))
    with pytest.raises(linalgd.Unavailable):
        matmul_ok(s.target, tls_ca=certs["ca.pem"])
    with pytest.raises(linalgd.Unavailable):
        matmul_ok(s.target, tls_ca=certs["ca.pem"], tls_cert=other_certs["client.pem"],
                  tls_key=other_certs["client.key"])


def test_tls_arguments_are_checked(certs):
    with pytest.raises(ValueError, match="tls_cert and tls_key"):
        linalgd.Client("localhost:1", tls_ca=certs["ca.pem"], tls_cert=certs["client.pem"])
    with pytest.raises(ValueError, match="tls_ca: cannot read"):
        linalgd.Client("localhost:1", tls_ca="/nonexistent/ca.pem")
    with pytest.raises(ValueError, match="exclude credentials"):
        linalgd.Client("localhost:1", tls_ca=certs["ca.pem"],
                       credentials=grpc.ssl_channel_credentials())


def test_non_loopback_plaintext_listen_is_refused():
    out = subprocess.run([server_binary(), "--listen", f"0.0.0.0:{free_port()}",
                          "--metrics-listen", ""], capture_output=True, text=True, timeout=30)
    assert out.returncode != 0
    message = out.stdout + out.stderr
    assert "--tls-cert" in message and "--insecure" in message, message


def scrape(s, auth=None):
    request = urllib.request.Request(f"http://localhost:{s.metrics_port}/metrics")
    if auth:
        request.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    with urllib.request.urlopen(request, timeout=5) as r:
        return r.status, r.read().decode()


def test_insecure_listen_starts_warns_and_is_exported(start_server):
    s = start_server("--insecure", listen_host="0.0.0.0", metrics=True)
    matmul_ok(s.target)
    assert "linalgd_insecure_listen 1" in scrape(s)[1]
    assert "--insecure" in s.output()


def test_loopback_plaintext_is_not_flagged_insecure(start_server):
    s = start_server(metrics=True)
    assert "linalgd_insecure_listen 0" in scrape(s)[1]


def list_services(target):
    with grpc.insecure_channel(target) as channel:
        call = channel.stream_stream(
            "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
            request_serializer=lambda x: x, response_deserializer=lambda x: x)
        # ServerReflectionRequest{list_services: ""}: field 7, length-delimited, empty.
        return list(call(iter([b"\x3a\x00"]), timeout=10))


def test_reflection_only_with_the_flag(start_server):
    with pytest.raises(grpc.RpcError) as off:
        list_services(start_server().target)
    assert off.value.code() == grpc.StatusCode.UNIMPLEMENTED
    responses = list_services(start_server("--reflection").target)
    assert b"linalgd.v1.Linalg" in responses[0]


def test_metrics_basic_auth(start_server, tmp_path):
    auth = tmp_path / "metrics-auth"
    auth.write_text("prom:s3cret\n")
    s = start_server("--metrics-basic-auth-file", str(auth), metrics=True)
    for credentials in (None, "prom:wrong", "other:s3cret"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            scrape(s, credentials)
        assert refused.value.code == 401
    status, body = scrape(s, "prom:s3cret")
    assert status == 200 and "linalgd_build_info" in body


def test_metrics_basic_auth_file_is_checked(tmp_path):
    auth = tmp_path / "metrics-auth"
    auth.write_text("no colon here\n")
    out = subprocess.run([server_binary(), "--listen", "127.0.0.1:0", "--metrics-listen",
                          "127.0.0.1:0", "--metrics-basic-auth-file", str(auth)],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode != 0
    assert "user:password" in out.stdout + out.stderr



DOCKERFILE = os.path.join(REPO, "Dockerfile")


def dockerfile_healthcheck():
    """The runtime image's HEALTHCHECK command (exec form) and its ENV settings, as written."""
    lines = open(DOCKERFILE).read().replace("\\\n", " ").splitlines()
    runtime = lines[max(i for i, line in enumerate(lines) if line.startswith("FROM ")):]
    env = {}
    for line in runtime:
        if line.startswith("ENV "):
            env.update(item.split("=", 1) for item in line.split()[1:])
    command = [line for line in runtime if line.startswith("HEALTHCHECK ")]
    assert len(command) == 1, command
    return json.loads(command[0].split(" CMD ", 1)[1]), env


def run_healthcheck(server, **tls_env):
    """Runs the image's health check line against server: the image's linalgd-cli path becomes
    this build's, the image's LINALGD_TARGET keeps its host with the test server's port, and
    tls_env (LINALGD_TLS_CA=..., as a deployment would set) is added."""
    command, image_env = dockerfile_healthcheck()
    assert command[0] == "/usr/local/bin/linalgd-cli"
    command[0] = os.path.join(os.path.dirname(server_binary()), "linalgd-cli")
    host = image_env["LINALGD_TARGET"].rsplit(":", 1)[0]
    assert host == "127.0.0.1", image_env
    # Only the image's environment, plus what finds this build's shared libraries
    # (a relocated bundle sets LD_LIBRARY_PATH).
    passed = {k: os.environ[k] for k in ("PATH", "LD_LIBRARY_PATH") if k in os.environ}
    env = {"PATH": "/usr/bin:/bin", **passed, **image_env, **tls_env,
           "LINALGD_TARGET": f"{host}:{server.port}"}
    out = subprocess.run(command, env=env, capture_output=True, text=True, timeout=30)
    return out.returncode, out.stdout + out.stderr


def write_tokens(tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text("alice " + hashlib.sha256(b"alice-token").hexdigest() + "\n")
    return str(tokens)


def test_image_healthcheck_plaintext(start_server):
    rc, out = run_healthcheck(start_server())
    assert rc == 0 and "SERVING" in out, out


def test_image_healthcheck_follows_tls_through_the_environment(start_server, certs, tmp_path):
    s = start_server(*tls_flags(certs), "--auth-tokens", write_tokens(tmp_path),
                     tls_ca=certs["ca.pem"], token="alice-token")
    rc, out = run_healthcheck(s)  # plaintext against a TLS server: unreachable
    assert rc == 5, out
    rc, out = run_healthcheck(s, LINALGD_TLS_CA=certs["ca.pem"])  # health needs no token
    assert rc == 0 and "SERVING" in out, out


def test_image_healthcheck_with_mtls(start_server, certs):
    s = start_server(*tls_flags(certs, client_ca=True), **client_tls(certs))
    rc, out = run_healthcheck(s, LINALGD_TLS_CA=certs["ca.pem"])
    assert rc == 5, out
    rc, out = run_healthcheck(s, LINALGD_TLS_CA=certs["ca.pem"],
                              LINALGD_TLS_CERT=certs["client.pem"],
                              LINALGD_TLS_KEY=certs["client.key"])
    assert rc == 0 and "SERVING" in out, out
