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

std::optional<size_t> JemallocSizeOption(const char* name) {
  const Mallctl mallctl = FindMallctl();
  if (mallctl == nullptr) return std::nullopt;
  size_t value = 0;
  size_t len = sizeof(value);
  if (mallctl(absl::StrCat("opt.", name).c_str(), &value, &len, nullptr, 0) != 0 ||
      len != sizeof(value)) {
    return std::nullopt;
  }
  return value;
}

std::string MallocDescription() {
  std::string out = MallocName();
  if (const std::optional<size_t> t = JemallocSizeOption("oversize_threshold"); t.has_value()) {
    absl::StrAppend(&out, " (oversize_threshold ", *t, ")");
  }
  return out;
}

void ReleaseFreeHeap() {
  if (const Mallctl mallctl = FindMallctl(); mallctl != nullptr) {
    mallctl(kPurgeAll, nullptr, nullptr, nullptr, 0);
    return;
  }
  malloc_trim(0);
}

}  // namespace linalgd
