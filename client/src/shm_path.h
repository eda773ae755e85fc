#ifndef LINALGD_CLIENT_SRC_SHM_PATH_H_
#define LINALGD_CLIENT_SRC_SHM_PATH_H_

// The client's same-host shared-memory path (ClientOptions.use_shared_memory):
// one POSIX region, registered with the server on first use, carries the
// inline operands of Matmul/Solve and receives the result (out_shm), so no
// tensor bytes cross the socket. Internal to the client library.

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/optional.h"
#include "client/src/shm_region.h"
#include "client/src/transfer.h"
#include "linalgd/matmul.h"
#include "linalgd/options.h"
#include "linalgd/solve.h"
#include "linalgd/v1/linalgd.grpc.pb.h"

namespace linalgd::client::internal {

// True for a target on this host: unix:..., localhost, 127.x.y.z, [::1].
bool IsLocalTarget(absl::string_view target);

// Thread-safe. One call uses the region at a time; a call that finds it busy,
// or whose tensors do not fit, is not taken (the caller uses the socket).
class SharedMemoryPath {
 public:
  SharedMemoryPath(v1::Linalg::Stub& stub, const ClientOptions& options, DeadlineSetter deadline)
      : stub_(stub), options_(options), deadline_(std::move(deadline)) {}
  ~SharedMemoryPath();  // unregisters the region (best effort)

  // nullopt: not taken, `args` untouched; else the call's result.
  absl::optional<absl::StatusOr<MatmulResult>> Matmul(MatmulArgs& args, const CallOptions& call);
  absl::optional<absl::StatusOr<SolveResult>> Solve(SolveArgs& args, const CallOptions& call);

  // Whether the region is registered (false before the first call and after
  // a failed registration).
  bool active() const;

 private:
  // Creates and registers the region on the first call; false (and a debug
  // line, once) when shared memory cannot be used.
  bool EnsureRegistered(const CallOptions& call) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Debug(const std::string& line) const;
  // Copies `t` into the region at the next aligned offset (`cursor`) and
  // points `out` at it; the bytes of `t` are released.
  void Place(Tensor& t, int64_t& cursor, v1::Tensor* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Points `out` at the rest of the region from `cursor`, for the result.
  void PlaceOutput(int64_t cursor, v1::SharedMemoryRef* out) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reads `response_tensor`'s shm bytes back into an inline tensor.
  absl::Status Fetch(v1::Tensor* response_tensor) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  v1::Linalg::Stub& stub_;
  const ClientOptions& options_;
  const DeadlineSetter deadline_;
  mutable absl::Mutex mu_;
  bool tried_ ABSL_GUARDED_BY(mu_) = false;
  std::unique_ptr<ShmRegion> region_ ABSL_GUARDED_BY(mu_);  // set once registered
};

}  // namespace linalgd::client::internal

#endif  // LINALGD_CLIENT_SRC_SHM_PATH_H_
