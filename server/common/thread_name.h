#ifndef LINALGD_SERVER_COMMON_THREAD_NAME_H_
#define LINALGD_SERVER_COMMON_THREAD_NAME_H_

#include <pthread.h>

#include <string>

#include "absl/strings/string_view.h"

namespace linalgd {

// Names the calling thread (its first 15 characters, Linux's limit), as
// `top -H`, gdb and perf show it ("lnd-cpu", "lnd-gpu:0", "lnd-watchdog"):
// a profile then tells the service's threads from gRPC's and CUDA's
// ("cuda-EvtHandlr"), which name theirs.
inline void NameThisThread(absl::string_view name) {
  const std::string cut(name.substr(0, 15));
  pthread_setname_np(pthread_self(), cut.c_str());
}

}  // namespace linalgd

#endif  // LINALGD_SERVER_COMMON_THREAD_NAME_H_
