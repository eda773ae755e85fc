#ifndef LINALGD_CLIENT_SRC_NPY_HEADER_H_
#define LINALGD_CLIENT_SRC_NPY_HEADER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace linalgd::client::internal {

// The three fields of a .npy header dictionary, as written.
struct NpyHeader {
  std::string descr;  // e.g. "<f4"
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// Parses the Python dict literal of a .npy header, e.g.
// "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }". Exactly the
// keys descr, fortran_order and shape, in any order. Errors are
// INVALID_ARGUMENT naming the field and the offending text (not the file).
absl::StatusOr<NpyHeader> ParseNpyHeader(absl::string_view text);

// The dict literal numpy writes for `header` (without padding).
std::string FormatNpyHeader(const NpyHeader& header);

}  // namespace linalgd::client::internal

#endif  // LINALGD_CLIENT_SRC_NPY_HEADER_H_
