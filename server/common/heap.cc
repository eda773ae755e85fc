#include "server/common/heap.h"

#include <dlfcn.h>
#include <malloc.h>

#include <cstddef>

#include "absl/strings/str_cat.h"

namespace linalgd {
namespace {

using Mallctl = int (*)(const char* name, void* old, size_t* old_len, void* value,
                        size_t value_len);

// jemalloc's mallctl when jemalloc is in the process, else null.
Mallctl FindMallctl() {
  static const Mallctl found = reinterpret_cast<Mallctl>(dlsym(RTLD_DEFAULT, "mallctl"));
  return found;
}

// MALLCTL_ARENAS_ALL (jemalloc 5): every arena.
constexpr const char* kPurgeAll = "arena.4096.purge";

}  // namespace

std::string MallocName() {
  const Mallctl mallctl = FindMallctl();
  if (mallctl == nullptr) return "glibc";
  const char* version = nullptr;
  size_t len = sizeof(version);
  if (mallctl("version", &version, &len, nullptr, 0) != 0 || version == nullptr) {
    return "jemalloc";
  }
  return absl::StrCat("jemalloc ", version);
}

void ReleaseFreeHeap() {
  if (const Mallctl mallctl = FindMallctl(); mallctl != nullptr) {
    mallctl(kPurgeAll, nullptr, nullptr, nullptr, 0);
    return;
  }
  malloc_trim(0);
}

}  // namespace linalgd
