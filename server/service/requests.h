#ifndef LINALGD_SERVER_SERVICE_REQUESTS_H_
#define LINALGD_SERVER_SERVICE_REQUESTS_H_

#include "absl/status/statusor.h"
#include "linalgd/v1/linalgd.pb.h"
#include "server/backend/ops.h"
#include "server/backend/plan.h"
#include "server/service/convert.h"
#include "server/service/tensor_sources.h"

namespace linalgd {

// A validated request: the op (views into the request message, which must
// outlive it) and its plan.
struct PreparedMatmul {
  MatmulOp op;  // op.check_finite unless the request allows non-finite values
  MatmulPlan plan;
  InputLeases leases;  // resident and shared-memory inputs
  OutputSpec output;   // keep_result / out_shm
};

struct PreparedSolve {
  SolveOp op;
  SolvePlan plan;
  bool check_finite = true;
  InputLeases leases;
  OutputSpec output;
};

// Structural validation (dtypes, shapes, sizes, enums, broadcasting); cheap,
// O(number of batch elements). INVALID_ARGUMENT names the field and numbers.
// Tensors may come from `sources` (resident ids, shared memory). The result's
// size is checked against where it goes (CheckResultDeliverable); a result to
// keep gets no store memory here (PlaceKeptResult, once its bytes are held).
absl::StatusOr<PreparedMatmul> PrepareMatmul(const v1::MatmulRequest& request,
                                             const TensorLimits& limits,
                                             const TensorSources& sources = {});
absl::StatusOr<PreparedSolve> PrepareSolve(const v1::SolveRequest& request,
                                           const TensorLimits& limits,
                                           const TensorSources& sources = {});

// The NaN/Inf scan of every input (O(elements)); ok when check_finite is
// off. A matmul's is left to the backend that runs it (op.check_finite):
// always ok here.
absl::Status CheckInputsFinite(const PreparedMatmul& p);
absl::Status CheckInputsFinite(const PreparedSolve& p);

// Tensor payload bytes of the inputs.
int64_t PayloadBytes(const PreparedMatmul& p);
int64_t PayloadBytes(const PreparedSolve& p);
// The result's bytes (Matmul's out, Solve's x), as the plan gives its shape.
int64_t ResultBytes(const PreparedMatmul& p);
int64_t ResultBytes(const PreparedSolve& p);

// A result to keep: a block of the store's host memory for the backend to
// write it into (DirectDestination; page-locked on a GPU server), taken only
// after HoldResult admitted its bytes, so that calls refused for room never
// allocate it. No-op for other results.
template <typename Prepared>
void PlaceKeptResult(Prepared& p, const TensorSources& sources) {
  if (p.output.keep) p.op.result_to = DirectDestination(p.output, ResultBytes(p), {}, sources);
}

// Floating-point operations the op performs (approximate for solves: one LU).
double Flops(const PreparedMatmul& p);
double Flops(const PreparedSolve& p);

// Largest matrix dimension of the op, for routing.
int64_t LargestDim(const PreparedMatmul& p);
int64_t LargestDim(const PreparedSolve& p);

// Device bytes a GPU run reserves (server/scheduler/job_cost.h).
int64_t DeviceBytes(const PreparedMatmul& p);
int64_t DeviceBytes(const PreparedSolve& p);

}  // namespace linalgd

#endif  // LINALGD_SERVER_SERVICE_REQUESTS_H_
