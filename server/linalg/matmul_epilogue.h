#ifndef LINALGD_SERVER_LINALG_MATMUL_EPILOGUE_H_
#define LINALGD_SERVER_LINALG_MATMUL_EPILOGUE_H_

#include <complex>
#include <cstdint>
#include <vector>

#include "server/backend/ops.h"
#include "server/backend/plan.h"

namespace linalgd {

// The part of a matmul after the product, applied in place to each output
// matrix d that already holds alpha * op(a) @ op(b):
//   d = act(d + beta * c + bias)
// in the compute type T (float, or double for f64; std::complex<float> and
// std::complex<double> for c64 and c128, which take no activation). c and bias are read in T
// (converted once at construction, expanded with BroadcastTo when c is not a
// full [M, N] matrix). Thread-safe after construction. REQUIRES: op's views
// outlive this object; plan is PlanMatmul(op).
template <typename T>
class MatmulEpilogue {
 public:
  MatmulEpilogue(const MatmulOp& op, const MatmulPlan& plan);

  // True when Apply would change nothing.
  bool is_identity() const { return c_ == nullptr && bias_ == nullptr && act_ == kNone; }

  // Applies to output matrix `i` of the batch (plan.m x plan.n, row-major).
  void Apply(int64_t i, T* d) const;

 private:
  enum Activation { kNone, kRelu, kGelu };

  int64_t m_, n_;
  T beta_;
  Activation act_ = kNone;
  bool bias_per_row_ = false;
  const T* c_ = nullptr;                             // null: no c term (absent, or beta == 0)
  const std::vector<int64_t>* c_offsets_ = nullptr;  // null: matrix i at i*m*n
  const T* bias_ = nullptr;
  std::vector<T> c_store_, bias_store_;  // converted copies, when needed
};

extern template class MatmulEpilogue<float>;
extern template class MatmulEpilogue<double>;
extern template class MatmulEpilogue<std::complex<float>>;
extern template class MatmulEpilogue<std::complex<double>>;

// GELU, tanh approximation (as cuBLASLt): 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))).
template <typename T>
T Gelu(T x);

}  // namespace linalgd

#endif  // LINALGD_SERVER_LINALG_MATMUL_EPILOGUE_H_
