// cusolverSp is deprecated in CUDA 13 (replaced by cuDSS, not installed on
// these hosts); silence the attribute in this file only.
#define DISABLE_CUSOLVER_DEPRECATED

#include <cusolverSp.h>
#include <cusolverSp_LOWLEVEL_PREVIEW.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <optional>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/gpu/blas_calls.h"
#include "server/gpu/cuda_check.h"
#include "server/gpu/device_tensor.h"
#include "server/gpu/sparse_direct_solver.h"
#include "server/gpu/transfer.h"
#include "server/linalg/condition.h"
#include "server/linalg/sparse_condition.h"

namespace linalgd::gpu {
namespace {

// RAII cusolverSp handle bound to a stream, and a general matrix descriptor.
class SpHandle {
 public:
  ~SpHandle() {
    if (descr_ != nullptr) cusparseDestroyMatDescr(descr_);
    if (h_ != nullptr) cusolverSpDestroy(h_);
  }
  absl::Status Init(cudaStream_t stream) {
    LINALGD_GPU_CHECK(cusolverSpCreate(&h_));
    LINALGD_GPU_CHECK(cusolverSpSetStream(h_, stream));
    LINALGD_GPU_CHECK(cusparseCreateMatDescr(&descr_));
    LINALGD_GPU_CHECK(cusparseSetMatType(descr_, CUSPARSE_MATRIX_TYPE_GENERAL));
    LINALGD_GPU_CHECK(cusparseSetMatIndexBase(descr_, CUSPARSE_INDEX_BASE_ZERO));
    return absl::OkStatus();
  }
  cusolverSpHandle_t get() const { return h_; }
  cusparseMatDescr_t descr() const { return descr_; }

 private:
  cusolverSpHandle_t h_ = nullptr;
  cusparseMatDescr_t descr_ = nullptr;
};

// P a P^T in canonical CSR (values in a's dtype as bytes), for p[new] = old.
struct Permuted {
  std::vector<int32_t> offsets, indices;
  std::vector<char> values;
};

Permuted Permute(const CsrView& a, const std::vector<int>& p) {
  const int64_t n = a.rows;
  const size_t es = DTypeSize(a.dtype);
  std::vector<int> inv(n);
  for (int64_t i = 0; i < n; ++i) inv[p[i]] = static_cast<int>(i);
  Permuted out;
  out.offsets.assign(n + 1, 0);
  out.indices.reserve(a.nnz());
  out.values.resize(a.nnz() * es);
  std::vector<std::pair<int32_t, int32_t>> row;  // (new column, old position)
  for (int64_t i = 0; i < n; ++i) {
    const int old = p[i];
    row.clear();
    for (int32_t q = a.row_offsets[old]; q < a.row_offsets[old + 1]; ++q) {
      row.emplace_back(inv[a.col_indices[q]], q);
    }
    std::sort(row.begin(), row.end());
    for (const auto& [c, q] : row) {
      std::memcpy(out.values.data() + out.indices.size() * es,
                  static_cast<const char*>(a.values) + q * es, es);
      out.indices.push_back(c);
    }
    out.offsets[i + 1] = static_cast<int32_t>(out.indices.size());
  }
  return out;
}

// cusolverSp's low-level csrchol and csrqr entry points for values V
// (float, double, cuComplex, cuDoubleComplex; Real: V's real type).
template <typename V>
struct Sp;
#define LINALGD_SP_ROUTINES(V, R, P)                                          \
  template <>                                                                 \
  struct Sp<V> {                                                              \
    using Real = R;                                                           \
    static constexpr auto kCholBufferInfo = cusolverSp##P##csrcholBufferInfo; \
    static constexpr auto kCholFactor = cusolverSp##P##csrcholFactor;         \
    static constexpr auto kCholZeroPivot = cusolverSp##P##csrcholZeroPivot;   \
    static constexpr auto kCholSolve = cusolverSp##P##csrcholSolve;           \
    static constexpr auto kCholDiag = cusolverSp##P##csrcholDiag;             \
    static constexpr auto kQrBufferInfo = cusolverSp##P##csrqrBufferInfo;     \
    static constexpr auto kQrSetup = cusolverSp##P##csrqrSetup;               \
    static constexpr auto kQrFactor = cusolverSp##P##csrqrFactor;             \
    static constexpr auto kQrZeroPivot = cusolverSp##P##csrqrZeroPivot;       \
    static constexpr auto kQrSolve = cusolverSp##P##csrqrSolve;               \
  };
LINALGD_SP_ROUTINES(float, float, S)
LINALGD_SP_ROUTINES(double, double, D)
LINALGD_SP_ROUTINES(cuComplex, float, C)
LINALGD_SP_ROUTINES(cuDoubleComplex, double, Z)
#undef LINALGD_SP_ROUTINES

// The device copy of a CSR matrix (for cholesky P a P^T).
struct DeviceMatrix {
  DeviceBuffer off, idx, vals;
  int n = 0, nnz = 0;
};

// One factorization on the device by the low-level routines (their info
// object, the workspace), and its solves, one column at a time.
template <typename V>
class SpFactor {
 public:
  using Real = typename Sp<V>::Real;
  ~SpFactor() {
    if (chol_ != nullptr) cusolverSpDestroyCsrcholInfo(chol_);
    if (qr_ != nullptr) cusolverSpDestroyCsrqrInfo(qr_);
  }

