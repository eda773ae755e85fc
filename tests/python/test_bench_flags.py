"""linalgd-bench's flags: --gpu-wait (a value that is not one of the server's is refused naming
the flag; a batching run records the one its in-process servers were started with) and the data
workload's --data-dtype; bench/python_transfer.py compares both clients in the dtype asked; a
batching run reports the CPU a call cost its process in each phase (the echo's only when its
server is there too); --batch-shm-in-place runs callers whose tensors stay in shared memory."""
import json
import os
import subprocess
import sys

import pytest


def bench_binary():
    exe = os.path.join(os.path.dirname(os.environ["LINALGD_SERVER"]), "linalgd-bench")
    if not os.path.exists(exe):
        pytest.skip(f"{exe} was not built")
    return exe


@pytest.mark.parametrize("value", ["1", "sometimes", "Block"])
def test_a_gpu_wait_that_is_not_a_servers_is_refused(value):
    out = subprocess.run([bench_binary(), "--gpu-wait", value, "--workloads", "latency"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert "--gpu-wait" in out.stdout + out.stderr


def test_a_batching_run_records_its_gpu_wait(tmp_path):
    out = tmp_path / "batch.json"
    subprocess.run([bench_binary(), "--gpu-wait", "yield", "--workloads", "batching",
                    "--batch-n", "16", "--batch-callers", "4", "--batch-seconds", "0.2",
                    "--batch-latency-iterations", "10", "--json", str(out)],
                   check=True, capture_output=True, timeout=120)
    config = json.loads(out.read_text())["config"]
    assert config["batching.gpu_wait"] == "yield"


def batching_measurements(tmp_path, *extra):
    out = tmp_path / "batch.json"
    subprocess.run([bench_binary(), "--workloads", "batching", "--batch-n", "16",
                    "--batch-callers", "4", "--batch-seconds", "0.3",
                    "--batch-latency-iterations", "10", *extra, "--json", str(out)],
                   check=True, capture_output=True, timeout=120)
    return {m["name"]: m["value"] for m in json.loads(out.read_text())["measurements"]}


def test_a_batching_run_reports_the_cpu_each_call_cost_this_process(tmp_path):
    m = batching_measurements(tmp_path)
    for phase in ("batched", "unbatched", "echo"):
        # Four callers and a server in one process: some tens of microseconds a call at
        # least, and some CPU busy over the phase (at most every core of the machine).
        assert 1 < m[f"{phase}.cpu_us_per_call"] < 1e6, phase
        assert 0 < m[f"{phase}.cores_busy"] <= os.cpu_count() + 0.5, phase


def test_an_echo_in_another_process_gets_no_cpu_figure(tmp_path):
    # The echo's server is elsewhere: this process's CPU would be its callers' alone.
    echo = subprocess.Popen([bench_binary(), "--serve-echo", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = echo.stdout.readline()
        port = line.split()[-1]  # "echo serving on port N"
        m = batching_measurements(tmp_path, "--echo-target", f"127.0.0.1:{port}")
    finally:
        echo.kill()
        echo.wait()
    assert "echo.cpu_us_per_call" not in m
    assert m["batched.cpu_us_per_call"] > 0


@pytest.mark.parametrize("dtype,size", [("f32", 4), ("f64", 8)])
def test_the_data_round_trip_takes_its_dtype(tmp_path, dtype, size):
    out = tmp_path / "data.json"
    subprocess.run([bench_binary(), "--workloads", "data", "--data-n", "64", "--data-dtype", dtype,
                    "--data-iterations", "1", "--factor-n", "16", "--factor-solves", "1",
                    "--json", str(out)], check=True, capture_output=True, timeout=120)
    report = json.loads(out.read_text())
    assert report["config"]["data.dtype"] == dtype
    found = {m["name"]: m["value"] for m in report["measurements"] if m["workload"] == "data"}
    assert found["bytes_per_round_trip"] == 3 * 64 * 64 * size  # a, b and the result
    assert found["streaming.rate"] > 0 and found["shm_in_place.rate"] > 0


def test_a_data_dtype_other_than_f32_or_f64_is_refused():
    out = subprocess.run([bench_binary(), "--workloads", "data", "--data-dtype", "f16"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert "--data-dtype" in out.stdout + out.stderr


@pytest.mark.parametrize("dtype,name", [("float32", "f32"), ("float64", "f64")])
def test_python_transfer_compares_both_clients_in_the_dtype_asked(dtype, name):
    script = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "python_transfer.py")
    out = subprocess.run([sys.executable, script, "--server", os.environ["LINALGD_SERVER"],
                          "--cpp-bench", bench_binary(), "--matmul-n", "256", "--matmul-dtype",
                          dtype, "--solve-n", "64", "--transfer-mib", "2", "--repeat", "1",
                          "--connections", "2", "--stream-threshold-mib", "0.1",
                          "--part-min-mib", "0.1"], capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    assert f"256x256 {name} matmul round trip" in out.stdout
    ratio = [line for line in out.stdout.splitlines() if line.startswith("| Python / C++ |")]
    assert len(ratio) == 1 and float(ratio[0].split("|")[2]) > 0, out.stdout
    assert f"| matmul {dtype} | n=256 |" in out.stdout


def test_a_bench_scripts_server_reads_its_port_from_its_log_and_a_failed_start_says_why():
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
    import local_server
    import linalgd
    server = local_server.start(os.environ["LINALGD_SERVER"])
    try:
        assert server.target != "127.0.0.1:None"
        with linalgd.Client(server.target) as c:
            assert c.health() == "SERVING"
    finally:
        server.stop()
    assert not os.path.exists(server.log)
    with pytest.raises(RuntimeError) as e:
        local_server.start(os.environ["LINALGD_SERVER"], "--cpu-threshold", "fast", timeout=20)
    assert "--cpu-threshold" in str(e.value)


def test_batching_in_place_callers_run_and_say_so(tmp_path):
    # Shared tensors filled once: every call succeeds (the bench stops at the first error) and
    # the run's configuration says the tensors stayed in place.
    out = tmp_path / "batch.json"
    subprocess.run([bench_binary(), "--workloads", "batching", "--batch-shm",
                    "--batch-shm-in-place", "--batch-connections", "2", "--batch-n", "16",
                    "--batch-callers", "4", "--batch-seconds", "0.3",
                    "--batch-latency-iterations", "10", "--json", str(out)],
                   check=True, capture_output=True, timeout=120)
    doc = json.loads(out.read_text())
    assert doc["config"]["batching.connections"] == "2 (shm, in place)"
    m = {x["name"]: x["value"] for x in doc["measurements"]}
    assert m["batched.calls_per_second"] > 0 and m["unbatched.calls_per_second"] > 0
