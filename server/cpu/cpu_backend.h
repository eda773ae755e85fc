#ifndef LINALGD_SERVER_CPU_CPU_BACKEND_H_
#define LINALGD_SERVER_CPU_CPU_BACKEND_H_

#include <cstdint>
#include <functional>
#include <memory>

#include "server/backend/backend.h"
#include "server/linalg/condition.h"

namespace linalgd {

struct CpuBackendOptions {
  int blas_threads = 0;   // OpenBLAS threads; 0: every core
  int batch_threads = 0;  // threads that spread batch elements; 0: every core
  // --singular-rcond-factor: rcond below this * n * eps is numerically
  // singular (server/backend/condition.h).
  double singular_rcond_factor = kDefaultSingularRcondFactor;
  // OpenBLAS threads while two or more ops run and none is large
  // (blas_threads.h); 0 (or >= blas_threads): always blas_threads, so a
  // product's bits never depend on what else runs.
  int busy_blas_threads = 0;
  // A sparse cholesky or lu (CHOLMOD, UMFPACK) whose peak memory, as its
  // symbolic analysis predicts it, exceeds this is RESOURCE_EXHAUSTED before
  // it starts (the server passes --max-inflight-bytes); 0: no limit.
  int64_t max_sparse_factor_bytes = 0;
  // CpuExecution::stop_check_mnk: a product's multiply-adds between two looks
  // at its stop token; 0: kStopCheckMnk (tests set less).
  double stop_check_mnk = 0;
  // Told each count the governor sets (the metrics); may be empty. Called
  // under the governor's lock: must not block.
  std::function<void(int threads)> on_blas_threads;
};

// The OpenBLAS threads of a backend made with `options`: blas_threads (0:
// every usable core), and while several of its ops run and none is large,
// busy_blas_threads capped by that (0: the same, no adaptation).
int BlasThreads(const CpuBackendOptions& options);
int BusyBlasThreads(const CpuBackendOptions& options);

// The CPU engine: OpenBLAS gemm, LAPACK(E) factorizations and solves. Also the
// rollback path for every GPU failure. Thread-safe. Creating one sets
// OpenBLAS's process-wide thread count (openblas_set_num_threads): create
// backends before work starts. Batches are spread over batch_threads threads
// only when their elements are small enough that OpenBLAS runs each call on
// one thread (see cpu_execution.h), so the two never multiply.
std::unique_ptr<Backend> CreateCpuBackend(const CpuBackendOptions& options);

}  // namespace linalgd

#endif  // LINALGD_SERVER_CPU_CPU_BACKEND_H_
