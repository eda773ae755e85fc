"""linalgd.tune_malloc (_malloc.py): process-wide, so each test runs in a process
of its own."""
import os
import subprocess
import sys

import pytest

import linalgd

CLIENT_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "client", "python")

# Minor page faults per round of three 2 MiB bytes objects made and freed on a
# thread (the buffers of a transfer's messages), after tune_malloc() if asked.
_CHURN = r"""
import resource, sys, threading
sys.path.insert(0, sys.argv[1])
import linalgd
took = linalgd.tune_malloc() if sys.argv[2] == "tuned" else None
faults = []
def churn():
    for _ in range(3):  # the arena grows to its working size first
        keep = [bytes(2 << 20) for _ in range(3)]
        del keep
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        keep = [bytes(2 << 20) for _ in range(3)]
        del keep
    faults.append((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 20)
t = threading.Thread(target=churn)
t.start()
t.join()
print(took, faults[0])
"""


def _churn(mode):
    out = subprocess.run([sys.executable, "-c", _CHURN, CLIENT_DIR, mode], check=True,
                         capture_output=True, text=True).stdout.split()
    return out[0], float(out[1])


@pytest.mark.skipif(not sys.platform.startswith("linux") or linalgd._malloc._mallopt() is None,
                    reason="glibc's mallopt")
def test_tuned_malloc_reuses_freed_chunk_buffers():
    took, tuned = _churn("tuned")
    assert took == "True"
    # 6 MiB written per round is 1536 pages: reused memory faults on few of them
    assert tuned < 1536 / 8, f"{tuned} minor faults per round after tune_malloc"


def test_tune_malloc_refuses_thresholds_glibc_would_not_take():
    with pytest.raises(ValueError, match=r"mmap_threshold: 67108864 is outside \(0, 33554432\]"):
        linalgd.tune_malloc(mmap_threshold=64 << 20)
    with pytest.raises(ValueError, match=r"mmap_threshold: 0 is outside"):
        linalgd.tune_malloc(mmap_threshold=0)
    with pytest.raises(ValueError, match=r"trim_threshold: -1 is outside \[0, 2147483647\]"):
        linalgd.tune_malloc(trim_threshold=-1)
