"""bench/accuracy.py against the test server, small sizes: every row printed, errors in bounds."""
import os
import subprocess
import sys

from conftest import REPO

SCRIPT = os.path.join(REPO, "bench", "accuracy.py")


def test_accuracy_script_prints_every_row_within_its_bound(server, tmp_path):
    out = tmp_path / "accuracy.md"
    run = subprocess.run([sys.executable, SCRIPT, "--target", server.target, "--sizes", "8,40",
                          "--trials", "1", "--out", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    rows = [line.split("|")[1:-1] for line in out.read_text().splitlines()[2:]]
    seen = {(r[0].strip(), r[1].strip(), r[2].strip()) for r in rows}
    assert seen == {(op, dtype, n) for op in ("matmul", "solve")
                    for dtype in ("f32", "f64", "c64", "c128") for n in ("8", "40")}
    bounds = {"f32": 1e-4, "c64": 1e-4, "f64": 1e-12, "c128": 1e-12}
    for op, dtype, n, err, bound, within, backend in (map(str.strip, r) for r in rows):
        assert float(err) <= bounds[dtype], (op, dtype, n, err)
        assert within == "ok" and backend == "cpu", (op, dtype, n, within, backend)
    assert run.stdout.count("| ok |") == len(rows)
