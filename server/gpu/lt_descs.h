#ifndef LINALGD_SERVER_GPU_LT_DESCS_H_
#define LINALGD_SERVER_GPU_LT_DESCS_H_

#include <cublasLt.h>

#include <array>
#include <cstdint>
#include <memory>

#include "absl/container/flat_hash_map.h"

namespace linalgd::gpu {

// What identifies one cuBLASLt product's plan (lt_matmul.cc MakeKey: dtypes,
// compute mode, epilogue, transposes, m, n, k, batch, strides, alignment).
using LtKey = std::array<int64_t, 16>;

// The descriptors of one cuBLASLt product (operation and the four
// layouts), destroyed with it. Move-less: held by pointer.
struct LtDescs {
  LtDescs() = default;
  LtDescs(const LtDescs&) = delete;
  LtDescs& operator=(const LtDescs&) = delete;
  ~LtDescs();

  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
};

// One handle set's descriptors by key, built once per key and reused by its
// later products (a product with a bias sets the bias pointer on `op` before
// each call). At most kMaxEntries: a full cache is emptied before the next
// insert. Not thread-safe: owned by a HandleSet, used by its lease holder.
class LtDescCache {
 public:
  static constexpr size_t kMaxEntries = 256;

  // The descriptors for `key`, or null when there are none yet.
  LtDescs* Find(const LtKey& key) const;
  // Keeps `descs` for `key` (replacing any) and returns them.
  LtDescs* Insert(const LtKey& key, std::unique_ptr<LtDescs> descs);
  size_t size() const { return map_.size(); }

 private:
  absl::flat_hash_map<LtKey, std::unique_ptr<LtDescs>> map_;
};

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_LT_DESCS_H_
