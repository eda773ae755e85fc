"""Soak: a real linalgd under 32-64 concurrent callers for a bounded time.

    /usr/bin/python3 -m pytest -q tests/soak                    # 120 s main phase
    /usr/bin/python3 -m pytest -q tests/soak --soak-seconds 30  # or LINALGD_SOAK_SECONDS
    /usr/bin/python3 tests/soak/soak_test.py --soak-seconds 600 --soak-callers 64

Each caller thread picks calls at random from a mix of
  - valid calls checked against numpy float64 references: matmul (f16/f32/f64,
    transposes, alpha/beta/c, every epilogue, batch dims; some in one shared
    shape so that the server batches callers together, some as bursts of
    futures), dense solve (auto/lu/cholesky/qr/lstsq, batched), sparse_solve
    (direct and iterative with preconditioners), put/get/delete of resident
    tensors (also used as operands), keep_result, factorize + solve with the
    factor + release;
  - bad inputs that must come back with their code: INVALID_ARGUMENT (shapes,
    dtypes, byte counts, enum values, NaN/Inf, CSR structure), NOT_FOUND
    (unknown or deleted ids, released factors), FAILED_PRECONDITION;
  - cancellations (a future cancelled after a few ms) and deadlines that expire
    mid-run (tiny timeouts on big-ish solves and products);
with priorities drawn from the whole int32 range. A monitor thread polls
health (SERVING throughout) and the process (alive throughout). Resources of
the server (RSS, threads, fds, memory mappings from /proc) are sampled after a
warm-up and again after the load and a short settle; they must be within 10%
(with absolute floors for small numbers). Every future must complete exactly
once. After the load, abandoned work must not hold the server's CPU workers:
long GMRES solves (one per worker) are cancelled / left past their deadline and
a small call made right after must not wait for their iterations to run out.
A second, shorter phase runs the same mix against a server started with
--inject-faults rules (stalls for matmul and solve, failures for
sparse_solve and factorize): the faulted operations must fail with the
injected code, everything else must still be right.
"""
import collections
import math
import os
import random
import sys
import threading
import time
import traceback

import grpc
import numpy as np
import pytest

from conftest import Server  # tests/python's helper (puts client/python on sys.path)

import linalgd  # noqa: E402
from linalgd import tensors  # noqa: E402
from linalgd._stubs import pb  # noqa: E402

IA = grpc.StatusCode.INVALID_ARGUMENT
NF = grpc.StatusCode.NOT_FOUND
FP = grpc.StatusCode.FAILED_PRECONDITION
DE = grpc.StatusCode.DEADLINE_EXCEEDED
CALL_TIMEOUT = 60.0  # a valid call that takes longer than this is a failure
TTL = 300.0  # resident tensors and factors made by the soak; all are deleted
EPS = {np.dtype(np.float16): 2.0 ** -11, np.dtype(np.float32): 2.0 ** -24,
       np.dtype(np.float64): 2.0 ** -53}
PRIORITIES = [0] * 12 + [1, -1, 5, 1000, -1000, 2**31 - 1, -2**31]

# Resource bounds after the load: 10% of the baseline, or these absolute floors.
RESOURCE_FRACTION = 0.10
RESOURCE_FLOORS = {"rss_kib": 16 << 10, "threads": 8, "fds": 8, "maps": 32}

# --inject-faults of the fault phase, and what each faulted op must answer.
FAULT_SPEC = ("cpu:matmul:stall=1ms,cpu:solve:stall=2ms,"
              "cpu:sparse_solve:fail=internal,cpu:factorize:fail=deadline_exceeded")
SPARSE_DENSE_THRESHOLD = 0.1  # the server's default --sparse-dense-threshold
FAULTS = {"sparse_solve": grpc.StatusCode.INTERNAL, "factorize": grpc.StatusCode.DEADLINE_EXCEEDED}


class WrongAnswer(AssertionError):
    pass


class Unexpected(AssertionError):
    pass


# -- references and checks ------------------------------------------------------

def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def check_elementwise(what, got, ref, tol, dtype):
    """got (the server's answer) against ref (float64) within tol per element."""
    if got.shape != ref.shape:
        raise WrongAnswer(f"{what}: shape {got.shape}, expected {ref.shape}")
    if got.dtype != dtype:
        raise WrongAnswer(f"{what}: dtype {got.dtype}, expected {dtype}")
    err = np.abs(got.astype(np.float64) - ref)
    bad = ~(err <= tol)  # NaN in got counts as bad
    if bad.any():
        i = np.unravel_index(np.argmax(np.where(bad, err / np.maximum(tol, 1e-300), 0)), bad.shape)
        raise WrongAnswer(f"{what}: {int(bad.sum())} of {bad.size} elements off, e.g. at {i}: "
                          f"{got[i]!r} vs {ref[i]!r} (tol {tol[i] if np.ndim(tol) else tol:.3g})")


def check_normwise(what, got, ref, rel_tol, dtype):
    if got.shape != ref.shape:
        raise WrongAnswer(f"{what}: shape {got.shape}, expected {ref.shape}")
    if got.dtype != dtype:
        raise WrongAnswer(f"{what}: dtype {got.dtype}, expected {dtype}")
    g = got.astype(np.float64)
    err = np.linalg.norm((g - ref).ravel()) / max(np.linalg.norm(ref.ravel()), 1e-300)
    if not err <= rel_tol:
        raise WrongAnswer(f"{what}: relative error {err:.3g} > {rel_tol:.3g}")