  // Analysis, the memory check, the numeric factorization; `what` names the
  // factorization in a refusal ("cholesky", "qr of a^T").
  static absl::StatusOr<std::unique_ptr<SpFactor>> Create(GpuContext& ctx, const SpHandle& h,
                                                          bool chol, const DeviceMatrix& d,
                                                          absl::string_view what) {
    std::unique_ptr<SpFactor> f(new SpFactor(h, d.n));
    const V* vals = d.vals.as<V>();
    const int* off = d.off.as<int>();
    const int* idx = d.idx.as<int>();
    size_t internal = 0, work = 0;
    if (chol) {
      LINALGD_GPU_CHECK(cusolverSpCreateCsrcholInfo(&f->chol_));
      LINALGD_GPU_CHECK(
          cusolverSpXcsrcholAnalysis(h.get(), d.n, d.nnz, h.descr(), off, idx, f->chol_));
      LINALGD_GPU_CHECK(Sp<V>::kCholBufferInfo(h.get(), d.n, d.nnz, h.descr(), vals, off, idx,
                                               f->chol_, &internal, &work));
    } else {
      LINALGD_GPU_CHECK(cusolverSpCreateCsrqrInfo(&f->qr_));
      LINALGD_GPU_CHECK(
          cusolverSpXcsrqrAnalysis(h.get(), d.n, d.n, d.nnz, h.descr(), off, idx, f->qr_));
      LINALGD_GPU_CHECK(Sp<V>::kQrBufferInfo(h.get(), d.n, d.n, d.nnz, h.descr(), vals, off, idx,
                                             f->qr_, &internal, &work));
    }
    // The library allocates its internal data (the factors) itself, outside
    // the device budget's allocator: refused here when it and the workspace
    // pass what the budget has free.
    const int64_t need = static_cast<int64_t>(internal + work);
    const int64_t free_bytes = ctx.mem.budget_bytes() - ctx.mem.in_use_bytes();
    if (need > free_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat(what, ": cusolverSp's factorization needs ", internal,
                       " bytes of factors and ", work, " of workspace; the device's budget has ",
                       std::max<int64_t>(free_bytes, 0), " bytes free"));
    }
    LINALGD_ASSIGN_OR_RETURN(f->work_, ctx.Alloc(std::max<int64_t>(static_cast<int64_t>(work), 1)));
    if (chol) {
      LINALGD_GPU_CHECK(Sp<V>::kCholFactor(h.get(), d.n, d.nnz, h.descr(), vals, off, idx, f->chol_,
                                           f->work_.data()));
    } else {
      LINALGD_GPU_CHECK(
          Sp<V>::kQrSetup(h.get(), d.n, d.n, d.nnz, h.descr(), vals, off, idx, V{}, f->qr_));
      LINALGD_GPU_CHECK(
          Sp<V>::kQrFactor(h.get(), d.n, d.n, d.nnz, nullptr, nullptr, f->qr_, f->work_.data()));
    }
    return f;
  }

  // The first pivot (of the permuted matrix) at or below tol; -1: none.
  absl::StatusOr<int> ZeroPivot(double tol) const {
    int position = -1;
    if (chol_ != nullptr) {
      LINALGD_GPU_CHECK(Sp<V>::kCholZeroPivot(h_.get(), chol_, static_cast<Real>(tol), &position));
    } else {
      LINALGD_GPU_CHECK(Sp<V>::kQrZeroPivot(h_.get(), qr_, static_cast<Real>(tol), &position));
    }
    return position;
  }

