"""linalgd-bench's --gpu-wait: a value that is not one of the server's is refused naming the
flag, and a batching run records the one its in-process servers were started with."""
import json
import os
import subprocess

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