def matmul_reference(a, b, c=None, bias=None, ta=False, tb=False, alpha=None, beta=None,
                     epilogue="none"):
    """(reference in float64, per-element error bound before output rounding)."""
    A = a.astype(np.float64)
    B = b.astype(np.float64)
    if ta:
        A = np.swapaxes(A, -1, -2)
    if tb:
        B = np.swapaxes(B, -1, -2)
    k = A.shape[-1]
    al = 1.0 if alpha is None else alpha
    out = al * (A @ B)
    bound = abs(al) * (np.abs(A) @ np.abs(B))
    if c is not None:
        be = 1.0 if beta is None else beta
        out = out + be * c.astype(np.float64)
        bound = bound + abs(be) * np.abs(c.astype(np.float64))
    if bias is not None:
        out = out + bias.astype(np.float64)
        bound = bound + np.abs(bias.astype(np.float64))
    if "relu" in epilogue:
        out = np.maximum(out, 0.0)
    elif "gelu" in epilogue:
        out = gelu(out)
        bound = bound * 1.2  # |gelu'| <= 1.13
    acc = a.dtype if a.dtype != np.float16 else np.dtype(np.float32)  # f16 accumulates in f32
    # output rounding: relative, and absolute in the subnormal range (f16's starts at 6e-5)
    tol = (4.0 * (k + 8) * EPS[acc] * bound + EPS[a.dtype] * np.abs(out) * 2.0
           + float(np.finfo(a.dtype).smallest_subnormal))
    return out, tol


# -- the run's bookkeeping ------------------------------------------------------

class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.calls = collections.Counter()  # (kind, outcome) -> count
        self.wrong = []  # (kind, message)
        self.unexpected = []
        self.futures = []  # [future, completions]
        self.health_polls = 0
        self.health_bad = []

    def record(self, kind, outcome):
        with self.lock:
            self.calls[(kind, outcome)] += 1

    def fail(self, bucket, kind, message):
        with self.lock:
            bucket.append((kind, message))

    def track(self, fut):
        """Counts the completions of a gRPC future (done callbacks): must end at 1."""
        entry = [fut, 0]

        def done(_):
            with self.lock:
                entry[1] += 1
        with self.lock:
            self.futures.append(entry)
        fut.add_done_callback(done)
        return fut

    def summary(self):
        by_kind = collections.defaultdict(list)
        for (kind, outcome), n in sorted(self.calls.items()):
            by_kind[kind].append(f"{outcome}={n}")
        return " ".join(f"{k}[{','.join(v)}]" for k, v in sorted(by_kind.items()))


def code_name(code):
    return code.name if code is not None else "ERROR"


def expect_codes(codes, fn, *args, **kwargs):
    """Runs fn, which must fail with one of codes; returns the code's name."""
    try:
        fn(*args, **kwargs)
    except linalgd.LinalgdError as e:
        if e.code in codes:
            return e.code.name
        raise Unexpected(f"{code_name(e.code)} ({e.message}), expected "
                         f"{'/'.join(c.name for c in codes)}") from None
    raise Unexpected(f"succeeded, expected {'/'.join(c.name for c in codes)}")


