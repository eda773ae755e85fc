#!/usr/bin/python3
"""Ridge regression on streaming data: the normal equations are solved remotely each epoch.

Each epoch a new chunk of samples arrives. The server accumulates the Gram
matrix and the moment vector (one Matmul each, with C = the running sum and
transpose_a), then solves (X^T X + lam * n * I) w = X^T y with Cholesky. Every
epoch is checked against numpy.linalg.solve; the exit status is 1 on a mismatch.

    examples/ridge_regression.py --target localhost:50051
"""
import argparse
import os
import sys

import numpy as np

try:
    import linalgd
except ImportError:  # a source checkout without `pip install ./client/python`
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                    "client", "python"))
    import linalgd


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", default="localhost:50051")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--features", type=int, default=64)
    p.add_argument("--chunk", type=int, default=2000, help="samples arriving per epoch")
    p.add_argument("--lam", type=float, default=1e-3)
    args = p.parse_args(argv)

    rng = np.random.default_rng(0)
    d = args.features
    w_true = rng.standard_normal((d, 1))
    x_val = rng.standard_normal((1000, d))
    y_val = x_val @ w_true
    gram = np.zeros((d, d))
    moment = np.zeros((d, 1))
    n = 0
    worst = 0.0
    with linalgd.Client(args.target, timeout=30) as client:
        for epoch in range(1, args.epochs + 1):
            x = rng.standard_normal((args.chunk, d))
            y = x @ w_true + 0.1 * rng.standard_normal((args.chunk, 1))
            n += args.chunk
            gram = client.matmul(x, x, c=gram, transpose_a=True)  # gram += x^T x
            moment = client.matmul(x, y, c=moment, transpose_a=True)  # moment += x^T y
            lhs = gram + args.lam * n * np.eye(d)
            r = client.solve(lhs, moment, method="cholesky", return_info=True)
            w_ref = np.linalg.solve(lhs, moment)
            err = float(np.abs(r.x - w_ref).max() / np.abs(w_ref).max())
            worst = max(worst, err)
            rmse = float(np.sqrt(np.mean((x_val @ r.x - y_val) ** 2)))
            print(f"epoch {epoch}: n={n} val_rmse={rmse:.4f} |w-w_numpy|/|w|={err:.1e} "
                  f"method={r.method_used} residual={r.residual:.1e} backend={r.info.backend}")
    ok = worst < 1e-10
    print(f"{'ok' if ok else 'MISMATCH'}: ridge weights match numpy (worst relative error "
          f"{worst:.1e}) over {args.epochs} epochs")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
