#ifndef LINALGD_CLIENT_SRC_DEADLINE_H_
#define LINALGD_CLIENT_SRC_DEADLINE_H_

// One public call's deadline, fixed when the call starts and kept by every
// RPC it makes: operand uploads, the RPC itself, the fetch of a kept result,
// a retry on another replica, a factorization made again. Each phase used to
// start its own timeout, so a call could run for several timeouts in all.
// Internal to the client library.

#include <algorithm>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "linalgd/options.h"

namespace linalgd::client::internal {

// How long past its call's deadline the deletion of a call's temporaries (and
// the abort of its unfinished upload) may keep the caller waiting, all of them
// together. Not zero, because a temporary left behind holds the tenant's store
// quota, unevictable (PutOptions::no_evict), until its 10-minute TTL, and after
// a call that ran out of time the next one most likely comes at once. Small,
// because a server that answers at all answers a Delete at once (no queue, no
// compute): past this, it is unreachable or stuck, and the TTL frees the rest.
inline constexpr absl::Duration kCleanupGrace = absl::Milliseconds(500);
// The cleanup's bound for a call without a deadline (an infinite timeout).
inline constexpr absl::Duration kCleanupTimeout = absl::Seconds(10);

// `call` with its deadline fixed now: its own deadline, else now + its
// timeout, else now + `default_timeout`; absl::InfiniteFuture() for an infinite
// timeout. Pinning a pinned call changes nothing, so every layer may pin.
inline CallOptions PinDeadline(CallOptions call, absl::Duration default_timeout) {
  if (call.deadline.has_value()) return call;
  const absl::Duration timeout = call.timeout.value_or(default_timeout);
  call.deadline =
      timeout == absl::InfiniteDuration() ? absl::InfiniteFuture() : absl::Now() + timeout;
  return call;
}

// The deadline of a cleanup RPC of a call whose deadline is `call_deadline`:
// kCleanupGrace past it (so every cleanup of one call ends by then, however
// many RPCs it takes), and at most kCleanupTimeout from now.
inline absl::Time CleanupDeadline(absl::Time call_deadline) {
  const absl::Time cap = absl::Now() + kCleanupTimeout;
  if (call_deadline == absl::InfiniteFuture()) return cap;
  return std::min(cap, call_deadline + kCleanupGrace);
}

// CallOptions for the cleanup RPCs of the call `pinned` (PinDeadline).
inline CallOptions CleanupCall(const CallOptions& pinned) {
  CallOptions cleanup;
  cleanup.deadline = CleanupDeadline(pinned.deadline.value_or(absl::InfiniteFuture()));
  return cleanup;
}

}  // namespace linalgd::client::internal

#endif  // LINALGD_CLIENT_SRC_DEADLINE_H_