class Caller:
    """One caller thread's state: a client (shared with others), a seeded rng."""

    def __init__(self, client, seed, stats, faults):
        self.c = client
        self.rng = np.random.default_rng(seed)
        self.py = random.Random(seed)
        self.stats = stats
        self.faults = faults

    # small helpers
    def dim(self, lo=1, hi=256):
        return int(self.rng.integers(lo, hi + 1))

    def randn(self, shape, dtype=np.float64):
        return self.rng.standard_normal(shape).astype(dtype)

    def priority(self):
        return self.py.choice(PRIORITIES)

    def invoke(self, method, req, timeout=CALL_TIMEOUT):
        return self.c._invoke(method, req, timeout)

    def faulted(self, op, fn, *args, **kwargs):
        """Under an injected failure for op, fn must fail with the injected code."""
        code = self.faults.get(op)
        if code is None:
            return None
        return "fault_" + expect_codes((code,), fn, *args, **kwargs)

    # -- valid calls ----------------------------------------------------------

    def matmul_args(self, shared_shape=False):
        if shared_shape:  # many callers at once in one shape: the server batches them
            dtype = np.float32
            m = k = n = 64
            ta = tb = False
            batch = ()
            epilogue = "relu"
        else:
            dtype = self.py.choice([np.float64, np.float64, np.float32, np.float32, np.float16])
            m, k, n = self.dim(), self.dim(), self.dim()
            ta, tb = self.py.random() < 0.3, self.py.random() < 0.3
            batch = self.py.choice([(), (), (), (2,), (3,)])
            epilogue = self.py.choice(["none", "relu", "gelu", "bias", "relu_bias", "gelu_bias"])
        a = self.randn(batch + ((k, m) if ta else (m, k)), dtype)
        b = self.randn(((n, k) if tb else (k, n)), dtype)
        kw = dict(transpose_a=ta, transpose_b=tb, epilogue=epilogue)
        if not shared_shape and not batch and self.py.random() < 0.3:
            kw["c"] = self.randn(self.py.choice([(m, n), (1, n)]), dtype)
            kw["alpha"] = float(self.rng.uniform(-2, 2))
            kw["beta"] = float(self.rng.uniform(-2, 2))
        if "bias" in epilogue:
            if batch or self.py.random() < 0.6:
                kw["bias"] = self.randn((n,), dtype)
            else:
                kw["bias"] = self.randn((m, 1), dtype)
        return a, b, kw

    def check_matmul(self, what, out, a, b, kw):
        ref, tol = matmul_reference(
            a, b, kw.get("c"), kw.get("bias"), kw.get("transpose_a", False),
            kw.get("transpose_b", False), kw.get("alpha"), kw.get("beta"),
            kw.get("epilogue", "none"))
        check_elementwise(what, out, ref, tol, a.dtype)

    def op_matmul(self, shared_shape=False):
        a, b, kw = self.matmul_args(shared_shape)
        call_kw = dict(kw)
        epilogue = call_kw.pop("epilogue")
        if "bias" in epilogue:
            epilogue = epilogue.replace("_bias", "").replace("bias", "none")  # client adds it
        out = self.c.matmul(a, b, epilogue=epilogue, priority=self.priority(),
                            timeout=CALL_TIMEOUT, **call_kw)
        self.check_matmul("matmul", out, a, b, kw)

    def matmul_request(self, a, b, kw, **extra):
        ep = kw.get("epilogue", "none").upper()
        req = pb.MatmulRequest(a=tensors.encode(a, "a"), b=tensors.encode(b, "b"),
                               transpose_a=kw.get("transpose_a", False),
                               transpose_b=kw.get("transpose_b", False),
                               epilogue=pb.Epilogue.Value(f"EPILOGUE_{ep}"),
                               priority=self.priority(), **extra)
        if "c" in kw:
            req.c.CopyFrom(tensors.encode(kw["c"], "c"))
            req.alpha, req.beta = kw["alpha"], kw["beta"]
        if "bias" in kw:
            req.bias.CopyFrom(tensors.encode(kw["bias"], "bias"))
        return req

    def op_future_burst(self):
        """Several matmuls in flight at once from one caller, each checked against its own
        reference: a batched answer delivered to the wrong caller shows up here."""
        shared = self.py.random() < 0.5
        calls = []
        for _ in range(self.py.randint(2, 6)):
            a, b, kw = self.matmul_args(shared_shape=shared)
            fut = self.stats.track(self.c._stub.Matmul.future(
                self.matmul_request(a, b, kw), timeout=CALL_TIMEOUT))
            calls.append((fut, a, b, kw))
        for fut, a, b, kw in calls:
            try:
                resp = fut.result()
            except grpc.RpcError as e:
                raise Unexpected(f"future: {e.code().name} ({e.details()})") from None
            self.check_matmul("matmul future", tensors.decode(resp.out, "out"), a, b, kw)

    def solve_problem(self):
        dtype = self.py.choice([np.float64, np.float64, np.float32])
        method = self.py.choice(["auto", "lu", "cholesky", "qr", "lstsq"])
        n = self.dim(1, 200)
        k = self.dim(1, 8)
        batch = self.py.choice([(), (), (), (2,)])
        if method in ("qr", "lstsq") and self.py.random() < 0.7:
            m = n + self.dim(1, 56) + n // 2  # tall, full rank
            a = self.randn(batch + (m, n))
        elif method in ("cholesky",) or (method == "auto" and self.py.random() < 0.5):
            mm = self.randn(batch + (n, n)) / math.sqrt(n)
            a = mm @ np.swapaxes(mm, -1, -2) + np.eye(n)
            a = 0.5 * (a + np.swapaxes(a, -1, -2))
            m = n
        else:
            a = self.randn(batch + (n, n)) + 3.0 * math.sqrt(n) * np.eye(n)
            m = n
        b = self.randn(batch + (m, k))
        return a.astype(dtype), b.astype(dtype), method

    def check_solve(self, what, x, a, b):
        A, B = a.astype(np.float64), b.astype(np.float64)
        if A.shape[-1] == A.shape[-2]:
            ref = np.linalg.solve(A, B)
        elif A.ndim == 2:
            ref = np.linalg.lstsq(A, B, rcond=None)[0]
        else:
            ref = np.stack([np.linalg.lstsq(Ai, Bi, rcond=None)[0] for Ai, Bi in zip(A, B)])
        cond = float(np.max(np.linalg.cond(A)))
        n = A.shape[-1]
        squared = A.shape[-1] != A.shape[-2]
        tol = 50.0 * (n + 4) * EPS[a.dtype] * (cond ** 2 if squared else cond)
        check_normwise(what, x, ref, tol, a.dtype)

    def op_solve(self):
        a, b, method = self.solve_problem()
        x = self.c.solve(a, b, method=method, priority=self.priority(), timeout=CALL_TIMEOUT)
        self.check_solve(f"solve {method}", x, a, b)

    def sparse_problem(self, n=None, symmetric=None):
        n = n or self.dim(8, 400)
        symmetric = self.py.random() < 0.5 if symmetric is None else symmetric
        per_row = min(n - 1, 3)
        d = np.zeros((n, n))
        rows = np.repeat(np.arange(n), per_row)
        cols = self.rng.integers(0, n, size=rows.size)
        d[rows, cols] = self.rng.standard_normal(rows.size)
        np.fill_diagonal(d, 0.0)
        if symmetric:
            d = d + d.T
        np.fill_diagonal(d, np.abs(d).sum(axis=1) + 1.0 + self.rng.random(n))
        return d, symmetric

    @staticmethod
    def csr(d):
        rows, cols = np.nonzero(d)
        indptr = np.zeros(d.shape[0] + 1, np.int64)
        np.cumsum(np.bincount(rows, minlength=d.shape[0]), out=indptr[1:])
        index = np.int32 if d.shape[0] < 300 else np.int64
        return (indptr.astype(index), cols.astype(index), d[rows, cols], d.shape)

    def op_sparse(self):
        d, symmetric = self.sparse_problem()
        dtype = self.py.choice([np.float64, np.float64, np.float32])
        b = self.randn((d.shape[0], self.dim(1, 3)), dtype)
        if symmetric:
            method, pre = self.py.choice([("auto", None), ("cholesky", None), ("lu", None),
                                          ("qr", None), ("cg", None), ("cg", "jacobi"),
                                          ("cg", "ic0"), ("gmres", "jacobi")])
        else:
            method, pre = self.py.choice([("auto", None), ("lu", None), ("qr", None),
                                          ("bicgstab", "ilu0"), ("bicgstab", "jacobi"),
                                          ("gmres", None), ("gmres", "ilu0")])
        iterative = method in ("cg", "bicgstab", "gmres")
        itol = 0.0 if not iterative else (1e-10 if dtype == np.float64 else 1e-5)
        # The documented rule (--sparse-dense-threshold 0.1): direct methods on a matrix
        # denser than 10% run as a dense solve (so sparse_solve faults do not apply).
        dense_path = not iterative and np.count_nonzero(d) > SPARSE_DENSE_THRESHOLD * d.size
        call = lambda: self.c.sparse_solve(  # noqa: E731
            self.csr(d), b, method=method, preconditioner=pre, tol=itol,
            priority=self.priority(), timeout=CALL_TIMEOUT, return_info=True)
        if not dense_path:
            faulted = self.faulted("sparse_solve", call)
            if faulted:
                return faulted
        r = call()
        x = r.x
        if r.dense_path != dense_path:
            raise WrongAnswer(f"sparse {method}: dense_path {r.dense_path}, expected {dense_path}"
                              f" (n={d.shape[0]}, nnz={np.count_nonzero(d)})")
        B = b.astype(np.float64)
        if x.shape != B.shape or x.dtype != dtype:
            raise WrongAnswer(f"sparse {method}: x {x.shape} {x.dtype}, b {B.shape} {dtype}")
        # d's values go over the wire in b's dtype: the reference uses the rounded ones
        dd = d.astype(dtype).astype(np.float64)
        res = np.linalg.norm(dd @ x.astype(np.float64) - B) / np.linalg.norm(B)
        bound = max(10.0 * itol, 100.0 * d.shape[0] * EPS[np.dtype(dtype)])
        if not res <= bound:
            raise WrongAnswer(f"sparse {method}/{pre} n={d.shape[0]} {np.dtype(dtype)}: "
                              f"residual {res:.3g} > {bound:.3g}")
        check_normwise(f"sparse {method}/{pre}", x, np.linalg.solve(dd, B),
                       bound * np.linalg.cond(dd) * 2.0, dtype)

    def op_store(self):
        """put, get (exact), the resident tensor as a matmul operand, delete, then NOT_FOUND."""
        dtype = self.py.choice([np.float64, np.float32, np.float16])
        shape = self.py.choice([(self.dim(1, 300),), (self.dim(), self.dim()),
                                (2, self.dim(1, 64), self.dim(1, 64))])
        x = self.randn(shape, dtype)
        tid = self.c.put(x, ttl=TTL, timeout=CALL_TIMEOUT).id
        try:
            got = self.c.get(tid, timeout=CALL_TIMEOUT)
            if got.dtype != x.dtype or got.shape != x.shape or not np.array_equal(got, x):
                raise WrongAnswer(f"get after put: {got.dtype}{got.shape} vs {x.dtype}{x.shape}"
                                  " or different bytes")
            if x.ndim >= 2:
                b = self.randn((x.shape[-1], self.dim(1, 64)), dtype)
                req = pb.MatmulRequest(a=pb.Tensor(resident_id=tid), b=tensors.encode(b, "b"),
                                       priority=self.priority())
                out = tensors.decode(self.invoke("Matmul", req).out, "out")
                self.check_matmul("matmul @resident", out, x, b, {})
        finally:
            self.c.delete(tid, timeout=CALL_TIMEOUT)
        self.stats.record("store_deleted", expect_codes((NF,), self.c.get, tid,
                                                        timeout=CALL_TIMEOUT))

    def op_keep_result(self):
        if self.py.random() < 0.5:
            a, b, kw = self.matmul_args()
            if a.ndim > 2:
                a = a[0]
            resp = self.invoke("Matmul", self.matmul_request(a, b, kw, keep_result=True,
                                                             result_ttl_seconds=TTL))
            tid = resp.out.resident_id
            if not tid:
                raise WrongAnswer(f"keep_result: out is {resp.out.WhichOneof('source')}")
            try:
                self.check_matmul("matmul keep_result", self.c.get(tid, timeout=CALL_TIMEOUT),
                                  a, b, kw)
            finally:
                self.c.delete(tid, timeout=CALL_TIMEOUT)
        else:
            a, b, method = self.solve_problem()
            req = pb.SolveRequest(a=tensors.encode(a, "a"), b=tensors.encode(b, "b"),
                                  method=pb.SolveMethod.Value(f"SOLVE_METHOD_{method.upper()}"),
                                  keep_result=True, result_ttl_seconds=TTL,
                                  priority=self.priority())
            tid = self.invoke("Solve", req).x.resident_id
            if not tid:
                raise WrongAnswer("solve keep_result: no resident id")
            try:
                self.check_solve("solve keep_result", self.c.get(tid, timeout=CALL_TIMEOUT), a, b)
            finally:
                self.c.delete(tid, timeout=CALL_TIMEOUT)

    def op_factor(self):
        n = self.dim(1, 200)
        dtype = self.py.choice([np.float64, np.float64, np.float32])
        method = self.py.choice(["auto", "lu", "cholesky"])
        if method == "lu" and self.py.random() < 0.5:
            a = self.randn((n, n)) + 3.0 * math.sqrt(n) * np.eye(n)
        else:
            mm = self.randn((n, n)) / math.sqrt(n)
            a = mm @ mm.T + np.eye(n)
            a = 0.5 * (a + a.T)
        a = a.astype(dtype)
        call = lambda: self.c.factorize(a, method=method, ttl=TTL, timeout=CALL_TIMEOUT)  # noqa
        faulted = self.faulted("factorize", call)
        if faulted:
            return faulted
        f = call()
        try:
            if f.n != n:
                raise WrongAnswer(f"factorize: n {f.n}, expected {n}")
            for _ in range(self.py.randint(1, 3)):
                b = self.randn((n, self.dim(1, 4)), dtype)
                x = self.c.solve(None, b, factor=f.factor_id, priority=self.priority(),
                                 timeout=CALL_TIMEOUT)
                self.check_solve(f"solve with factor {f.method.name}", x, a, b)
        finally:
            self.c.release_factor(f.factor_id, timeout=CALL_TIMEOUT)
        self.stats.record("factor_released", expect_codes(
            (NF,), self.c.solve, None, self.randn((n, 1), dtype), factor=f.factor_id,
            timeout=CALL_TIMEOUT))

    def op_info(self):
        info = self.c.server_info(timeout=CALL_TIMEOUT)
        if "cpu" not in info.backends:
            raise WrongAnswer(f"server_info: backends {info.backends}")
        self.c.list_tensors(timeout=CALL_TIMEOUT)

    # -- bad inputs -----------------------------------------------------------

    def op_bad(self):
        c, r, n = self.c, self.rng, self.dim(2, 64)
        unknown = "%032x" % self.py.getrandbits(128)
        ones = np.ones((n, n))
        with_nan = self.randn((n, n))
        with_nan[tuple(r.integers(0, n, size=2))] = np.nan
        cases = {
            "shape": lambda: c.matmul(ones, np.ones((n + 1, 3))),
            "batch": lambda: c.matmul(np.ones((2, n, n)), np.ones((3, n, n))),
            "mixed_dtype": lambda: c.matmul(ones, np.ones((n, n), np.float32)),
            "bias_shape": lambda: c.matmul(ones, ones, bias=np.ones(n + 2)),
            "no_bias": lambda: c.matmul(ones, ones, epilogue="bias"),
            "nan": lambda: c.matmul(with_nan, ones),
            "inf_solve": lambda: c.solve(np.eye(n), np.full((n, 1), np.inf)),
            "solve_not_square_lu": lambda: c.solve(np.ones((n + 1, n)), np.ones((n + 1, 1)),
                                                   method="lu"),
            "solve_rows": lambda: c.solve(np.eye(n), np.ones((n + 1, 1))),
            "solve_f16": lambda: c.solve(np.eye(n, dtype=np.float16), np.ones((n, 1), np.float16)),
            "wire_dtype": lambda: self.invoke("Matmul", pb.MatmulRequest(
                a=pb.Tensor(dtype=self.py.choice([0, 42]), shape=[n, n], data=ones.tobytes()),
                b=tensors.encode(ones, "b"))),
            "wire_bytes": lambda: self.invoke("Matmul", pb.MatmulRequest(
                a=pb.Tensor(dtype=pb.DTYPE_F64, shape=[n, n], data=ones.tobytes()[:-8]),
                b=tensors.encode(ones, "b"))),
            "wire_epilogue": lambda: self.invoke("Matmul", pb.MatmulRequest(
                a=tensors.encode(ones, "a"), b=tensors.encode(ones, "b"), epilogue=77)),
            "sparse_offsets": lambda: c.sparse_solve(
                (np.array([0, 2, 1], np.int32), np.array([0, 1], np.int32),
                 np.array([1.0, 2.0]), (2, 2)), np.ones(2)),
            "sparse_nan": lambda: c.sparse_solve(
                (np.array([0, 1, 2], np.int32), np.array([0, 1], np.int32),
                 np.array([np.nan, 2.0]), (2, 2)), np.ones(2)),
            "sparse_not_square": lambda: c.sparse_solve(
                (np.array([0, 1, 2], np.int32), np.array([0, 1], np.int32),
                 np.array([1.0, 2.0]), (2, 3)), np.ones(2)),
            "unknown_get": lambda: c.get(unknown, timeout=CALL_TIMEOUT),
            "unknown_delete": lambda: c.delete(unknown, timeout=CALL_TIMEOUT),
            "unknown_operand": lambda: self.invoke("Matmul", pb.MatmulRequest(
                a=pb.Tensor(resident_id=unknown), b=tensors.encode(ones, "b"))),
            "unknown_factor": lambda: c.solve(None, np.ones((n, 1)), factor=unknown),
            "unknown_release": lambda: c.release_factor(unknown, timeout=CALL_TIMEOUT),
            "singular_no_fallback": lambda: c.solve(np.zeros((n, n)), np.ones((n, 1)),
                                                    method="lu", no_fallback=True),
        }
        codes = {"unknown_get": NF, "unknown_delete": NF, "unknown_operand": NF,
                 "unknown_factor": NF, "unknown_release": NF, "singular_no_fallback": FP}
        name = self.py.choice(sorted(cases))
        if name.startswith("sparse") and "sparse_solve" in self.faults:
            codes[name] = None  # the fault may come first; either answer is right
        expected = codes.get(name, IA)
        allowed = (expected,) if expected else (IA, self.faults["sparse_solve"])
        try:
            return expect_codes(allowed, cases[name])
        except Unexpected as e:
            raise Unexpected(f"{name}: {e}") from None

    # -- cancellations and deadlines -------------------------------------------

    def op_cancel(self):
        """A call started as a future and cancelled a few ms later. If the cancel loses the
        race, the answer must still be right."""
        which = self.py.choice(["matmul", "solve", "sparse"])
        if which == "matmul":
            n = self.dim(200, 400)
            a, b = self.randn((n, n)), self.randn((n, n))
            kw = {}
            fut = self.c._stub.Matmul.future(self.matmul_request(a, b, kw), timeout=CALL_TIMEOUT)
        elif which == "solve":
            n = self.dim(200, 500)
            a = self.randn((n, n)) + 3.0 * math.sqrt(n) * np.eye(n)
            b = self.randn((n, 4))
            fut = self.c._stub.Solve.future(pb.SolveRequest(
                a=tensors.encode(a, "a"), b=tensors.encode(b, "b"), priority=self.priority()),
                timeout=CALL_TIMEOUT)
        else:
            d, _ = self.sparse_problem(n=self.dim(500, 1500), symmetric=False)
            b = self.randn((d.shape[0], 1))
            from linalgd.sparse import encode_csr
            fut = self.c._stub.SparseSolve.future(pb.SparseSolveRequest(
                a=encode_csr(self.csr(d)), b=tensors.encode(b, "b"),
                method=pb.SPARSE_METHOD_GMRES, tolerance=1e-12), timeout=CALL_TIMEOUT)
        self.stats.track(fut)
        time.sleep(self.py.uniform(0.0, 0.02))
        cancelled = fut.cancel()
        try:
            resp = fut.result(timeout=CALL_TIMEOUT)
        except grpc.FutureCancelledError:
            if not cancelled:
                raise Unexpected("future cancelled although cancel() returned False") from None
            return f"cancel_{which}", "cancelled"
        except grpc.RpcError as e:
            if which == "sparse" and e.code() == self.faults.get("sparse_solve"):
                return f"cancel_{which}", "fault_" + e.code().name
            raise Unexpected(f"cancel {which}: {e.code().name} ({e.details()})") from None
        if cancelled:
            raise Unexpected(f"cancel {which}: cancel() returned True but the future has a result")
        if which == "matmul":
            self.check_matmul("cancel-race matmul", tensors.decode(resp.out, "out"), a, b, kw)
        elif which == "solve":
            self.check_solve("cancel-race solve", tensors.decode(resp.x, "x"), a, b)
        else:
            x = tensors.decode(resp.x, "x")
            res = np.linalg.norm(d @ x - b) / np.linalg.norm(b)
            if not res <= 1e-9:
                raise WrongAnswer(f"cancel-race sparse: residual {res:.3g}")
        return f"cancel_{which}", "completed"

    def op_deadline(self):
        """A tiny deadline on a big-ish solve or product: DEADLINE_EXCEEDED, or a right answer."""
        timeout = self.py.uniform(0.001, 0.03)
        if self.py.random() < 0.6:
            n = self.dim(300, 600)
            a = self.randn((n, n)) + 3.0 * math.sqrt(n) * np.eye(n)
            b = self.randn((n, 2))
            which = "solve"
            call = lambda: self.c.solve(a, b, timeout=timeout, priority=self.priority())  # noqa
        else:
            n = self.dim(300, 500)
            a, b = self.randn((n, n)), self.randn((n, n))
            which = "matmul"
            call = lambda: self.c.matmul(a, b, timeout=timeout, priority=self.priority())  # noqa
        try:
            out = call()
        except linalgd.DeadlineExceeded:
            return f"deadline_{which}", "DEADLINE_EXCEEDED"
        except linalgd.LinalgdError as e:
            raise Unexpected(f"deadline {which}: {code_name(e.code)} ({e.message})") from None
        if which == "solve":
            self.check_solve("deadline-race solve", out, a, b)
        else:
            self.check_matmul("deadline-race matmul", out, a, b, {})
        return f"deadline_{which}", "completed"

    # -- the mix ----------------------------------------------------------------

    MIX = [  # (kind, method name, weight)
        ("matmul", "op_matmul", 16), ("matmul_batched", "op_matmul_shared", 8),
        ("matmul_futures", "op_future_burst", 4), ("solve", "op_solve", 10),
        ("sparse_solve", "op_sparse", 7), ("store", "op_store", 6),
        ("keep_result", "op_keep_result", 5), ("factor", "op_factor", 5),
        ("info", "op_info", 2), ("bad", "op_bad", 20), ("cancel", "op_cancel", 9),
        ("deadline", "op_deadline", 7),
    ]

    def op_matmul_shared(self):
        return self.op_matmul(shared_shape=True)

    def one_call(self):
        kind, method, _ = self.py.choices(self.MIX, weights=[w for *_, w in self.MIX])[0]
        try:
            outcome = getattr(self, method)()
            if isinstance(outcome, tuple):
                kind, outcome = outcome
            self.stats.record(kind, outcome or "ok")
        except WrongAnswer as e:
            self.stats.record(kind, "WRONG")
            self.stats.fail(self.stats.wrong, kind, str(e))
        except Unexpected as e:
            self.stats.record(kind, "UNEXPECTED")
            self.stats.fail(self.stats.unexpected, kind, str(e))
        except linalgd.LinalgdError as e:
            self.stats.record(kind, "UNEXPECTED")
            self.stats.fail(self.stats.unexpected, kind, str(e))
        except Exception:  # noqa: BLE001  a bug in the soak or the client: report it
            self.stats.record(kind, "UNEXPECTED")
            self.stats.fail(self.stats.unexpected, kind, traceback.format_exc(limit=4))


