#include "server/gpu/gpu_factor.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/gpu/blas_calls.h"
#include "server/gpu/cuda_check.h"
#include "server/gpu/dense_solver.h"
#include "server/gpu/device_tensor.h"
#include "server/gpu/factor_rcond.h"
#include "server/gpu/gpu_backend.h"
#include "server/gpu/kernels.h"
#include "server/gpu/transfer.h"
#include "server/linalg/condition.h"

namespace linalgd::gpu {
namespace {

int64_t RoundUp256(int64_t bytes) { return (bytes + 255) / 256 * 256; }

// What Factorize knows about a before factoring it.
struct MatrixStats {
  double anorm = 0;    // ||a||_1
  double asym = 0;     // max |a[i,j] - a[j,i]| (complex: - conj(a[j,i]))
  double sym_tol = 0;  // 100 eps ||a||_1
};

// The factors being built, before they become a GpuFactor.
struct Work {
  GpuContext& ctx;
  DType t;
  int64_t n;
  DeviceBuffer w;     // column-major n x n
  DeviceBuffer ipiv;  // LU only
  DeviceBuffer perm;  // LU only: ipiv as one permutation (GpuFactor::permutation)
  DeviceBuffer info;  // one device int
};

absl::StatusOr<MatrixStats> Stats(GpuContext& ctx, DType t, const void* a, int64_t n) {
  LINALGD_ASSIGN_OR_RETURN(MatrixNorms norms, SymmetryAndNorms(ctx, t, a, n, 1));
  MatrixStats s;
  s.asym = norms.asym[0];
  s.anorm = norms.norm1[0];
  s.sym_tol = 100 * MachineEps(t) * s.anorm;
  return s;
}

// devInfo < 0 is a bad argument: a bug of ours, never the caller's.
absl::StatusOr<int> ReadInfo(HandleSet& hs, const DeviceBuffer& info, const char* what) {
  LINALGD_ASSIGN_OR_RETURN(int v, ReadDeviceInt(hs, info.as<int>()));
  if (v < 0) {
    return absl::InternalError(
        absl::StrCat(what, ": devInfo ", v, " (parameter ", -v, " is invalid)"));
  }
  return v;
}

// x (column-major n x nrhs) = a^-1 x, or a^-T x when `transposed`. Queued on
// the stream; *d_info gets getrs / potrs's devInfo. A complex Cholesky
// factor is conj(a)'s (the buffer read column-major, a Hermitian): x is
// conjugated around potrs, conj(a) conj(x) = conj(b).
absl::Status SolveInPlace(HandleSet& hs, DType t, SolveMethod method, int64_t n, int64_t nrhs,
                          const void* factors, const int64_t* pivots, void* x, bool transposed,
                          int* d_info) {
  const cudaDataType_t ct = CudaType(t);
  if (method == SolveMethod::kCholesky) {  // a symmetric: a^-T = a^-1
    LINALGD_RETURN_IF_ERROR(ConjugateInPlace(t, x, n * nrhs, hs.stream));  // complex only
    LINALGD_GPU_CHECK(cusolverDnXpotrs(hs.solver, hs.solver_params, CUBLAS_FILL_MODE_LOWER, n, nrhs,
                                       ct, factors, n, ct, x, n, d_info));
    return ConjugateInPlace(t, x, n * nrhs, hs.stream);
  }
  // The factors are those of a^T: OP_T solves a x = b, OP_N solves a^T x = b.
  const cublasOperation_t op = transposed ? CUBLAS_OP_N : CUBLAS_OP_T;
  LINALGD_GPU_CHECK(cusolverDnXgetrs(hs.solver, hs.solver_params, op, n, nrhs, ct, factors, n,
                                     pivots, ct, x, n, d_info));
  return absl::OkStatus();
}

// SolveInPlace (a^-1, not transposed) by the chain kernel: x column-major
// n x columns, two columns a launch. LU's factors are those of A = a^T
// (P A = L U): a x = b is A^T x = b, x = P^T L^-T U^-T b (plain transposes,
// complex too). Cholesky's: a = L L^T; complex, conj(a) = L L^H, so
// conj(x) = L^-H L^-1 conj(b).
absl::Status ChainSolveInPlace(GpuContext& ctx, DType t, SolveMethod method, int64_t n,
                               int64_t columns, const void* factors, const int64_t* perm, void* x) {
  const cudaStream_t st = ctx.hs.stream;
  const int64_t col_bytes = n * static_cast<int64_t>(DTypeSize(t));
  const bool lu = method != SolveMethod::kCholesky;
  if (lu && perm == nullptr) return absl::InternalError("an LU factor without its permutation");
  const int pair = static_cast<int>(kFactorChainMaxColumns);
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer scratch,
                           ctx.Alloc(TriangularSolveScratchBytes(t, n, pair)));
  DeviceBuffer gathered;  // LU: the interchanges' destination, then copied back
  if (lu) {
    LINALGD_ASSIGN_OR_RETURN(gathered, ctx.Alloc(pair * col_bytes));
  }
  if (!lu) LINALGD_RETURN_IF_ERROR(ConjugateInPlace(t, x, n * columns, st));  // complex only
  const TriangleOp transpose =
      lu || !IsComplex(t) ? TriangleOp::kTranspose : TriangleOp::kConjTranspose;
  for (int64_t c = 0; c < columns; c += pair) {
    TrsvOptions o;
    o.columns = static_cast<int>(std::min<int64_t>(pair, columns - c));
    char* v = static_cast<char*>(x) + c * col_bytes;
    if (!lu) {
      LINALGD_RETURN_IF_ERROR(TriangularSolve(t, TriangleFill::kLower, TriangleOp::kNoTranspose,
                                              false, n, factors, n, v, scratch.data(), st, o));
      LINALGD_RETURN_IF_ERROR(TriangularSolve(t, TriangleFill::kLower, transpose, false, n, factors,
                                              n, v, scratch.data(), st, o));
      continue;
    }
    LINALGD_RETURN_IF_ERROR(TriangularSolve(t, TriangleFill::kUpper, transpose, false, n, factors,
                                            n, v, scratch.data(), st, o));
    LINALGD_RETURN_IF_ERROR(TriangularSolve(t, TriangleFill::kLower, transpose, true, n, factors, n,
                                            v, scratch.data(), st, o));
    for (int j = 0; j < o.columns; ++j) {
      LINALGD_RETURN_IF_ERROR(PermuteVector(t, perm, /*inverse=*/true, v + j * col_bytes,
                                            gathered.as<char>() + j * col_bytes, n, st));
    }
    LINALGD_GPU_CHECK(
        cudaMemcpyAsync(v, gathered.data(), o.columns * col_bytes, cudaMemcpyDeviceToDevice, st));
  }
  if (!lu) LINALGD_RETURN_IF_ERROR(ConjugateInPlace(t, x, n * columns, st));
  return absl::OkStatus();
}

absl::StatusOr<double> Rcond(Work& w, SolveMethod method, double anorm) {
  return FactorRcond(w.ctx, w.t, method, w.n, w.w.data(), w.ipiv.as<int64_t>(), anorm);
}

// Empty: w holds the Cholesky factor. Else why Cholesky does not apply.
absl::StatusOr<std::string> TryCholesky(Work& w, const MatrixStats& s) {
  if (!(s.asym <= s.sym_tol)) {
    if (IsComplex(w.t)) {
      return absl::StrCat("cholesky: a is not Hermitian (max |a[i,j] - conj(a[j,i])| = ", s.asym,
                          " exceeds 100*eps*||a||_1 = ", s.sym_tol, ")");
    }
    return absl::StrCat("cholesky: a is not symmetric (max |a[i,j] - a[j,i]| = ", s.asym,
                        " exceeds 100*eps*||a||_1 = ", s.sym_tol, ")");
  }
  HandleSet& hs = w.ctx.hs;
  const cudaDataType_t ct = CudaType(w.t);
  size_t dev_bytes = 0, host_bytes = 0;
  LINALGD_GPU_CHECK(cusolverDnXpotrf_bufferSize(hs.solver, hs.solver_params, CUBLAS_FILL_MODE_LOWER,
                                                w.n, ct, w.w.data(), w.n, ct, &dev_bytes,
                                                &host_bytes));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer work, w.ctx.Alloc(static_cast<int64_t>(dev_bytes)));
  std::vector<char> host(host_bytes);
  LINALGD_GPU_CHECK(cusolverDnXpotrf(hs.solver, hs.solver_params, CUBLAS_FILL_MODE_LOWER, w.n, ct,
                                     w.w.data(), w.n, ct, work.data(), dev_bytes, host.data(),
                                     host_bytes, w.info.as<int>()));
  LINALGD_ASSIGN_OR_RETURN(int failed, ReadInfo(hs, w.info, "cusolverDnXpotrf"));
  if (failed > 0) {
    return absl::StrCat("cholesky: leading minor ", failed, " is not positive definite");
  }
  return std::string();
}

