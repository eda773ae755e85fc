#ifndef LINALGD_SERVER_CPU_CPU_BACKEND_H_
#define LINALGD_SERVER_CPU_CPU_BACKEND_H_

#include <memory>

#include "server/backend/backend.h"

namespace linalgd {

struct CpuBackendOptions {
  int blas_threads = 0;   // OpenBLAS threads; 0: every core
  int batch_threads = 0;  // threads that spread batch elements; 0: every core
};

// The CPU engine: OpenBLAS gemm, LAPACK(E) factorizations and solves. Also the
// rollback path for every GPU failure. Thread-safe.
std::unique_ptr<Backend> CreateCpuBackend(const CpuBackendOptions& options);

}  // namespace linalgd

#endif  // LINALGD_SERVER_CPU_CPU_BACKEND_H_
