// cusolverSp is deprecated in CUDA 13 (replaced by cuDSS, not installed on
// these hosts); silence the attribute in this file only.
#define DISABLE_CUSOLVER_DEPRECATED

#include <cusolverSp.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/gpu/blas_calls.h"
#include "server/gpu/cuda_check.h"
#include "server/gpu/device_tensor.h"
#include "server/gpu/sparse_direct_solver.h"
#include "server/gpu/transfer.h"

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

class CusolverSparseDirect : public SparseDirectSolver {
 public:
  bool Supports(SparseMethod m) const override {
    return m == SparseMethod::kCholesky || m == SparseMethod::kQr;
  }
  absl::StatusOr<Tensor> Solve(GpuContext& ctx, SparseMethod method, const CsrView& a,
                               const TensorView& b) override;

 private:
  absl::Status SolveColumn(const SpHandle& h, SparseMethod method, const CsrView& a,
                           const DeviceBuffer& d_vals, const DeviceBuffer& d_off,
                           const DeviceBuffer& d_idx, const void* b, void* x) const;
};

// csrlsvchol's or csrlsvqr's signature for values V (float, double,
// cuComplex, cuDoubleComplex) and a tolerance of type Tol (V's real type).
template <typename V, typename Tol>
using CsrlsvFn = cusolverStatus_t (*)(cusolverSpHandle_t, int, int, cusparseMatDescr_t, const V*,
                                      const int*, const int*, const V*, Tol, int, V*, int*);

// One csrlsv call on device CSR (vals, off, idx) of n rows, b and x of n
// values V; no reordering (the matrix is already METIS-permuted).
template <typename V, typename Tol>
absl::Status Csrlsv(CsrlsvFn<V, Tol> fn, const SpHandle& h, int n, int nnz,
                    const DeviceBuffer& vals, const DeviceBuffer& off, const DeviceBuffer& idx,
                    const void* b, double tol, void* x, int* singularity) {
  const int reorder = 0;
  LINALGD_GPU_CHECK(fn(h.get(), n, nnz, h.descr(), vals.as<V>(), off.as<int>(), idx.as<int>(),
                       static_cast<const V*>(b), static_cast<Tol>(tol), reorder, static_cast<V*>(x),
                       singularity));
  return absl::OkStatus();
}

absl::Status CusolverSparseDirect::SolveColumn(const SpHandle& h, SparseMethod method,
                                               const CsrView& a, const DeviceBuffer& vals,
                                               const DeviceBuffer& off, const DeviceBuffer& idx,
                                               const void* b, void* x) const {
  const int n = static_cast<int>(a.rows), nnz = static_cast<int>(a.nnz());
  const bool chol = method == SparseMethod::kCholesky;
  const bool wide = a.dtype == DType::kF64 || a.dtype == DType::kC128;
  const double tol = wide ? 1e-12 : 1e-6;
  int singularity = -1;
  absl::Status called;
  // c64 / c128 values are (re, im) pairs of float / double: cuComplex's and
  // cuDoubleComplex's layout. Complex csrlsvchol factors a Hermitian a = G G^H.
  switch (a.dtype) {
    case DType::kF32:
      called = Csrlsv<float, float>(chol ? cusolverSpScsrlsvchol : cusolverSpScsrlsvqr, h, n, nnz,
                                    vals, off, idx, b, tol, x, &singularity);
      break;
    case DType::kF64:
      called = Csrlsv<double, double>(chol ? cusolverSpDcsrlsvchol : cusolverSpDcsrlsvqr, h, n, nnz,
                                      vals, off, idx, b, tol, x, &singularity);
      break;
    case DType::kC64:
      called = Csrlsv<cuComplex, float>(chol ? cusolverSpCcsrlsvchol : cusolverSpCcsrlsvqr, h, n,
                                        nnz, vals, off, idx, b, tol, x, &singularity);
      break;
    case DType::kC128:
      called = Csrlsv<cuDoubleComplex, double>(chol ? cusolverSpZcsrlsvchol : cusolverSpZcsrlsvqr,
                                               h, n, nnz, vals, off, idx, b, tol, x, &singularity);
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "a.dtype: cusolverSp solves f32, f64, c64 and c128, not ", DTypeName(a.dtype)));
  }
  LINALGD_RETURN_IF_ERROR(called);
  if (singularity < 0) return absl::OkStatus();
  return absl::FailedPreconditionError(
      chol ? absl::StrCat("cholesky: a is not positive definite (cusolverSp: pivot ", singularity,
                          " of the permuted matrix)")
           : absl::StrCat("qr: a is singular (cusolverSp: R(", singularity, ",", singularity,
                          ") below tolerance ", tol, ")"));
}

// The fill-reducing permutation (p[new] = old): METIS nested dissection for
// Cholesky; none for QR (csrlsvqr ignores orderings and METIS needs a
// symmetric pattern).
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

// The device copy of P a P^T.
struct DeviceMatrix {
  DeviceBuffer off, idx, vals;
};

absl::StatusOr<DeviceMatrix> UploadPermuted(GpuContext& ctx, const Permuted& pa, DType t) {
  const int64_t rows = static_cast<int64_t>(pa.offsets.size()) - 1;
  const int64_t nnz = static_cast<int64_t>(pa.indices.size());
  DeviceMatrix d;
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

absl::StatusOr<Tensor> CusolverSparseDirect::Solve(GpuContext& ctx, SparseMethod method,
                                                   const CsrView& a, const TensorView& b) {
  const int64_t n = a.rows, k = b.shape[1];
  const size_t es = DTypeSize(a.dtype);
  SpHandle h;
  LINALGD_RETURN_IF_ERROR(h.Init(ctx.hs.stream));
  LINALGD_ASSIGN_OR_RETURN(const std::vector<int> p, Ordering(h, method, a));
  LINALGD_ASSIGN_OR_RETURN(DeviceMatrix d, UploadPermuted(ctx, Permute(a, p), a.dtype));
  const std::vector<char> pb = GatherColumns(b, p);
  std::vector<char> px(pb.size());
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer db, ctx.Alloc(n * k * es));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer dx, ctx.Alloc(n * k * es));
  LINALGD_RETURN_IF_ERROR(CopyToDevice(ctx, pb.data(), pb.size(), db.data()));
  for (int64_t c = 0; c < k; ++c) {
    LINALGD_RETURN_IF_ERROR(SolveColumn(h, method, a, d.vals, d.off, d.idx,
                                        db.as<char>() + c * n * es, dx.as<char>() + c * n * es));
  }
  LINALGD_RETURN_IF_ERROR(CopyToHost(ctx, dx.data(), px.size(), px.data()));
  return ScatterColumns(px, p, a.dtype, n, k);
}

}  // namespace

std::unique_ptr<SparseDirectSolver> MakeCusolverSparseDirectSolver() {
  return std::make_unique<CusolverSparseDirect>();
}

}  // namespace linalgd::gpu
