"""A server limited to fewer CPUs than the host has (taskset here; a cgroup
CPU quota in a Kubernetes pod alike) sizes its CPU workers and OpenBLAS
threads to the CPUs it may use, not to every CPU of the host."""
import re
import shutil
import subprocess

import pytest

import linalgd
from conftest import server_binary


@pytest.mark.skipif(shutil.which("taskset") is None, reason="taskset (util-linux) is missing")
def test_a_server_pinned_to_one_cpu_sizes_its_threads_to_it():
    proc = subprocess.Popen(["taskset", "-c", "0", server_binary(), "--listen", "127.0.0.1:0",
                             "--metrics-listen", ""],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        lines, port = [], None
        for line in proc.stdout:
            lines.append(line)
            m = re.search(r"listening on port (\d+)", line)
            if m:
                port = int(m.group(1))
                break
        assert port, "".join(lines)
        text = "".join(lines)
        assert "cpu: usable cores 1 (affinity 1, " in text, text
        assert "1 CPU workers, 1 OpenBLAS threads" in text, text
        with linalgd.Client(f"127.0.0.1:{port}", timeout=10) as c:
            assert c.server_info().limits.cpu_threads == 1
    finally:
        proc.terminate()
        proc.wait(timeout=30)
