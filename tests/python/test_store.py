"""Resident tensors, automatic streaming and cached factors through the Python client."""
import numpy as np
import pytest

import linalgd


def test_put_get_round_trip_odd_sizes(client):
    client.chunk_bytes = 1000
    rng = np.random.default_rng(1)
    for shape in [(3, 1001), (1, 1), (7,), (2, 3, 5)]:
        x = rng.standard_normal(shape).astype(np.float32)
        t = client.put(x)
        assert len(t.id) == 32 and t.shape == x.shape and t.dtype == x.dtype
        np.testing.assert_array_equal(client.get(t), x)
        np.testing.assert_array_equal(client.get(t.id), x)  # the id API
        client.delete(t.id)
        with pytest.raises(linalgd.NotFound, match="deleted"):
            t.get()


def test_unknown_id_is_not_found(client):
    with pytest.raises(linalgd.NotFound, match="unknown"):
        client.get("0" * 32)


def test_large_operands_stream_past_the_message_limit(start_server):
    server = start_server("--max-message-bytes", str(1 << 20))
    with linalgd.Client(server.target, timeout=30.0, max_message_bytes=1 << 20) as c:
        c.stream_threshold = 256 << 10
        c.chunk_bytes = 256 << 10
        rng = np.random.default_rng(2)
        a = rng.standard_normal((512, 600)).astype(np.float32)
        b = rng.standard_normal((600, 512)).astype(np.float32)
        out = c.matmul(a, b)
        np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-3)
        assert c.list_tensors() == []  # temporaries deleted


def test_factor_reuse_matches_fresh_solves(client):
    rng = np.random.default_rng(3)
    n = 80
    a = rng.standard_normal((n, n)) + n * np.eye(n)
    f = client.factorize(a, method="lu")
    assert f.n == n and f.placement == "cpu" and f.method == linalgd.SolveMethod.LU
    for k in (1, 3, 5):
        b = rng.standard_normal((n, k))
        np.testing.assert_allclose(client.solve(None, b, factor=f.factor_id),
                                   client.solve(a, b), rtol=1e-10, atol=1e-12)
    client.release_factor(f.factor_id)
    with pytest.raises(linalgd.NotFound):
        client.solve(None, rng.standard_normal((n, 1)), factor=f.factor_id)
