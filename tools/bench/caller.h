#ifndef LINALGD_TOOLS_BENCH_CALLER_H_
#define LINALGD_TOOLS_BENCH_CALLER_H_

#include "absl/status/status.h"

namespace linalgd::bench {

// One kind of call a workload times. Prepare() builds the next request and
// is not timed; Call() sends it and waits for the answer, and is timed. An
// instance is used by one thread at a time; workloads give each concurrent
// thread its own.
class Caller {
 public:
  virtual ~Caller() = default;
  virtual absl::Status Prepare() { return absl::OkStatus(); }
  virtual absl::Status Call() = 0;
};

}  // namespace linalgd::bench

#endif  // LINALGD_TOOLS_BENCH_CALLER_H_
