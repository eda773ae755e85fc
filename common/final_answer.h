#ifndef LINALGD_COMMON_FINAL_ANSWER_H_
#define LINALGD_COMMON_FINAL_ANSWER_H_

#include "absl/status/status.h"

namespace linalgd {

// Whether a call that ended with `code` is over on the server: an answer
// (OK) or a refusal (INVALID_ARGUMENT, FAILED_PRECONDITION, NOT_FOUND,
// RESOURCE_EXHAUSTED, ...). DEADLINE_EXCEEDED and CANCELLED (the caller's own
// deadline or cancellation, which the server learns later), UNAVAILABLE,
// UNKNOWN, INTERNAL, ABORTED and DATA_LOSS (a broken connection or a failure
// mid-call) are not: the server may still be running the call and write its
// result into the caller's shared-memory range. The server holds a final
// answer until no such write can come; clients retire a region after the
// others (gRPC's codes have the same numbers).
bool EndsTheCall(absl::StatusCode code);

}  // namespace linalgd

#endif  // LINALGD_COMMON_FINAL_ANSWER_H_
