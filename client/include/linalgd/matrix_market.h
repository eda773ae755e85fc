#ifndef LINALGD_CLIENT_MATRIX_MARKET_H_
#define LINALGD_CLIENT_MATRIX_MARKET_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "linalgd/dtype.h"
#include "linalgd/sparse.h"

namespace linalgd::client {

// Reads a Matrix Market file as the SuiteSparse Matrix Collection ships
// them: "%%MatrixMarket matrix coordinate FIELD SYMMETRY" with FIELD real,
// integer or pattern (pattern entries are 1) and SYMMETRY general,
// symmetric or skew-symmetric (the mirrored triangle is filled in).
// Returns sorted CSR rows with duplicates summed, values in `dtype` (kF32 or
// kF64). INVALID_ARGUMENT, with the line number, for anything else
// (complex, array format, a malformed line, an index out of range, an entry
// count that differs from the size line).
absl::StatusOr<CsrMatrix> ParseMatrixMarket(absl::string_view text, DType dtype = DType::kF64);
// NOT_FOUND when the file cannot be read.
absl::StatusOr<CsrMatrix> ReadMatrixMarket(const std::string& path, DType dtype = DType::kF64);

}  // namespace linalgd::client

#endif  // LINALGD_CLIENT_MATRIX_MARKET_H_
