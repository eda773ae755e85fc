#!/usr/bin/env python3
"""Prints the numerical-singularity decision table of a running linalgd server.

For each matrix family of known condition (tests/python/condition_families.py)
and dtype: the decision the server took (solved, fallback to the minimum-norm
least-squares solution, or refused with no_fallback), the rcond it reported
against 1/cond_1 and 1/cond_2 (numpy, float64), and the relative error of x
against the float64 reference (x0 for a solved system; for a fallback
pinv(a) b in float64 with singular values below n * eps(dtype) dropped, the
cutoff the server applies). Start the server with --cpu-threshold 0 to send every problem to
the GPU; the backend column says where each ran.

  python3 bench/decision_table.py --target 127.0.0.1:50051 [--big]
"""
import argparse
import os
import sys

import numpy as np

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(REPO, "client", "python"))
sys.path.insert(0, os.path.join(REPO, "tests", "python"))

import linalgd  # noqa: E402
import condition_families as fam  # noqa: E402


def row(client, name, a, dtype):
    n = a.shape[0]
    x0 = np.random.default_rng(n).standard_normal(n)
    b = a @ x0
    r = client.solve(a.astype(dtype), b.astype(dtype), return_info=True)
    fell_back = r.method_used == linalgd.SolveMethod.LSTSQ
    decision = "fallback" if fell_back else "solved"
    if fell_back:
        try:
            client.solve(a.astype(dtype), b.astype(dtype), no_fallback=True)
            decision += "/no_fallback ok?!"
        except linalgd.FailedPrecondition:
            decision += "/refused"
    ref = fam.min_norm(a, b, dtype) if fell_back else x0
    err = np.linalg.norm(np.asarray(r.x, np.float64) - ref) / np.linalg.norm(ref)
    with np.errstate(all="ignore"):
        cond2 = np.linalg.cond(a)
    rcond = float("nan") if r.rcond is None else r.rcond
    return (f"{name:<16} {n:>5} {np.dtype(dtype).name:<8} {fam.rcond1(a):>9.2e} "
            f"{1 / cond2:>9.2e} {r.info.backend:<7} {decision:<18} {rcond:>9.2e} "
            f"{err:>9.2e}  {r.method_used.name}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", default="127.0.0.1:50051")
    p.add_argument("--big", action="store_true",
                   help="also the 1024 x 1024 f64 system of rank 1000")
    args = p.parse_args()
    client = linalgd.Client(args.target)
    cases = fam.cases()
    if args.big:
        rng = np.random.default_rng(2)
        cases.append(("rank 1000", fam.rank_deficient(1024, 1000, rng)))
    print(f"{'family':<16} {'n':>5} {'dtype':<8} {'1/cond1':>9} {'1/cond2':>9} {'backend':<7} "
          f"{'decision':<18} {'rcond':>9} {'rel.err':>9}  method")
    for name, a in cases:
        for dtype in (np.float64, np.float32):
            if name == "rank 1000" and dtype == np.float32:
                continue
            print(row(client, name, a, dtype), flush=True)


if __name__ == "__main__":
    main()
