"""A tenant whose store quota leaves no room for a call's temporaries: both
clients (linalgd.Client and linalgd.aio.Client) against the real server.

The tenant "tight" may store 3 MiB, less than one 5 MiB operand or result,
and keeps 2 MiB of its own data there. Its calls with a 5 MiB operand, or a
5 MiB result, get the right answer inline; over the message limit they still
fail RESOURCE_EXHAUSTED naming the bytes and the limit; a refusal for another
limit (a full --max-inflight-bytes, the tenant's max_message_bytes) is not
taken for the store's; no temporary is left in the store.

The tenant "roomy" may store 10 MiB: its own 6 MiB tensor or a call's 5 MiB
temporary, not both. The server evicts nothing for a call's temporaries
(PutTensorHeader.no_evict, results kept for the client's own transfer), so
the call goes inline and the tenant's tensor stays, bytes intact; with room
free they are stored and deleted as before; a plain put still evicts the
least recently used. The same without tenants near a full --store-bytes.
"""
import asyncio
import hashlib
import logging
import re
import urllib.request

import numpy as np
import pytest

import linalgd
import linalgd.aio
from numerics import assert_close

TIGHT, SMALL, ROOMY = "tight-quota-token", "small-quota-token", "roomy-quota-token"
QUOTA, ROOMY_QUOTA = 3 << 20, 10 << 20
RNG = np.random.default_rng(11)
A_BIG, B_THIN = RNG.standard_normal((640, 1024)), RNG.standard_normal((1024, 8))  # a: 5 MiB
A_TALL, B_WIDE = RNG.standard_normal((1024, 16)), RNG.standard_normal((16, 640))  # out: 5 MiB


def tokens_file(tmp_path):
    sha = lambda t: hashlib.sha256(t.encode()).hexdigest()  # noqa: E731
    path = tmp_path / "tokens"
    path.write_text(f"tight {sha(TIGHT)} store_bytes={QUOTA}\n"
                    f"small {sha(SMALL)} max_message_bytes=1048576\n"
                    f"roomy {sha(ROOMY)} store_bytes={ROOMY_QUOTA}\n")
    return str(path)


def start(start_server, tmp_path, *flags):
    return start_server("--auth-tokens", tokens_file(tmp_path), *flags)


def own_data(c):
    """The tenant's own 2 MiB tensor: most of its quota."""
    return c.put(np.ones((256, 1024))).id


def listed(c):
    return [t.id for t in c.list_tensors()]


@pytest.fixture
def debug_log(caplog):
    caplog.set_level(logging.DEBUG, logger="linalgd")
    return caplog


def test_operands_the_quota_refuses_go_inline(start_server, tmp_path, debug_log):
    s = start(start_server, tmp_path)
    with linalgd.Client(s.target, token=TIGHT, retries=0) as c:
        mine = own_data(c)
        assert_close(c.matmul(A_BIG, B_THIN), A_BIG @ B_THIN)
        square = RNG.standard_normal((1024, 1024)) + 64 * np.eye(1024)  # 8 MiB
        x = c.solve(square, B_THIN)
        np.testing.assert_allclose(square @ x, B_THIN, atol=1e-9)
        assert listed(c) == [mine]
    assert "Matmul: the store refused its operands' uploads (tenant quota " \
        f"store_bytes={QUOTA}" in debug_log.text
    assert "Solve: the store refused" in debug_log.text
    assert "sending them inline instead" in debug_log.text


def test_a_result_the_quota_refuses_to_keep_comes_inline(start_server, tmp_path, debug_log):
    s = start(start_server, tmp_path)
    with linalgd.Client(s.target, token=TIGHT, retries=0) as c:
        mine = own_data(c)
        assert_close(c.matmul(A_TALL, B_WIDE), A_TALL @ B_WIDE)
        with pytest.raises(linalgd.ResourceExhausted) as e:
            c.matmul(A_TALL, B_WIDE, keep=True)  # asked to be kept: the refusal stands
        # Refused before the product ran: no store could ever keep it for this tenant.
        assert "keep_result: out: the result [1024, 640] is 5242880 bytes, more than the " \
            f"tenant quota store_bytes={QUOTA} can ever hold; ask for it inline instead" \
            in str(e.value)
        assert listed(c) == [mine]
    assert "Matmul: the store refused to keep its result; the server sent it inline " \
        "(5242880 bytes)" in debug_log.text


