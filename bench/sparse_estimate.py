"""Times sparse Cholesky solves of Poisson matrices through the Python client against a running
server: where the server runs each (info.backend), its run time and the call's wall time, the
median of REPS after one untimed call. bench/next-gpu-run/sparse_estimate.sh runs it against a
server with the condition estimate and one without (--singular-rcond-factor=0).

    python3 bench/sparse_estimate.py HOST:PORT [2d:M ...] [3d:M ...] [--reps R]
"""
import argparse
import statistics
import sys
import time

import numpy as np

import linalgd


def poisson(m, dims):
    """The (2 * dims + 1)-point Laplacian on an m^dims grid, CSR (indptr, indices, data, shape)."""
    n = m ** dims
    idx = np.arange(n).reshape((m,) * dims)
    rows, cols = [np.arange(n)], [np.arange(n)]
    vals = [np.full(n, 2.0 * dims)]
    for axis in range(dims):
        lo = np.take(idx, np.arange(m - 1), axis=axis).ravel()
        hi = np.take(idx, np.arange(1, m), axis=axis).ravel()
        rows += [lo, hi]
        cols += [hi, lo]
        vals += [np.full(lo.size, -1.0)] * 2
    r, c, v = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    order = np.lexsort((c, r))
    r, c, v = r[order], c[order], v[order]
    indptr = np.zeros(n + 1, np.int64)
    np.add.at(indptr, r + 1, 1)
    return (np.cumsum(indptr).astype(np.int32), c.astype(np.int32), v, (n, n))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("target")
    ap.add_argument("problems", nargs="*", default=["2d:1000", "3d:60"])
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    client = linalgd.Client(args.target)
    for spec in args.problems:
        kind, m = spec.split(":")
        a = poisson(int(m), 3 if kind == "3d" else 2)
        n = a[3][0]
        b = np.random.default_rng(1).standard_normal(n)
        walls, runs = [], []
        try:
            for rep in range(args.reps + 1):
                t = time.perf_counter()
                r = client.sparse_solve(a, b, method="cholesky", no_fallback=True,
                                        return_info=True)
                if rep:
                    walls.append((time.perf_counter() - t) * 1e3)
                    runs.append(r.info.run_time_ns * 1e-6)
        except linalgd.LinalgdError as e:
            print(f"poisson{kind}_n={n} cholesky failed: {e}", flush=True)
            continue
        run = statistics.median(runs)
        print(f"poisson{kind}_n={n} cholesky on {r.info.backend}: run {run:.1f} "
              f"ms, wall {statistics.median(walls):.1f} ms (median of {args.reps}; runs "
              f"{', '.join(f'{x:.1f}' for x in runs)}), residual {r.residual:.2e}, "
              f"method {r.method_used.name.lower()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