# -- the server process ------------------------------------------------------------

def proc_resources(pid):
    status = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            status[key] = value.split()
    with open(f"/proc/{pid}/maps") as f:
        maps = sum(1 for _ in f)
    return {"rss_kib": int(status["VmRSS"][0]), "threads": int(status["Threads"][0]),
            "fds": len(os.listdir(f"/proc/{pid}/fd")), "maps": maps}


def resources_over(base, now):
    """The resources that grew past their bound: {name: (base, now, bound)}."""
    over = {}
    for key, floor in RESOURCE_FLOORS.items():
        bound = base[key] + max(RESOURCE_FRACTION * base[key], floor)
        if now[key] > bound:
            over[key] = (base[key], now[key], bound)
    return over


def format_resources(base, now):
    return (f"rss {base['rss_kib'] / 1024:.1f}->{now['rss_kib'] / 1024:.1f} MiB, threads "
            f"{base['threads']}->{now['threads']}, fds {base['fds']}->{now['fds']}, maps "
            f"{base['maps']}->{now['maps']}")


class Monitor(threading.Thread):
    """Polls health every 0.25 s and watches the process: SERVING and alive throughout."""

    def __init__(self, server, stats):
        super().__init__(daemon=True, name="soak-health")
        self.server, self.stats = server, stats
        self.stop_event = threading.Event()
        self.died = None

    def run(self):
        policy = linalgd.RetryPolicy(retries=0)
        with linalgd.Client(self.server.target, timeout=5.0, retry_policy=policy) as c:
            while not self.stop_event.wait(0.25):
                rc = self.server.proc.poll()
                if rc is not None:
                    self.died = rc
                    return
                try:
                    status = c.health(timeout=5.0)
                except linalgd.LinalgdError as e:
                    status = f"{code_name(e.code)}: {e.message}"
                with self.stats.lock:
                    self.stats.health_polls += 1
                    if status != "SERVING":
                        self.stats.health_bad.append(status)

    def stop(self):
        self.stop_event.set()
        self.join()


