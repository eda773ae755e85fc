#ifndef LINALGD_SERVER_BACKEND_FAULT_INJECTION_H_
#define LINALGD_SERVER_BACKEND_FAULT_INJECTION_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/backend/backend.h"

namespace linalgd {

// FOR TESTING: makes chosen operations of chosen backends fail or stall, so
// that rollback, timeouts and shutdown can be exercised on real servers.
//
// Spec: comma-separated rules "BACKEND:OP:ACTION" where BACKEND is cpu, gpu
// (every GPU) or all; OP is matmul, solve, sparse_solve or all; ACTION is stall=DURATION
// (sleep, then run normally) or fail=CODE (resource_exhausted, internal,
// unavailable, deadline_exceeded). Example: "gpu:matmul:fail=internal".
struct FaultRule {
  std::string backend;  // "cpu", "gpu" or "all"
  std::string op;       // "matmul", "solve", "sparse_solve", "factorize" or "all"
  absl::Duration stall = absl::ZeroDuration();
  absl::Status fail;  // ok: no failure
};

absl::StatusOr<std::vector<FaultRule>> ParseFaultSpec(absl::string_view spec);

// Wraps `inner` (not owned) with the rules that apply to its name; returns
// nullptr when none does.
std::unique_ptr<Backend> WrapWithFaults(Backend* inner, const std::vector<FaultRule>& rules);

}  // namespace linalgd

#endif  // LINALGD_SERVER_BACKEND_FAULT_INJECTION_H_