// Empty: w and ipiv hold the LU factors of a^T. Else why a is singular.
absl::StatusOr<std::string> TryLu(Work& w) {
  HandleSet& hs = w.ctx.hs;
  const cudaDataType_t ct = CudaType(w.t);
  LINALGD_ASSIGN_OR_RETURN(w.ipiv, w.ctx.Alloc(w.n * sizeof(int64_t)));
  size_t dev_bytes = 0, host_bytes = 0;
  LINALGD_GPU_CHECK(cusolverDnXgetrf_bufferSize(hs.solver, hs.solver_params, w.n, w.n, ct,
                                                w.w.data(), w.n, ct, &dev_bytes, &host_bytes));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer work, w.ctx.Alloc(static_cast<int64_t>(dev_bytes)));
  std::vector<char> host(host_bytes);
  LINALGD_GPU_CHECK(cusolverDnXgetrf(hs.solver, hs.solver_params, w.n, w.n, ct, w.w.data(), w.n,
                                     w.ipiv.as<int64_t>(), ct, work.data(), dev_bytes, host.data(),
                                     host_bytes, w.info.as<int>()));
  LINALGD_ASSIGN_OR_RETURN(int failed, ReadInfo(hs, w.info, "cusolverDnXgetrf"));
  if (failed > 0) {
    return absl::StrCat("lu: a is singular (U[", failed - 1, ",", failed - 1, "] is exactly zero)");
  }
  return std::string();
}