def poisson(m):
    """The 5-point Laplacian on an m x m grid as (indptr, indices, data, shape), int32."""
    n = m * m
    idx = np.arange(n).reshape(m, m)
    rows, cols, vals = [idx.ravel()], [idx.ravel()], [np.full(n, 4.0)]
    for src, dst in ((idx[:, :-1], idx[:, 1:]), (idx[:, 1:], idx[:, :-1]),
                     (idx[:-1, :], idx[1:, :]), (idx[1:, :], idx[:-1, :])):
        rows.append(src.ravel())
        cols.append(dst.ravel())
        vals.append(np.full(src.size, -1.0))
    r, c, v = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    order = np.lexsort((c, r))
    indptr = np.zeros(n + 1, np.int32)
    np.cumsum(np.bincount(r, minlength=n), out=indptr[1:])
    return indptr, c[order].astype(np.int32), v[order], (n, n)


def abandoned_work_check(server, cpu_workers=2):
    """Long GMRES solves (one per CPU worker of the test server), abandoned: one cancelled,
    the others past a short deadline. A small call made right after must not wait for them
    to run out their iterations. Returns (seconds the solve takes when left to run, seconds
    the small call took, problems)."""
    from linalgd.sparse import encode_csr
    a = poisson(100)
    b = np.ones((a[3][0], 1))
    req = pb.SparseSolveRequest(a=encode_csr(a), b=tensors.encode(b, "b"),
                                method=pb.SPARSE_METHOD_GMRES, tolerance=1e-16,
                                max_iterations=12000, no_fallback=True)
    problems = []
    with linalgd.Client(server.target, timeout=CALL_TIMEOUT) as c:
        t0 = time.monotonic()
        try:  # the yardstick: never reaches 1e-16, so it runs all its iterations
            c._stub.SparseSolve(req, timeout=CALL_TIMEOUT)
            problems.append("abandon check: the long GMRES solve converged; make it longer")
        except grpc.RpcError as e:
            # On a loaded machine the yardstick may run out the server's --op-timeout
            # first: it stopped at the timeout, which still makes it a long solve.
            stopped = e.code() == DE and "--op-timeout" in (e.details() or "")
            if e.code() != FP and not stopped:
                problems.append(f"abandon check: the long solve gave {e.code().name} "
                                f"({e.details()}), expected FAILED_PRECONDITION")
        full = time.monotonic() - t0
        cancelled = c._stub.SparseSolve.future(req, timeout=CALL_TIMEOUT)
        expiring = [c._stub.SparseSolve.future(req, timeout=0.3) for _ in range(cpu_workers - 1)]
        time.sleep(0.3)
        cancelled.cancel()
        for f in expiring:
            try:
                f.result()
                problems.append("abandon check: a solve with a 0.3 s deadline succeeded")
            except grpc.RpcError as e:
                if e.code() != DE:
                    problems.append(f"abandon check: {e.code().name}, expected DEADLINE_EXCEEDED")
        t0 = time.monotonic()
        c.matmul(np.ones((8, 8)), np.ones((8, 8)), timeout=CALL_TIMEOUT)
        probe = time.monotonic() - t0
    if full < 1.0:
        problems.append(f"abandon check: the long solve took only {full:.2f} s; make it longer")
    elif probe > max(0.5, full / 4):
        problems.append(f"abandoned work holds the CPU workers: a small matmul took {probe:.2f} s "
                        f"after {cpu_workers} long GMRES solves ({full:.2f} s each when left to "
                        "run) were cancelled / expired")
    return full, probe, problems


