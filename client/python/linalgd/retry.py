"""Retry policy: exponential backoff with jitter, bounded by the call deadline.

A failed attempt is retried when its status code is in `codes` (default
UNAVAILABLE and RESOURCE_EXHAUSTED), attempts remain, and the next attempt can
start before the call's deadline. The server's `retry-after-ms` trailing
metadata, when present, replaces the computed delay. Errors produced by the
client itself (e.g. a message over the size limit) are never retried, nor is a
refusal of the server's store (linalgd-store-refused: a tenant's quota or a
full store): another attempt would run the operation again, and only freeing
stored objects makes room (the clients already sent what fit inline instead);
nor a request the server says can never fit (linalgd-never-fits: it alone passes
--max-inflight-bytes or the tenant's max_queued_bytes).

With several replicas (an ipv4: list or a dns: target), a stateless call that
fails with a code in `failover_codes` is first retried at once on another
replica (failovers of them per call), then backs off as above.
"""
import dataclasses
import math
import numbers
import random

import grpc

from .errors import never_fits, store_refusal

DEFAULT_CODES = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED})
# gRPC's own RESOURCE_EXHAUSTED for an oversized message: retrying cannot help.
_LOCAL_SIZE_ERRORS = ("larger than max", "message too large")


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """retries: extra attempts after the first; delays in seconds."""
    retries: int = 5  # waits of about 0.1, 0.2, 0.4, 0.8, 1.6 s
    initial_backoff: float = 0.1
    max_backoff: float = 2.0
    multiplier: float = 2.0
    jitter: float = 0.2  # +- fraction applied to the computed delay
    codes: frozenset = DEFAULT_CODES
    failover_codes: frozenset = frozenset({grpc.StatusCode.UNAVAILABLE})
    failovers: int = 1  # immediate retries on another replica, per call

    def __post_init__(self):
        for name in ("initial_backoff", "max_backoff", "multiplier", "jitter"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value):
                raise ValueError(f"{name}: {value!r} is not a number")
        for name in ("retries", "failovers"):  # whole numbers; retries may be math.inf
            value = getattr(self, name)
            whole = isinstance(value, numbers.Integral) or (name == "retries" and value == math.inf)
            if isinstance(value, bool) or not whole or value < 0:
                raise ValueError(f"{name}: {value!r} is not a whole number (0 or more)")
        if self.initial_backoff < 0 or self.max_backoff < 0 or self.multiplier < 1:
            raise ValueError("backoff must be >= 0 and multiplier >= 1")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"jitter: {self.jitter}; it must be in [0, 1]")

    def should_retry(self, error, attempt):
        """attempt: 1-based number of the attempt that just failed."""
        if attempt > self.retries or error.code not in self.codes:
            return False
        if store_refusal(error) is not None or never_fits(error) is not None:
            return False
        msg = (error.message or "").lower()
        return not any(s in msg for s in _LOCAL_SIZE_ERRORS)

    def should_fail_over(self, error, failovers_done):
        """Whether a stateless call retries at once on another replica."""
        return failovers_done < self.failovers and error.code in self.failover_codes

    def delay(self, attempt, retry_after=None, rng=random):
        """Seconds to wait before attempt + 1."""
        if retry_after is not None:
            return retry_after
        base = min(self.max_backoff, self.initial_backoff * self.multiplier ** (attempt - 1))
        return max(0.0, base * (1.0 + self.jitter * (2.0 * rng.random() - 1.0)))
