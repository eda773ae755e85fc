#ifndef LINALGD_SERVER_SERVICE_SPARSE_REQUEST_H_
#define LINALGD_SERVER_SERVICE_SPARSE_REQUEST_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "linalgd/v1/linalgd.pb.h"
#include "server/backend/csr.h"
#include "server/backend/sparse_ops.h"
#include "server/backend/sparse_plan.h"
#include "server/service/convert.h"
#include "server/service/tensor_sources.h"

namespace linalgd {

// A SparseSolve request in two stages. PrepareSparseSolve (the gRPC thread,
// O(1)): presence, enums, dtypes, shapes and byte counts. CompleteSparseSolve
// (a worker, O(nnz log)): the CSR arrays (ValidateCsr), the NaN scan and the
// plan. Views point into the request, which must outlive this, or into
// resident tensors and shared memory (b and x0 from `sources`), leased in
// `leases`.
struct PreparedSparseSolve {
  RawCsr raw;
  CsrMatrix a;  // after CompleteSparseSolve
  SparseSolveOp op;
  SparseSolvePlan plan;  // after CompleteSparseSolve
  bool check_finite = true;
  bool completed = false;
  InputLeases leases;  // resident / shared-memory b and x0; the admission token (AdmitRequest)
  int64_t device_bytes = 0;  // what a GPU run reserves (job_cost.h SparseSolveDeviceBytes)
};

absl::StatusOr<PreparedSparseSolve> PrepareSparseSolve(const v1::SparseSolveRequest& request,
                                                       const TensorLimits& limits,
                                                       const TensorSources& sources);
// INVALID_ARGUMENT naming the field and numbers. Idempotent.
absl::Status CompleteSparseSolve(PreparedSparseSolve& p);

absl::StatusOr<SparseMethod> SparseMethodFromProto(int value);
v1::SparseMethod SparseMethodToProto(SparseMethod m);
absl::StatusOr<Preconditioner> PreconditionerFromProto(int value);
v1::Preconditioner PreconditionerToProto(Preconditioner p);

}  // namespace linalgd

#endif  // LINALGD_SERVER_SERVICE_SPARSE_REQUEST_H_