std::shared_ptr<const Factor> MakeFactor(Work& w, SolveMethod method, double rcond, Backend* owner,
                                         MemoryBudget::Reservation r) {
  const double threshold = SingularThreshold(w.ctx.singular_rcond_factor, w.n, w.t);
  FactorInfo info;
  info.method = method;
  info.dtype = w.t;
  info.n = w.n;
  info.bytes = w.w.bytes() + w.ipiv.bytes() + w.perm.bytes();
  info.placement = owner->name();
  info.rcond = rcond;
  info.rcond_threshold = threshold;
  return std::make_shared<GpuFactor>(std::move(info), owner, w.ctx.mem.device(), std::move(w.w),
                                     std::move(w.ipiv), std::move(w.perm), std::move(r));
}

absl::StatusOr<MemoryBudget::Reservation> ReserveFor(MemoryBudget* budget, int64_t bytes) {
  if (budget == nullptr) return MemoryBudget::Reservation();
  return budget->TryReserve(bytes);
}

// The LU attempt on the a in w.w; FAILED_PRECONDITION on an exactly zero pivot.
absl::StatusOr<std::shared_ptr<const Factor>> FactorLu(Work& w, const MatrixStats& s,
                                                       Backend* owner,
                                                       MemoryBudget::Reservation& r) {
  LINALGD_ASSIGN_OR_RETURN(std::string failure, TryLu(w));
  if (!failure.empty()) return absl::FailedPreconditionError(failure);
  LINALGD_ASSIGN_OR_RETURN(
      w.perm, DevicePivotPermutation(w.ctx.mem, w.ctx.hs.stream, w.ipiv.as<int64_t>(), w.n));
  LINALGD_ASSIGN_OR_RETURN(double rcond, Rcond(w, SolveMethod::kLu, s.anorm));
  return MakeFactor(w, SolveMethod::kLu, rcond, owner, std::move(r));
}

}  // namespace

