#ifndef LINALGD_SERVER_GPU_RESIDENT_COPY_H_
#define LINALGD_SERVER_GPU_RESIDENT_COPY_H_

// Device copies of stored tensors put with placement "gpu:N". The store
// entry owns the copy (an opaque handle: no CUDA in its header); while it
// lives, Upload() on that device of exactly the tensor's host bytes uses the
// device copy instead of copying from the host.

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "absl/strings/string_view.h"
#include "server/backend/backend.h"
#include "server/common/tensor.h"

namespace linalgd {

// Makes the device copy of `t` for `placement`, or returns null (and logs
// why) when it cannot: not "gpu:N", no such GPU in service, out of device
// memory or of the lane's budget, or built without CUDA. REQUIRES: `t`'s
// bytes stay where they are, unchanged, until the handle is destroyed.
using ResidentCopier =
    std::function<std::shared_ptr<const void>(absl::string_view placement, const Tensor& t)>;

// A copier over `gpus` (the engine's GpuBackends, unwrapped). REQUIRES: the
// backends outlive every handle it returns.
ResidentCopier MakeResidentCopier(std::vector<Backend*> gpus);

}  // namespace linalgd

#endif  // LINALGD_SERVER_GPU_RESIDENT_COPY_H_
