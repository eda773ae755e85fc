#include "common/final_answer.h"

namespace linalgd {

bool EndsTheCall(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kDataLoss:
      return false;
    default:
      return true;
  }
}

}  // namespace linalgd