GpuFactor::GpuFactor(FactorInfo info, Backend* owner, int device, DeviceBuffer factors,
                     DeviceBuffer pivots, DeviceBuffer permutation,
                     MemoryBudget::Reservation reservation)
    : Factor(std::move(info), owner),
      device_(device),
      factors_(std::move(factors)),
      pivots_(std::move(pivots)),
      permutation_(std::move(permutation)),
      reservation_(std::move(reservation)) {}

GpuFactor::~GpuFactor() {
  int previous = -1;
  const bool restore = cudaGetDevice(&previous) == cudaSuccess && previous != device_;
  if (cudaSetDevice(device_) != cudaSuccess) cudaGetLastError();
  factors_.Reset();
  pivots_.Reset();
  permutation_.Reset();
  if (restore && cudaSetDevice(previous) != cudaSuccess) cudaGetLastError();
  reservation_.Release();
}

absl::Status CheckFactorizeOp(const FactorizeOp& op) {
  if (op.a.shape.size() != 2 || op.a.rows() != op.a.cols()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a.shape: ", ShapeString(op.a.shape), " is not one square matrix"));
  }
  const DType t = op.a.dtype;
  if (t != DType::kF32 && t != DType::kF64 && !IsComplex(t)) {
    return absl::InvalidArgumentError(
        absl::StrCat("a.dtype: ", DTypeName(t), "; factorizations take f32, f64, c64 or c128"));
  }
  if (op.a.rows() == 0) {
    return absl::InvalidArgumentError("a.shape: [0, 0]; an empty matrix has no factorization");
  }
  if (op.method == SolveMethod::kQr || op.method == SolveMethod::kLstsq) {
    return absl::InvalidArgumentError("method: Factorize takes AUTO, LU or CHOLESKY");
  }
  return absl::OkStatus();
}

absl::StatusOr<FactorizeResult> RunFactorize(GpuContext& ctx, const FactorizeOp& op, Backend* owner,
                                             MemoryBudget* budget) {
  Work w{ctx, op.a.dtype, op.a.rows(), {}, {}, {}, {}};
  const int64_t bytes = w.n * w.n * DTypeSize(w.t);
  // LU's pivots and their permutation.
  const int64_t pivot_bytes = 2 * RoundUp256(w.n * static_cast<int64_t>(sizeof(int64_t)));
  LINALGD_ASSIGN_OR_RETURN(MemoryBudget::Reservation r,
                           ReserveFor(budget, RoundUp256(bytes) + pivot_bytes));
  LINALGD_ASSIGN_OR_RETURN(w.w, ctx.Alloc(bytes));
  LINALGD_ASSIGN_OR_RETURN(w.info, ctx.Alloc(sizeof(int)));
  LINALGD_RETURN_IF_ERROR(CopyToDevice(ctx, op.a.data, bytes, w.w.data()));
  LINALGD_ASSIGN_OR_RETURN(MatrixStats s, Stats(ctx, w.t, w.w.data(), w.n));
  FactorizeResult result;
  if (op.method != SolveMethod::kLu) {
    LINALGD_ASSIGN_OR_RETURN(std::string failure, TryCholesky(w, s));
    if (failure.empty()) {
      LINALGD_ASSIGN_OR_RETURN(double rcond, Rcond(w, SolveMethod::kCholesky, s.anorm));
      return KeepFactorWithVerdict(
          MakeFactor(w, SolveMethod::kCholesky, rcond, owner, std::move(r)), op.allow_fallback, "");
    }
    if (op.method == SolveMethod::kCholesky && !op.allow_fallback) {
      return absl::FailedPreconditionError(failure);
    }
    if (op.method == SolveMethod::kCholesky) result.fallback = failure + "; used lu";
    // potrf overwrote w: a again.
    LINALGD_RETURN_IF_ERROR(CopyToDevice(ctx, op.a.data, bytes, w.w.data()));
  }
  LINALGD_ASSIGN_OR_RETURN(std::shared_ptr<const Factor> factor, FactorLu(w, s, owner, r));
  return KeepFactorWithVerdict(std::move(factor), op.allow_fallback, result.fallback);
}

absl::Status CheckFactorSolve(const Factor& factor, const TensorView& b) {
  const FactorInfo& f = factor.info();
  if (b.shape.size() < 2 || b.rows() != f.n || b.dtype != f.dtype) {
    return absl::InvalidArgumentError(absl::StrCat("b: ", DTypeName(b.dtype), ShapeString(b.shape),
                                                   " does not fit the ", DTypeName(f.dtype),
                                                   " factor of order ", f.n));
  }
  return absl::OkStatus();
}