def test_over_the_message_limit_the_quota_error_stands_naming_the_bytes(start_server,
                                                                        tmp_path):
    s = start(start_server, tmp_path, "--max-message-bytes", str(4 << 20))
    with linalgd.Client(s.target, token=TIGHT, retries=0) as c:
        mine = own_data(c)
        with pytest.raises(linalgd.ResourceExhausted) as e:
            c.matmul(A_BIG, B_THIN)
        message = str(e.value)
        assert f"tenant quota store_bytes={QUOTA}: 5242880 bytes" in message
        assert "the operands are too large to send inline instead: the request would be " \
            "5308" in message
        assert "over the 4194304-byte message limit (the smaller of the client's " \
            "max_message_bytes" in message and "and the server's 4194304)" in message
        assert e.value.trailing_metadata  # the server's, kept
        with pytest.raises(linalgd.ResourceExhausted) as e:
            c.matmul(A_TALL, B_WIDE)
        # Neither inline (past the message limit) nor kept (past the quota): refused before
        # the product ran.
        assert "keep_result: out: the result [1024, 640] is 5242880 bytes, more than the " \
            f"tenant quota store_bytes={QUOTA} can ever hold; write it to shared memory " \
            "(out_shm)" in str(e.value)
        assert listed(c) == [mine]
    with linalgd.Client(s.target, token=TIGHT) as c:  # retries on: not for a store refusal
        with pytest.raises(linalgd.ResourceExhausted) as e:
            c.matmul(A_TALL, B_WIDE)
        assert e.value.attempts == 1  # the product ran once


def test_a_queue_refusal_after_the_inline_resend_is_not_a_quota_refusal(start_server, tmp_path,
                                                                        debug_log):
    s = start(start_server, tmp_path, "--max-inflight-bytes", str(4 << 20))
    with linalgd.Client(s.target, token=TIGHT, retries=0) as c:
        with pytest.raises(linalgd.ResourceExhausted) as e:
            c.matmul(A_BIG, B_THIN)
        assert "do not fit in --max-inflight-bytes=4194304" in str(e.value)
        assert "inline" not in str(e.value)
        # The inline request alone passes the limit: no retry-after, never-fits instead.
        assert e.value.retry_after is None
        assert ("linalgd-never-fits", "--max-inflight-bytes") in e.value.trailing_metadata
        assert listed(c) == []
    assert debug_log.text.count("sending them inline instead") == 1


def test_an_upload_refused_for_another_limit_is_not_sent_inline(start_server, tmp_path,
                                                                debug_log):
    s = start(start_server, tmp_path)
    with linalgd.Client(s.target, token=SMALL, retries=0) as c:
        with pytest.raises(linalgd.ResourceExhausted) as e:
            c.matmul(A_BIG, B_THIN)
        assert "tenant quota max_message_bytes=1048576" in str(e.value)
        assert "inline" not in str(e.value)
        assert listed(c) == []
    assert "inline" not in debug_log.text


def test_a_refused_upload_leaves_none_of_the_others_stored(start_server, tmp_path):
    """a (2 MiB) fits the quota and is uploaded, b (3.1 MiB) is refused: a's
    stored copy is deleted, then the call goes inline."""
    s = start(start_server, tmp_path)
    a, b = RNG.standard_normal((256, 1024)), RNG.standard_normal((1024, 400))  # out: 800 KiB
    with linalgd.Client(s.target, token=TIGHT, retries=0) as c:
        c.stream_threshold = 1 << 20  # both uploaded, at once
        assert_close(c.matmul(a, b), a @ b)
        assert listed(c) == []


def test_the_asyncio_client_falls_back_alike(start_server, tmp_path, debug_log):
    s = start(start_server, tmp_path, "--max-message-bytes", str(16 << 20))

    async def main():
        async with linalgd.aio.Client(s.target, token=TIGHT, retries=0) as c:
            mine = (await c.put(np.ones((256, 1024)))).id
            assert_close(await c.matmul(A_BIG, B_THIN), A_BIG @ B_THIN)
            assert_close(await c.matmul(A_TALL, B_WIDE), A_TALL @ B_WIDE)
            with pytest.raises(linalgd.ResourceExhausted) as e:
                await c.matmul(np.ones((2400, 1024)), B_THIN)  # 18.75 MiB inline: too large
            assert "too large to send inline instead" in str(e.value)
            assert "16777216-byte message limit" in str(e.value)
            assert [t.id for t in await c.list_tensors()] == [mine]
    asyncio.run(main())
    assert "sending them inline instead" in debug_log.text
    assert "the server sent it inline" in debug_log.text


W = RNG.standard_normal((768, 1024))  # 6 MiB: the caller's own data, e.g. a pipeline's weights


