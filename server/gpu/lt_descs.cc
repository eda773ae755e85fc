#include "server/gpu/lt_descs.h"

#include <utility>

namespace linalgd::gpu {

LtDescs::~LtDescs() {
  for (cublasLtMatrixLayout_t l : {a, b, c, d}) {
    if (l != nullptr) cublasLtMatrixLayoutDestroy(l);
  }
  if (op != nullptr) cublasLtMatmulDescDestroy(op);
}

LtDescs* LtDescCache::Find(const LtKey& key) const {
  auto it = map_.find(key);
  return it == map_.end() ? nullptr : it->second.get();
}

LtDescs* LtDescCache::Insert(const LtKey& key, std::unique_ptr<LtDescs> descs) {
  if (map_.size() >= kMaxEntries) map_.clear();
  std::unique_ptr<LtDescs>& slot = map_[key];
  slot = std::move(descs);
  return slot.get();
}

}  // namespace linalgd::gpu
