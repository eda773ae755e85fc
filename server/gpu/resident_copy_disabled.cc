// Built without CUDA: stored tensors stay in host memory.
#include <utility>

#include "server/gpu/resident_copy.h"

namespace linalgd {

ResidentCopier MakeResidentCopier(std::vector<Backend*> gpus) {
  (void)gpus;
  return [](absl::string_view, const Tensor&) { return std::shared_ptr<const void>(); };
}

}  // namespace linalgd
