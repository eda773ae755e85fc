#ifndef LINALGD_SERVER_GPU_HANDLE_POOL_H_
#define LINALGD_SERVER_GPU_HANDLE_POOL_H_

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <cusparse.h>

#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/gpu/lt_descs.h"
#include "server/gpu/small_graphs.h"

namespace linalgd::gpu {

// What one job on one device needs: a non-blocking stream with its library
// handles bound to it, a second non-blocking stream without any (work that
// runs beside the first: the dense solves' condition estimate) and the event
// that orders the two, a third (the estimate's second column) with its fork
// and join events, a cuBLAS(Lt) workspace, two events for staged copies, the
// slots of on-device checks, the staging of small jobs, the cuBLASLt
// descriptors of its products and the graphs of its repeated small jobs.
// Created once, owned by a HandlePool, used by one job at a time.
struct HandleSet {
  // small_bytes: the size of each of the small-job staging areas (0: none).
  static absl::StatusOr<std::unique_ptr<HandleSet>> Create(int device, size_t workspace_bytes,
                                                           size_t small_bytes = 0);
  ~HandleSet();
  HandleSet(const HandleSet&) = delete;
  HandleSet& operator=(const HandleSet&) = delete;

  int device = 0;
  cudaStream_t stream = nullptr;
  // Only linalgd's kernels, plain copies and SideBlas()'s calls run on
  // side_stream. side_event: recorded on one stream and waited
  // for on the other (one job at a time uses it).
  cudaStream_t side_stream = nullptr;
  cudaEvent_t side_event = nullptr;
  // A third stream, also without library handles, and the two events that
  // fork work from another of the set's streams onto it and join it back:
  // the condition estimate's second column of a paired solve runs on it,
  // beside the first (factor_rcond.cc).
  cudaStream_t column_stream = nullptr;
  cudaEvent_t column_fork = nullptr, column_join = nullptr;
  cublasHandle_t blas = nullptr;
  // A second cuBLAS handle, bound to side_stream and without a workspace
  // (cublasSetWorkspace to none): the condition estimate's super-block
  // inverses (super_sweep.h), made on side_stream beside the user's solve.
  // Created on the first SideBlas() (null until then, and for good where
  // the library refused it), so a server that never takes that path never
  // pays for it at start-up. The set's job thread only, as every handle here.
  cublasHandle_t SideBlas();
  cublasHandle_t side_blas = nullptr;
  bool side_blas_refused = false;
  // A fourth stream and a third cuBLAS handle bound to it (no workspace
  // either), both made on the first BesideBlas() (null for good where either
  // was refused): the condition estimate's super-block inverses made beside
  // its first solve, which runs on side_stream and column_stream
  // (FactorRcondOptions::super_inverses_beside). Then beside_stream is set.
  cublasHandle_t BesideBlas();
  cudaStream_t beside_stream = nullptr;
  cublasHandle_t beside_blas = nullptr;
  bool beside_refused = false;
  cublasLtHandle_t lt = nullptr;
  cusolverDnHandle_t solver = nullptr;
  cusolverDnParams_t solver_params = nullptr;
  cusparseHandle_t sparse = nullptr;
  void* workspace = nullptr;  // shared by cuBLAS and cuBLASLt (stream-ordered)
  size_t workspace_bytes = 0;
  cudaEvent_t copy_events[2] = {nullptr, nullptr};
  // kCheckSlots values for a job's on-device checks (kernels.h
  // FirstNonFinite): on the device, past the end of the workspace (so within
  // its budgeted allocation), and their page-locked host copies.
  static constexpr int kCheckSlots = 4;
  unsigned long long* check_device = nullptr;
  unsigned long long* check_host = nullptr;
  // The staging of small jobs (small_matmul.h): `small_bytes` of page-locked
  // host memory and as many device bytes, 256-byte aligned, this set's alone
  // (so two jobs in flight never share them). Null when small_bytes is 0.
  size_t small_bytes = 0;
  void* small_host = nullptr;
  void* small_device = nullptr;
  // cuBLASLt descriptors of this set's products (lt_matmul.cc).
  LtDescCache lt_descs;
  // CUDA graphs of this set's repeated small jobs (small_graphs.h): they
  // keep its stream's staging and workspace addresses.
  SmallGraphCache small_graphs;

 private:
  HandleSet() = default;
  absl::Status Init(int device, size_t workspace_bytes, size_t small_bytes);
};

// A fixed set of HandleSets of one device, leased one job at a time.
// Thread-safe.
class HandlePool {
 public:
  // An exclusive lease; returns the set to the pool when destroyed.
  class Lease {
   public:
    Lease(Lease&& other) noexcept : pool_(other.pool_), set_(other.set_) { other.pool_ = nullptr; }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();
    HandleSet& operator*() const { return *set_; }
    HandleSet* operator->() const { return set_; }

   private:
    friend class HandlePool;
    Lease(HandlePool* pool, HandleSet* set) : pool_(pool), set_(set) {}
    HandlePool* pool_;
    HandleSet* set_;
  };

  // A set taken from the pool for the thread that claimed it: that thread's
  // Acquire() calls lease it without waiting while the claim lives (one
  // lease at a time; a second one at once waits as any other). Released on
  // destruction, on any thread: the set goes back to the pool (after its
  // lease, when one is still held).
  class Claim {
   public:
    Claim(Claim&& other) noexcept : pool_(other.pool_), set_(other.set_) { other.pool_ = nullptr; }
    Claim(const Claim&) = delete;
    Claim& operator=(const Claim&) = delete;
    ~Claim();

   private:
    friend class HandlePool;
    Claim(HandlePool* pool, HandleSet* set) : pool_(pool), set_(set) {}
    HandlePool* pool_;
    HandleSet* set_;
  };

  static absl::StatusOr<std::unique_ptr<HandlePool>> Create(int device, int count,
                                                            size_t workspace_bytes,
                                                            size_t small_bytes = 0);

  // The calling thread's claimed set when it has one not leased now;
  // otherwise blocks until a set is free. No GPU call is made under the
  // pool's lock.
  Lease Acquire() ABSL_LOCKS_EXCLUDED(mu_);
  // As Acquire(), waiting at most `wait` for a free set: nullopt when none
  // came (every set leased by jobs that are still running, or stuck).
  std::optional<Lease> AcquireWithin(absl::Duration wait) ABSL_LOCKS_EXCLUDED(mu_);
  // Claims a free set for the calling thread without waiting; nullopt when
  // none is free or a caller of Acquire() is waiting for one.
  std::optional<Claim> TryClaim() ABSL_LOCKS_EXCLUDED(mu_);
  int size() const { return static_cast<int>(sets_.size()); }
  // Set i (i < size()), for tests that look at what each set owns.
  const HandleSet& set(int i) const { return *sets_[i]; }

 private:
  HandlePool() = default;
  struct Claimed {
    HandleSet* set;
    std::thread::id thread;
    bool leased = false;
  };
  void Return(HandleSet* set) ABSL_LOCKS_EXCLUDED(mu_);
  void Unclaim(HandleSet* set) ABSL_LOCKS_EXCLUDED(mu_);

  std::vector<std::unique_ptr<HandleSet>> sets_;  // fixed after Create
  absl::Mutex mu_;
  std::vector<HandleSet*> free_ ABSL_GUARDED_BY(mu_);
  std::vector<Claimed> claimed_
      ABSL_GUARDED_BY(mu_);               // neither free nor leased but by their thread
  int waiting_ ABSL_GUARDED_BY(mu_) = 0;  // callers blocked in Acquire()
};

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_HANDLE_POOL_H_
