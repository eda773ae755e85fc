#ifndef LINALGD_SERVER_STORE_RESIDENT_ID_H_
#define LINALGD_SERVER_STORE_RESIDENT_ID_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace linalgd {

// A new unguessable id: 128 bits from the kernel CSPRNG (getrandom(2)) as 32
// lowercase hex digits. INTERNAL if the kernel refuses. Thread-safe.
absl::StatusOr<std::string> NewResidentId();

// True for 32 lowercase hex digits.
bool IsResidentId(absl::string_view id);

}  // namespace linalgd

#endif  // LINALGD_SERVER_STORE_RESIDENT_ID_H_
