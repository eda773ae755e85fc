#ifndef LINALGD_TESTS_CPU_SPARSE_TEST_MATRICES_H_
#define LINALGD_TESTS_CPU_SPARSE_TEST_MATRICES_H_

#include <complex>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "absl/status/statusor.h"
#include "server/backend/backend.h"
#include "server/backend/csr.h"
#include "server/common/stop_token.h"
#include "server/common/tensor.h"

// Sparse test systems (canonical CSR, owned) shared by the CPU and GPU tests.
namespace linalgd::sparse_test {

struct Csr {
  int64_t n = 0;
  std::vector<int32_t> offsets{0}, indices;
  std::vector<double> values;
  std::vector<float> values32;  // filled by View(kF32)

  // A view in `dtype` (f32 values are converted once and kept here).
  CsrView View(DType dtype);
  // Row-major n x n.
  std::vector<double> Dense() const;
};

// Builds a canonical CSR from row-major dense values (zeros dropped).
Csr FromDense(const std::vector<double>& a, int64_t n);

// The 5-point Laplacian on an m x m grid (n = m^2), SPD.
Csr Poisson2D(int64_t m);
// The 7-point Laplacian on an m x m x m grid (n = m^3), SPD.
Csr Poisson3D(int64_t m);
// Random non-symmetric, about `per_row` off-diagonal entries per row,
// diagonally dominant (non-singular).
Csr RandomNonsymmetric(int64_t n, int per_row, std::mt19937& rng);
// The Laplacian of a random graph (about `degree` edges per vertex) plus
// `shift` times the identity: SPD for shift > 0.
Csr GraphLaplacian(int64_t n, int degree, double shift, std::mt19937& rng);

// A SparseSolve's options, as the CPU and GPU tests vary them.
struct Request {
  SparseMethod method = SparseMethod::kAuto;
  Preconditioner pre = Preconditioner::kNone;
  bool allow_fallback = true;
  int64_t max_iterations = 0;
  double tolerance = 0;
  StopToken stop;
  std::optional<Tensor> x0;  // a starting point [n, k] of the solve's dtype
};

// Solves a x = b (b row-major n x k, in double) in `dtype` on `backend`;
// `b_keep` holds the right-hand side while the result refers to it.
absl::StatusOr<SparseSolveResult> Solve(Backend& backend, Csr& a, DType dtype,
                                        const std::vector<double>& b, int64_t k, const Request& r,
                                        Tensor& b_keep);

// Canonical CSR (a real pattern's offsets and indices) with complex values,
// held in complex128.
struct ComplexCsr {
  Csr pattern;
  std::vector<std::complex<double>> values;
  std::vector<std::complex<float>> values64;  // filled by View(kC64)

  int64_t n() const { return pattern.n; }
  // A view in `dtype`, c64 or c128 (c64 values are converted once and kept here).
  CsrView View(DType dtype = DType::kC128);
  // Row-major n x n.
  std::vector<std::complex<double>> Dense() const;
};

// Random non-Hermitian: RandomNonsymmetric's pattern (4 per row), each
// off-diagonal entry times (1 + s i), s in [-0.5, 0.5], the diagonal times
// (1 + i): still diagonally dominant (non-singular).
ComplexCsr RandomComplex(int64_t n, std::mt19937& rng);

}  // namespace linalgd::sparse_test

#endif  // LINALGD_TESTS_CPU_SPARSE_TEST_MATRICES_H_
