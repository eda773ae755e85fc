#ifndef LINALGD_CLIENT_SRC_REPLICA_CLIENT_H_
#define LINALGD_CLIENT_SRC_REPLICA_CLIENT_H_

// A Client over several replicas (ReplicaSet): calls naming ids go to the
// replica that minted them, stateless calls to the least loaded one, and a
// factorization made with recreate_on_loss is made again elsewhere when its
// replica is gone. Internal to the client library.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "client/src/calls.h"
#include "client/src/replica_set.h"

namespace linalgd::client::internal {

// An id a call names, and the request field that names it.
struct NamedId {
  std::string field;  // "a_resident_id", "factor_id", "a_shared", ...
  std::string id;
};
std::vector<NamedId> IdsOf(const MatmulArgs& args);
std::vector<NamedId> IdsOf(const SolveArgs& args);

// Status payload marking the UNAVAILABLE of a call whose id's replica is gone.
inline constexpr char kReplicaGonePayload[] = "linalgd/replica-gone";

// Thread-safe.
class ReplicaClient final : public Calls {
 public:
  explicit ReplicaClient(std::unique_ptr<ReplicaSet> replicas) : replicas_(std::move(replicas)) {}

  absl::StatusOr<MatmulResult> Matmul(MatmulArgs args, const CallOptions& call) override;
  absl::StatusOr<SolveResult> Solve(SolveArgs args, const CallOptions& call) override;
  absl::StatusOr<SparseSolveResult> SparseSolve(SparseSolveArgs args,
                                                const CallOptions& call) override;
  absl::StatusOr<ServerInfo> GetServerInfo(const CallOptions& call) override;
  absl::StatusOr<TensorInfo> Put(const Tensor& tensor, const PutOptions& put,
                                 const CallOptions& call) override;
  absl::StatusOr<Tensor> Get(const std::string& id, const CallOptions& call,
                             TensorInfo* info) override;
  absl::Status Delete(const std::string& id, const CallOptions& call) override;
  // Every reachable replica's objects; the bytes are summed.
  absl::StatusOr<StoreListing> List(const CallOptions& call) override;
  absl::StatusOr<FactorInfo> Factorize(FactorizeArgs args, const CallOptions& call) override;
  absl::Status ReleaseFactor(const std::string& id, const CallOptions& call) override;
  absl::StatusOr<std::unique_ptr<SharedTensor>> CreateSharedTensor(
      DType dtype, std::vector<int64_t> shape, int64_t capacity_bytes,
      const CallOptions& call) override;
  // SERVING when any replica serves; else the first replica's answer.
  absl::StatusOr<HealthStatus> Health(const CallOptions& call) override;

 private:
  // A factorization to make again when its replica is gone.
  struct Recreatable {
    absl::Mutex mu;
    FactorizeArgs args;                       // a inline
    std::string current ABSL_GUARDED_BY(mu);  // the factor id in use now
  };

  // `fn(Connection&)` on the least loaded replica; an UNAVAILABLE answer is
  // tried once more on another replica.
  template <typename Fn>
  auto Stateless(const Fn& fn) -> decltype(fn(std::declval<Connection&>()));
  // `fn(Connection&)` on the replica that owns `ids` (all of one replica);
  // stateless when there are none. Finding the owner ends by `call`'s
  // deadline.
  template <typename Fn>
  auto Owned(const std::vector<NamedId>& ids, const CallOptions& call, const Fn& fn)
      -> decltype(fn(std::declval<Connection&>()));
  absl::StatusOr<SolveResult> SolveOnce(SolveArgs args, const CallOptions& call);
  std::shared_ptr<Recreatable> RecreatableOf(const std::string& factor_id) ABSL_LOCKS_EXCLUDED(mu_);
  // The id to use instead of `lost` (made again, unless another call did).
  absl::StatusOr<std::string> Recreate(Recreatable& entry, const std::string& lost,
                                       const CallOptions& call);

  const std::unique_ptr<ReplicaSet> replicas_;
  absl::Mutex mu_;
  // By the factor id the caller holds (the first one).
  absl::flat_hash_map<std::string, std::shared_ptr<Recreatable>> recreatable_ ABSL_GUARDED_BY(mu_);
};

}  // namespace linalgd::client::internal

#endif  // LINALGD_CLIENT_SRC_REPLICA_CLIENT_H_
