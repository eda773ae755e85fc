#ifndef LINALGD_CLIENT_SRC_SHM_PATH_H_
#define LINALGD_CLIENT_SRC_SHM_PATH_H_

// The client's same-host shared-memory path (ClientOptions.use_shared_memory):
// POSIX regions, registered with the server on first use, carry the inline
// operands of Matmul/Solve and receive the result (out_shm), so no tensor
// bytes cross the socket. Internal to the client library.

#include <memory>
#include <string>
#include <vector>

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

// Whether a call that ended with `status` may still have the server write
// into its shared-memory region (common/final_answer.h EndsTheCall).
bool ServerMayStillWrite(const grpc::Status& status);

// Thread-safe. A call takes an idle region, or registers a new one while
// fewer than shared_memory_regions exist, and gives it back when it returns;
// a call that finds every region busy, or whose tensors do not fit, is not
// taken (the caller uses the socket). A call that ends without the server's
// final answer (ServerMayStillWrite) retires its region instead: the server
// may still be writing the call's result into it, so it is closed, never
// reused, and a later call registers a fresh one. A region the server does not
// know (NOT_FOUND: it restarted, or let the region go) is dropped as well, and
// its call, which did not run, goes once more on a freshly registered region,
// or over the socket when none can be had.
class SharedMemoryPath {
 public:
  SharedMemoryPath(v1::Linalg::Stub& stub, const ClientOptions& options, DeadlineSetter deadline)
      : stub_(stub), options_(options), deadline_(std::move(deadline)) {}
  ~SharedMemoryPath();  // unregisters the regions (best effort)

  // nullopt: not taken, `args` untouched; else the call's result.
  absl::optional<absl::StatusOr<MatmulResult>> Matmul(MatmulArgs& args, const CallOptions& call);
  absl::optional<absl::StatusOr<SolveResult>> Solve(SolveArgs& args, const CallOptions& call);

  // Whether a region is registered (false before the first call and after
  // a failed first registration).
  bool active() const;
  // Regions registered so far (at most shared_memory_regions).
  int regions() const;

 private:
  class Lease;  // one region for one call, given back when destroyed

  // One attempt of Matmul/Solve on one region (a newly registered one when
  // `fresh`), as Matmul/Solve. `forgotten`: the server did not know the
  // region, which is dropped; the result is nullopt and `args` are as they came.
  absl::optional<absl::StatusOr<MatmulResult>> MatmulOn(MatmulArgs& args, const CallOptions& call,
                                                        bool fresh, bool& forgotten);
  absl::optional<absl::StatusOr<SolveResult>> SolveOn(SolveArgs& args, const CallOptions& call,
                                                      bool fresh, bool& forgotten);

  // An idle region (unless `fresh`), or a newly registered one while there
  // are fewer than shared_memory_regions; null when none can be had (a debug
  // line, once, when shared memory cannot be used at all).
  ShmRegion* Acquire(const CallOptions& call, bool fresh);
  void Release(ShmRegion* region);
  // Forgets `region` and closes it (the server unmaps it once its calls end);
  // the debug line says `why`.
  void Drop(ShmRegion* region, absl::string_view why);
  // Creates and registers a region; null on failure (with the reason in
  // `why`).
  std::unique_ptr<ShmRegion> Register(const CallOptions& call, std::string& why);
  void Debug(const std::string& line) const;

  v1::Linalg::Stub& stub_;
  const ClientOptions& options_;
  const DeadlineSetter deadline_;
  mutable absl::Mutex mu_;
  bool disabled_ ABSL_GUARDED_BY(mu_) = false;  // the first registration failed
  int cap_ ABSL_GUARDED_BY(mu_) = -1;           // lowered when a later one fails
  int pending_ ABSL_GUARDED_BY(mu_) = 0;        // registrations in progress
  std::vector<std::unique_ptr<ShmRegion>> regions_ ABSL_GUARDED_BY(mu_);
  std::vector<ShmRegion*> idle_ ABSL_GUARDED_BY(mu_);
};

}  // namespace linalgd::client::internal

#endif  // LINALGD_CLIENT_SRC_SHM_PATH_H_
