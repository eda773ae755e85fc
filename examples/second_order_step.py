#!/usr/bin/python3
"""A second-order optimizer step that reuses one curvature matrix for many right-hand sides.

One-vs-rest logistic regression over T classes with Bohning's fixed-Hessian
Newton method: H = X^T X / (4 n) + lam * I bounds every class's Hessian, so
the step W <- W - H^-1 G (G: d x T, one gradient column per class) decreases
the loss monotonically. H never changes, so it is factorized once and solved
against the T gradient columns at every step.

H is computed on the server and kept there (matmul keep=True: a RemoteTensor),
factorized there once (factorize: a Factor) and each step is one solve against
that factor whose B holds all T right-hand sides, so H never crosses the wire
to the server (it is fetched once, for numpy's reference). Checked against
numpy each step; the exit status is 1 on a mismatch or a loss increase.

    examples/second_order_step.py --target localhost:50051
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


def sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def loss_and_grad(x, y, w, lam):
    """Mean one-vs-rest log loss summed over classes, and its gradient (d x T)."""
    z = x @ w
    loss = np.mean(np.sum(np.logaddexp(0.0, z) - y * z, axis=1)) + 0.5 * lam * np.sum(w * w)
    grad = x.T @ (sigmoid(z) - y) / x.shape[0] + lam * w
    return loss, grad


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", default="localhost:50051")
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--samples", type=int, default=4000)
    p.add_argument("--features", type=int, default=32)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--lam", type=float, default=1e-3)
    args = p.parse_args(argv)

    rng = np.random.default_rng(1)
    n, d, t = args.samples, args.features, args.classes
    x = rng.standard_normal((n, d))
    labels = np.argmax(x @ rng.standard_normal((d, t)) + 0.5 * rng.standard_normal((n, t)), 1)
    y = np.eye(t)[labels]

    ok = True
    with linalgd.Client(args.target, timeout=30) as client:
        # H = X^T X / (4n) + lam I, computed once and kept on the server.
        h_remote = client.matmul(x, x, c=args.lam * np.eye(d), transpose_a=True,
                                 alpha=0.25 / n, keep=True)
        h = h_remote.get()  # numpy's reference only
        factor = client.factorize(h_remote, method="cholesky", no_fallback=True)
        h_remote.delete()
        w = np.zeros((d, t))
        w_ref = np.zeros((d, t))
        prev = np.inf
        for step in range(1, args.steps + 1):
            loss, grad = loss_and_grad(x, y, w, args.lam)
            # One Solve against the cached factor, t right-hand sides.
            r = factor.solve(grad, no_fallback=True, return_info=True)
            w = w - r.x
            w_ref = w_ref - np.linalg.solve(h, loss_and_grad(x, y, w_ref, args.lam)[1])
            diff = float(np.abs(w - w_ref).max())
            ok &= diff < 1e-9 and loss <= prev + 1e-12
            prev = loss
            print(f"step {step}: loss={loss:.6f} |grad|={np.linalg.norm(grad):.2e} "
                  f"rhs={grad.shape[1]} method={r.method_used} residual={r.residual:.1e} "
                  f"|w-w_numpy|={diff:.1e} backend={r.info.backend}")
        factor.release()
    accuracy = float(np.mean(np.argmax(x @ w, 1) == labels))
    print(f"{'ok' if ok else 'MISMATCH'}: {args.steps} steps, {t} right-hand sides each, "
          f"training accuracy {accuracy:.3f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
