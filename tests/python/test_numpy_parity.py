"""numpy's own test cases run through linalgd.

numpy.linalg's SolveCases (over numpy's case list: square, size-0, batched and
strided systems) and numpy.matmul's MatmulCommon are loaded from the installed
numpy's test modules (numpy/linalg/tests/test_linalg.py and, by numpy's
version, numpy/core or numpy/_core tests/test_multiarray.py) and run against
the real server. The adapters below change the calling convention only:

- linalg.solve -> Client.solve: inputs numpy computes in float64 (integer
  lists) are sent as float64, as numpy.linalg.solve converts them; before
  numpy 2, b of a.ndim - 1 dims is a stack of vectors (numpy 2: b.ndim == 1).
- matmul -> Client.matmul: a 0-d result becomes a numpy scalar, as ufuncs
  return.

A case whose dtype the server does not serve (integer, bool, long double, long
complex, object) is counted apart, not failed: a solve case stands in numpy's
case list as a counter (numpy's tag filter still picks the cases of each
test), a matmul of such a dtype is computed by numpy itself so that the test
goes on. Each test reports its counts as a warning (shown in pytest's warnings
summary) and as junit properties. SERVED_DTYPES is the one list to extend when
the server serves more dtypes.
"""
import collections
import importlib
import warnings

import numpy as np
import pytest

# The dtypes linalgd serves that numpy's cases use (bfloat16 is served too; numpy has none).
SERVED_DTYPES = [np.float16, np.float32, np.float64, np.complex64, np.complex128]

NUMPY2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"
LINALG_TESTS = "numpy.linalg.tests.test_linalg"
MATMUL_TESTS = "numpy._core.tests.test_multiarray" if NUMPY2 else "numpy.core.tests.test_multiarray"


class NumpyParityCounts(UserWarning):
    """How many of a numpy test's cases linalgd served, and which it did not."""


def _numpy_tests(name):
    """(module, "") or (None, why it is missing)."""
    try:
        return importlib.import_module(name), ""
    except ImportError as e:
        return None, f"numpy {np.__version__} has no test module {name} ({e})"


def _kind(dtype):
    """The counter of a dtype: served as itself, or a group left to numpy."""
    if any(dtype == np.dtype(d) for d in SERVED_DTYPES):
        return f"served {dtype.name}"
    groups = {"i": "integer", "u": "integer", "b": "bool"}  # clongdouble: its own name
    return f"not served: {groups.get(dtype.kind, dtype.name)}"


class Counts:
    def __init__(self):
        self.by_kind = collections.Counter()

    def served(self, dtype):
        kind = _kind(dtype)
        self.by_kind[kind] += 1
        return kind.startswith("served")

    def report(self, test, record_property):
        text = ", ".join(f"{k} {n}" for k, n in sorted(self.by_kind.items()))
        for k, n in self.by_kind.items():
            record_property(k, n)
        warnings.warn(NumpyParityCounts(f"{test}: {text or 'no cases'}"), stacklevel=1)
        assert any(k.startswith("served") for k in self.by_kind), f"{test} served no case"


def solve_dtype(a, b):
    """The dtype numpy.linalg.solve computes in (integer inputs in float64)."""
    dtype = np.result_type(np.asarray(a), np.asarray(b))
    return np.dtype(np.float64) if dtype.kind in "iub" else dtype


class NotServedCase:
    """A numpy LinalgCase of a dtype the server does not serve: numpy's tag
    filter sees its tags; running it only counts it."""

    def __init__(self, case, counts):
        self.tags, self.name = case.tags, case.name
        self._dtype, self._counts = solve_dtype(case.a, case.b), counts

    def check(self, do):
        self._counts.served(self._dtype)


def linalgd_solve(client, counts):
    def solve(a, b):
        dtype = solve_dtype(a, b)
        assert counts.served(dtype), f"a {dtype} case reached the server"
        a_arr = np.asarray(a).astype(dtype, copy=False)
        b_arr = np.asarray(b).astype(dtype, copy=False)
        stacked_vectors = not NUMPY2 and b_arr.ndim > 1 and b_arr.ndim == a_arr.ndim - 1
        if stacked_vectors:
            return client.solve(a_arr, b_arr[..., None])[..., 0]
        return client.solve(a_arr, b_arr)
    return solve


def linalgd_matmul(client, counts):
    def matmul(a, b):
        if not counts.served(np.result_type(a, b)):
            return np.matmul(a, b)
        out = client.matmul(a, b)
        return out[()] if out.ndim == 0 else out
    return matmul


class _Linalg:
    """numpy.linalg with solve replaced."""

    def __init__(self, solve):
        self.solve = solve

    def __getattr__(self, name):
        return getattr(np.linalg, name)


linalg_tests, linalg_missing = _numpy_tests(LINALG_TESTS)
matmul_tests, matmul_missing = _numpy_tests(MATMUL_TESTS)

if linalg_tests is not None:
    class TestNumpySolveCases(linalg_tests.SolveCases):
        @pytest.fixture(autouse=True)
        def _through_linalgd(self, client, monkeypatch, request, record_property):
            counts = Counts()
            monkeypatch.setattr(linalg_tests, "linalg", _Linalg(linalgd_solve(client, counts)))
            self.TEST_CASES = [
                c if _kind(solve_dtype(c.a, c.b)).startswith("served") else NotServedCase(c, counts)
                for c in linalg_tests.CASES]
            yield
            counts.report(f"{LINALG_TESTS}.SolveCases.{request.node.name}", record_property)

    def test_complex_solve_cases_are_served():
        """numpy's complex64 and complex128 solve cases go to the server, not to the counter."""
        kinds = collections.Counter(_kind(solve_dtype(c.a, c.b)) for c in linalg_tests.CASES)
        assert kinds["served complex64"] > 0 and kinds["served complex128"] > 0, kinds
else:
    def test_numpy_solve_cases():
        pytest.skip(linalg_missing)

if matmul_tests is not None:
    class TestNumpyMatmulCommon(matmul_tests.MatmulCommon):
        @pytest.fixture(autouse=True)
        def _through_linalgd(self, client, request, record_property):
            counts = Counts()
            self.matmul = linalgd_matmul(client, counts)
            yield
            counts.report(f"{MATMUL_TESTS}.MatmulCommon.{request.node.name}", record_property)
else:
    def test_numpy_matmul_cases():
        pytest.skip(matmul_missing)