def run_load(server, seconds, callers, stats, faults, seed):
    """callers threads (sharing a few clients) run the mix for seconds."""
    policy = linalgd.RetryPolicy(retries=3, initial_backoff=0.05)
    clients = [linalgd.Client(server.target, timeout=CALL_TIMEOUT, retry_policy=policy)
               for _ in range(4)]
    end = time.monotonic() + seconds

    def work(i):
        caller = Caller(clients[i % len(clients)], seed * 1000 + i, stats, faults)
        while time.monotonic() < end and server.proc.poll() is None:
            caller.one_call()

    threads = [threading.Thread(target=work, args=(i,), name=f"soak-caller-{i}", daemon=True)
               for i in range(callers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 2 * CALL_TIMEOUT + 30)
    stuck = [t.name for t in threads if t.is_alive()]
    for c in clients:
        c.close()
    return stuck


def soak(name, seconds, callers, flags, faults, report, abandon_check=False):
    stats = Stats()
    server = Server(*flags).start()
    pid = server.proc.pid
    monitor = Monitor(server, stats)
    monitor.start()
    problems = []
    base = now = None
    abandon = ""
    try:
        warm = min(20.0, max(5.0, 0.15 * seconds))
        problems += [f"caller stuck in warm-up: {t}"
                     for t in run_load(server, warm, callers, stats, faults, seed=1)]
        time.sleep(2.0)
        if server.proc.poll() is None:
            base = proc_resources(pid)
        problems += [f"caller stuck: {t}"
                     for t in run_load(server, seconds, callers, stats, faults, seed=2)]
        # Settle: abandoned (cancelled, expired) work drains; allocators return what they do.
        settle_end = time.monotonic() + 20.0
        time.sleep(3.0)
        while base is not None and server.proc.poll() is None:
            now = proc_resources(pid)
            if not resources_over(base, now) or time.monotonic() > settle_end:
                break
            time.sleep(1.0)
        if server.proc.poll() is None:
            with linalgd.Client(server.target, timeout=10.0) as c:
                left = c.list_tensors()
            if left:
                problems.append(f"{len(left)} resident tensors/factors left in the store, "
                                f"e.g. {left[0]}")
        if abandon_check and server.proc.poll() is None:
            full, probe, found = abandoned_work_check(server)
            abandon = f" | abandoned GMRES: {full:.2f}s when run, small call after {probe:.2f}s"
            problems += found
    finally:
        monitor.stop()
        crashed = server.proc.poll() is not None
        # Work still in flight (the abandon check's solves) may be drained for up to
        # --shutdown-grace (30 s); a server that outlives it is killed and counts as a crash.
        server.stop(wait=40)
    rc = server.proc.returncode
    crashes = int(crashed or monitor.died is not None or rc != 0)
    with stats.lock:
        unfinished = sum(1 for f, _ in stats.futures if not f.done())
        twice = sum(1 for _, n in stats.futures if n > 1)
        never = sum(1 for f, n in stats.futures if f.done() and n == 0)
        total = sum(stats.calls.values())
        line = (f"soak {name}: {seconds:g}s callers={callers} calls={total} "
                f"{stats.summary()} | wrong {len(stats.wrong)} crashes {crashes} "
                f"unexpected {len(stats.unexpected)} futures {len(stats.futures)} "
                f"(twice {twice}, never {never}, unfinished {unfinished}) health "
                f"{stats.health_polls - len(stats.health_bad)}/{stats.health_polls} SERVING | "
                + (format_resources(base, now) if base and now else "resources: n/a")
                + abandon)
    report(line)
    print(line)
    for bucket, label in ((stats.wrong, "WRONG"), (stats.unexpected, "UNEXPECTED")):
        seen = collections.Counter()
        for kind, msg in bucket:
            key = (kind, msg.splitlines()[0][:80] if msg else "")
            seen[key] += 1
            if seen[key] <= 2:
                report(f"  {label} {kind}: {msg.strip()[:400]}")
    if crashes:
        problems.append(f"server died or exited uncleanly (exit status {rc}, monitor saw "
                        f"{monitor.died})\n{server.output()}")
    if stats.wrong:
        problems.append(f"{len(stats.wrong)} wrong answers")
    if stats.unexpected:
        problems.append(f"{len(stats.unexpected)} unexpected outcomes")
    if stats.health_bad:
        problems.append(f"health not SERVING {len(stats.health_bad)} times, e.g. "
                        f"{stats.health_bad[:3]}")
    if stats.health_polls == 0:
        problems.append("the health monitor never polled")
    if twice or never or unfinished:
        problems.append(f"futures: {twice} completed twice, {never} never called back, "
                        f"{unfinished} unfinished")
    if base is None or now is None:
        problems.append("no resource samples")
    else:
        over = resources_over(base, now)
        if over:
            problems.append("resources grew: " + ", ".join(
                f"{k} {b} -> {n} (bound {bound:.0f})" for k, (b, n, bound) in over.items()))
    for kind in ("matmul", "solve", "sparse_solve", "bad", "cancel_solve"):
        if not any(k == kind for k, _ in stats.calls):
            problems.append(f"no {kind} calls were made")
    if problems:
        report(f"  FAILED {name}: " + "; ".join(p.splitlines()[0] for p in problems))
    assert not problems, "\n".join(problems)
    os.unlink(server.log.name)


def test_soak(soak_seconds, soak_callers, soak_summary):
    soak("main", soak_seconds, soak_callers, (), {}, soak_summary, abandon_check=True)


def test_soak_with_injected_faults(soak_seconds, soak_callers, soak_summary):
    """A shorter phase against a server whose backends stall or fail by rule."""
    soak("faults", min(60.0, max(10.0, soak_seconds / 4)), soak_callers,
         ("--inject-faults", FAULT_SPEC), FAULTS, soak_summary)


if __name__ == "__main__":
    sys.exit(pytest.main([os.path.abspath(__file__), "-q", *sys.argv[1:]]))
