// jemalloc's settings, compiled into each executable that links it
// (cmake/Warnings.cmake, linalgd_link_malloc): jemalloc reads the global
// malloc_conf at its first allocation (the executable's definition takes the
// place of the library's empty weak one); the MALLOC_CONF environment
// variable, read after it, still overrides any of them.
//
// oversize_threshold:0 serves every size from the ordinary arenas. By
// default an allocation of 8 MiB or more comes from a dedicated arena that
// returns freed pages to the kernel at once, so each large tensor, message
// or chunk buffer was fresh memory that the kernel zeroes and maps page by
// page on first touch: a streamed 2048^2 f32 round trip (linalgd-bench
// --workloads data --data-connections 4, server and client in one process)
// ran at 0.14-0.17 GB/s on the 2-core build machine and 0.22 with this
// setting. Freed pages now stay for the arenas' decay time (10 s by default;
// --idle-trim purges them when the server is idle).
extern "C" {
__attribute__((used, visibility("default"))) const char* malloc_conf = "oversize_threshold:0";
}
