#include "server/gpu/factor_rcond.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "server/gpu/cuda_check.h"
#include "server/gpu/dense_solver.h"
#include "server/gpu/kernels.h"
#include "server/gpu/pinned_pool.h"
#include "server/gpu/super_sweep.h"
#include "server/linalg/condition.h"
#include "spdlog/spdlog.h"

namespace linalgd::gpu {
namespace {

using Complex = std::complex<double>;

// Host staging for an estimate's vectors: a page-locked block of ctx's pool
// when one is free and large enough (DMA-speed, truly asynchronous copies),
// else pageable memory. The block is this estimate's alone (leased from the
// pool), released after `stream`'s copies.
class Staging {
 public:
  Staging(GpuContext& ctx, size_t bytes, cudaStream_t stream) : stream_(stream) {
    std::optional<PinnedBlock> block = ctx.pinned.TryAcquire();
    if (block.has_value() && block->size() >= bytes) {
      pinned_.emplace(std::move(*block));
      data_ = pinned_->data();
    } else {
      pageable_.resize(std::max<size_t>(bytes, 1));
      data_ = pageable_.data();
    }
  }
  // A copy still queued (an error path) keeps the block from reuse.
  ~Staging() {
    if (pinned_.has_value()) pinned_->ReleaseAfter(stream_).IgnoreError();
  }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;

  void* data() const { return data_; }

 private:
  cudaStream_t stream_;
  std::optional<PinnedBlock> pinned_;
  std::vector<char> pageable_;
  void* data_ = nullptr;
};

// v's values as elements of t in dst (F32 / C64: rounded to float).
template <typename V>
void Narrow(const std::vector<V>& v, DType t, void* dst) {
  if (t == DType::kF32 || t == DType::kC64) {
    using Narrowed = std::conditional_t<std::is_same_v<V, double>, float, std::complex<float>>;
    Narrowed* out = static_cast<Narrowed*>(dst);
    for (size_t i = 0; i < v.size(); ++i) out[i] = static_cast<Narrowed>(v[i]);
  } else {
    std::memcpy(dst, v.data(), v.size() * sizeof(V));
  }
}

// The inverse of Narrow: v's values from the elements of t at src.
template <typename V>
void Widen(const void* src, DType t, std::vector<V>& v) {
  if (t == DType::kF32 || t == DType::kC64) {
    using Narrowed = std::conditional_t<std::is_same_v<V, double>, float, std::complex<float>>;
    const Narrowed* in = static_cast<const Narrowed*>(src);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<V>(in[i]);
  } else {
    std::memcpy(v.data(), src, v.size() * sizeof(V));
  }
}

// One step of a solve with the factors: a triangular solve, or getrf's
// interchanges applied in order (kPermute) or in reverse (kUnpermute).
struct Step {
  enum class Kind { kTriangle, kPermute, kUnpermute };
  Kind kind = Kind::kTriangle;
  TriangleFill fill = TriangleFill::kLower;
  TriangleOp op = TriangleOp::kNoTranspose;
  bool unit = false;
};

Step Tri(TriangleFill fill, TriangleOp op, bool unit) {
  return Step{Step::Kind::kTriangle, fill, op, unit};
}
const Step kPermute{Step::Kind::kPermute};
const Step kUnpermute{Step::Kind::kUnpermute};
constexpr TriangleFill kLower = TriangleFill::kLower, kUpper = TriangleFill::kUpper;
constexpr TriangleOp kN = TriangleOp::kNoTranspose, kT = TriangleOp::kTranspose,
                     kC = TriangleOp::kConjTranspose;

bool Forward(const Step& step) {
  return (step.fill == TriangleFill::kLower) == (step.op == TriangleOp::kNoTranspose);
}

// FactorRcond's device work: the estimator's vectors (1 or 2 columns) on the
// device, solved by a list of steps per call with the n x n factors
// (column-major, ld n); one host-to-device copy, the steps, one
// device-to-host copy and one sync per call, all on `stream` (its buffers
// allocated and freed on it too). With split_columns (and the custom
// kernel), a call of two columns forks the second onto ctx.hs.column_stream
// after the copy in and joins it back before the copy out: two one-column
// solves side by side, each bitwise the two-column kernel's column
// (kernels.h TriangularSolve), in the time of about one (the kernel's chain
// of blocks is latency-bound; a second column lengthens each link). With
// early_start (and the custom kernel), each lane's triangle steps after its
// first start early beside the step before (TrsvOptions::early_start), on
// counters one memset per call zeroed for every lane and step.
class FactorSolves {
 public:
  // pivots: getrf's (device, n), for kPermute / kUnpermute; null: none.
  // options: FactorRcondOptions' impl, split_columns, early_start and the
  // super_* fields (super_sweeps, where set, must outlive this object).
  // REQUIRES: options.impl is kCustom unless stream is ctx.hs.stream
  // (cuBLAS's handle is bound to hs.stream); stream is not
  // ctx.hs.column_stream.
  static absl::StatusOr<std::unique_ptr<FactorSolves>> Create(GpuContext& ctx, cudaStream_t stream,
                                                              DType t, int64_t n,
                                                              const void* factors,
                                                              const int64_t* pivots,
                                                              const FactorRcondOptions& options);

