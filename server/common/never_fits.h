#ifndef LINALGD_SERVER_COMMON_NEVER_FITS_H_
#define LINALGD_SERVER_COMMON_NEVER_FITS_H_

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/string_view.h"

namespace linalgd {

// Status payload key of a refusal that no retry can turn around: the request
// alone passes the limit named by the value (--max-inflight-bytes,
// max_queued_bytes). The service sends it as the trailing metadata
// linalgd-never-fits, and clients do not retry such a RESOURCE_EXHAUSTED (a
// refusal for now carries retry-after-ms instead).
inline constexpr char kNeverFitsPayload[] = "linalgd/never-fits";

// `status` with kNeverFitsPayload = `limit`.
inline absl::Status NeverFits(absl::Status status, absl::string_view limit) {
  status.SetPayload(kNeverFitsPayload, absl::Cord(limit));
  return status;
}

}  // namespace linalgd

#endif  // LINALGD_SERVER_COMMON_NEVER_FITS_H_
