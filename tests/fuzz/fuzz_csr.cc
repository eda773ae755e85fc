// libFuzzer target: server/backend/csr.h on a CSR matrix as SparseSolve
// receives it (after ReadCsr's byte-count checks: row_offsets has rows + 1
// indices, col_indices and values nnz each). Input layout:
//   u8 flags (bit 0: int64 indices, bit 1: f32 values), u8 rows, u8 cols,
//   then rows + 1 row offsets, then the rest split into nnz column indices
//   and nnz values (nnz = what fits). Each array lives in a heap block of
//   exactly its size, so ASan reports any read past it.
// On an accepted matrix: the canonical view must satisfy CsrView's contract
// (checked here), then AnalyzeCsr, CsrMultiply and CsrToDenseBytes run.
#include <cstdlib>
#include <memory>
#include <vector>

#include "server/backend/csr.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

// The CsrView contract of csr.h.
void CheckCanonical(const linalgd::CsrView& v) {
  FUZZ_REQUIRE(v.rows == 0 || v.row_offsets[0] == 0);
  for (int64_t r = 0; r < v.rows; ++r) {
    FUZZ_REQUIRE(v.row_offsets[r] <= v.row_offsets[r + 1]);
    for (int32_t p = v.row_offsets[r]; p < v.row_offsets[r + 1]; ++p) {
      FUZZ_REQUIRE(v.col_indices[p] >= 0 && v.col_indices[p] < v.cols);
      if (p > v.row_offsets[r]) FUZZ_REQUIRE(v.col_indices[p - 1] < v.col_indices[p]);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace linalgd;
  fuzz::Reader in(data, size);
  const uint8_t flags = in.Get<uint8_t>();
  RawCsr raw;
  raw.index_bytes = (flags & 1) ? 8 : 4;
  raw.dtype = (flags & 2) ? DType::kF32 : DType::kF64;
  raw.rows = in.Get<uint8_t>();
  raw.cols = in.Get<uint8_t>();
  const size_t w = raw.index_bytes, es = DTypeSize(raw.dtype);
  std::string offsets = in.Bytes((raw.rows + 1) * w);
  offsets.resize((raw.rows + 1) * w, '\0');
  raw.nnz = static_cast<int64_t>(in.left() / (w + es));
  // Exact-size heap copies (std::string would keep a terminator and slack).
  auto offsets_mem = std::make_unique<char[]>(offsets.size());
  std::memcpy(offsets_mem.get(), offsets.data(), offsets.size());
  auto indices_mem = std::make_unique<char[]>(raw.nnz * w);
  const std::string indices = in.Bytes(raw.nnz * w);
  std::memcpy(indices_mem.get(), indices.data(), indices.size());
  auto values_mem = std::make_unique<char[]>(raw.nnz * es);
  const std::string values = in.Bytes(raw.nnz * es);
  std::memcpy(values_mem.get(), values.data(), values.size());
  raw.row_offsets = offsets_mem.get();
  raw.col_indices = indices_mem.get();
  raw.values = values_mem.get();

  absl::StatusOr<CsrMatrix> m = ValidateCsr(raw, "a");
  if (!m.ok()) return 0;
  const CsrView& v = m->view();
  FUZZ_REQUIRE(v.rows == raw.rows && v.cols == raw.cols && v.nnz() <= raw.nnz);
  CheckCanonical(v);
  AnalyzeCsr(v);
  std::vector<double> x(v.cols, 1.0), y(v.rows);
  CsrMultiply(v, x.data(), y.data());
  FUZZ_REQUIRE(CsrToDenseBytes(v).size() == static_cast<size_t>(v.rows * v.cols) * es);
  return 0;
}
