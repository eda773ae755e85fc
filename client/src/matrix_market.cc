#include "linalgd/matrix_market.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <tuple>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace linalgd::client {
namespace {

struct Header {
  bool pattern = false;
  int symmetry = 0;  // 0 general, 1 symmetric, -1 skew-symmetric
};

struct Entry {
  int64_t row, col;
  double value;
};

absl::Status LineError(int64_t line, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("Matrix Market line ", line, ": ", why));
}

absl::StatusOr<Header> ParseHeader(absl::string_view line) {
  std::vector<std::string> w = absl::StrSplit(absl::AsciiStrToLower(line), ' ', absl::SkipEmpty());
  if (w.size() != 5 || w[0] != "%%matrixmarket" || w[1] != "matrix") {
    return LineError(1, "expected '%%MatrixMarket matrix coordinate FIELD SYMMETRY'");
  }
  if (w[2] != "coordinate") {
    return LineError(1, absl::StrCat("format '", w[2], "' is not supported (coordinate only)"));
  }
  Header h;
  if (w[3] == "pattern") {
    h.pattern = true;
  } else if (w[3] != "real" && w[3] != "integer" && w[3] != "double") {
    return LineError(1,
                     absl::StrCat("field '", w[3], "' is not supported (real, integer, pattern)"));
  }
  if (w[4] == "symmetric") {
    h.symmetry = 1;
  } else if (w[4] == "skew-symmetric") {
    h.symmetry = -1;
  } else if (w[4] != "general") {
    return LineError(1, absl::StrCat("symmetry '", w[4], "' is not supported"));
  }
  return h;
}

// Reads "i j [v]" (1-based) into `out`, mirroring per the header.
constexpr int64_t kMaxDim = int64_t{1} << 31;  // CSR indices are 32-bit

absl::Status ParseEntry(absl::string_view line, int64_t n, const Header& h, int64_t rows,
                        int64_t cols, std::vector<Entry>& out) {
  std::vector<absl::string_view> w =
      absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  Entry e{0, 0, 1.0};
  const size_t want = h.pattern ? 2 : 3;
  if (w.size() < want || !absl::SimpleAtoi(w[0], &e.row) || !absl::SimpleAtoi(w[1], &e.col) ||
      (!h.pattern && !absl::SimpleAtod(w[2], &e.value))) {
    return LineError(n, absl::StrCat("expected ", h.pattern ? "'row col'" : "'row col value'",
                                     ", got '", line, "'"));
  }
  if (e.row < 1 || e.row > rows || e.col < 1 || e.col > cols) {
    return LineError(n, absl::StrCat("entry (", e.row, ", ", e.col, ") is outside the ", rows,
                                     " x ", cols, " matrix"));
  }
  --e.row;
  --e.col;
  out.push_back(e);
  if (h.symmetry != 0 && e.row != e.col) out.push_back({e.col, e.row, h.symmetry * e.value});
  return absl::OkStatus();
}

// Sorted by (row, col), duplicates summed.
absl::StatusOr<CsrMatrix> ToCsr(std::vector<Entry> entries, int64_t rows, int64_t cols,
                                DType dtype) {
  std::sort(entries.begin(), entries.end(), [](const Entry& x, const Entry& y) {
    return std::tie(x.row, x.col) < std::tie(y.row, y.col);
  });
  std::vector<int32_t> offsets(rows + 1, 0), indices;
  std::vector<double> values;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    if (i > 0 && e.row == entries[i - 1].row && e.col == entries[i - 1].col) {
      values.back() += e.value;  // a duplicate (row, col): summed
      continue;
    }
    indices.push_back(static_cast<int32_t>(e.col));
    values.push_back(e.value);
    ++offsets[e.row + 1];
  }
  for (int64_t r = 0; r < rows; ++r) offsets[r + 1] += offsets[r];
  auto m = CsrMatrix::FromArrays(rows, cols, std::move(offsets), std::move(indices), values);
  if (!m.ok() || dtype == DType::kF64) return m;
  std::vector<float> f(values.begin(), values.end());
  auto v = Tensor::FromVector<float>({static_cast<int64_t>(f.size())}, absl::MakeConstSpan(f));
  if (!v.ok()) return v.status();
  m->values = std::move(*v);
  return m;
}

}  // namespace

absl::StatusOr<CsrMatrix> ParseMatrixMarket(absl::string_view text, DType dtype, int64_t max_rows) {
  if (dtype != DType::kF32 && dtype != DType::kF64) {
    return absl::InvalidArgumentError("Matrix Market: dtype must be f32 or f64");
  }
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  if (lines.empty()) return LineError(1, "empty file");
  auto header = ParseHeader(absl::StripAsciiWhitespace(lines[0]));
  if (!header.ok()) return header.status();
  int64_t rows = -1, cols = -1, declared = -1, seen = 0;
  std::vector<Entry> entries;
  for (size_t i = 1; i < lines.size(); ++i) {
    const absl::string_view line = absl::StripAsciiWhitespace(lines[i]);
    if (line.empty() || line[0] == '%') continue;
    const int64_t n = static_cast<int64_t>(i) + 1;
    if (rows < 0) {
      std::vector<absl::string_view> w =
          absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
      if (w.size() != 3 || !absl::SimpleAtoi(w[0], &rows) || !absl::SimpleAtoi(w[1], &cols) ||
          !absl::SimpleAtoi(w[2], &declared) || rows < 0 || cols < 0 || declared < 0) {
        return LineError(n, absl::StrCat("expected 'rows cols entries', got '", line, "'"));
      }
      if (rows >= kMaxDim || cols >= kMaxDim) {
        return LineError(n, absl::StrCat(rows, " x ", cols, ": dimensions must be below 2^31"));
      }
      if (rows > max_rows) {
        return LineError(n, absl::StrCat(rows, " rows exceed max_rows ", max_rows,
                                         " (the CSR row offsets this size line would allocate)"));
      }
      if (header->symmetry != 0 && rows != cols) {
        return LineError(n,
                         absl::StrCat("a ", header->symmetry > 0 ? "symmetric" : "skew-symmetric",
                                      " matrix must be square, not ", rows, " x ", cols));
      }
      // The count is the file's word: reserve no more than a bounded guess.
      entries.reserve(std::min<int64_t>(declared, int64_t{1} << 20) *
                      (header->symmetry != 0 ? 2 : 1));
      continue;
    }
    if (absl::Status s = ParseEntry(line, n, *header, rows, cols, entries); !s.ok()) return s;
    ++seen;
  }
  if (rows < 0) return LineError(static_cast<int64_t>(lines.size()), "no size line");
  if (seen != declared) {
    return absl::InvalidArgumentError(absl::StrCat("Matrix Market: the size line declares ",
                                                   declared, " entries, the file has ", seen));
  }
  return ToCsr(std::move(entries), rows, cols, dtype);
}

absl::StatusOr<CsrMatrix> ReadMatrixMarket(const std::string& path, DType dtype, int64_t max_rows) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  auto m = ParseMatrixMarket(buffer.str(), dtype, max_rows);
  if (!m.ok())
    return absl::Status(m.status().code(), absl::StrCat(path, ": ", m.status().message()));
  return m;
}

}  // namespace linalgd::client
