// libFuzzer target: the client's file readers on untrusted file contents.
// Input: u8 kind, then the contents.
//   0 DecodeNpy (client/include/linalgd/npy.h); an accepted tensor must
//     survive EncodeNpy + DecodeNpy with the same dtype, shape and bytes;
//     ReadNpy of the same contents as a file (a memfd) must answer alike:
//     the same status code, and the same tensor when accepted
//   1 ParseNpyHeader (client/src/npy_header.h); an accepted header must
//     parse again from FormatNpyHeader to the same fields
//   2 ParseMatrixMarket as f64, 3 as f32 (matrix_market.h); an accepted
//     matrix must be canonical CSR (sorted rows, indices in range)
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "client/src/npy_header.h"
#include "linalgd/matrix_market.h"
#include "linalgd/npy.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

// ReadNpy of `contents` as a file: a memfd, read through /proc/self/fd.
absl::StatusOr<linalgd::client::Tensor> ReadAsFile(absl::string_view contents) {
  const int fd = memfd_create("fuzz.npy", MFD_CLOEXEC);
  FUZZ_REQUIRE(fd >= 0);
  FUZZ_REQUIRE(write(fd, contents.data(), contents.size()) ==
               static_cast<ssize_t>(contents.size()));
  absl::StatusOr<linalgd::client::Tensor> t =
      linalgd::client::ReadNpy("/proc/self/fd/" + std::to_string(fd));
  close(fd);
  return t;
}

void FuzzNpy(absl::string_view contents) {
  using namespace linalgd::client;
  absl::StatusOr<Tensor> t = DecodeNpy(contents, "fuzz.npy");
  absl::StatusOr<Tensor> file = ReadAsFile(contents);
  FUZZ_REQUIRE(file.status().code() == t.status().code());
  if (!t.ok()) return;
  FUZZ_REQUIRE(file->dtype() == t->dtype() && file->shape() == t->shape() &&
               file->bytes() == t->bytes());
  absl::StatusOr<std::string> encoded = EncodeNpy(*t);
  FUZZ_REQUIRE(encoded.ok());
  absl::StatusOr<Tensor> again = DecodeNpy(*encoded, "again.npy");
  FUZZ_REQUIRE(again.ok() && again->dtype() == t->dtype() && again->shape() == t->shape() &&
               again->bytes() == t->bytes());
}

void FuzzNpyHeader(absl::string_view text) {
  using namespace linalgd::client::internal;
  absl::StatusOr<NpyHeader> h = ParseNpyHeader(text);
  if (!h.ok()) return;
  absl::StatusOr<NpyHeader> again = ParseNpyHeader(FormatNpyHeader(*h));
  FUZZ_REQUIRE(again.ok() && again->descr == h->descr && again->fortran_order == h->fortran_order &&
               again->shape == h->shape);
}

void FuzzMatrixMarket(absl::string_view text, linalgd::client::DType dtype) {
  absl::StatusOr<linalgd::client::CsrMatrix> m = linalgd::client::ParseMatrixMarket(text, dtype);
  if (!m.ok()) return;
  FUZZ_REQUIRE(m->rows >= 0 && m->cols >= 0);
  FUZZ_REQUIRE(m->row_offsets.size() == static_cast<size_t>(m->rows) + 1 && m->row_offsets[0] == 0);
  FUZZ_REQUIRE(m->row_offsets.back() == m->nnz() && m->values.num_elements() == m->nnz());
  for (int64_t r = 0; r < m->rows; ++r) {
    for (int32_t p = m->row_offsets[r]; p < m->row_offsets[r + 1]; ++p) {
      FUZZ_REQUIRE(m->col_indices[p] >= 0 && m->col_indices[p] < m->cols);
      if (p > m->row_offsets[r]) FUZZ_REQUIRE(m->col_indices[p - 1] < m->col_indices[p]);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const absl::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      FuzzNpy(rest);
      break;
    case 1:
      FuzzNpyHeader(rest);
      break;
    case 2:
      FuzzMatrixMarket(rest, linalgd::client::DType::kF64);
      break;
    case 3:
      FuzzMatrixMarket(rest, linalgd::client::DType::kF32);
      break;
  }
  return 0;
}
