#ifndef LINALGD_SERVER_LINALG_FINITE_CHECK_H_
#define LINALGD_SERVER_LINALG_FINITE_CHECK_H_

// NaN and Inf inputs are rejected unless the caller allows them
// (allow_non_finite). The host scan, and the one message every check gives,
// whether it runs on the host or on a device (MatmulOp::check_finite).

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "server/backend/ops.h"
#include "server/common/tensor.h"

namespace linalgd {

// Index of the first NaN or Inf element of t (row-major), or -1. Large
// tensors are scanned on several threads.
int64_t FirstNonFinite(const TensorView& t);

// INVALID_ARGUMENT: "<field>: element <index> is NaN|+Inf|-Inf; ...", the
// value read from t (host memory). REQUIRES: element `index` of t is not
// finite.
absl::Status NonFiniteError(const TensorView& t, absl::string_view field, int64_t index);

// INVALID_ARGUMENT naming `field` and its first NaN or Inf element.
absl::Status CheckFinite(const TensorView& t, absl::string_view field);

// With op.check_finite: CheckFinite of a, b, c and bias (in that order);
// else OK.
absl::Status CheckMatmulInputsFinite(const MatmulOp& op);

}  // namespace linalgd

#endif  // LINALGD_SERVER_LINALG_FINITE_CHECK_H_
