#ifndef LINALGD_CLIENT_SRC_REPLICA_STATE_H_
#define LINALGD_CLIENT_SRC_REPLICA_STATE_H_

// What the client knows of one replica, learned from every response on its
// channels: its id, its load, whether it drains or cannot be reached.
// Internal to the client library.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/src/channel_credentials.h"
#include "client/src/replica_target.h"
#include "grpcpp/support/status.h"
#include "grpcpp/support/string_ref.h"

namespace linalgd::client::internal {

// Trailing metadata the replica contract defines, and the call's code.
struct ResponseMeta {
  bool unreachable = false;                  // UNAVAILABLE
  std::optional<std::string> replica;        // linalgd-replica
  std::optional<int64_t> queue_depth;        // linalgd-queue-depth
  std::optional<int64_t> predicted_wait_us;  // linalgd-predicted-wait-us
  bool draining = false;                     // linalgd-draining: 1
  std::optional<std::string> owner;          // linalgd-owner-replica (a misrouted id)
};
ResponseMeta ParseResponseMeta(grpc::StatusCode code,
                               const std::multimap<grpc::string_ref, grpc::string_ref>& trailing);

// Thread-safe.
class ReplicaState {
 public:
  // A load, draining flag or unreachable mark older than this is forgotten,
  // so a replica that got no work since is tried again.
  static constexpr absl::Duration kLoadTtl = absl::Seconds(5);
  static constexpr absl::Duration kDrainTtl = absl::Seconds(10);
  static constexpr absl::Duration kDownTtl = absl::Seconds(1);

  explicit ReplicaState(std::string address) : address_(std::move(address)) {}
  const std::string& address() const { return address_; }  // "ipv4:10.0.0.1:50051"

  std::string id() const ABSL_LOCKS_EXCLUDED(mu_);  // "" until learned
  void set_id(std::string id) ABSL_LOCKS_EXCLUDED(mu_);
  void Observe(const ResponseMeta& meta, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  // As PickLeastLoaded reads it, at `now`.
  ReplicaLoad Load(absl::Time now) const ABSL_LOCKS_EXCLUDED(mu_);
  bool Unreachable(absl::Time now) const ABSL_LOCKS_EXCLUDED(mu_);
  // This client's calls on the replica now.
  void AddInflight(int delta) ABSL_LOCKS_EXCLUDED(mu_);
  // Responses that named another replica as an id's owner, and the last
  // owner named.
  struct Misrouted {
    int64_t count = 0;
    std::string owner;
  };
  Misrouted misrouted() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const std::string address_;
  mutable absl::Mutex mu_;
  std::string id_ ABSL_GUARDED_BY(mu_);
  int64_t queue_depth_ ABSL_GUARDED_BY(mu_) = -1;
  int64_t predicted_wait_us_ ABSL_GUARDED_BY(mu_) = -1;
  absl::Time load_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Time draining_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Time down_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  int64_t inflight_ ABSL_GUARDED_BY(mu_) = 0;
  Misrouted misrouted_ ABSL_GUARDED_BY(mu_);
};

// One interceptor factory per channel of the replica: each call asks for the
// replica's load (request metadata linalgd-load: 1), and each finished call's
// status and trailing metadata go to `state`.
InterceptorFactories ObserveResponses(std::shared_ptr<ReplicaState> state);

}  // namespace linalgd::client::internal

#endif  // LINALGD_CLIENT_SRC_REPLICA_STATE_H_
