#!/usr/bin/env python3
"""Prints the end-to-end accuracy table of a running linalgd server, as markdown.

For each dtype (f32, f64, c64, c128), op (matmul; solve of a well-conditioned
random system, cond_2 = 1e2 exactly: a = U diag(s) V^H with s spaced
geometrically from 1 to 1e-2) and size n: the largest relative error
norm(x - ref) / norm(ref) over --trials draws, ref being numpy's answer in
float64 / complex128 for the same (rounded) inputs, and the backend that
answered (ExecutionInfo.backend, "cpu" or "gpu:N"). A row whose error exceeds
its bound (1e-4 for f32 and c64, 1e-12 for f64 and c128) is marked FAIL and
the exit status is 1. Start the server with --cpu-threshold 0 to send every
problem to the GPU.

  python3 bench/accuracy.py --target 127.0.0.1:50051 [--out FILE.md] [--sizes 256,1024]
"""
import argparse
import os
import sys

import numpy as np

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(REPO, "client", "python"))

import linalgd  # noqa: E402

DTYPES = {"f32": np.float32, "f64": np.float64, "c64": np.complex64, "c128": np.complex128}
BOUNDS = {"f32": 1e-4, "f64": 1e-12, "c64": 1e-4, "c128": 1e-12}
COND = 1e2


def random_matrix(rng, shape, complex_):
    m = rng.standard_normal(shape)
    return m + 1j * rng.standard_normal(shape) if complex_ else m


def conditioned(rng, n, complex_):
    """A random n x n matrix of 2-norm condition number COND."""
    u, _ = np.linalg.qr(random_matrix(rng, (n, n), complex_))
    v, _ = np.linalg.qr(random_matrix(rng, (n, n), complex_))
    s = np.geomspace(1.0, 1.0 / COND, n)
    return (u * s) @ v.conj().T


def reference_dtype(dtype):
    return np.complex128 if np.issubdtype(dtype, np.complexfloating) else np.float64


def rel_err(x, ref):
    return float(np.linalg.norm(np.asarray(x, ref.dtype) - ref) / np.linalg.norm(ref))


def one_trial(client, op, dtype, n, rng):
    """(relative error, backend) of one op on random inputs of `dtype`."""
    complex_ = np.issubdtype(dtype, np.complexfloating)
    wide = reference_dtype(dtype)
    if op == "matmul":
        a = random_matrix(rng, (n, n), complex_).astype(dtype)
        b = random_matrix(rng, (n, n), complex_).astype(dtype)
        r = client.matmul(a, b, return_info=True)
        return rel_err(r.out, a.astype(wide) @ b.astype(wide)), r.info.backend
    a = conditioned(rng, n, complex_).astype(dtype)
    b = random_matrix(rng, (n, 1), complex_).astype(dtype)
    r = client.solve(a, b, return_info=True)
    return rel_err(r.x, np.linalg.solve(a.astype(wide), b.astype(wide))), r.info.backend


def row(client, op, name, n, trials, seed):
    rng = np.random.default_rng(seed)
    errs, backends = [], set()
    for _ in range(trials):
        err, backend = one_trial(client, op, DTYPES[name], n, rng)
        errs.append(err)
        backends.add(backend)
    worst = max(errs)
    ok = worst <= BOUNDS[name]
    return ok, (f"| {op} | {name} | {n} | {worst:.2e} | {BOUNDS[name]:.0e} | "
                f"{'ok' if ok else 'FAIL'} | {', '.join(sorted(backends))} |")


def table(client, sizes, trials):
    """The markdown lines and whether every row is within its bound."""
    lines = ["| op | dtype | n | max rel. error | bound | within | backend |",
             "| --- | --- | ---: | ---: | ---: | --- | --- |"]
    all_ok = True
    for op in ("matmul", "solve"):
        for name in DTYPES:
            for n in sizes:
                ok, line = row(client, op, name, n, trials, seed=n)
                all_ok = all_ok and ok
                lines.append(line)
                print(line, flush=True)
    return lines, all_ok


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", default="127.0.0.1:50051")
    p.add_argument("--out", help="also write the table to this markdown file")
    p.add_argument("--sizes", default="256,1024", help="comma-separated n (default 256,1024)")
    p.add_argument("--trials", type=int, default=2, help="draws per row (default 2)")
    p.add_argument("--timeout", type=float, default=300.0, help="per-call seconds")
    args = p.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with linalgd.Client(args.target, timeout=args.timeout) as client:
        print("| op | dtype | n | max rel. error | bound | within | backend |")
        print("| --- | --- | ---: | ---: | ---: | --- | --- |", flush=True)
        lines, all_ok = table(client, sizes, args.trials)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
