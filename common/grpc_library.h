#ifndef LINALGD_COMMON_GRPC_LIBRARY_H_
#define LINALGD_COMMON_GRPC_LIBRARY_H_

#include <grpc/grpc.h>

namespace linalgd {

// Holds one reference to the gRPC library for the rest of the process, so
// that destroying the process's last grpc::Server or channel does not run
// gRPC's library shutdown. gRPC 1.51 runs that shutdown in the destructor of
// its last object, and it joins gRPC's executor threads, one of which can be
// inside a poll that only ends at its timeout: destroying a server, or
// linalgd's exit after SIGTERM, then took ~10 s (seen in 4 of 112 teardowns on
// the build machine, in every teardown of some GPU server tests on an H100).
// The library's threads stay until the process exits, as they would while
// any server or channel lives. Idempotent; thread-safe (each library that
// includes this holds its own reference, which is harmless).
inline void KeepGrpcLibraryForProcess() {
  static const bool kept = [] {
    grpc_init();
    return true;
  }();
  (void)kept;
}

}  // namespace linalgd

#endif  // LINALGD_COMMON_GRPC_LIBRARY_H_
