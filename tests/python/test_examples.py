"""Each example runs against the real server, exits 0 and says ok."""
import os
import subprocess
import sys

import importlib.util

import pytest

from conftest import CLIENT_DIR, EXAMPLES_DIR


@pytest.mark.parametrize("name,expect", [
    ("ridge_regression.py", "ok: ridge weights match numpy"),
    ("second_order_step.py", "ok: 8 steps, 10 right-hand sides each"),
    ("linear_layer.py", "ok: linear layer matches numpy"),
    pytest.param("torch_autograd_linear.py", "ok: autograd linear layer matches torch",
                 marks=pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                          reason="torch is not installed")),
])
def test_example(server, name, expect):
    env = dict(os.environ, PYTHONPATH=CLIENT_DIR)
    p = subprocess.run([sys.executable, os.path.join(EXAMPLES_DIR, name), "--target", server.target],
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    assert expect in p.stdout, p.stdout
    assert "backend=" in p.stdout


def test_readme_five_lines(server):
    with open(os.path.join(CLIENT_DIR, "README.md")) as f:
        text = f.read()
    code = text.split("## Five lines", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert len(code.strip().splitlines()) == 5
    code = code.replace("localhost:50051", server.target)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=CLIENT_DIR), timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("float32 (64, 16) 32.0 [0.5 0.5 0.5] cholesky "), p.stdout
