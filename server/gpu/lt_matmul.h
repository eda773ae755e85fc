#ifndef LINALGD_SERVER_GPU_LT_MATMUL_H_
#define LINALGD_SERVER_GPU_LT_MATMUL_H_

#include <cublasLt.h>

#include <array>
#include <atomic>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "server/backend/ops.h"
#include "server/gpu/handle_pool.h"
#include "server/gpu/kernels.h"
#include "server/gpu/lt_descs.h"

namespace linalgd::gpu {

// One (strided-)batched product on device pointers, row-major as the API:
// d[i] = act(alpha * op(a[i]) @ op(b[i]) + beta * c[i] + bias) for i < batch.
// a is stored trans_a ? k x m : m x k, b trans_b ? n x k : k x n, c and d are
// m x n; consecutive batch elements are `*_stride` elements apart (0:
// broadcast; d is contiguous). bias: n values (per column) or m (per row).
struct LtMatmulArgs {
  DType in_dtype = DType::kF32;
  DType out_dtype = DType::kF32;
  ComputeMode compute = ComputeMode::kDefault;
  Activation act = Activation::kNone;
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  const void* a = nullptr;
  int64_t a_stride = 0;
  const void* b = nullptr;
  int64_t b_stride = 0;
  const void* c = nullptr;  // null: no c (beta ignored)
  int64_t c_stride = 0;
  const void* bias = nullptr;  // null: no bias
  bool bias_per_row = false;
  void* d = nullptr;
  double alpha = 1.0, beta = 0.0;
};

// cuBLASLt algorithms chosen by cublasLtMatmulAlgoGetHeuristic, cached per
// (dtypes, compute mode, epilogue, transposes, m, n, k, batch, strides,
// alignment), so that a repeated shape plans once. One per device.
// Thread-safe; the lock is never held across a library call.
class LtAlgoCache {
 public:
  using Key = LtKey;
  struct Entry {
    cublasLtMatmulAlgo_t algo;
    bool fused = true;  // false: epilogue applied by a kernel after the product
  };

  bool Lookup(const Key& key, Entry* entry) const ABSL_LOCKS_EXCLUDED(mu_);
  void Insert(const Key& key, const Entry& entry) ABSL_LOCKS_EXCLUDED(mu_);
  int64_t hits() const { return hits_.load(); }
  int64_t misses() const { return misses_.load(); }

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<Key, Entry> map_ ABSL_GUARDED_BY(mu_);
  mutable std::atomic<int64_t> hits_{0}, misses_{0};
};

// Runs the product on hs.stream (cuBLASLt; the epilogue fused when cuBLASLt
// offers it for the types, else by a kernel right after). Does not
// synchronize. INTERNAL when no algorithm exists or a call fails. The
// algorithm comes from `cache`, the descriptors from hs.lt_descs (both built
// on a shape's first product only).
absl::Status LtMatmul(HandleSet& hs, LtAlgoCache& cache, const LtMatmulArgs& args);

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_LT_MATMUL_H_
