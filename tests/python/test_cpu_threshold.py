"""--cpu-threshold: an integer for every op and dtype, or auto (the default):
with a GPU lane the GPU/CPU crossover is measured at start-up per op and
dtype; GetServerInfo, the linalgd_cpu_threshold gauge and the log show it."""
import re
import subprocess
import urllib.request

import linalgd
from conftest import server_binary

PAIRS = {("matmul", "f32"), ("matmul", "f64"), ("solve", "f32"), ("solve", "f64")}


def info_and_metrics(s):
    with linalgd.Client(s.target, timeout=10.0) as c:
        info = c.server_info()
    text = urllib.request.urlopen(f"http://127.0.0.1:{s.metrics_port}/metrics").read().decode()
    gauge = {(m[0], m[1]): int(float(m[2])) for m in re.findall(
        r'^linalgd_cpu_threshold\{(?:dtype="(\w+)",op="(\w+)")\} (\S+)$', text, re.M)}
    return info, {(op, dtype): v for (dtype, op), v in gauge.items()}


def test_integer_threshold_holds_for_every_op_and_dtype(start_server):
    s = start_server("--cpu-threshold", "256", metrics=True)
    info, gauge = info_and_metrics(s)
    assert info.limits.cpu_threshold == 256
    assert not info.limits.cpu_thresholds_measured
    assert info.limits.cpu_thresholds == {pair: 256 for pair in PAIRS}
    assert gauge == {pair: 256 for pair in PAIRS}


def test_auto_measures_with_a_gpu_and_keeps_the_default_without(start_server):
    s = start_server("--cpu-threshold", "auto", metrics=True, log_level="info")
    info, gauge = info_and_metrics(s)
    lim = info.limits
    assert set(lim.cpu_thresholds) == PAIRS
    assert gauge == lim.cpu_thresholds
    assert lim.cpu_threshold == lim.cpu_thresholds[("matmul", "f32")]
    if any(b.startswith("gpu") for b in info.backends):
        assert lim.cpu_thresholds_measured
        assert all(0 <= v <= 4096 for v in lim.cpu_thresholds.values())
        assert "--cpu-threshold auto: measured in" in s.output()
    else:  # one lane: nothing to measure
        assert not lim.cpu_thresholds_measured
        assert lim.cpu_thresholds == {pair: 512 for pair in PAIRS}
        assert "--cpu-threshold auto: no GPU lane" in s.output()


def test_default_is_auto(start_server):
    s = start_server(log_level="info")
    assert "--cpu-threshold auto" in s.output()


def test_bad_value_is_refused_naming_the_flag():
    out = subprocess.run([server_binary(), "--listen", "127.0.0.1:0", "--metrics-listen", "",
                          "--cpu-threshold", "fast"], capture_output=True, text=True, timeout=30)
    assert out.returncode != 0
    assert "--cpu-threshold: 'fast' is neither auto nor an integer" in out.stderr