  // Cholesky: the first j whose L(j, j) is not a positive finite number (an
  // indefinite a's factorization takes the square root of a negative pivot
  // and leaves NaN); -1: none.
  absl::StatusOr<int> FirstBadDiagonal(GpuContext& ctx) const {
    LINALGD_ASSIGN_OR_RETURN(DeviceBuffer diag, ctx.Alloc(std::max(n_, 1) * sizeof(Real)));
    LINALGD_GPU_CHECK(Sp<V>::kCholDiag(h_.get(), chol_, diag.as<Real>()));
    std::vector<Real> host(n_);
    LINALGD_RETURN_IF_ERROR(CopyToHost(ctx, diag.data(), n_ * sizeof(Real), host.data()));
    for (int j = 0; j < n_; ++j) {
      if (!(host[j] > 0) || !std::isfinite(host[j])) return j;
    }
    return -1;
  }

  // x = a^-1 b for one column (device); qr overwrites b with Q^H b.
  absl::Status Solve(V* b, V* x) const {
    if (chol_ != nullptr) {
      LINALGD_GPU_CHECK(Sp<V>::kCholSolve(h_.get(), n_, b, x, chol_, work_.data()));
    } else {
      LINALGD_GPU_CHECK(Sp<V>::kQrSolve(h_.get(), n_, n_, b, x, qr_, work_.data()));
    }
    return absl::OkStatus();
  }

 private:
  SpFactor(const SpHandle& h, int n) : h_(h), n_(n) {}

  const SpHandle& h_;
  const int n_;
  csrcholInfo_t chol_ = nullptr;
  csrqrInfo_t qr_ = nullptr;
  DeviceBuffer work_;
};

class CusolverSparseDirect : public SparseDirectSolver {
 public:
  bool Supports(SparseMethod m) const override {
    return m == SparseMethod::kCholesky || m == SparseMethod::kQr;
  }
  absl::StatusOr<Tensor> Solve(GpuContext& ctx, SparseMethod method, const CsrView& a,
                               const TensorView& b, const SparseDirectOptions& options) override;
};

// The fill-reducing permutation (p[new] = old): METIS nested dissection for
// Cholesky; none for QR (METIS needs a symmetric pattern).
absl::StatusOr<std::vector<int>> Ordering(const SpHandle& h, SparseMethod method,
                                          const CsrView& a) {
  std::vector<int> p(a.rows);
  if (method != SparseMethod::kCholesky) {
    std::iota(p.begin(), p.end(), 0);
    return p;
  }
  LINALGD_GPU_CHECK(cusolverSpXcsrmetisndHost(h.get(), static_cast<int>(a.rows),
                                              static_cast<int>(a.nnz()), h.descr(), a.row_offsets,
                                              a.col_indices, nullptr, p.data()));
  return p;
}

// V's conjugate (a real V: itself).
template <typename V>
V Conjugate(V v) {
  if constexpr (!std::is_same_v<V, float> && !std::is_same_v<V, double>) v.y = -v.y;
  return v;
}

// pa^T in canonical CSR (complex: pa^H, the values conjugated), n x n, for
// values V.
template <typename V>
Permuted Transposed(const Permuted& pa) {
  const int64_t n = static_cast<int64_t>(pa.offsets.size()) - 1;
  const int64_t nnz = static_cast<int64_t>(pa.indices.size());
  Permuted out;
  out.offsets.assign(n + 1, 0);
  out.indices.resize(nnz);
  out.values.resize(pa.values.size());
  for (int64_t e = 0; e < nnz; ++e) ++out.offsets[pa.indices[e] + 1];
  for (int64_t i = 0; i < n; ++i) out.offsets[i + 1] += out.offsets[i];
  std::vector<int32_t> next(out.offsets.begin(), out.offsets.end() - 1);
  for (int64_t i = 0; i < n; ++i) {  // rows in order: each output row's columns ascend
    for (int32_t q = pa.offsets[i]; q < pa.offsets[i + 1]; ++q) {
      const int32_t at = next[pa.indices[q]]++;
      out.indices[at] = static_cast<int32_t>(i);
      V v;  // copied as bytes: the values are a char buffer
      std::memcpy(&v, pa.values.data() + q * sizeof(V), sizeof(V));
      v = Conjugate(v);
      std::memcpy(out.values.data() + at * sizeof(V), &v, sizeof(V));
    }
  }
  return out;
}

CsrView ViewOf(const Permuted& pa, DType t) {
  CsrView v;
  v.rows = v.cols = static_cast<int64_t>(pa.offsets.size()) - 1;
  v.dtype = t;
  v.row_offsets = pa.offsets.data();
  v.col_indices = pa.indices.data();
  v.values = pa.values.data();
  return v;
}

absl::StatusOr<DeviceMatrix> UploadPermuted(GpuContext& ctx, const Permuted& pa, DType t) {
  const int64_t rows = static_cast<int64_t>(pa.offsets.size()) - 1;
  const int64_t nnz = static_cast<int64_t>(pa.indices.size());
  DeviceMatrix d;
  d.n = static_cast<int>(rows);
  d.nnz = static_cast<int>(nnz);
  LINALGD_ASSIGN_OR_RETURN(d.off, ctx.Alloc((rows + 1) * sizeof(int32_t)));
  LINALGD_ASSIGN_OR_RETURN(d.idx, ctx.Alloc(std::max<int64_t>(nnz, 1) * sizeof(int32_t)));
  LINALGD_ASSIGN_OR_RETURN(d.vals, ctx.Alloc(std::max<int64_t>(nnz, 1) * DTypeSize(t)));
  LINALGD_RETURN_IF_ERROR(
      CopyToDevice(ctx, pa.offsets.data(), (rows + 1) * sizeof(int32_t), d.off.data()));
  LINALGD_RETURN_IF_ERROR(
      CopyToDevice(ctx, pa.indices.data(), nnz * sizeof(int32_t), d.idx.data()));
  LINALGD_RETURN_IF_ERROR(CopyToDevice(ctx, pa.values.data(), pa.values.size(), d.vals.data()));
  return d;
}

// Row-major [n, k] <-> the permuted columns, column-major: out[c][i] = in[p[i]][c].
std::vector<char> GatherColumns(const TensorView& b, const std::vector<int>& p) {
  const int64_t n = b.shape[0], k = b.shape[1];
  const size_t es = DTypeSize(b.dtype);
  std::vector<char> out(n * k * es);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < k; ++c) {
      std::memcpy(&out[(c * n + i) * es], b.data + (p[i] * k + c) * es, es);
    }
  }
  return out;
}