def check_products(c):
    assert_close(c.matmul(A_BIG, B_THIN), A_BIG @ B_THIN)
    assert_close(c.matmul(A_TALL, B_WIDE), A_TALL @ B_WIDE)


def test_a_calls_temporaries_never_evict_the_callers_own_tensor(start_server, tmp_path,
                                                                 debug_log):
    s = start(start_server, tmp_path)
    with linalgd.Client(s.target, token=ROOMY, retries=0) as c:
        mine = c.put(W, ttl=3600).id
        check_products(c)
        np.testing.assert_array_equal(c.get(mine), W)
        c.transfer_part_min_bytes = 1 << 20  # multi-part uploads: StartUpload reserves
        check_products(c)
        np.testing.assert_array_equal(c.get(mine), W)
        assert listed(c) == [mine]
    assert f"tenant quota store_bytes={ROOMY_QUOTA}: 5242880 bytes" in debug_log.text
    assert "evicts nothing" in debug_log.text
    assert "sending them inline instead" in debug_log.text
    assert "the server sent it inline" in debug_log.text


def test_without_tenants_temporaries_never_evict_what_was_stored(start_server, debug_log):
    s = start_server("--store-bytes", str(10 << 20))

    async def main():
        async with linalgd.aio.Client(s.target, retries=0) as c:
            mine = (await c.put(W)).id
            assert_close(await c.matmul(A_BIG, B_THIN), A_BIG @ B_THIN)
            assert_close(await c.matmul(A_TALL, B_WIDE), A_TALL @ B_WIDE)
            np.testing.assert_array_equal(await c.get(mine), W)
            assert [t.id for t in await c.list_tensors()] == [mine]
    asyncio.run(main())
    with linalgd.Client(s.target, retries=0) as c:
        mine = listed(c)[0]
        check_products(c)
        np.testing.assert_array_equal(c.get(mine), W)
    assert "are not free in --store-bytes=10485760" in debug_log.text
    assert "the server sent it inline" in debug_log.text


def ok_requests(s, op):
    text = urllib.request.urlopen(f"http://127.0.0.1:{s.metrics_port}/metrics").read().decode()
    return sum(int(n) for n in re.findall(
        r'linalgd_requests_total\{[^}]*code="OK",op="' + op + r'",tenant="roomy"\} (\d+)', text))


def test_with_room_free_temporaries_are_stored_and_deleted(start_server, tmp_path, debug_log):
    s = start_server("--auth-tokens", tokens_file(tmp_path), metrics=True)
    with linalgd.Client(s.target, token=ROOMY, retries=0) as c:
        check_products(c)
        assert listed(c) == []

    async def main():
        async with linalgd.aio.Client(s.target, token=ROOMY, retries=0) as c:
            assert_close(await c.matmul(A_BIG, B_THIN), A_BIG @ B_THIN)
            assert [t.id for t in await c.list_tensors()] == []
    asyncio.run(main())
    assert "refused" not in debug_log.text
    assert ok_requests(s, "DeleteTensor") == 3  # two uploaded operands, one kept result
    assert ok_requests(s, "GetTensor") >= 1  # the kept result, fetched


def test_a_plain_put_still_evicts_the_least_recently_used(start_server, tmp_path):
    s = start(start_server, tmp_path)
    with linalgd.Client(s.target, token=ROOMY, retries=0) as c:
        first = c.put(W).id
        second = c.put(A_BIG).id  # 5 MiB: only evicting the first makes room
        with pytest.raises(linalgd.NotFound) as e:
            c.get(first)
        assert "evicted" in str(e.value)
        assert listed(c) == [second]


def test_a_put_with_no_evict_is_refused_and_evicts_nothing(start_server, tmp_path):
    s = start(start_server, tmp_path)
    with linalgd.Client(s.target, token=ROOMY, retries=0) as c:
        first = c.put(W).id
        with pytest.raises(linalgd.ResourceExhausted) as e:
            c.put(A_BIG, no_evict=True)  # 5 MiB: would need the first evicted
        assert "5242880" in str(e.value) and f"store_bytes={ROOMY_QUOTA}" in str(e.value)
        np.testing.assert_array_equal(c.get(first), W)
        assert listed(c) == [first]
        small = c.put(B_THIN, no_evict=True)  # 64 KiB: room enough, stored as usual
        np.testing.assert_array_equal(small.get(), B_THIN)

    async def main():
        async with linalgd.aio.Client(s.target, token=ROOMY, retries=0) as c:
            with pytest.raises(linalgd.ResourceExhausted):
                await c.put(A_BIG, no_evict=True)
            assert sorted(t.id for t in await c.list_tensors()) == sorted([first, small.id])
    asyncio.run(main())
