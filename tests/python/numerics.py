"""Comparing a float64 result with numpy's own."""
import numpy as np


def assert_close(out, ref, rtol=1e-10):
    """out equals ref element-wise within rtol of ref's largest magnitude.

    The server's BLAS and numpy's round differently (another OpenBLAS kernel,
    another summation order): an entry that cancels to near zero may differ
    from numpy's by more than rtol relative to itself, never by more than rtol
    relative to the largest entry (seen on a 16-core host: 2.3e-10 relative,
    1.8e-14 absolute, in a 256 x 400 product of entries ~50).
    """
    ref = np.asarray(ref)
    np.testing.assert_allclose(out, ref, rtol=rtol, atol=rtol * float(np.abs(ref).max(initial=0)))