  // v <- the steps applied to each of v's columns (v.size() / n of them, 1
  // or 2). unit_row >= 0: v is the unit vector at that row, and the chain's
  // forward substitutions before any other step start at its block (a^-1
  // e_j: LU's chain U^-T, L^-T, then the interchanges; Cholesky's L^-1,
  // L^-T, so the first solve starts at row j).
  template <typename V>
  absl::Status Run(std::vector<V>& v, std::initializer_list<Step> steps, int64_t unit_row = -1);

 private:
  FactorSolves(GpuContext& ctx, cudaStream_t stream, DType t, int64_t n, const void* factors,
               const FactorRcondOptions& o)
      : ctx_(ctx),
        stream_(stream),
        t_(t),
        n_(n),
        factors_(factors),
        impl_(o.impl),
        early_start_(o.early_start && o.impl == TrsvImpl::kCustom),
        super_nb_(o.impl == TrsvImpl::kCustom ? SuperSweep::BlockRowsFor(n, o.super_min_n) : 0),
        super_forked_(o.super_forked),
        super_beside_(o.super_inverses_beside),
        super_sweeps_(o.super_sweeps),
        region_bytes_(TriangularSolveScratchBytes(t, n, kMaxColumns)),
        staging_(ctx, kMaxColumns * n * DTypeSize(t), stream) {}
  // Where one step runs: columns [first, first + count) of v_, on `stream`
  // with its counters in scratch_ from region `lane` on.
  struct Lane {
    int first = 0, count = 1;
    cudaStream_t stream = nullptr;
    int lane = 0;
  };
  // One step on a lane's columns (the interchanges into tmp_: the caller
  // swaps v_ and tmp_ once every lane has taken the step); first_nonzero:
  // TrsvOptions' (a triangular solve by the custom kernel only); triangle:
  // the step's index among the call's triangle steps.
  absl::Status Apply(const Step& step, const Lane& lane, int64_t first_nonzero, int triangle);
  absl::Status Permute(bool inverse, const Lane& lane);
  absl::Status CublasColumns(const Step& step, int columns);
  // The steps on the lanes (one, or two side by side), v_ and tmp_ swapped
  // after each interchange.
  absl::Status Steps(std::initializer_list<Step> steps, const Lane* lanes, int count,
                     int64_t unit_row);

  // The factors' inverted diagonal blocks for one triangle step
  // (TrsvOptions::inverses), kept across this estimate's solves: stored by
  // the first solve that takes the step on stream_ (`filling`), read from
  // the next Run on (`filled`, once that Run's sync has passed), so every
  // chain after the first of each step starts without inverting (kernels.h).
  // A buffer the memory budget refuses is none: those solves invert.
  struct Inverses {
    Step step;
    DeviceBuffer buffer;
    bool filled = false, filling = false;
  };
  Inverses& InversesFor(const Step& step);

  // The super-block sweep for a triangle step it takes (lower, non-unit:
  // Cholesky's), made on first use (its inverses queued on the set's
  // beside_stream with super_beside_ where BesideBlas() gives a handle, else
  // on stream_); null for other steps, below super_min_n, and once the
  // budget has refused its buffers or no stream has a cuBLAS handle for its
  // inverses (then the chain serves). *made_beside: this call queued its
  // inverses beside.
  absl::StatusOr<SuperSweep*> SuperFor(const Step& step, bool* made_beside);

  static constexpr int kMaxColumns = 2;
  // scratch_: a region of counters (region_bytes_) per lane and triangle
  // step of a call: with early_start, one memset per call zeroes them all;
  // without it, each lane's solves share its first region, each launch
  // zeroing it.
  static constexpr int kLanes = 2, kTriangleSteps = 2;
  void* Region(int lane, int triangle) const {
    return scratch_.as<char>() +
           (lane * kTriangleSteps + (early_start_ ? triangle : 0)) * region_bytes_;
  }
  absl::StatusOr<DeviceBuffer> Alloc(int64_t bytes) { return ctx_.mem.Allocate(bytes, stream_); }

