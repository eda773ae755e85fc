#include "server/cpu/sparse_preconditioner.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"

namespace linalgd {
namespace {

class Identity : public CpuPreconditioner {
 public:
  explicit Identity(int64_t n) : n_(n) {}
  void Apply(const double* r, double* z) const override { std::memcpy(z, r, n_ * sizeof(double)); }

 private:
  const int64_t n_;
};

// Position of a[i][i] in each row, or -1.
std::vector<int64_t> DiagonalPositions(const CsrView& a) {
  std::vector<int64_t> d(a.rows, -1);
  for (int64_t i = 0; i < a.rows; ++i) {
    for (int32_t p = a.row_offsets[i]; p < a.row_offsets[i + 1]; ++p) {
      if (a.col_indices[p] == i) d[i] = p;
    }
  }
  return d;
}

class Jacobi : public CpuPreconditioner {
 public:
  explicit Jacobi(std::vector<double> inv) : inv_(std::move(inv)) {}
  void Apply(const double* r, double* z) const override {
    for (size_t i = 0; i < inv_.size(); ++i) z[i] = r[i] * inv_[i];
  }

 private:
  const std::vector<double> inv_;
};

absl::StatusOr<std::unique_ptr<CpuPreconditioner>> MakeJacobi(const CsrView& a) {
  const std::vector<int64_t> d = DiagonalPositions(a);
  std::vector<double> inv(a.rows);
  for (int64_t i = 0; i < a.rows; ++i) {
    const double v = d[i] < 0 ? 0.0 : a.as<double>()[d[i]];
    if (v == 0) {
      return absl::FailedPreconditionError(absl::StrCat("jacobi: a[", i, "][", i, "] is 0"));
    }
    inv[i] = 1.0 / v;
  }
  return std::make_unique<Jacobi>(std::move(inv));
}

// ILU(0): L (unit lower) and U stored in one copy of a's values.
class Ilu0 : public CpuPreconditioner {
 public:
  Ilu0(const CsrView& a, std::vector<double> lu, std::vector<int64_t> diag)
      : a_(a), lu_(std::move(lu)), diag_(std::move(diag)) {}

  void Apply(const double* r, double* z) const override {
    const int64_t n = a_.rows;
    for (int64_t i = 0; i < n; ++i) {  // L y = r
      double s = r[i];
      for (int64_t p = a_.row_offsets[i]; p < diag_[i]; ++p) s -= lu_[p] * z[a_.col_indices[p]];
      z[i] = s;
    }
    for (int64_t i = n - 1; i >= 0; --i) {  // U z = y
      double s = z[i];
      for (int64_t p = diag_[i] + 1; p < a_.row_offsets[i + 1]; ++p) {
        s -= lu_[p] * z[a_.col_indices[p]];
      }
      z[i] = s / lu_[diag_[i]];
    }
  }

 private:
  const CsrView a_;
  const std::vector<double> lu_;
  const std::vector<int64_t> diag_;
};

// The IKJ variant on a's pattern; `where[j]` is the position of column j in
// the current row, or -1.
absl::Status FactorIlu0(const CsrView& a, const std::vector<int64_t>& diag,
                        std::vector<double>& lu) {
  std::vector<int64_t> where(a.cols, -1);
  for (int64_t i = 0; i < a.rows; ++i) {
    const int32_t begin = a.row_offsets[i], end = a.row_offsets[i + 1];
    for (int32_t p = begin; p < end; ++p) where[a.col_indices[p]] = p;
    for (int32_t p = begin; p < end && a.col_indices[p] < i; ++p) {
      const int64_t k = a.col_indices[p];
      lu[p] /= lu[diag[k]];
      for (int64_t q = diag[k] + 1; q < a.row_offsets[k + 1]; ++q) {
        const int64_t w = where[a.col_indices[q]];
        if (w >= 0) lu[w] -= lu[p] * lu[q];
      }
    }
    for (int32_t p = begin; p < end; ++p) where[a.col_indices[p]] = -1;
    if (lu[diag[i]] == 0 || !std::isfinite(lu[diag[i]])) {
      return absl::FailedPreconditionError(absl::StrCat("ilu0: pivot ", i, " is ", lu[diag[i]]));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CpuPreconditioner>> MakeIlu0(const CsrView& a,
                                                            absl::string_view name) {
  std::vector<int64_t> diag = DiagonalPositions(a);
  for (int64_t i = 0; i < a.rows; ++i) {
    if (diag[i] < 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(name, ": a[", i, "][", i, "] is not stored (zero pivot)"));
    }
  }
  std::vector<double> lu(a.as<double>(), a.as<double>() + a.nnz());
  if (absl::Status s = FactorIlu0(a, diag, lu); !s.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(name, s.message().substr(4)));
  }
  return std::make_unique<Ilu0>(a, std::move(lu), std::move(diag));
}

}  // namespace

absl::StatusOr<std::unique_ptr<CpuPreconditioner>> MakeCpuPreconditioner(Preconditioner kind,
                                                                         const CsrView& a) {
  switch (kind) {
    case Preconditioner::kNone:
      return std::make_unique<Identity>(a.rows);
    case Preconditioner::kJacobi:
      return MakeJacobi(a);
    case Preconditioner::kIlu0:
      return MakeIlu0(a, "ilu0");
    case Preconditioner::kIc0:
      return MakeIlu0(a, "ic0");
  }
  return absl::InvalidArgumentError("preconditioner: unknown kind");
}

}  // namespace linalgd
