#ifndef LINALGD_CLIENT_SRC_REPLICA_TARGET_H_
#define LINALGD_CLIENT_SRC_REPLICA_TARGET_H_

// The pure parts of talking to several replicas behind one target: which
// addresses a target names, which replica an id names, and which replica is
// the least loaded. Internal to the client library.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace linalgd::client::internal {

// What a ClientOptions::target names.
struct ReplicaTarget {
  enum class Kind {
    kSingle,  // one server: one channel, as gRPC resolves it
    kList,    // "ipv4:a:p1,b:p2" (or ipv6:) with two or more addresses
    kDns,     // "dns:///host:port" or "dns:host:port": every address of host
  };
  Kind kind = Kind::kSingle;
  std::vector<std::string> addresses;  // kList: one gRPC target per replica
  std::string host;                    // kDns
  std::string port;                    // kDns
};

// INVALID_ARGUMENT naming the target for an empty list entry, an entry or a
// dns target without a port, or a dns target without a host.
absl::StatusOr<ReplicaTarget> ParseReplicaTarget(absl::string_view target);

// Every address of host (getaddrinfo, TCP), as gRPC targets "ipv4:A:PORT" or
// "ipv6:[A]:PORT", sorted, without duplicates. UNAVAILABLE naming the host
// when it does not resolve.
absl::StatusOr<std::vector<std::string>> ResolveAddresses(const std::string& host,
                                                          const std::string& port);

// The replica that minted `id` (tensor, factor, upload or shared-memory
// region id): the X of "X-" + 32 lowercase hex digits, X being 1 to 16 of
// [a-z0-9]; "" for a plain 32-hex id or anything else.
absl::string_view ReplicaOfId(absl::string_view id);

// One replica's load as the client last saw it.
struct ReplicaLoad {
  bool usable = true;              // not draining, not unreachable
  int64_t predicted_wait_us = -1;  // linalgd-predicted-wait-us; -1: unknown
  int64_t queue_depth = -1;        // linalgd-queue-depth; -1: unknown
  int64_t inflight = 0;            // this client's calls on it now
};

// The index of the usable replica with the least predicted wait, then the
// fewest jobs (its queue depth plus this client's calls in flight); unknown
// values count as 0. Among equals, the (rotation % count)-th of them in index
// order (round robin as rotation counts up). -1 when none is usable.
int PickLeastLoaded(absl::Span<const ReplicaLoad> loads, uint64_t rotation);

}  // namespace linalgd::client::internal

#endif  // LINALGD_CLIENT_SRC_REPLICA_TARGET_H_