  GpuContext& ctx_;
  const cudaStream_t stream_;
  const DType t_;
  const int64_t n_;
  const void* factors_;
  const TrsvImpl impl_;
  const bool early_start_;
  const int64_t super_nb_;   // SuperSweep::BlockRowsFor's, 0: none
  const bool super_forked_;  // FactorRcondOptions::super_forked
  const bool super_beside_;  // FactorRcondOptions::super_inverses_beside
  int* const super_sweeps_;  // FactorRcondOptions::super_sweeps
  const int64_t region_bytes_;
  Staging staging_;
  std::unique_ptr<SuperSweep> super_;
  bool super_refused_ = false;
  bool super_call_ = false;  // this Run's triangle steps are the super sweep's
  DeviceBuffer v_, tmp_, perm_, scratch_;
  bool split_ = false;  // a two-column call runs as two lanes
  std::vector<Inverses> inverses_;
};

FactorSolves::Inverses& FactorSolves::InversesFor(const Step& step) {
  for (Inverses& i : inverses_) {
    if (i.step.fill == step.fill && i.step.op == step.op && i.step.unit == step.unit) return i;
  }
  Inverses i;
  i.step = step;
  absl::StatusOr<DeviceBuffer> buffer = Alloc(TrsvInversesBytes(t_, n_));
  if (buffer.ok()) i.buffer = *std::move(buffer);
  inverses_.push_back(std::move(i));
  return inverses_.back();
}

absl::StatusOr<SuperSweep*> FactorSolves::SuperFor(const Step& step, bool* made_beside) {
  if (step.kind != Step::Kind::kTriangle || step.fill != TriangleFill::kLower || step.unit ||
      super_nb_ == 0 || super_refused_) {
    return nullptr;
  }
  if (super_ != nullptr) return super_.get();
  HandleSet& hs = ctx_.hs;
  cublasHandle_t blas = super_beside_ ? hs.BesideBlas() : nullptr;
  const cudaStream_t beside = blas != nullptr ? hs.beside_stream : nullptr;
  if (blas == nullptr) {
    blas = stream_ == hs.stream ? hs.blas : stream_ == hs.side_stream ? hs.SideBlas() : nullptr;
  }
  if (blas == nullptr) {
    super_refused_ = true;
    return nullptr;
  }
  absl::StatusOr<std::unique_ptr<SuperSweep>> made =
      SuperSweep::Create(ctx_, blas, stream_, t_, n_, factors_, super_nb_, beside);
  if (!made.ok()) {  // the chain serves; a sticky device error shows there too
    if (!absl::IsResourceExhausted(made.status())) {
      spdlog::warn("condition estimate: the super-block sweep failed ({}); the chain serves",
                   made.status().ToString());
    }
    super_refused_ = true;
    return nullptr;
  }
  super_ = *std::move(made);
  *made_beside = beside != nullptr;
  return super_.get();
}

absl::StatusOr<std::unique_ptr<FactorSolves>> FactorSolves::Create(
    GpuContext& ctx, cudaStream_t stream, DType t, int64_t n, const void* factors,
    const int64_t* pivots, const FactorRcondOptions& options) {
  if (options.impl == TrsvImpl::kCublas && stream != ctx.hs.stream) {
    return absl::InvalidArgumentError(
        "FactorRcond: cuBLAS trsv runs on the set's stream only (its handle is bound to it); "
        "another stream takes the custom triangular solve");
  }
  std::unique_ptr<FactorSolves> s(new FactorSolves(ctx, stream, t, n, factors, options));
  const int64_t bytes = std::max<int64_t>(1, kMaxColumns * n * DTypeSize(t));
  LINALGD_ASSIGN_OR_RETURN(s->v_, s->Alloc(bytes));
  s->split_ =
      options.split_columns && options.impl == TrsvImpl::kCustom && stream != ctx.hs.column_stream;
  if (s->split_) {  // two lanes only where both fit the device at once
    LINALGD_ASSIGN_OR_RETURN(s->split_, TrsvSolvesFitSideBySide(t, n, kLanes));
  }
  const int64_t regions = (s->split_ ? kLanes : 1) * kTriangleSteps;
  LINALGD_ASSIGN_OR_RETURN(s->scratch_, s->Alloc(regions * s->region_bytes_));
  if (pivots == nullptr || n == 0) return s;
  LINALGD_ASSIGN_OR_RETURN(s->perm_, DevicePivotPermutation(ctx.mem, stream, pivots, n));
  LINALGD_ASSIGN_OR_RETURN(s->tmp_, s->Alloc(bytes));
  return s;
}

absl::Status FactorSolves::CublasColumns(const Step& step, int columns) {  // on hs.stream
  for (int c = 0; c < columns; ++c) {
    LINALGD_RETURN_IF_ERROR(SolveTriangle(ctx_.hs, impl_, t_, step.fill, step.op, step.unit, n_,
                                          factors_, n_, v_.as<char>() + c * n_ * DTypeSize(t_),
                                          Region(0, 0)));
  }
  return absl::OkStatus();
}

absl::Status FactorSolves::Permute(bool inverse, const Lane& lane) {
  if (perm_.data() == nullptr) {
    return absl::InternalError("FactorSolves: a row interchange step without pivots");
  }
  const int64_t col_bytes = n_ * DTypeSize(t_);
  for (int c = lane.first; c < lane.first + lane.count; ++c) {
    LINALGD_RETURN_IF_ERROR(PermuteVector(t_, perm_.as<int64_t>(), inverse,
                                          v_.as<char>() + c * col_bytes,
                                          tmp_.as<char>() + c * col_bytes, n_, lane.stream));
  }
  return absl::OkStatus();
}

absl::Status FactorSolves::Apply(const Step& step, const Lane& lane, int64_t first_nonzero,
                                 int triangle) {
  if (step.kind != Step::Kind::kTriangle) {
    return Permute(step.kind == Step::Kind::kUnpermute, lane);
  }
  if (impl_ == TrsvImpl::kCublas) return CublasColumns(step, lane.count);
  if (super_call_) {
    if (super_sweeps_ != nullptr) ++*super_sweeps_;
    return super_->Solve(step.op, lane.count, v_.as<char>() + lane.first * n_ * DTypeSize(t_),
                         first_nonzero, lane.stream,
                         super_forked_ ? ctx_.hs.column_stream : nullptr);
  }
  TrsvOptions o;
  o.columns = lane.count;
  o.first_nonzero = first_nonzero;
  // Zeroed by Run; the first triangle step follows a copy or an event wait,
  // the next one its kernel (what early_start starts beside).
  o.scratch_zeroed = early_start_;
  o.early_start = early_start_ && triangle > 0;
  Inverses& kept = InversesFor(step);
  if (kept.buffer.data() == nullptr) {
    // none: the solve inverts
  } else if (kept.filled) {
    o.inverses = kept.buffer.data();
    o.inverses_filled = true;
  } else if (lane.stream == stream_) {  // a second lane runs beside it: it neither reads nor writes
    o.inverses = kept.buffer.data();
    kept.filling = true;
  }
  return TriangularSolve(t_, step.fill, step.op, step.unit, n_, factors_, n_,
                         v_.as<char>() + lane.first * n_ * DTypeSize(t_),
                         Region(lane.lane, triangle), lane.stream, o);
}

absl::Status FactorSolves::Steps(std::initializer_list<Step> steps, const Lane* lanes, int count,
                                 int64_t unit_row) {
  // v is zero above this row while only forward substitutions have run
  // (an interchange moves the rows: no hint after one).
  int64_t zero_above = std::max<int64_t>(unit_row, 0);
  int triangle = 0;  // the triangle steps taken
  for (const Step& step : steps) {
    const bool tri = step.kind == Step::Kind::kTriangle, forward = tri && Forward(step);
    if (tri && triangle == kTriangleSteps) {
      return absl::InternalError(
          absl::StrCat("FactorSolves: more than ", kTriangleSteps, " triangle steps in one call"));
    }
    for (int l = 0; l < count; ++l) {
      LINALGD_RETURN_IF_ERROR(Apply(step, lanes[l], forward ? zero_above : 0, triangle));
    }
    if (tri) {
      ++triangle;
    } else {
      std::swap(v_, tmp_);
    }
    if (!forward) zero_above = 0;
  }
  return absl::OkStatus();
}

template <typename V>
absl::Status FactorSolves::Run(std::vector<V>& v, std::initializer_list<Step> steps,
                               int64_t unit_row) {
  const size_t bytes = v.size() * DTypeSize(t_);
  if (bytes == 0) return absl::OkStatus();
  const int columns = static_cast<int>(v.size() / n_);
  if (columns < 1 || columns > kMaxColumns || columns * n_ != static_cast<int64_t>(v.size())) {
    return absl::InternalError(absl::StrCat("FactorSolves: ", v.size(), " values are not 1 to ",
                                            kMaxColumns, " columns of n ", n_));
  }
  const cudaStream_t st = stream_;
  for (Inverses& i : inverses_) i.filling = false;
  // The super sweep takes the call where it takes every triangle step
  // (both columns in one lane: its products read each tile once for both),
  // from the call after the one that queued its inverses beside.
  super_call_ = impl_ == TrsvImpl::kCustom && super_nb_ > 0;
  bool made_beside = false;
  for (const Step& step : steps) {
    if (!super_call_ || step.kind != Step::Kind::kTriangle) continue;
    LINALGD_ASSIGN_OR_RETURN(SuperSweep * sweep, SuperFor(step, &made_beside));
    super_call_ = sweep != nullptr;
  }
  if (made_beside) super_call_ = false;
  Narrow(v, t_, staging_.data());
  if (early_start_) {
    LINALGD_GPU_CHECK(cudaMemsetAsync(scratch_.data(), 0, scratch_.bytes(), st));
  }
  LINALGD_GPU_CHECK(cudaMemcpyAsync(v_.data(), staging_.data(), bytes, cudaMemcpyHostToDevice, st));
  if (columns == 2 && split_ && !super_call_) {
    HandleSet& hs = ctx_.hs;
    LINALGD_GPU_CHECK(cudaEventRecord(hs.column_fork, st));
    LINALGD_GPU_CHECK(cudaStreamWaitEvent(hs.column_stream, hs.column_fork, 0));
    // Joined on every path, so that st's copy out, its frees of the buffers
    // and the caller's sync come after the second lane's work.
    absl::Cleanup join = [&hs, st] {
      if (cudaEventRecord(hs.column_join, hs.column_stream) == cudaSuccess) {
        cudaStreamWaitEvent(st, hs.column_join, 0);
      } else {
        cudaStreamSynchronize(hs.column_stream);
      }
    };
    const Lane lanes[2] = {{0, 1, st, 0}, {1, 1, hs.column_stream, 1}};
    LINALGD_RETURN_IF_ERROR(Steps(steps, lanes, 2, unit_row));
  } else {
    const Lane lane{0, columns, st, 0};
    LINALGD_RETURN_IF_ERROR(Steps(steps, &lane, 1, unit_row));
  }
  LINALGD_GPU_CHECK(cudaMemcpyAsync(staging_.data(), v_.data(), bytes, cudaMemcpyDeviceToHost, st));
  LINALGD_GPU_CHECK(cudaStreamSynchronize(st));
  for (Inverses& i : inverses_) i.filled = i.filled || i.filling;  // every lane may read them now
  Widen(staging_.data(), t_, v);
  return absl::OkStatus();
}

void Conjugate(std::vector<Complex>& v) {
  for (Complex& z : v) z = std::conj(z);
}

// One solve of the complex estimate with the factors (v: 1 or 2 columns;
// unit_row: FactorSolves::Run's).
absl::Status RunComplex(FactorSolves& fs, SolveMethod method, std::vector<Complex>& v,
                        bool conj_transposed, int64_t unit_row) {
  if (method == SolveMethod::kCholesky) {
    // The factor is that of B = conj(a) = L L^H (the buffer read
    // column-major): B is Hermitian, B^-H = B^-1, and ||B^-1||_1 =
    // ||a^-1||_1, so the estimate runs on B.
    return fs.Run(v, {Tri(kLower, kN, false), Tri(kLower, kC, false)}, unit_row);
  }
  // The factors are those of A = a^T (P A = L U, unit L below, U above).
  if (conj_transposed) {  // a^H x = v: conj(A) x = v, conj(x) = U^-1 L^-1 P conj(v)
    Conjugate(v);
    LINALGD_RETURN_IF_ERROR(
        fs.Run(v, {kPermute, Tri(kLower, kN, true), Tri(kUpper, kN, false)}, unit_row));
    Conjugate(v);
    return absl::OkStatus();
  }
  // a x = v: A^T x = v, x = P^T L^-T U^-T v (plain transposes)
  return fs.Run(v, {Tri(kUpper, kT, false), Tri(kLower, kT, true), kUnpermute}, unit_row);
}

// One solve of the real estimate with the factors (v: 1 or 2 columns;
// unit_row: FactorSolves::Run's).
absl::Status RunReal(FactorSolves& fs, SolveMethod method, std::vector<double>& v, bool transposed,
                     int64_t unit_row) {
  if (method == SolveMethod::kCholesky) {  // a = L L^T, symmetric: a^-T = a^-1
    return fs.Run(v, {Tri(kLower, kN, false), Tri(kLower, kT, false)}, unit_row);
  }
  // The factors are those of A = a^T (P A = L U, unit L below, U above).
  if (transposed) {  // a^T x = v: A x = v, x = U^-1 L^-1 P v
    return fs.Run(v, {kPermute, Tri(kLower, kN, true), Tri(kUpper, kN, false)}, unit_row);
  }
  // a x = v: A^T x = v, x = P^T L^-T U^-T v
  return fs.Run(v, {Tri(kUpper, kT, false), Tri(kLower, kT, true), kUnpermute}, unit_row);
}

// FactorRcond's estimate for C64 / C128 factors, with ComplexInverseNorm1
// (kOneByOne) or ComplexInverseNorm1Paired.
absl::StatusOr<double> ComplexRcond(FactorSolves& fs, SolveMethod method, int64_t n, double anorm,
                                    RcondSolves solves) {
  auto solve = [&](std::vector<Complex>& v, bool conj_transposed, int64_t unit_row) {
    return RunComplex(fs, method, v, conj_transposed, unit_row);
  };
  double inv = 0;
  if (solves == RcondSolves::kPaired) {
    LINALGD_ASSIGN_OR_RETURN(inv,
                             ComplexInverseNorm1Paired(n, solve, method == SolveMethod::kCholesky));
  } else {
    LINALGD_ASSIGN_OR_RETURN(inv, ComplexInverseNorm1(n, [&](std::vector<Complex>& v, bool ct) {
                               return solve(v, ct, -1);
                             }));
  }
  return RcondFromNorms(anorm, inv);
}

}  // namespace

namespace {

// ComplexInverseNorm1, its safeguard vector's solve paired with the first
// one (two columns) when `paired` and n > 1, else made last; `hermitian`
// (with paired): ComplexInverseNorm1Paired's.
absl::StatusOr<double> ComplexEstimate(int64_t n, const ComplexPairedSolve& solve, bool paired,
                                       bool hermitian) {
  constexpr int kMaxIterations = 5;  // zlacn2's ITMAX
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (n == 0) return 0.0;
  auto norm1 = [](const std::vector<Complex>& v) {
    double s = 0;
    for (const Complex& z : v) s += std::abs(z);
    return s;
  };
  auto to_signs = [](std::vector<Complex>& v) {  // sign(z) = z / |z|, 1 at 0
    for (Complex& z : v) {
      const double a = std::abs(z);
      z = a > std::numeric_limits<double>::min() ? z / a : Complex(1.0, 0.0);
    }
  };
  auto largest = [](const std::vector<Complex>& v) {  // the first max |v_i|
    size_t j = 0;
    for (size_t i = 1; i < v.size(); ++i) {
      if (std::abs(v[i]) > std::abs(v[j])) j = i;
    }
    return j;
  };
  // zlacn2's safeguard: x_i = (-1)^i (1 + i / (n - 1)), 2 ||a^-1 x||_1 / (3 n).
  auto safeguard = [n] {
    std::vector<double> re(n);
    AlternatingSignVector(n, re.data());
    return std::vector<Complex>(re.begin(), re.end());
  };
  std::vector<Complex> x(n, Complex(1.0 / static_cast<double>(n), 0.0));
  std::vector<Complex> alt;  // a^-1 times the safeguard vector, once solved
  if (paired && n > 1) {
    std::vector<Complex> pair = x;
    const std::vector<Complex> g = safeguard();
    pair.insert(pair.end(), g.begin(), g.end());
    LINALGD_RETURN_IF_ERROR(solve(pair, false, -1));
    x.assign(pair.begin(), pair.begin() + n);
    alt.assign(pair.begin() + n, pair.end());
  } else {
    LINALGD_RETURN_IF_ERROR(solve(x, false, -1));
  }
  double est = norm1(x);
  if (!std::isfinite(est)) return kInf;
  if (n == 1) return est;
  // hermitian: a^-1 e_guess beside the a^-H sign solve (a^-H = a^-1).
  std::vector<Complex> guessed;
  const size_t guess = largest(x);
  to_signs(x);
  if (hermitian) {
    std::vector<Complex> pair(2 * n, Complex(0.0, 0.0));
    std::copy(x.begin(), x.end(), pair.begin());
    pair[n + guess] = Complex(1.0, 0.0);
    LINALGD_RETURN_IF_ERROR(solve(pair, false, -1));
    x.assign(pair.begin(), pair.begin() + n);
    guessed.assign(pair.begin() + n, pair.end());
  } else {
    LINALGD_RETURN_IF_ERROR(solve(x, true, -1));
  }
  size_t j = largest(x);
  for (int iter = 2;; ++iter) {
    if (!guessed.empty() && j == guess) {
      x = guessed;
    } else {
      std::fill(x.begin(), x.end(), Complex(0.0, 0.0));
      x[j] = Complex(1.0, 0.0);
      LINALGD_RETURN_IF_ERROR(solve(x, false, static_cast<int64_t>(j)));
    }
    const double norm = norm1(x);
    if (!std::isfinite(norm)) return kInf;
    if (norm <= est) break;  // stopped growing: est is kept
    est = norm;
    to_signs(x);
    LINALGD_RETURN_IF_ERROR(solve(x, true, -1));
    const size_t last = j;
    j = largest(x);
    if (!(std::abs(x[last]) != std::abs(x[j]) && iter < kMaxIterations)) break;
  }
  if (alt.empty()) {
    alt = safeguard();
    LINALGD_RETURN_IF_ERROR(solve(alt, false, -1));
  }
  const double a = 2 * norm1(alt) / (3.0 * static_cast<double>(n));
  if (!std::isfinite(a)) return kInf;
  return std::max(est, a);
}

}  // namespace

absl::StatusOr<double> ComplexInverseNorm1(int64_t n, const ComplexVectorSolve& solve) {
  return ComplexEstimate(
      n, [&](std::vector<Complex>& v, bool ct, int64_t) { return solve(v, ct); }, false, false);
}

absl::StatusOr<double> ComplexInverseNorm1Paired(int64_t n, const ComplexPairedSolve& solve,
                                                 bool hermitian) {
  return ComplexEstimate(n, solve, true, hermitian);
}

absl::StatusOr<std::vector<double>> EstimateRcond(GpuContext& ctx, DType t, int64_t n,
                                                  const std::vector<double>& anorm, void* scratch,
                                                  const DeviceVectorSolve& solve) {
  const int64_t count = static_cast<int64_t>(anorm.size());
  const size_t bytes = count * n * DTypeSize(t);
  Staging staging(ctx, bytes, ctx.hs.stream);
  const cudaStream_t st = ctx.hs.stream;
  // One copy in, the solves, one copy out, one sync.
  auto host_solve = [&](std::vector<double>& v, bool transposed) -> absl::Status {
    if (bytes == 0) return absl::OkStatus();
    Narrow(v, t, staging.data());
    LINALGD_GPU_CHECK(cudaMemcpyAsync(scratch, staging.data(), bytes, cudaMemcpyHostToDevice, st));
    LINALGD_RETURN_IF_ERROR(solve(transposed));
    LINALGD_GPU_CHECK(cudaMemcpyAsync(staging.data(), scratch, bytes, cudaMemcpyDeviceToHost, st));
    LINALGD_GPU_CHECK(cudaStreamSynchronize(st));
    Widen(staging.data(), t, v);
    return absl::OkStatus();
  };
  LINALGD_ASSIGN_OR_RETURN(std::vector<double> inv, EstimateInverseNorm1(count, n, host_solve));
  std::vector<double> rcond(count);
  for (int64_t i = 0; i < count; ++i) rcond[i] = RcondFromNorms(anorm[i], inv[i]);
  return rcond;
}

absl::StatusOr<std::vector<int64_t>> PivotPermutation(const std::vector<int64_t>& ipiv) {
  const int64_t n = static_cast<int64_t>(ipiv.size());
  std::vector<int64_t> perm(n);
  for (int64_t i = 0; i < n; ++i) perm[i] = i;
  for (int64_t k = 0; k < n; ++k) {
    if (ipiv[k] < 1 || ipiv[k] > n) {
      return absl::InternalError(
          absl::StrCat("getrf pivot ipiv[", k, "] = ", ipiv[k], " is outside [1, ", n, "]"));
    }
    std::swap(perm[k], perm[ipiv[k] - 1]);
  }
  return perm;
}

absl::StatusOr<DeviceBuffer> DevicePivotPermutation(DeviceMemory& mem, cudaStream_t stream,
                                                    const int64_t* pivots, int64_t n) {
  const int64_t bytes = n * static_cast<int64_t>(sizeof(int64_t));
  std::vector<int64_t> ipiv(n);
  LINALGD_GPU_CHECK(cudaMemcpyAsync(ipiv.data(), pivots, bytes, cudaMemcpyDeviceToHost, stream));
  LINALGD_GPU_CHECK(cudaStreamSynchronize(stream));
  LINALGD_ASSIGN_OR_RETURN(std::vector<int64_t> perm, PivotPermutation(ipiv));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer out, mem.Allocate(bytes, stream));
  // From pageable memory: returns once `perm` has been staged.
  LINALGD_GPU_CHECK(
      cudaMemcpyAsync(out.data(), perm.data(), bytes, cudaMemcpyHostToDevice, stream));
  return out;
}

