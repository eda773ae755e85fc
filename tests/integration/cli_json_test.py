"""linalgd-cli --json against the real server: every command prints one JSON
object on stdout (errors too, with the status code name, message and exit
code), and the exit codes are those of the human output.

Run: LINALGD_BIN=build/bin /usr/bin/python3 -m pytest -q tests/integration/cli_json_test.py
"""
import json
import os

import numpy as np
import pytest

from cli_numpy_test import BIN, cli, start_linalgd, stop_linalgd


@pytest.fixture(scope="module")
def server():
    proc, target = start_linalgd()
    yield target
    stop_linalgd(proc)


def cli_json(target, *args, rc=0):
    r = cli(target, "--json", *args)
    assert r.returncode == rc, r.stderr + r.stdout
    lines = r.stdout.splitlines()
    assert len(lines) == 1, r.stdout
    return json.loads(lines[0])


def save(d, name, array):
    np.save(f"{d}/{name}.npy", array)
    return f"{d}/{name}.npy"


def test_info_and_health(server):
    info = cli_json(server, "info")
    assert info["version"].startswith("0.") and "cpu" in info["backends"]
    assert info["limits"]["cpu_threshold"] > 0 and isinstance(info["devices"], list)
    assert cli_json(server, "health") == {"status": "SERVING"}


def test_matmul_to_file_and_kept(server, tmp_path):
    a = save(tmp_path, "a", np.ones((30, 20)))
    b = save(tmp_path, "b", np.ones((20, 10), dtype=np.float64))
    out = cli_json(server, "matmul", a, b, "-o", f"{tmp_path}/c.npy")
    assert out["out_file"] == f"{tmp_path}/c.npy"
    assert out["out"] == {"dtype": "f64", "shape": [30, 10]}
    assert out["info"]["backend"] == "cpu" and out["info"]["fallback_reason"] == ""
    assert out["total_time_ns"] > 0 and out["info"]["batch_size"] >= 1
    kept = cli_json(server, "matmul", a, b, "--keep-result")
    assert len(kept["out_resident_id"]) == 32
    got = cli_json(server, "get", kept["out_resident_id"], "-o", f"{tmp_path}/k.npy")
    assert got["tensor"] == {"dtype": "f64", "shape": [30, 10]}
    assert cli_json(server, "rm", kept["out_resident_id"]) == {"deleted": [kept["out_resident_id"]]}


def test_solve_reports_rcond_and_method(server, tmp_path):
    rng = np.random.default_rng(3)
    a = save(tmp_path, "a", rng.standard_normal((40, 40)) + 40 * np.eye(40))
    b = save(tmp_path, "b", rng.standard_normal((40, 2)))
    out = cli_json(server, "solve", a, b, "-o", f"{tmp_path}/x.npy", "--method", "lu")
    assert out["method_used"] == "lu" and out["fallback"] == ""
    assert 0 < out["rcond"] <= 1 and out["residual"] < 1e-12
    assert out["x"] == {"dtype": "f64", "shape": [40, 2]}
    qr = cli_json(server, "solve", a, b, "-o", f"{tmp_path}/x.npy", "--method", "qr")
    assert qr["rcond"] is None


def test_store_put_ls_factorize_release(server, tmp_path):
    a = save(tmp_path, "s", np.eye(16) * 4.0)
    put = cli_json(server, "put", a, "--ttl", "10m")
    assert put["dtype"] == "f64" and put["shape"] == [16, 16] and put["bytes"] == 16 * 16 * 8
    listing = cli_json(server, "ls")
    assert put["id"] in [o["id"] for o in listing["objects"]]
    f = cli_json(server, "factorize", "@" + put["id"], "--method", "cholesky")
    assert f["method"] == "cholesky" and f["n"] == 16 and f["rcond"] == pytest.approx(1.0)
    assert cli_json(server, "release-factor", f["factor_id"]) == {"released": f["factor_id"]}
    cli_json(server, "rm", put["id"])


