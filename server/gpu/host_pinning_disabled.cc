#include "server/gpu/host_pinning.h"

namespace linalgd {

absl::StatusOr<std::shared_ptr<void>> PinHostMemory(void* data, size_t bytes) {
  return absl::UnimplementedError("host pinning needs CUDA (built without it)");
}

}  // namespace linalgd