absl::StatusOr<double> FactorRcond(GpuContext& ctx, DType t, SolveMethod method, int64_t n,
                                   const void* factors, const int64_t* pivots, double anorm,
                                   TrsvImpl impl) {
  return FactorRcondOn(ctx, ctx.hs.stream, t, method, n, factors, pivots, anorm,
                       FactorRcondOptions{impl});
}

absl::StatusOr<double> FactorRcond(GpuContext& ctx, DType t, SolveMethod method, int64_t n,
                                   const void* factors, const int64_t* pivots, double anorm,
                                   const FactorRcondOptions& options) {
  return FactorRcondOn(ctx, ctx.hs.stream, t, method, n, factors, pivots, anorm, options);
}

absl::StatusOr<double> FactorRcondOn(GpuContext& ctx, cudaStream_t stream, DType t,
                                     SolveMethod method, int64_t n, const void* factors,
                                     const int64_t* pivots, double anorm, TrsvImpl impl) {
  return FactorRcondOn(ctx, stream, t, method, n, factors, pivots, anorm, FactorRcondOptions{impl});
}

absl::StatusOr<double> FactorRcondOn(GpuContext& ctx, cudaStream_t stream, DType t,
                                     SolveMethod method, int64_t n, const void* factors,
                                     const int64_t* pivots, double anorm,
                                     const FactorRcondOptions& options) {
  const bool lu = method == SolveMethod::kLu;
  LINALGD_ASSIGN_OR_RETURN(
      std::unique_ptr<FactorSolves> fs,
      FactorSolves::Create(ctx, stream, t, n, factors, lu ? pivots : nullptr, options));
  if (IsComplex(t)) return ComplexRcond(*fs, method, n, anorm, options.solves);
  // One solve with a (or a^T) on the host vectors v, through the device.
  auto solve = [&](std::vector<double>& v, bool transposed, int64_t unit_row) {
    return RunReal(*fs, method, v, transposed, unit_row);
  };
  if (options.solves == RcondSolves::kPaired) {
    LINALGD_ASSIGN_OR_RETURN(
        double inv, EstimateInverseNorm1Paired(n, solve, method == SolveMethod::kCholesky));
    return RcondFromNorms(anorm, inv);
  }
  auto one_by_one = [&](std::vector<double>& v, bool transposed) {
    return solve(v, transposed, -1);
  };
  LINALGD_ASSIGN_OR_RETURN(std::vector<double> inv, EstimateInverseNorm1(1, n, one_by_one));
  return RcondFromNorms(anorm, inv[0]);
}

absl::StatusOr<MatrixNorms> SymmetryAndNorms(GpuContext& ctx, DType t, const void* a, int64_t n,
                                             int64_t batch) {
  std::vector<double> host(batch + batch * n);
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer d, ctx.Alloc(host.size() * sizeof(double)));
  LINALGD_GPU_CHECK(cudaMemsetAsync(d.data(), 0, d.bytes(), ctx.hs.stream));
  LINALGD_RETURN_IF_ERROR(
      SymmetryStats(t, a, n, batch, d.as<double>(), d.as<double>() + batch, ctx.hs.stream));
  LINALGD_GPU_CHECK(cudaMemcpyAsync(host.data(), d.data(), host.size() * sizeof(double),
                                    cudaMemcpyDeviceToHost, ctx.hs.stream));
  LINALGD_GPU_CHECK(cudaStreamSynchronize(ctx.hs.stream));
  MatrixNorms out;
  out.asym.assign(host.begin(), host.begin() + batch);
  out.norm1.assign(batch, 0.0);
  for (int64_t i = 0; i < batch; ++i) {
    const double* cs = host.data() + batch + i * n;
    if (n > 0) out.norm1[i] = *std::max_element(cs, cs + n);
  }
  return out;
}

}  // namespace linalgd::gpu
