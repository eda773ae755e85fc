#ifndef LINALGD_SERVER_COMMON_HEAP_H_
#define LINALGD_SERVER_COMMON_HEAP_H_

#include <string>

namespace linalgd {

// The process's malloc, found at run time: jemalloc where the executable
// links it (the server and linalgd-bench with -DLINALGD_JEMALLOC=ON, the
// default: cmake/Warnings.cmake, linalgd_link_malloc), else the C library's.
// Nothing here links jemalloc: its mallctl is looked up with dlsym.

// "jemalloc <version>" or "glibc".
std::string MallocName();

// Gives freed heap memory back to the OS: jemalloc purges every arena's
// unused dirty pages (mallctl "arena.<all>.purge"), glibc's malloc_trim(0)
// returns every free page of its arenas.
void ReleaseFreeHeap();

}  // namespace linalgd

#endif  // LINALGD_SERVER_COMMON_HEAP_H_
