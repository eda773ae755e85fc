#include "server/common/trace.h"

#ifdef LINALGD_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace linalgd::trace {

#ifdef LINALGD_HAVE_NVTX
namespace {

// The process's "linalgd" domain, created at the first range: null when no
// tool is attached. NVTX keeps its state per process, so this is one too.
nvtxDomainHandle_t Domain() {
  static const nvtxDomainHandle_t domain = nvtxDomainCreateA("linalgd");
  return domain;
}

nvtxEventAttributes_t Attributes(const std::string& name) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = name.c_str();
  return a;
}

}  // namespace

bool Enabled() { return Domain() != nullptr; }

bool PushRange(const std::string& name) {
  const nvtxEventAttributes_t a = Attributes(name);
  return nvtxDomainRangePushEx(Domain(), &a) >= 0;
}

void PopRange() { nvtxDomainRangePop(Domain()); }

uint64_t StartRange(const std::string& name) {
  const nvtxEventAttributes_t a = Attributes(name);
  return nvtxDomainRangeStartEx(Domain(), &a);
}

void EndRange(uint64_t id) { nvtxDomainRangeEnd(Domain(), id); }

#else  // no NVTX: nothing is ever recorded

bool Enabled() { return false; }
bool PushRange(const std::string&) { return false; }
void PopRange() {}
uint64_t StartRange(const std::string&) { return 0; }
void EndRange(uint64_t) {}

#endif

}  // namespace linalgd::trace
