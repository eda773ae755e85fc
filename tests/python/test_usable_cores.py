"""A server limited to fewer CPUs than the host has (taskset here; a cgroup
CPU quota in a Kubernetes pod alike) sizes its CPU workers and OpenBLAS
threads to the CPUs it may use, not to every CPU of the host; the OpenBLAS
count the CPU backend's governor sets is exported."""
import re
import shutil
import subprocess
import threading

import numpy as np
import pytest

import linalgd
from conftest import free_port, metric_value, server_binary


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


def metric(port, name):
    value = metric_value(port, name)
    assert value is not None, f"{name} is not exported"
    return value


@pytest.mark.parametrize("busy", [None, "1"])
def test_the_governors_count_and_changes_are_exported(busy):
    """linalgd_cpu_blas_threads is the OpenBLAS count in force, and
    linalgd_cpu_blas_thread_changes_total counts the governor's changes: none
    without --busy-blas-threads, some when concurrent CPU products overlap
    with it (unbatched, so each is an op of its own)."""
    extra = [] if busy is None else ["--busy-blas-threads", busy]
    mport = free_port()
    text, port, proc = start_and_read_log(
        [server_binary(), "--listen", "127.0.0.1:0", "--metrics-listen", f"127.0.0.1:{mport}",
         "--blas-threads", "3", "--cpu-workers", "4", "--cpu-threshold", "100000",
         "--max-batch", "1"] + extra)
    # The log after its listening line, read so a full pipe never stalls the server.
    threading.Thread(target=proc.stdout.read, daemon=True).start()
    try:
        assert port, text
        assert metric(mport, "linalgd_cpu_blas_threads") == 3
        a = np.random.default_rng(0).standard_normal((128, 128)).astype(np.float32)

        def calls():
            with linalgd.Client(f"127.0.0.1:{port}", timeout=30) as c:
                for _ in range(30):
                    c.matmul(a, a)

        threads = [threading.Thread(target=calls) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        changes = metric(mport, "linalgd_cpu_blas_thread_changes_total")
        if busy is None:
            assert changes == 0
            assert metric(mport, "linalgd_cpu_blas_threads") == 3
        else:
            assert changes >= 1
            assert metric(mport, "linalgd_cpu_blas_threads") in (1, 3)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