Tensor ScatterColumns(const std::vector<char>& px, const std::vector<int>& p, DType t, int64_t n,
                      int64_t k) {
  const size_t es = DTypeSize(t);
  Tensor x(t, {n, k});
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < k; ++c) {
      std::memcpy(x.mutable_data() + (p[i] * k + c) * es, &px[(c * n + i) * es], es);
    }
  }
  return x;
}

// The estimator's host vectors (double; a complex a's real form: real
// parts, then imaginary parts) through V on the device.
template <typename V>
void ToValues(const double* v, int64_t n, V* out) {
  using Real = typename Sp<V>::Real;
  Real* r = reinterpret_cast<Real*>(out);
  if constexpr (std::is_same_v<V, float> || std::is_same_v<V, double>) {
    for (int64_t i = 0; i < n; ++i) r[i] = static_cast<Real>(v[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      r[2 * i] = static_cast<Real>(v[i]);
      r[2 * i + 1] = static_cast<Real>(v[n + i]);
    }
  }
}
template <typename V>
void FromValues(const V* in, int64_t n, double* v) {
  using Real = typename Sp<V>::Real;
  const Real* r = reinterpret_cast<const Real*>(in);
  if constexpr (std::is_same_v<V, float> || std::is_same_v<V, double>) {
    for (int64_t i = 0; i < n; ++i) v[i] = r[i];
  } else {
    for (int64_t i = 0; i < n; ++i) {
      v[i] = r[2 * i];
      v[n + i] = r[2 * i + 1];
    }
  }
}

// x = a \ b for V's dtype: the factorization, its checks, the condition
// estimate, the solves.
template <typename V>
absl::StatusOr<Tensor> SolveAs(GpuContext& ctx, const SpHandle& h, SparseMethod method,
                               const CsrView& a, const TensorView& b,
                               const SparseDirectOptions& options) {
  const int64_t n = a.rows, k = b.shape[1];
  const size_t es = sizeof(V);
  const bool chol = method == SparseMethod::kCholesky;
  const char* name = chol ? "cholesky" : "qr";
  const bool wide = a.dtype == DType::kF64 || a.dtype == DType::kC128;
  const double tol = wide ? 1e-12 : 1e-6;
  LINALGD_ASSIGN_OR_RETURN(const std::vector<int> p, Ordering(h, method, a));
  const Permuted pa = Permute(a, p);
  LINALGD_ASSIGN_OR_RETURN(DeviceMatrix d, UploadPermuted(ctx, pa, a.dtype));
  LINALGD_RETURN_IF_ERROR(
      options.stop.Check(absl::StrCat("gpu: ", name, " before its factorization")));
  LINALGD_ASSIGN_OR_RETURN(std::unique_ptr<SpFactor<V>> f,
                           SpFactor<V>::Create(ctx, h, chol, d, name));
  LINALGD_ASSIGN_OR_RETURN(int zero, f->ZeroPivot(tol));
  if (chol && zero < 0) {
    LINALGD_ASSIGN_OR_RETURN(zero, f->FirstBadDiagonal(ctx));
  }
  if (zero >= 0) {
    return absl::FailedPreconditionError(
        chol ? absl::StrCat("cholesky: a is not positive definite (cusolverSp: pivot ", zero,
                            " of the permuted matrix)")
             : absl::StrCat("qr: a is singular (cusolverSp: R(", zero, ",", zero,
                            ") below tolerance ", tol, ")"));
  }
  LINALGD_RETURN_IF_ERROR(
      options.stop.Check(absl::StrCat("gpu: ", name, " after its factorization")));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer db, ctx.Alloc(std::max<int64_t>(n * k, 1) * es));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer dx, ctx.Alloc(std::max<int64_t>(n * k, 1) * es));
  if (options.rcond_threshold > 0 && n > 0) {
    // a^-T: the same factor for cholesky (a = a^T; complex a = a^H, whose
    // real form is symmetric); qr factors a^T (a^H) as well.
    std::unique_ptr<SpFactor<V>> ft;
    std::optional<DeviceMatrix> dt;
    if (!chol) {
      LINALGD_ASSIGN_OR_RETURN(dt, UploadPermuted(ctx, Transposed<V>(pa), a.dtype));
      LINALGD_ASSIGN_OR_RETURN(ft, SpFactor<V>::Create(ctx, h, false, *dt, "qr of a^T"));
    }
    const int64_t dim = IsComplex(a.dtype) ? 2 * n : n;
    std::vector<V> host(n);
    auto solve = [&](double* v, int64_t cols, bool transposed) -> absl::Status {
      const SpFactor<V>& by = transposed && ft != nullptr ? *ft : *f;
      for (int64_t c = 0; c < cols; ++c) {
        ToValues(v + c * dim, n, host.data());
        LINALGD_RETURN_IF_ERROR(CopyToDevice(ctx, host.data(), n * es, db.data()));
        LINALGD_RETURN_IF_ERROR(by.Solve(db.as<V>(), dx.as<V>()));
        LINALGD_RETURN_IF_ERROR(CopyToHost(ctx, dx.data(), n * es, host.data()));
        FromValues(host.data(), n, v + c * dim);
      }
      return absl::OkStatus();
    };
    LINALGD_ASSIGN_OR_RETURN(const double rcond,
                             SparseRcondFromSolves(ViewOf(pa, a.dtype), dim, chol, solve));
    if (!(rcond >= options.rcond_threshold)) {
      return NumericallySingularError(name, "a", rcond, options.rcond_threshold);
    }
  }
  const std::vector<char> pb = GatherColumns(b, p);
  std::vector<char> px(pb.size());
  LINALGD_RETURN_IF_ERROR(CopyToDevice(ctx, pb.data(), pb.size(), db.data()));
  for (int64_t c = 0; c < k; ++c) {
    LINALGD_RETURN_IF_ERROR(f->Solve(db.as<V>() + c * n, dx.as<V>() + c * n));
  }
  LINALGD_RETURN_IF_ERROR(CopyToHost(ctx, dx.data(), px.size(), px.data()));
  return ScatterColumns(px, p, a.dtype, n, k);
}

absl::StatusOr<Tensor> CusolverSparseDirect::Solve(GpuContext& ctx, SparseMethod method,
                                                   const CsrView& a, const TensorView& b,
                                                   const SparseDirectOptions& options) {
  SpHandle h;
  LINALGD_RETURN_IF_ERROR(h.Init(ctx.hs.stream));
  // c64 / c128 values are (re, im) pairs of float / double: cuComplex's and
  // cuDoubleComplex's layout. Complex csrchol factors a Hermitian a = G G^H.
  switch (a.dtype) {
    case DType::kF32:
      return SolveAs<float>(ctx, h, method, a, b, options);
    case DType::kF64:
      return SolveAs<double>(ctx, h, method, a, b, options);
    case DType::kC64:
      return SolveAs<cuComplex>(ctx, h, method, a, b, options);
    case DType::kC128:
      return SolveAs<cuDoubleComplex>(ctx, h, method, a, b, options);
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "a.dtype: cusolverSp solves f32, f64, c64 and c128, not ", DTypeName(a.dtype)));
  }
}

}  // namespace

std::unique_ptr<SparseDirectSolver> MakeCusolverSparseDirectSolver() {
  return std::make_unique<CusolverSparseDirect>();
}

}  // namespace linalgd::gpu
