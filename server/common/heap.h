#ifndef LINALGD_SERVER_COMMON_HEAP_H_
#define LINALGD_SERVER_COMMON_HEAP_H_

#include <cstddef>
#include <optional>
#include <string>

namespace linalgd {

// The process's malloc, found at run time: jemalloc where the executable
// links it (the server and linalgd-bench with -DLINALGD_JEMALLOC=ON, the
// default: cmake/Warnings.cmake, linalgd_link_malloc), else the C library's.
// Nothing here links jemalloc: its mallctl is looked up with dlsym.

// "jemalloc <version>" or "glibc".
std::string MallocName();

// jemalloc's size option `name` (mallctl "opt.<name>", e.g.
// "oversize_threshold": server/common/jemalloc_conf.cc sets it, MALLOC_CONF
// may override it), or nullopt without jemalloc or without such an option.
std::optional<size_t> JemallocSizeOption(const char* name);

// What the start-up line says of the malloc: MallocName(), with jemalloc's
// oversize_threshold ("jemalloc 5.3.0-... (oversize_threshold 0)").
std::string MallocDescription();

// Gives freed heap memory back to the OS: jemalloc purges every arena's
// unused dirty pages (mallctl "arena.<all>.purge"), glibc's malloc_trim(0)
// returns every free page of its arenas.
void ReleaseFreeHeap();

}  // namespace linalgd

#endif  // LINALGD_SERVER_COMMON_HEAP_H_