def test_sparse_solve(server, tmp_path):
    with open(f"{tmp_path}/a.mtx", "w") as m:
        m.write("%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 2\n2 2 4\n3 3 8\n")
    b = save(tmp_path, "b", np.ones(3))
    out = cli_json(server, "sparse-solve", f"{tmp_path}/a.mtx", b, "-o", f"{tmp_path}/x.npy")
    assert out["x"] == {"dtype": "f64", "shape": [3]} and out["residual"] < 1e-12
    assert "method_used" in out and "iterations" in out



def test_sparse_solve_max_rows_bounds_the_size_line(server, tmp_path):
    # A size line declaring more rows than --max-rows is refused before the
    # reader allocates anything; raising the bound reads the same file.
    with open(f"{tmp_path}/a.mtx", "w") as m:
        m.write("%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 2\n2 2 4\n3 3 8\n")
    b = save(tmp_path, "b", np.ones(3))
    args = ("sparse-solve", f"{tmp_path}/a.mtx", b, "-o", f"{tmp_path}/x.npy")
    err = cli_json(server, *args, "--max-rows", "2", rc=3)["error"]
    assert "3 rows exceed max_rows 2" in err["message"], err
    assert cli_json(server, *args, "--max-rows", "3")["residual"] < 1e-12
    for bad in ("0", "2147483647"):
        err = cli_json(server, *args, "--max-rows", bad, rc=2)["error"]
        assert "--max-rows" in err["message"] and bad in err["message"], err
    assert cli_json(server, *args, "--max-rows", "2147483646")["residual"] < 1e-12

def test_server_error_is_json_with_exit_code_1(server, tmp_path):
    a = save(tmp_path, "a", np.ones((3, 4)))
    b = save(tmp_path, "b", np.ones((5, 2)))
    err = cli_json(server, "matmul", a, b, "-o", f"{tmp_path}/c.npy", rc=1)["error"]
    assert err["code"] == "INVALID_ARGUMENT" and err["exit_code"] == 1 and err["message"]


def test_local_errors_are_json_with_their_exit_codes(server, tmp_path):
    err = cli_json(server, "get", "0" * 32, "-o", f"{tmp_path}/x.npy", rc=1)["error"]
    assert err["code"] == "NOT_FOUND"
    err = cli_json(server, "put", f"{tmp_path}/missing.npy", rc=3)["error"]
    assert err["exit_code"] == 3
    err = cli_json(server, "put", f"{tmp_path}/missing.npy", "--ttl", "-1", rc=2)["error"]
    assert err["code"] == "INVALID_ARGUMENT" and "--ttl" in err["message"]


def test_an_output_that_cannot_be_written_is_refused_before_the_call(server, tmp_path):
    # A directory, or a file in a missing directory: a local error (exit 3)
    # before the call, not the unknown id's NOT_FOUND after it.
    unknown = "0" * 32
    err = cli_json(server, "get", unknown, "-o", str(tmp_path), rc=3)["error"]
    assert err["code"] == "INVALID_ARGUMENT" and "is a directory" in err["message"], err
    err = cli_json(server, "get", unknown, "-o", f"{tmp_path}/no/such/x.npy", rc=3)["error"]
    assert err["code"] == "NOT_FOUND" and "cannot write in" in err["message"], err
    a = save(tmp_path, "a", np.eye(3))
    err = cli_json(server, "matmul", a, a, "-o", str(tmp_path), rc=3)["error"]
    assert "is a directory" in err["message"], err
    err = cli_json(server, "solve", a, a, "-o", str(tmp_path), rc=3)["error"]
    assert "is a directory" in err["message"], err
    # Written over an existing file whole: the old one replaced, nothing left beside it.
    out = save(tmp_path, "out", np.zeros(7))
    cli_json(server, "matmul", a, a, "-o", out)
    np.testing.assert_array_equal(np.load(out), np.eye(3))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npy", "out.npy"]


def test_unreachable_server_is_json_with_exit_code_5(tmp_path):
    err = cli_json("127.0.0.1:1", "--timeout", "2s", "health", rc=5)["error"]
    assert err["code"] in ("UNAVAILABLE", "DEADLINE_EXCEEDED")
