#ifndef LINALGD_CLIENT_MATRIX_MARKET_H_
#define LINALGD_CLIENT_MATRIX_MARKET_H_

#include <cstdint>
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
// count that differs from the size line, more rows than max_rows).
//
// max_rows bounds the CSR row offsets the size line alone makes the reader
// allocate (rows + 1 of them, whatever the file's length): by default
// 2^25 rows (128 MiB of offsets); a larger matrix needs a larger max_rows
// (below 2^31: CSR indices are 32-bit).
inline constexpr int64_t kMatrixMarketDefaultMaxRows = int64_t{1} << 25;
absl::StatusOr<CsrMatrix> ParseMatrixMarket(absl::string_view text, DType dtype = DType::kF64,
                                            int64_t max_rows = kMatrixMarketDefaultMaxRows);
// NOT_FOUND when the file cannot be read.
absl::StatusOr<CsrMatrix> ReadMatrixMarket(const std::string& path, DType dtype = DType::kF64,
                                           int64_t max_rows = kMatrixMarketDefaultMaxRows);

}  // namespace linalgd::client

#endif  // LINALGD_CLIENT_MATRIX_MARKET_H_