bool FactorSolveTakesChain(DType t, SolveMethod method, int64_t n, int64_t columns) {
  if (IsComplex(t) && method == SolveMethod::kCholesky) return false;
  return n >= kFactorChainMinN && columns >= 1 && columns <= kFactorChainMaxColumns;
}

// The row-major [batch, n, k] b is transposed on the device into batch
// column-major n x k blocks, which together are one column-major
// n x (batch * k) matrix: one getrs / potrs (or the chain's launches)
// solves them all.
absl::StatusOr<SolveResult> RunSolveWithFactor(GpuContext& ctx, const GpuFactor& factor,
                                               const TensorView& b, FactorSolvePath path,
                                               FactorSolvePath* taken) {
  const FactorInfo& f = factor.info();
  SolveResult r;
  r.method_used = f.method;
  r.residual = -1;  // a is not kept
  r.rcond = f.rcond;
  const int64_t n = f.n, k = b.cols();
  if (taken != nullptr) *taken = FactorSolvePath::kCusolver;
  if (b.num_elements() == 0) {
    r.x = Tensor(b.dtype, b.shape);
    return r;
  }
  const int64_t batch = b.num_elements() / (n * k);
  const DType t = b.dtype;
  const bool chain =
      path == FactorSolvePath::kChain ||
      (path == FactorSolvePath::kAuto && FactorSolveTakesChain(t, f.method, n, batch * k));
  if (taken != nullptr && chain) *taken = FactorSolvePath::kChain;
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer x, Upload(ctx, b));
  DeviceBuffer cols;  // k == 1: the row-major b already is column-major
  if (k > 1) {
    LINALGD_ASSIGN_OR_RETURN(cols, ctx.Alloc(static_cast<int64_t>(b.num_bytes())));
    LINALGD_RETURN_IF_ERROR(
        Transpose(t, x.data(), n, k, k, n * k, cols.data(), n, n * k, batch, ctx.hs.stream));
  }
  void* work = k > 1 ? cols.data() : x.data();
  DeviceBuffer info;
  if (chain) {
    LINALGD_RETURN_IF_ERROR(ChainSolveInPlace(ctx, t, f.method, n, batch * k, factor.factors(),
                                              factor.permutation(), work));
  } else {
    LINALGD_ASSIGN_OR_RETURN(info, ctx.Alloc(sizeof(int)));
    LINALGD_RETURN_IF_ERROR(SolveInPlace(ctx.hs, t, f.method, n, batch * k, factor.factors(),
                                         factor.pivots(), work, false, info.as<int>()));
  }
  if (k > 1) {
    LINALGD_RETURN_IF_ERROR(
        Transpose(t, cols.data(), k, n, n, n * k, x.data(), k, n * k, batch, ctx.hs.stream));
  }
  LINALGD_ASSIGN_OR_RETURN(r.x, Download(ctx, x.data(), t, b.shape));
  if (!chain) LINALGD_RETURN_IF_ERROR(ReadInfo(ctx.hs, info, "getrs/potrs").status());
  return r;
}

absl::StatusOr<FactorizeResult> GpuBackend::Factorize(const FactorizeOp& op) {
  LINALGD_RETURN_IF_ERROR(CheckFactorizeOp(op));
  MemoryBudget* budget = memory_budget();
  return RunJob<FactorizeResult>(
      [&](GpuContext& ctx) { return RunFactorize(ctx, op, this, budget); });
}

absl::StatusOr<SolveResult> GpuBackend::SolveWithFactor(const Factor& factor, const TensorView& b) {
  const auto* f = dynamic_cast<const GpuFactor*>(&factor);
  if (f == nullptr || factor.owner() != this) {
    return absl::InvalidArgumentError(absl::StrCat("factor: not a factor of ", name()));
  }
  LINALGD_RETURN_IF_ERROR(CheckFactorSolve(factor, b));
  return RunJob<SolveResult>([&](GpuContext& ctx) { return RunSolveWithFactor(ctx, *f, b); });
}

}  // namespace linalgd::gpu
