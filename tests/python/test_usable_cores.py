"""A server limited to fewer CPUs than the host has (taskset here; a cgroup
CPU quota in a Kubernetes pod alike) sizes its CPU workers and OpenBLAS
threads to the CPUs it may use, not to every CPU of the host."""
import re
import shutil
import subprocess

import pytest

import linalgd
from conftest import server_binary


def start_and_read_log(command):
    """(the server's log up to its listening line, its port, the process)."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines, port = [], None
    for line in proc.stdout:
        lines.append(line)
        m = re.search(r"listening on port (\d+)", line)
        if m:
            port = int(m.group(1))
            break
    return "".join(lines), port, proc


@pytest.mark.skipif(shutil.which("taskset") is None, reason="taskset (util-linux) is missing")
def test_a_server_pinned_to_one_cpu_sizes_its_threads_to_it():
    text, port, proc = start_and_read_log(["taskset", "-c", "0", server_binary(), "--listen",
                                           "127.0.0.1:0", "--metrics-listen", ""])
    try:
        assert port, text
        assert "cpu: usable cores 1 (affinity 1, " in text, text
        assert "1 CPU workers, 1 OpenBLAS threads" in text, text
        with linalgd.Client(f"127.0.0.1:{port}", timeout=10) as c:
            assert c.server_info().limits.cpu_threads == 1
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.parametrize("busy,said", [(None, 3), ("0", 3), ("1", 1), ("2", 2), ("8", 3)])
def test_the_openblas_count_while_several_ops_run_is_logged(busy, said):
    """--busy-blas-threads (default 0: --blas-threads always; capped by
    --blas-threads) is what the start-up line says runs while several CPU ops
    run and none is large."""
    extra = [] if busy is None else ["--busy-blas-threads", busy]
    text, port, proc = start_and_read_log(
        [server_binary(), "--listen", "127.0.0.1:0", "--metrics-listen", "", "--blas-threads", "3",
         "--cpu-workers", "2"] + extra)
    try:
        assert port, text
        assert f"3 OpenBLAS threads ({said} while several CPU ops run and none is large)" \
            in text, text
    finally:
        proc.terminate()
        proc.wait(timeout=30)
