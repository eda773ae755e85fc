#ifndef LINALGD_SERVER_BACKEND_FACTOR_H_
#define LINALGD_SERVER_BACKEND_FACTOR_H_

#include <cstdint>
#include <memory>
#include <string>

#include "server/backend/ops.h"
#include "server/common/tensor.h"

namespace linalgd {

class Backend;

// What describes a cached factorization of one square matrix.
struct FactorInfo {
  SolveMethod method = SolveMethod::kLu;  // kLu or kCholesky
  DType dtype = DType::kF64;
  int64_t n = 0;
  int64_t bytes = 0;      // memory the factors hold (host or device)
  std::string placement;  // the backend that computed it: "cpu", "gpu:N"
  // Reciprocal 1-norm condition estimate (gecon / pocon on the CPU, the same
  // Hager-Higham estimate on a GPU), and the threshold below which a is
  // numerically singular (condition.h) when it was factored.
  double rcond = 0;
  double rcond_threshold = 0;
};

// A factorization (LU with pivots, or Cholesky) kept for later solves. Made
// by one backend's Factorize and solved only by that backend (owner()), which
// must outlive it. Immutable once made: concurrent solves are safe.
class Factor {
 public:
  Factor(FactorInfo info, Backend* owner) : info_(std::move(info)), owner_(owner) {}
  virtual ~Factor() = default;
  Factor(const Factor&) = delete;
  Factor& operator=(const Factor&) = delete;

  const FactorInfo& info() const { return info_; }
  Backend* owner() const { return owner_; }

 private:
  const FactorInfo info_;
  Backend* const owner_;
};

// Factorize one matrix: a is [n, n] (F32 or F64). kAuto: Cholesky when a is
// symmetric positive definite, else LU. kCholesky on a non-SPD a falls back
// to LU when allow_fallback, else FAILED_PRECONDITION; a singular a is
// FAILED_PRECONDITION. kQr and kLstsq are INVALID_ARGUMENT.
struct FactorizeOp {
  TensorView a;
  SolveMethod method = SolveMethod::kAuto;
  bool allow_fallback = true;
};

struct FactorizeResult {
  std::shared_ptr<const Factor> factor;
  std::string fallback;  // empty, or why the requested method was not used
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_BACKEND_FACTOR_H_
