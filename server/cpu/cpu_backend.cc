// placeholder until the CPU engine lands
#include "server/cpu/cpu_backend.h"
namespace linalgd {
std::unique_ptr<Backend> CreateCpuBackend(const CpuBackendOptions&) { return nullptr; }
}  // namespace linalgd
