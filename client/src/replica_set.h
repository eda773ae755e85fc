#ifndef LINALGD_CLIENT_SRC_REPLICA_SET_H_
#define LINALGD_CLIENT_SRC_REPLICA_SET_H_

// The replicas behind a target of several addresses ("ipv4:a:p1,b:p2", or
// every address "dns:///name:port" resolves to): one Connection per address,
// what the client knows of each (ReplicaState), the least loaded pick and the
// owner of an id. Internal to the client library.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/src/connection.h"
#include "client/src/replica_state.h"
#include "client/src/replica_target.h"

namespace linalgd::client::internal {

struct Replica {
  // `tls_name`: the dns name the replica was found under ("" for a list).
  Replica(const std::string& address, const ClientOptions& options,
          const std::shared_ptr<grpc::ChannelCredentials>& credentials,
          const std::string& tls_name);
  const std::shared_ptr<ReplicaState> state;
  Connection connection;  // options.target = address
};

// Thread-safe. Replicas that leave the set stay alive while calls use them.
class ReplicaSet {
 public:
  // A dns target is re-resolved this often, and when no replica is usable.
  static constexpr absl::Duration kRefresh = absl::Seconds(30);
  // ... but not more often than this (calls waiting for one share it).
  static constexpr absl::Duration kMinRefresh = absl::Seconds(1);
  // Replicas no longer resolved that are kept for calls naming their ids.
  static constexpr size_t kMaxRetired = 64;

  // REQUIRES: target.kind is kList or kDns. UNAVAILABLE when a dns target
  // does not resolve.
  static absl::StatusOr<std::unique_ptr<ReplicaSet>> Create(
      ClientOptions options, std::shared_ptr<grpc::ChannelCredentials> credentials,
      ReplicaTarget target);

  const ClientOptions& options() const { return options_; }
  // The replicas now, re-resolving a dns target when kRefresh has passed.
  std::vector<std::shared_ptr<Replica>> Current() ABSL_LOCKS_EXCLUDED(mu_);
  // The least loaded usable replica other than `exclude` (PickLeastLoaded);
  // when none is usable, the set is refreshed once and any reachable one
  // other than `exclude` is taken. Null when there is none.
  std::shared_ptr<Replica> PickStateless(const Replica* exclude = nullptr) ABSL_LOCKS_EXCLUDED(mu_);
  // The replica whose id is `replica_id`; replicas whose id is not known yet
  // are asked (GetServerInfo, ending by `deadline`, the call's), then a dns
  // target is re-resolved. Null when none has it.
  std::shared_ptr<Replica> FindOwner(absl::string_view replica_id, absl::Time deadline)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Where replica `replica_id` was last seen; "" when never.
  std::string AddressOf(absl::string_view replica_id) const ABSL_LOCKS_EXCLUDED(mu_);
  // Forgets every replica's id (one answered as another replica, so some
  // address is not what the client thought): FindOwner asks them again.
  void ForgetIds() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  ReplicaSet(ClientOptions options, std::shared_ptr<grpc::ChannelCredentials> credentials,
             ReplicaTarget target)
      : options_(std::move(options)),
        credentials_(std::move(credentials)),
        target_(std::move(target)) {}

  // Replaces the set by the addresses now resolved (keeping the replicas of
  // addresses still there); a failed resolution keeps the set as it is.
  absl::Status Refresh() ABSL_LOCKS_EXCLUDED(mu_);
  // Asks each reachable replica of unknown id for it, each for kLearnTimeout
  // at most, all by `deadline`.
  void LearnIds(const std::vector<std::shared_ptr<Replica>>& replicas, absl::Time deadline)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Among the replicas resolved now, then the retired ones that still answer.
  std::shared_ptr<Replica> Find(absl::string_view replica_id) ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<std::shared_ptr<Replica>> Retired() ABSL_LOCKS_EXCLUDED(mu_);
  void Remember(const Replica& replica) ABSL_LOCKS_EXCLUDED(mu_);

  const ClientOptions options_;
  const std::shared_ptr<grpc::ChannelCredentials> credentials_;
  const ReplicaTarget target_;
  std::atomic<uint64_t> rotation_{0};
  absl::Mutex refresh_mu_;  // one resolution at a time
  mutable absl::Mutex mu_;
  std::vector<std::shared_ptr<Replica>> replicas_ ABSL_GUARDED_BY(mu_);
  // Replicas no longer resolved (a draining pod leaves DNS first): calls
  // naming their ids still go there while they answer; no other work does.
  std::vector<std::shared_ptr<Replica>> retired_ ABSL_GUARDED_BY(mu_);
  absl::Time resolved_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::flat_hash_map<std::string, std::string> seen_ ABSL_GUARDED_BY(mu_);  // id -> address
};

}  // namespace linalgd::client::internal

#endif  // LINALGD_CLIENT_SRC_REPLICA_SET_H_
