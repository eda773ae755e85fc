"""Square systems of known condition for the condition-estimate tests and
bench/decision_table.py. Each case: (family, a float64, x0) with b = a @ x0.
"""
import numpy as np


def _orthogonal(n, rng):
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return q * np.sign(np.diag(r))


def svd_family(n, cond, rng):
    """U diag(s) V^T, s geometric from 1 to 1/cond."""
    s = np.logspace(0, -np.log10(cond), n)
    return _orthogonal(n, rng) @ np.diag(s) @ _orthogonal(n, rng).T


def rank_deficient(n, r, rng):
    return rng.standard_normal((n, r)) @ rng.standard_normal((r, n))


def exactly_singular(n, row, rng):
    a = rng.standard_normal((n, n)) + n * np.eye(n)
    a[row, :] = 0
    return a


def hilbert(n):
    i = np.arange(n)
    return 1.0 / (i[:, None] + i[None, :] + 1)


def graded(n, decades, rng):
    a = rng.standard_normal((n, n)) + n * np.eye(n)
    return np.logspace(0, -decades, n)[:, None] * a


def cases(seed=5, svd_n=32):
    """(family name, a) pairs: the families the tests and the table use."""
    rng = np.random.default_rng(seed)
    out = [(f"svd cond 1e{e}", svd_family(svd_n, 10.0 ** e, rng))
           for e in (2, 6, 10, 14, 16, 20)]
    out.append(("rank 60 product", rank_deficient(64, 60, rng)))
    out.append(("zero row 5", exactly_singular(16, 5, rng)))
    out += [("hilbert", hilbert(n)) for n in range(8, 15)]
    out.append(("graded 1e-12", graded(24, 12, rng)))
    return out


def rcond1(a):
    """The 1-norm reciprocal condition number (0 for a singular a)."""
    with np.errstate(all="ignore"):
        c = np.linalg.cond(a, 1)
    return 0.0 if not np.isfinite(c) else 1.0 / c


def min_norm(a, b, dtype=np.float64):
    """pinv(a) b in float64, singular values below n * eps(dtype) * s_max
    dropped: the minimum-norm answer the server gives in dtype."""
    return np.linalg.lstsq(a, b, rcond=max(a.shape) * np.finfo(dtype).eps)[0]


def expected_decision(a, dtype):
    """'solved' or 'fallback' when rcond1 is 10x away from n * eps, else None."""
    n = a.shape[0]
    threshold = n * np.finfo(dtype).eps
    rc = rcond1(a) if np.linalg.matrix_rank(a) == n else 0.0
    if rc < threshold / 10:
        return "fallback"
    if rc > threshold * 10:
        return "solved"
    return None
