#include "server/cpu/sparse_preconditioner.h"

#include <algorithm>
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

// Visited entries between polls of the stop token: well under a millisecond of work.
constexpr int64_t kStopPollEntries = int64_t{1} << 16;

// Row i minus lu[p] times U's row k (k = column of p) on row i's pattern, row i's entries
// p + 1 .. end - 1 being those right of k: walks the shorter of the two, finding the other's
// entries by `where` (row i's position of a column, or -1) or by binary search in row k.
// Returns the entries walked.
int64_t EliminateWithRow(const CsrView& a, const std::vector<int64_t>& diag,
                         const std::vector<int64_t>& where, int64_t p, int64_t end,
                         std::vector<double>& lu) {
  const int64_t k = a.col_indices[p];
  const int64_t u_begin = diag[k] + 1, u_end = a.row_offsets[k + 1];
  if (u_end - u_begin <= end - p - 1) {
    for (int64_t q = u_begin; q < u_end; ++q) {
      const int64_t w = where[a.col_indices[q]];
      if (w >= 0) lu[w] -= lu[p] * lu[q];
    }
    return u_end - u_begin;
  }
  const int32_t* const u_first = a.col_indices + u_begin;
  const int32_t* const u_last = a.col_indices + u_end;
  for (int64_t w = p + 1; w < end; ++w) {
    const int32_t* q = std::lower_bound(u_first, u_last, a.col_indices[w]);
    if (q != u_last && *q == a.col_indices[w]) lu[w] -= lu[p] * lu[q - a.col_indices];
  }
  return end - p - 1;
}

// The IKJ variant on a's pattern, row by row.
absl::Status EliminateRows(const CsrView& a, absl::string_view name, const StopToken& stop,
                           Ilu0Factors& f) {
  std::vector<int64_t> where(a.cols, -1);
  int64_t since_poll = kStopPollEntries;  // polls before row 0
  for (int64_t i = 0; i < a.rows; ++i) {
    if (since_poll >= kStopPollEntries) {
      since_poll = 0;
      absl::Status s = stop.Check(absl::StrCat("cpu: ", name, " setup at row ", i));
      if (!s.ok()) return s;
    }
    const int64_t begin = a.row_offsets[i], end = a.row_offsets[i + 1];
    for (int64_t p = begin; p < end; ++p) where[a.col_indices[p]] = p;
    int64_t visited = end - begin;
    for (int64_t p = begin; p < end && a.col_indices[p] < i; ++p) {
      f.lu[p] /= f.lu[f.diag[a.col_indices[p]]];
      visited += EliminateWithRow(a, f.diag, where, p, end, f.lu);
    }
    for (int64_t p = begin; p < end; ++p) where[a.col_indices[p]] = -1;
    f.visited += visited;
    since_poll += visited;
    const double pivot = f.lu[f.diag[i]];
    if (pivot == 0 || !std::isfinite(pivot)) {
      return absl::FailedPreconditionError(absl::StrCat(name, ": pivot ", i, " is ", pivot));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CpuPreconditioner>> MakeIlu0(const CsrView& a,
                                                            absl::string_view name,
                                                            const StopToken& stop) {
  absl::StatusOr<Ilu0Factors> f = FactorIlu0(a, name, stop);
  if (!f.ok()) return f.status();
  return std::make_unique<Ilu0>(a, std::move(f->lu), std::move(f->diag));
}

}  // namespace

absl::StatusOr<Ilu0Factors> FactorIlu0(const CsrView& a, absl::string_view name,
                                       const StopToken& stop) {
  Ilu0Factors f;
  f.diag = DiagonalPositions(a);
  for (int64_t i = 0; i < a.rows; ++i) {
    if (f.diag[i] < 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(name, ": a[", i, "][", i, "] is not stored (zero pivot)"));
    }
  }
  f.lu.assign(a.as<double>(), a.as<double>() + a.nnz());
  if (absl::Status s = EliminateRows(a, name, stop, f); !s.ok()) return s;
  return f;
}

absl::StatusOr<std::unique_ptr<CpuPreconditioner>> MakeCpuPreconditioner(Preconditioner kind,
                                                                         const CsrView& a,
                                                                         const StopToken& stop) {
  switch (kind) {
    case Preconditioner::kNone:
      return std::make_unique<Identity>(a.rows);
    case Preconditioner::kJacobi:
      return MakeJacobi(a);
    case Preconditioner::kIlu0:
      return MakeIlu0(a, "ilu0", stop);
    case Preconditioner::kIc0:
      return MakeIlu0(a, "ic0", stop);
  }
  return absl::InvalidArgumentError("preconditioner: unknown kind");
}

}  // namespace linalgd
