#ifndef LINALGD_CLIENT_NPY_H_
#define LINALGD_CLIENT_NPY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "linalgd/tensor.h"

namespace linalgd::client {

// Reading and writing numpy .npy files (format versions 1.0, 2.0 and 3.0).
// Supported: descr '<f2', '<f4', '<f8' (also '|', '=' or no byte-order
// prefix, which mean little-endian on the hosts we run on), C order, any
// rank (rank 0 and 1 read as such; callers reshape, e.g. the CLI reads a 1-D
// right-hand side as [n, 1]). Rejected with INVALID_ARGUMENT naming the file,
// the field and the value: Fortran order, other dtypes (big-endian, ints,
// bfloat16), malformed headers, truncated or over-long data.

// Decodes the contents of a .npy file; `name` appears in error messages.
absl::StatusOr<Tensor> DecodeNpy(absl::string_view contents, absl::string_view name);

// Encodes as format `version` (1, 2 or 3); 0 picks 1.0 unless the header
// needs more than 65535 bytes, then 2.0. INVALID_ARGUMENT for kBF16 (numpy
// has no such dtype) or an unknown version.
absl::StatusOr<std::string> EncodeNpy(const Tensor& tensor, int version = 0);

// File forms of the above. NOT_FOUND / PERMISSION_DENIED / DATA_LOSS etc.
// name the path (and the system's reason). WriteNpy replaces a file whole:
// written beside it and renamed over it, so a failed write (a full disk:
// RESOURCE_EXHAUSTED) leaves the old file as it was; what is not a file
// (/dev/stdout, a pipe) is written in place.
absl::StatusOr<Tensor> ReadNpy(const std::string& path);
absl::Status WriteNpy(const std::string& path, const Tensor& tensor, int version = 0);

}  // namespace linalgd::client

#endif  // LINALGD_CLIENT_NPY_H_
