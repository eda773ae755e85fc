#include "tools/gpu_bench/bench_cases.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <tuple>
#include <utility>

#include "server/backend/plan.h"
#include "server/gpu/blas_calls.h"
#include "server/gpu/cuda_check.h"
#include "server/gpu/dense_solver.h"
#include "server/gpu/factor_rcond.h"
#include "server/gpu/gpu_factor.h"
#include "server/gpu/kernels.h"
#include "server/gpu/kernels_impl.h"
#include "server/gpu/lt_matmul.h"
#include "server/gpu/pinned_host_cache.h"
#include "server/gpu/triangular_solve.h"
#include "tools/gpu_bench/bench_timing.h"

namespace linalgd::bench {
namespace {

struct Mode {
  const char* name;
  DType dtype;
  ComputeMode compute;
  cublasComputeType_t direct_compute;
};

const Mode kModes[] = {
    {"f64", DType::kF64, ComputeMode::kDefault, CUBLAS_COMPUTE_64F},
    {"f32", DType::kF32, ComputeMode::kDefault, CUBLAS_COMPUTE_32F},
    {"tf32", DType::kF32, ComputeMode::kTf32, CUBLAS_COMPUTE_32F_FAST_TF32},
    {"f16", DType::kF16, ComputeMode::kDefault, CUBLAS_COMPUTE_32F},
    {"bf16", DType::kBF16, ComputeMode::kDefault, CUBLAS_COMPUTE_32F},
};

// cublasGemmEx on a handle of its own (default workspace), same stream.
absl::Status DirectGemm(cublasHandle_t h, const Mode& mode, int n, const void* a, const void* b,
                        void* d) {
  const double one = 1, zero = 0;
  const float onef = 1, zerof = 0;
  const bool f64 = mode.dtype == DType::kF64;
  const cudaDataType_t t = gpu::CudaType(mode.dtype);
  LINALGD_GPU_CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n,
                                 f64 ? static_cast<const void*>(&one) : &onef, a, t, n, b, t, n,
                                 f64 ? static_cast<const void*>(&zero) : &zerof, d, t, n,
                                 mode.direct_compute, CUBLAS_GEMM_DEFAULT));
  return absl::OkStatus();
}

absl::StatusOr<Row> GemmCase(gpu::GpuContext& ctx, cublasHandle_t direct, const Mode& mode,
                             int64_t n, int reps) {
  const size_t bytes = n * n * DTypeSize(mode.dtype);
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer a, ctx.Alloc(bytes));
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer b, ctx.Alloc(bytes));
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer d, ctx.Alloc(bytes));
  LINALGD_RETURN_IF_ERROR(gpu::FillRandom(mode.dtype, a.data(), n * n, 1, -1, 1, ctx.hs.stream));
  LINALGD_RETURN_IF_ERROR(gpu::FillRandom(mode.dtype, b.data(), n * n, 2, -1, 1, ctx.hs.stream));
  gpu::LtMatmulArgs x;
  x.in_dtype = x.out_dtype = mode.dtype;
  x.compute = mode.compute;
  x.m = x.n = x.k = n;
  x.a = a.data();
  x.b = b.data();
  x.d = d.data();
  Row row{"gemm", mode.name, n, 0, 0, 2.0 * n * n * n};
  LINALGD_ASSIGN_OR_RETURN(
      const auto ms, TimePairMs(
                         ctx.hs.stream, reps, [&] { return gpu::LtMatmul(ctx.hs, ctx.cache, x); },
                         [&] {
                           return DirectGemm(direct, mode, static_cast<int>(n), a.data(), b.data(),
                                             d.data());
                         }));
  row.ours_ms = ms.first;
  row.direct_ms = ms.second;
  return row;
}

// Direct cuSOLVER: copy a (factorizations overwrite it), factor, solve.
struct DirectSolver {
  cusolverDnHandle_t h = nullptr;
  cusolverDnParams_t p = nullptr;
  ~DirectSolver() {
    if (p != nullptr) cusolverDnDestroyParams(p);
    if (h != nullptr) cusolverDnDestroy(h);
  }
};

absl::Status DirectLu(gpu::GpuContext& ctx, DirectSolver& s, int64_t n, const void* a, void* w,
                      int64_t* ipiv, void* x, const void* b, gpu::DeviceBuffer& work,
                      size_t host_bytes, int* info) {
  std::vector<char> host(host_bytes);
  const cudaStream_t st = ctx.hs.stream;
  LINALGD_GPU_CHECK(cudaMemcpyAsync(w, a, n * n * 8, cudaMemcpyDeviceToDevice, st));
  LINALGD_GPU_CHECK(cudaMemcpyAsync(x, b, n * 8, cudaMemcpyDeviceToDevice, st));
  LINALGD_GPU_CHECK(cusolverDnXgetrf(s.h, s.p, n, n, CUDA_R_64F, w, n, ipiv, CUDA_R_64F,
                                     work.data(), work.bytes(), host.data(), host_bytes, info));
  LINALGD_GPU_CHECK(cusolverDnXgetrs(s.h, s.p, CUBLAS_OP_N, n, 1, CUDA_R_64F, w, n, ipiv,
                                     CUDA_R_64F, x, n, info));
  return absl::OkStatus();
}

absl::Status DirectCholesky(gpu::GpuContext& ctx, DirectSolver& s, int64_t n, const void* a,
                            void* w, void* x, const void* b, gpu::DeviceBuffer& work,
                            size_t host_bytes, int* info) {
  std::vector<char> host(host_bytes);
  const cudaStream_t st = ctx.hs.stream;
  LINALGD_GPU_CHECK(cudaMemcpyAsync(w, a, n * n * 8, cudaMemcpyDeviceToDevice, st));
  LINALGD_GPU_CHECK(cudaMemcpyAsync(x, b, n * 8, cudaMemcpyDeviceToDevice, st));
  LINALGD_GPU_CHECK(cusolverDnXpotrf(s.h, s.p, CUBLAS_FILL_MODE_LOWER, n, CUDA_R_64F, w, n,
                                     CUDA_R_64F, work.data(), work.bytes(), host.data(), host_bytes,
                                     info));
  LINALGD_GPU_CHECK(cusolverDnXpotrs(s.h, s.p, CUBLAS_FILL_MODE_LOWER, n, 1, CUDA_R_64F, w, n,
                                     CUDA_R_64F, x, n, info));
  return absl::OkStatus();
}

// Where the solves' condition estimate spends its time, on factors made by
// the direct calls: the whole estimate (FactorRcond, every solve it makes)
// against one solve with the factors, the estimate against the same one
// with cuBLAS trsv (*_rcond_vs_cublas), the estimate (paired solves, the
// default) against the same with one vector per solve (*_rcond_vs_one_by_one,
// RcondSolves::kOneByOne, the sequence before), the estimate against the
// same with every triangular solve after the kernel before it
// (*_rcond_vs_no_early_start: FactorRcondOptions::early_start), Cholesky's
// estimate through the super-block sweeps against the same through the
// 64-row chain (chol_rcond_super_vs_chain: FactorRcondOptions::super_min_n
// kSuperSweepMinN and 0; the same below it; chol_rcond_super_vs_forked: its
// sweeps in one stream against forked, FactorRcondOptions::super_forked),
// and a solve with 3
// right-hand sides (b and the estimator's two start vectors) against one
// with b alone.
absl::StatusOr<std::vector<Row>> EstimateParts(gpu::GpuContext& ctx, DirectSolver& s, int64_t n,
                                               int reps, gpu::DeviceBuffer& a, gpu::DeviceBuffer& w,
                                               gpu::DeviceBuffer& ipiv, gpu::DeviceBuffer& x,
                                               gpu::DeviceBuffer& b, gpu::DeviceBuffer& work,
                                               size_t lu_host, size_t ch_host,
                                               gpu::DeviceBuffer& info) {
  const cudaStream_t st = ctx.hs.stream;
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer x3, ctx.Alloc(3 * n * 8));
  auto getrs = [&](int64_t k, void* rhs) -> absl::Status {
    LINALGD_GPU_CHECK(cudaMemcpyAsync(rhs, b.data(), n * 8, cudaMemcpyDeviceToDevice, st));
    LINALGD_GPU_CHECK(cusolverDnXgetrs(s.h, s.p, CUBLAS_OP_N, n, k, CUDA_R_64F, w.data(), n,
                                       ipiv.as<int64_t>(), CUDA_R_64F, rhs, n, info.as<int>()));
    return absl::OkStatus();
  };
  LINALGD_RETURN_IF_ERROR(DirectLu(ctx, s, n, a.data(), w.data(), ipiv.as<int64_t>(), x.data(),
                                   b.data(), work, lu_host, info.as<int>()));
  Row lu{"lu_rcond_estimate", "f64", n, 0, 0, 0};
  LINALGD_ASSIGN_OR_RETURN(lu.ours_ms, TimeMs(st, reps, [&]() -> absl::Status {
                             return gpu::FactorRcond(ctx, DType::kF64, SolveMethod::kLu, n,
                                                     w.data(), ipiv.as<int64_t>(), 1.0)
                                 .status();
                           }));
  LINALGD_ASSIGN_OR_RETURN(lu.direct_ms, TimeMs(st, reps, [&] { return getrs(1, x.data()); }));
  // The same estimate with cuBLAS trsv for its triangular solves.
  Row lu_lib{"lu_rcond_vs_cublas", "f64", n, lu.ours_ms, 0, 0};
  LINALGD_ASSIGN_OR_RETURN(lu_lib.direct_ms, TimeMs(st, reps, [&]() -> absl::Status {
                             return gpu::FactorRcond(ctx, DType::kF64, SolveMethod::kLu, n,
                                                     w.data(), ipiv.as<int64_t>(), 1.0,
                                                     gpu::TrsvImpl::kCublas)
                                 .status();
                           }));
  gpu::FactorRcondOptions one_by_one;
  one_by_one.solves = gpu::RcondSolves::kOneByOne;
  Row lu_old{"lu_rcond_vs_one_by_one", "f64", n, lu.ours_ms, 0, 0};
  LINALGD_ASSIGN_OR_RETURN(lu_old.direct_ms, TimeMs(st, reps, [&]() -> absl::Status {
                             return gpu::FactorRcond(ctx, DType::kF64, SolveMethod::kLu, n,
                                                     w.data(), ipiv.as<int64_t>(), 1.0, one_by_one)
                                 .status();
                           }));
  gpu::FactorRcondOptions one_stream;
  one_stream.split_columns = false;
  Row lu_joint{"lu_rcond_vs_one_stream", "f64", n, lu.ours_ms, 0, 0};
  LINALGD_ASSIGN_OR_RETURN(lu_joint.direct_ms, TimeMs(st, reps, [&]() -> absl::Status {
                             return gpu::FactorRcond(ctx, DType::kF64, SolveMethod::kLu, n,
                                                     w.data(), ipiv.as<int64_t>(), 1.0, one_stream)
                                 .status();
                           }));
  gpu::FactorRcondOptions in_turn;
  in_turn.early_start = false;
  Row lu_turn{"lu_rcond_vs_no_early_start", "f64", n, lu.ours_ms, 0, 0};
  LINALGD_ASSIGN_OR_RETURN(lu_turn.direct_ms, TimeMs(st, reps, [&]() -> absl::Status {
                             return gpu::FactorRcond(ctx, DType::kF64, SolveMethod::kLu, n,
                                                     w.data(), ipiv.as<int64_t>(), 1.0, in_turn)
                                 .status();
                           }));
  Row k3{"lu_getrs_3_rhs", "f64", n, 0, 0, 0};
  LINALGD_ASSIGN_OR_RETURN(k3.ours_ms, TimeMs(st, reps, [&] { return getrs(3, x3.data()); }));
  k3.direct_ms = lu.direct_ms;
  LINALGD_RETURN_IF_ERROR(DirectCholesky(ctx, s, n, a.data(), w.data(), x.data(), b.data(), work,
                                         ch_host, info.as<int>()));
  // The Cholesky factor's estimate with `o`, timed.
  auto chol_ms = [&](const gpu::FactorRcondOptions& o) {
    return TimeMs(st, reps, [&]() -> absl::Status {
      return gpu::FactorRcond(ctx, DType::kF64, SolveMethod::kCholesky, n, w.data(), nullptr, 1.0,
                              o)
          .status();
    });
  };
  Row ch{"cholesky_rcond_estimate", "f64", n, 0, 0, 0};
  LINALGD_ASSIGN_OR_RETURN(ch.ours_ms, chol_ms({}));
  LINALGD_ASSIGN_OR_RETURN(
      ch.direct_ms, TimeMs(st, reps, [&]() -> absl::Status {
        LINALGD_GPU_CHECK(cudaMemcpyAsync(x.data(), b.data(), n * 8, cudaMemcpyDeviceToDevice, st));
        LINALGD_GPU_CHECK(cusolverDnXpotrs(s.h, s.p, CUBLAS_FILL_MODE_LOWER, n, 1, CUDA_R_64F,
                                           w.data(), n, CUDA_R_64F, x.data(), n, info.as<int>()));
        return absl::OkStatus();
      }));
  Row ch_lib{"chol_rcond_vs_cublas", "f64", n, ch.ours_ms, 0, 0};
  LINALGD_ASSIGN_OR_RETURN(ch_lib.direct_ms, chol_ms({gpu::TrsvImpl::kCublas}));
  Row ch_old{"chol_rcond_vs_one_by_one", "f64", n, ch.ours_ms, 0, 0};
  LINALGD_ASSIGN_OR_RETURN(ch_old.direct_ms, chol_ms(one_by_one));
  Row ch_joint{"chol_rcond_vs_one_stream", "f64", n, ch.ours_ms, 0, 0};
  LINALGD_ASSIGN_OR_RETURN(ch_joint.direct_ms, chol_ms(one_stream));
  Row ch_turn{"chol_rcond_vs_no_early_start", "f64", n, ch.ours_ms, 0, 0};
  LINALGD_ASSIGN_OR_RETURN(ch_turn.direct_ms, chol_ms(in_turn));
  gpu::FactorRcondOptions super, chain;
  super.super_min_n = gpu::kSuperSweepMinN;
  chain.super_min_n = 0;
  int sweeps = 0;
  super.super_sweeps = &sweeps;
  Row ch_chain{"chol_rcond_super_vs_chain", "f64", n, 0, 0, 0};
  LINALGD_ASSIGN_OR_RETURN(ch_chain.ours_ms, chol_ms(super));
  std::printf("chol_rcond_super_vs_chain n=%lld: %d super-block sweeps in the timed estimates\n",
              static_cast<long long>(n), sweeps);
  LINALGD_ASSIGN_OR_RETURN(ch_chain.direct_ms, chol_ms(chain));
  gpu::FactorRcondOptions forked = super;
  forked.super_forked = true;
  forked.super_sweeps = nullptr;
  Row ch_forked{"chol_rcond_super_vs_forked", "f64", n, ch_chain.ours_ms, 0, 0};
  LINALGD_ASSIGN_OR_RETURN(ch_forked.direct_ms, chol_ms(forked));
  gpu::FactorRcondOptions first = super;
  first.super_inverses_beside = false;
  first.super_sweeps = nullptr;
  Row ch_first{"chol_rcond_beside_vs_first", "f64", n, ch_chain.ours_ms, 0, 0};
  LINALGD_ASSIGN_OR_RETURN(ch_first.direct_ms, chol_ms(first));
  return std::vector<Row>{lu,     lu_lib, lu_old,   lu_joint, lu_turn,  k3,        ch,
                          ch_lib, ch_old, ch_joint, ch_turn,  ch_chain, ch_forked, ch_first};
}

// For as long as it lives, the handle set's estimate streams (side, column
// and beside, with the beside cuBLAS handle) are streams of the device's
// greatest priority; the set's own are back after (an experiment: a
// HandleSet's streams are made once, at their creation's priority).
class EstimateStreamsFirst {
 public:
  static absl::StatusOr<EstimateStreamsFirst> Swap(gpu::HandleSet& hs) {
    if (hs.BesideBlas() == nullptr) return absl::UnavailableError("no beside cuBLAS handle");
    int least = 0, greatest = 0;
    LINALGD_GPU_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    EstimateStreamsFirst e(hs);
    for (cudaStream_t* s : {&e.side_, &e.column_, &e.beside_}) {
      LINALGD_GPU_CHECK(cudaStreamCreateWithPriority(s, cudaStreamNonBlocking, greatest));
    }
    e.Exchange();
    return e;
  }
  EstimateStreamsFirst(EstimateStreamsFirst&& o) noexcept
      : hs_(std::exchange(o.hs_, nullptr)),
        side_(o.side_),
        column_(o.column_),
        beside_(o.beside_),
        swapped_(o.swapped_) {}
  EstimateStreamsFirst& operator=(EstimateStreamsFirst&&) = delete;
  ~EstimateStreamsFirst() {
    if (hs_ == nullptr) return;
    cudaDeviceSynchronize();
    if (swapped_) Exchange();
    for (cudaStream_t s : {side_, column_, beside_}) {
      if (s != nullptr) cudaStreamDestroy(s);
    }
  }

 private:
  explicit EstimateStreamsFirst(gpu::HandleSet& hs) : hs_(&hs) {}
  void Exchange() {
    std::swap(hs_->side_stream, side_);
    std::swap(hs_->column_stream, column_);
    std::swap(hs_->beside_stream, beside_);
    cublasSetStream(hs_->beside_blas, hs_->beside_stream);
    cublasSetWorkspace(hs_->beside_blas, nullptr, 0);
    swapped_ = !swapped_;
  }
  gpu::HandleSet* hs_;
  cudaStream_t side_ = nullptr, column_ = nullptr, beside_ = nullptr;
  bool swapped_ = false;
};

absl::StatusOr<std::vector<Row>> SolveCases(gpu::GpuContext& ctx, int64_t n, int reps) {
  const cudaStream_t st = ctx.hs.stream;
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer a, ctx.Alloc(n * n * 8));
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer w, ctx.Alloc(n * n * 8));
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer b, ctx.Alloc(n * 8));
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer x, ctx.Alloc(n * 8));
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer ipiv, ctx.Alloc(n * 8));
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer info, ctx.Alloc(8));
  LINALGD_RETURN_IF_ERROR(gpu::FillRandom(DType::kF64, a.data(), n * n, 3, -1, 1, st));
  LINALGD_RETURN_IF_ERROR(gpu::SymmetrizeAndShift(DType::kF64, a.data(), n, 1, n, st));
  LINALGD_RETURN_IF_ERROR(gpu::FillRandom(DType::kF64, b.data(), n, 4, -1, 1, st));
  DirectSolver s;
  LINALGD_GPU_CHECK(cusolverDnCreate(&s.h));
  LINALGD_GPU_CHECK(cusolverDnSetStream(s.h, st));
  LINALGD_GPU_CHECK(cusolverDnCreateParams(&s.p));
  size_t lu_dev = 0, lu_host = 0, ch_dev = 0, ch_host = 0;
  LINALGD_GPU_CHECK(cusolverDnXgetrf_bufferSize(s.h, s.p, n, n, CUDA_R_64F, w.data(), n, CUDA_R_64F,
                                                &lu_dev, &lu_host));
  LINALGD_GPU_CHECK(cusolverDnXpotrf_bufferSize(s.h, s.p, CUBLAS_FILL_MODE_LOWER, n, CUDA_R_64F,
                                                w.data(), n, CUDA_R_64F, &ch_dev, &ch_host));
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer work, ctx.Alloc(std::max(lu_dev, ch_dev)));
  const double n3 = static_cast<double>(n) * n * n;
  // Ours includes the server's 1-norm condition estimate (threshold 0: never
  // refused), so ours / direct shows what the estimate costs.
  gpu::ConditionCheck cond;
  cond.anorm = 1;
  cond.rcond_factor = 0;
  Row lu{"lu_solve", "f64", n, 0, 0, 2.0 / 3.0 * n3};
  LINALGD_ASSIGN_OR_RETURN(
      lu.ours_ms, TimeMs(st, reps, [&]() -> absl::Status {
        return gpu::LuSolve(ctx, DType::kF64, n, 1, a.data(), b.data(), x.data(), &cond).status();
      }));
  LINALGD_ASSIGN_OR_RETURN(lu.direct_ms, TimeMs(st, reps, [&] {
                             return DirectLu(ctx, s, n, a.data(), w.data(), ipiv.as<int64_t>(),
                                             x.data(), b.data(), work, lu_host, info.as<int>());
                           }));
  // The same solve without the estimate (cond null), against the solve with
  // it: ours_ms - direct_ms is what the estimate costs.
  Row lu_bare{"lu_solve_no_estimate", "f64", n, 0, 0, 2.0 / 3.0 * n3};
  lu_bare.ours_ms = lu.ours_ms;
  LINALGD_ASSIGN_OR_RETURN(
      lu_bare.direct_ms, TimeMs(st, reps, [&]() -> absl::Status {
        return gpu::LuSolve(ctx, DType::kF64, n, 1, a.data(), b.data(), x.data(), nullptr).status();
      }));
  Row ch{"cholesky_solve", "f64", n, 0, 0, 1.0 / 3.0 * n3};
  LINALGD_ASSIGN_OR_RETURN(ch.ours_ms, TimeMs(st, reps, [&]() -> absl::Status {
                             return gpu::CholeskySolve(ctx, DType::kF64, n, 1, a.data(), b.data(),
                                                       x.data(), &cond)
                                 .status();
                           }));
  LINALGD_ASSIGN_OR_RETURN(ch.direct_ms, TimeMs(st, reps, [&] {
                             return DirectCholesky(ctx, s, n, a.data(), w.data(), x.data(),
                                                   b.data(), work, ch_host, info.as<int>());
                           }));
  // The solve with the estimate through the super-block sweeps (from
  // kSuperSweepMinN on) against the same through the chain.
  Row ch_chain{"cholesky_solve_super_vs_chain", "f64", n, 0, 0, 1.0 / 3.0 * n3};
  gpu::ConditionCheck by_super = cond, by_chain = cond;
  by_super.estimate.super_min_n = gpu::kSuperSweepMinN;
  by_chain.estimate.super_min_n = 0;
  LINALGD_ASSIGN_OR_RETURN(ch_chain.ours_ms, TimeMs(st, reps, [&]() -> absl::Status {
                             return gpu::CholeskySolve(ctx, DType::kF64, n, 1, a.data(), b.data(),
                                                       x.data(), &by_super)
                                 .status();
                           }));
  LINALGD_ASSIGN_OR_RETURN(ch_chain.direct_ms, TimeMs(st, reps, [&]() -> absl::Status {
                             return gpu::CholeskySolve(ctx, DType::kF64, n, 1, a.data(), b.data(),
                                                       x.data(), &by_chain)
                                 .status();
                           }));
  Row ch_bare{"cholesky_solve_no_estimate", "f64", n, 0, 0, 1.0 / 3.0 * n3};
  ch_bare.ours_ms = ch.ours_ms;
  LINALGD_ASSIGN_OR_RETURN(ch_bare.direct_ms, TimeMs(st, reps, [&]() -> absl::Status {
                             return gpu::CholeskySolve(ctx, DType::kF64, n, 1, a.data(), b.data(),
                                                       x.data(), nullptr)
                                 .status();
                           }));
  // The solve with the super-block estimate (its inverses beside the first
  // solve) against the same solve without an estimate, measured in turn;
  // and against the super-block estimate with its inverses made first.
  Row ch_super_bare{"cholesky_solve_super_no_estimate", "f64", n, 0, 0, 1.0 / 3.0 * n3};
  gpu::ConditionCheck by_first = by_super;
  by_first.estimate.super_inverses_beside = false;
  Row ch_first{"cholesky_solve_beside_vs_first", "f64", n, 0, 0, 1.0 / 3.0 * n3};
  // The same with the first solve's two columns in one launch (the SMs the
  // second lane would take left to the inverses and potrs).
  gpu::ConditionCheck one_lane = by_super;
  one_lane.estimate.split_columns = false;
  Row ch_lane{"cholesky_solve_beside_vs_one_lane", "f64", n, 0, 0, 1.0 / 3.0 * n3};
  auto solve_ms = [&](gpu::ConditionCheck* c) {
    return TimeMs(st, reps, [&]() -> absl::Status {
      return gpu::CholeskySolve(ctx, DType::kF64, n, 1, a.data(), b.data(), x.data(), c).status();
    });
  };
  for (int round = 0; round < 2; ++round) {  // the second round's figures are kept
    LINALGD_ASSIGN_OR_RETURN(ch_super_bare.ours_ms, solve_ms(&by_super));
    LINALGD_ASSIGN_OR_RETURN(ch_super_bare.direct_ms, solve_ms(nullptr));
    LINALGD_ASSIGN_OR_RETURN(ch_first.direct_ms, solve_ms(&by_first));
    LINALGD_ASSIGN_OR_RETURN(ch_lane.direct_ms, solve_ms(&one_lane));
  }
  ch_first.ours_ms = ch_lane.ours_ms = ch_super_bare.ours_ms;
  // The same solves with the estimate's streams (side, column, beside) at
  // the device's greatest priority, potrs's at the default: the estimate is
  // the longer of the two, so its blocks go first where both wait for SMs.
  Row ch_hp_super{"cholesky_solve_priority_super_no_estimate", "f64", n, 0, 0, 1.0 / 3.0 * n3};
  Row ch_hp_chain{"cholesky_solve_priority_chain_no_estimate", "f64", n, 0, 0, 1.0 / 3.0 * n3};
  {
    LINALGD_ASSIGN_OR_RETURN(EstimateStreamsFirst first, EstimateStreamsFirst::Swap(ctx.hs));
    for (int round = 0; round < 2; ++round) {
      LINALGD_ASSIGN_OR_RETURN(ch_hp_super.ours_ms, solve_ms(&by_super));
      LINALGD_ASSIGN_OR_RETURN(ch_hp_chain.ours_ms, solve_ms(&cond));
      LINALGD_ASSIGN_OR_RETURN(ch_hp_super.direct_ms, solve_ms(nullptr));
    }
    ch_hp_chain.direct_ms = ch_hp_super.direct_ms;
  }
  // The default (the estimate on the side stream beside getrs / potrs)
  // against the sequential path (estimate, check, then the solve).
  gpu::ConditionCheck seq = cond;
  seq.overlap = false;
  Row lu_ovl{"lu_solve_overlap_vs_sequential", "f64", n, lu.ours_ms, 0, 2.0 / 3.0 * n3};
  LINALGD_ASSIGN_OR_RETURN(
      lu_ovl.direct_ms, TimeMs(st, reps, [&]() -> absl::Status {
        return gpu::LuSolve(ctx, DType::kF64, n, 1, a.data(), b.data(), x.data(), &seq).status();
      }));
  Row ch_ovl{"cholesky_solve_overlap_vs_sequential", "f64", n, ch.ours_ms, 0, 1.0 / 3.0 * n3};
  LINALGD_ASSIGN_OR_RETURN(ch_ovl.direct_ms, TimeMs(st, reps, [&]() -> absl::Status {
                             return gpu::CholeskySolve(ctx, DType::kF64, n, 1, a.data(), b.data(),
                                                       x.data(), &seq)
                                 .status();
                           }));
  Row irs{"lu_irs_solve", "f64", n, 0, 0, 2.0 / 3.0 * n3};
  int iters = 0;
  LINALGD_ASSIGN_OR_RETURN(
      irs.ours_ms, TimeMs(st, reps, [&]() -> absl::Status {
        return gpu::IrsSolve(ctx, n, 1, a.data(), b.data(), x.data(), &iters).status();
      }));
  irs.direct_ms = lu.direct_ms;  // against the plain fp64 LU solve
  LINALGD_ASSIGN_OR_RETURN(std::vector<Row> parts, EstimateParts(ctx, s, n, reps, a, w, ipiv, x, b,
                                                                 work, lu_host, ch_host, info));
  std::vector<Row> rows{lu,       lu_bare, ch,          ch_bare,     ch_super_bare,
                        ch_first, ch_lane, ch_hp_super, ch_hp_chain, ch_chain,
                        lu_ovl,   ch_ovl,  irs};
  rows.insert(rows.end(), parts.begin(), parts.end());
  return rows;
}

// One trsv case of the bench: the triangle and op, and the row's name.
struct TrsvCase {
  const char* op;
  gpu::TriangleFill fill;
  gpu::TriangleOp trans;
};

const TrsvCase kTrsvCases[] = {
    {"trsv_LN", gpu::TriangleFill::kLower, gpu::TriangleOp::kNoTranspose},
    {"trsv_UT", gpu::TriangleFill::kUpper, gpu::TriangleOp::kTranspose},
    {"trsv_UN", gpu::TriangleFill::kUpper, gpu::TriangleOp::kNoTranspose},
    {"trsv_LT", gpu::TriangleFill::kLower, gpu::TriangleOp::kTranspose},
};

// linalgd's triangular solve at its two block heights on the triangles of
// a (TrsvCases' matrix), x solved in place: rows "trsv64_LN" and
// "trsv64_UT", ours = 64-row blocks, direct = 32-row blocks.
absl::StatusOr<std::vector<Row>> TrsvBlockCases(gpu::GpuContext& ctx, DType t, int64_t n, int reps,
                                                const gpu::DeviceBuffer& a,
                                                const gpu::DeviceBuffer& x,
                                                const gpu::DeviceBuffer& scratch) {
  const cudaStream_t st = ctx.hs.stream;
  std::vector<Row> rows;
  for (const TrsvCase& c :
       {TrsvCase{"trsv64_LN", gpu::TriangleFill::kLower, gpu::TriangleOp::kNoTranspose},
        TrsvCase{"trsv64_UT", gpu::TriangleFill::kUpper, gpu::TriangleOp::kTranspose}}) {
    Row row{c.op, std::string(DTypeName(t)), n, 0, 0, static_cast<double>(n) * n};
    auto solve = [&](gpu::TrsvBlock block) {
      return gpu::SolveTriangle(ctx.hs, gpu::TrsvImpl::kCustom, t, c.fill, c.trans, false, n,
                                a.data(), n, x.data(), scratch.data(), block);
    };
    LINALGD_ASSIGN_OR_RETURN(row.ours_ms,
                             TimeMs(st, reps, [&] { return solve(gpu::TrsvBlock::k64); }));
    LINALGD_ASSIGN_OR_RETURN(row.direct_ms,
                             TimeMs(st, reps, [&] { return solve(gpu::TrsvBlock::k32); }));
    rows.push_back(row);
  }
  return rows;
}

// linalgd's triangular solve (ours) against cuBLAS trsv (direct) on the
// triangles of a well-conditioned random n x n matrix (diagonal ~n), solved
// in place again and again (the values shrink; the time does not depend on
// them). flops: n^2 per solve.
absl::StatusOr<std::vector<Row>> TrsvCases(gpu::GpuContext& ctx, DType t, int64_t n, int reps) {
  const cudaStream_t st = ctx.hs.stream;
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer a, ctx.Alloc(n * n * DTypeSize(t)));
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer x, ctx.Alloc(n * DTypeSize(t)));
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer scratch,
                           ctx.Alloc(gpu::TriangularSolveScratchBytes(t, n)));
  LINALGD_RETURN_IF_ERROR(gpu::FillRandom(t, a.data(), n * n, 7, -1, 1, st));
  LINALGD_RETURN_IF_ERROR(gpu::SymmetrizeAndShift(t, a.data(), n, 1, n, st));
  LINALGD_RETURN_IF_ERROR(gpu::FillRandom(t, x.data(), n, 8, -1, 1, st));
  std::vector<Row> rows;
  for (const TrsvCase& c : kTrsvCases) {
    Row row{c.op, std::string(DTypeName(t)), n, 0, 0, static_cast<double>(n) * n};
    auto solve = [&](gpu::TrsvImpl impl) {
      return gpu::SolveTriangle(ctx.hs, impl, t, c.fill, c.trans, false, n, a.data(), n, x.data(),
                                scratch.data());
    };
    LINALGD_ASSIGN_OR_RETURN(row.ours_ms,
                             TimeMs(st, reps, [&] { return solve(gpu::TrsvImpl::kCustom); }));
    LINALGD_ASSIGN_OR_RETURN(row.direct_ms,
                             TimeMs(st, reps, [&] { return solve(gpu::TrsvImpl::kCublas); }));
    rows.push_back(row);
  }
  LINALGD_ASSIGN_OR_RETURN(std::vector<Row> heights,
                           TrsvBlockCases(ctx, t, n, reps, a, x, scratch));
  rows.insert(rows.end(), heights.begin(), heights.end());
  return rows;
}

// linalgd's triangular solve with two columns in one launch (ours) against
// two one-column solves (direct), on TrsvCases' kind of matrix, at the
// default block height: rows "trsv2_LN" (forward) and "trsv2_UT"; flops
// 2 n^2 per call.
absl::StatusOr<std::vector<Row>> Trsv2Cases(gpu::GpuContext& ctx, DType t, int64_t n, int reps) {
  const cudaStream_t st = ctx.hs.stream;
  const int64_t col = n * DTypeSize(t);
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer a, ctx.Alloc(n * n * DTypeSize(t)));
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer x, ctx.Alloc(2 * col));
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer scratch,
                           ctx.Alloc(gpu::TriangularSolveScratchBytes(t, n, 2)));
  LINALGD_RETURN_IF_ERROR(gpu::FillRandom(t, a.data(), n * n, 7, -1, 1, st));
  LINALGD_RETURN_IF_ERROR(gpu::SymmetrizeAndShift(t, a.data(), n, 1, n, st));
  LINALGD_RETURN_IF_ERROR(gpu::FillRandom(t, x.data(), 2 * n, 8, -1, 1, st));
  std::vector<Row> rows;
  for (const TrsvCase& c :
       {TrsvCase{"trsv2_LN", gpu::TriangleFill::kLower, gpu::TriangleOp::kNoTranspose},
        TrsvCase{"trsv2_UT", gpu::TriangleFill::kUpper, gpu::TriangleOp::kTranspose}}) {
    Row row{c.op, std::string(DTypeName(t)), n, 0, 0, 2.0 * n * n};
    auto solve = [&](int columns, char* at) {
      gpu::TrsvOptions o;
      o.columns = columns;
      return gpu::TriangularSolve(t, c.fill, c.trans, false, n, a.data(), n, at, scratch.data(), st,
                                  o);
    };
    LINALGD_ASSIGN_OR_RETURN(row.ours_ms, TimeMs(st, reps, [&] { return solve(2, x.as<char>()); }));
    LINALGD_ASSIGN_OR_RETURN(row.direct_ms, TimeMs(st, reps, [&]() -> absl::Status {
                               LINALGD_RETURN_IF_ERROR(solve(1, x.as<char>()));
                               return solve(1, x.as<char>() + col);
                             }));
    rows.push_back(row);
  }
  return rows;
}

// Where one link of the triangular solve's chain of blocks goes: one traced
// solve (TrsvOptions::trace) after `reps` untraced ones, for L N and L T at
// the default block height; printed, per phase, the median, 90th percentile
// and mean over the blocks after the second (microseconds, from the
// device's nanosecond clock, which moves in steps of 256 ns on an H100, or
// SM cycles for the phases inside one CTA). No rows.
absl::StatusOr<std::vector<Row>> TrsvTraceCases(gpu::GpuContext& ctx, DType t, int64_t n,
                                                int reps) {
  using gpu::impl::kTrsvStamps;
  const cudaStream_t st = ctx.hs.stream;
  const int64_t rows_per_block = gpu::TrsvBlockRows(gpu::TrsvBlock::kAuto, n);
  const int64_t blocks = (n + rows_per_block - 1) / rows_per_block;
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer a, ctx.Alloc(n * n * DTypeSize(t)));
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer x, ctx.Alloc(n * DTypeSize(t)));
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer scratch,
                           ctx.Alloc(gpu::TriangularSolveScratchBytes(t, n)));
  const int64_t stamps = blocks * kTrsvStamps * 2;
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer trace, ctx.Alloc(stamps * sizeof(uint64_t)));
  LINALGD_RETURN_IF_ERROR(gpu::FillRandom(t, a.data(), n * n, 7, -1, 1, st));
  LINALGD_RETURN_IF_ERROR(gpu::SymmetrizeAndShift(t, a.data(), n, 1, n, st));
  LINALGD_RETURN_IF_ERROR(gpu::FillRandom(t, x.data(), n, 8, -1, 1, st));
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer kept, ctx.Alloc(gpu::TrsvInversesBytes(t, n)));
  // "-kept": the diagonal blocks' inverses stored by the last untraced
  // solve and loaded by the traced one (TrsvOptions::inverses).
  struct TracedCase {
    TrsvCase c;
    bool keep;
  };
  for (const auto& [c, keep] :
       {TracedCase{{"LN", gpu::TriangleFill::kLower, gpu::TriangleOp::kNoTranspose}, false},
        TracedCase{{"LT", gpu::TriangleFill::kLower, gpu::TriangleOp::kTranspose}, false},
        TracedCase{{"LN-kept", gpu::TriangleFill::kLower, gpu::TriangleOp::kNoTranspose}, true},
        TracedCase{{"LT-kept", gpu::TriangleFill::kLower, gpu::TriangleOp::kTranspose}, true}}) {
    gpu::TrsvOptions o;
    for (int r = 0; r < reps; ++r) {
      if (keep && r + 1 == reps) o.inverses = kept.data();
      LINALGD_RETURN_IF_ERROR(gpu::TriangularSolve(t, c.fill, c.trans, false, n, a.data(), n,
                                                   x.data(), scratch.data(), st, o));
    }
    o.inverses_filled = o.inverses != nullptr;
    LINALGD_GPU_CHECK(cudaMemsetAsync(trace.data(), 0, trace.bytes(), st));
    o.trace = trace.as<uint64_t>();
    LINALGD_RETURN_IF_ERROR(gpu::TriangularSolve(t, c.fill, c.trans, false, n, a.data(), n,
                                                 x.data(), scratch.data(), st, o));
    std::vector<uint64_t> h(stamps);
    LINALGD_GPU_CHECK(
        cudaMemcpyAsync(h.data(), trace.data(), trace.bytes(), cudaMemcpyDeviceToHost, st));
    LINALGD_GPU_CHECK(cudaStreamSynchronize(st));
    auto ns = [&](int64_t L, int k) { return static_cast<double>(h[(L * kTrsvStamps + k) * 2]); };
    auto cy = [&](int64_t L, int k) {
      return static_cast<double>(h[(L * kTrsvStamps + k) * 2 + 1]);
    };
    auto quantile = [](std::vector<double> v, double q) {
      std::sort(v.begin(), v.end());
      return v.empty() ? 0.0 : v[static_cast<size_t>(q * (v.size() - 1))];
    };
    auto mean = [](const std::vector<double>& v) {
      double sum = 0;
      for (double d : v) sum += d;
      return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
    };
    using gpu::impl::TrsvStamp;
    // A stamp of a block: L + block when relative, else that block (from
    // the end when negative).
    struct At {
      int block;
      bool relative;
      TrsvStamp stamp;
    };
    struct Phase {
      const char* name;
      At from, to;
      bool cycles;  // SM cycles (within one CTA), else microseconds
    };
    constexpr TrsvStamp kStart = TrsvStamp::kTrsvStampStart, kWait = TrsvStamp::kTrsvStampLastWait,
                        kSeen = TrsvStamp::kTrsvStampLastSeen, kSums = TrsvStamp::kTrsvStampSums,
                        kResiduals = TrsvStamp::kTrsvStampResiduals,
                        kSolved = TrsvStamp::kTrsvStampSolved,
                        kStored = TrsvStamp::kTrsvStampStored,
                        kCounted = TrsvStamp::kTrsvStampCounted;
    const Phase phases[] = {
        {"link (block solved to the next solved), us",
         {-1, true, kSolved},
         {0, true, kSolved},
         false},
        {"hand-on (the previous block solved to its x seen here), us",
         {-1, true, kSolved},
         {0, true, kSeen},
         false},
        {"  of it, the previous block's stores and barrier, us",
         {-1, true, kSolved},
         {-1, true, kStored},
         false},
        {"waiting here before it (ready early if > 0), us",
         {0, true, kWait},
         {0, true, kSeen},
         false},
        {"last tile's products, cycles", {0, true, kSeen}, {0, true, kSums}, true},
        {"row sums and residuals, cycles", {0, true, kSums}, {0, true, kResiduals}, true},
        {"block solve, cycles", {0, true, kResiduals}, {0, true, kSolved}, true},
        {"stores and barrier, cycles", {0, true, kSolved}, {0, true, kStored}, true},
        {"count raised after the stores, us", {0, true, kStored}, {0, true, kCounted}, false},
        {"the first two blocks (first start to the second solved), us",
         {0, false, kStart},
         {1, false, kSolved},
         false},
        {"whole solve (first start to last solved), us",
         {0, false, kStart},
         {-1, false, kSolved},
         false},
    };
    auto value = [&](const At& at, int64_t L, bool cycles) {
      const int64_t block = at.relative    ? L + at.block
                            : at.block < 0 ? blocks + at.block
                                           : at.block;
      return cycles ? cy(block, at.stamp) : ns(block, at.stamp) / 1e3;
    };
    for (const Phase& p : phases) {
      std::vector<double> v;
      for (int64_t L = 2; L < blocks; ++L) {
        v.push_back(value(p.to, L, p.cycles) - value(p.from, L, p.cycles));
      }
      std::printf("trsv_trace %s %s n=%lld: %s: median %.3f, p90 %.3f, mean %.3f\n", c.op,
                  std::string(DTypeName(t)).c_str(), static_cast<long long>(n), p.name,
                  quantile(v, 0.5), quantile(v, 0.9), mean(v));
    }
    // The chain's start, where the first two blocks' time goes (microseconds
    // after block 0's start, or SM cycles within a CTA).
    if (blocks >= 2) {
      const double t0 = ns(0, kStart);
      auto us = [&](int64_t L, TrsvStamp k) { return (ns(L, k) - t0) / 1e3; };
      double last_start = 0;
      for (int64_t L = 0; L < blocks; ++L) last_start = std::max(last_start, us(L, kStart));
      std::printf(
          "trsv_trace %s %s n=%lld: start: block 0 solved at %.3f us (its loads and inversion "
          "%.0f cycles, its solve and stores %.0f); block 1 started at %.3f, ready to wait at "
          "%.3f (%.0f cycles after its start), saw x_0 at %.3f, solved at %.3f; the last CTA "
          "started at %.3f\n",
          c.op, std::string(DTypeName(t)).c_str(), static_cast<long long>(n), us(0, kSolved),
          cy(0, kSums) - cy(0, kStart), cy(0, kStored) - cy(0, kSums), us(1, kStart), us(1, kWait),
          cy(1, kWait) - cy(1, kStart), us(1, kSeen), us(1, kSolved), last_start);
    }
  }
  return std::vector<Row>{};
}

// Median wall time of f() over reps calls after one, with between()
// untimed before each call.
template <typename F, typename G>
double WallMsBetween(int reps, F&& f, G&& between) {
  std::vector<double> ms;
  for (int r = 0; r < 1 + reps; ++r) {
    between();
    const auto t0 = std::chrono::steady_clock::now();
    f();
    const auto t1 = std::chrono::steady_clock::now();
    if (r >= 1) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return Median(ms);
}

template <typename F>
double WallMs(int reps, F&& f) {
  return WallMsBetween(reps, f, [] {});
}

// WallMsBetween of f and of g, their calls in turn (f, g, f, g, ...), so
// that the host's and the device's drift falls on both: {f's, g's} ms.
template <typename F, typename G, typename B>
std::pair<double, double> WallPairMsBetween(int reps, F&& f, G&& g, B&& between) {
  std::vector<double> ms[2];
  for (int r = 0; r < 1 + reps; ++r) {
    for (int which = 0; which < 2; ++which) {
      between();
      const auto t0 = std::chrono::steady_clock::now();
      which == 0 ? f() : g();
      const auto t1 = std::chrono::steady_clock::now();
      if (r >= 1) ms[which].push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
  }
  return {Median(ms[0]), Median(ms[1])};
}

Tensor HostRandom(DType t, Shape shape, std::mt19937& rng, double shift_diag) {
  Tensor out(t, shape);
  std::uniform_real_distribution<double> u(-1, 1);
  const int64_t n = shape.back();
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    const double v = u(rng) + ((i / n == i % n) ? shift_diag : 0);
    if (t == DType::kF64) {
      out.mutable_as<double>()[i] = v;
    } else {
      out.mutable_as<float>()[i] = static_cast<float>(v);
    }
  }
  return out;
}

// A rows x cols matrix of dtype t, uniform in [-1, 1) (complex: both
// parts; xorshift64*, so that the 8192^2 c128 ones take a fraction of a
// second), or, when spd (rows == cols), Hermitian (symmetric) with rows + 1
// on the diagonal (diagonally dominant, so positive definite).
Tensor BenchMatrix(DType t, int64_t rows, int64_t cols, bool spd, uint64_t seed) {
  const int parts = IsComplex(t) ? 2 : 1;
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  auto uniform = [&state] {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return static_cast<double>((state * 0x2545F4914F6CDD1Dull) >> 11) * 0x1p-52 - 1;
  };
  const int64_t n = cols;
  std::vector<double> v(static_cast<size_t>(rows * cols * parts));
  for (double& x : v) x = uniform();
  if (spd) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = i + 1; j < n; ++j) {  // a[j, i] = conj(a[i, j])
        for (int p = 0; p < parts; ++p) {
          v[(j * n + i) * parts + p] = (p == 1 ? -1 : 1) * v[(i * n + j) * parts + p];
        }
      }
      v[(i * n + i) * parts] = static_cast<double>(n + 1);
      if (parts == 2) v[(i * n + i) * parts + 1] = 0;
    }
  }
  Tensor out(t, {rows, cols});
  const bool wide = t == DType::kF64 || t == DType::kC128;
  for (size_t i = 0; i < v.size(); ++i) {
    if (wide) {
      reinterpret_cast<double*>(out.mutable_data())[i] = v[i];
    } else {
      reinterpret_cast<float*>(out.mutable_data())[i] = static_cast<float>(v[i]);
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<Row>> BenchGemm(gpu::GpuBackend& gpu, const std::vector<int64_t>& sizes,
                                           int reps) {
  return gpu.RunJob<std::vector<Row>>(
      [&](gpu::GpuContext& ctx) -> absl::StatusOr<std::vector<Row>> {
        cublasHandle_t direct = nullptr;
        LINALGD_GPU_CHECK(cublasCreate(&direct));
        std::vector<Row> rows;
        absl::Status s = gpu::CheckCuda(cublasSetStream(direct, ctx.hs.stream), "cublasSetStream",
                                        __FILE__, __LINE__);
        for (int64_t n : sizes) {
          for (const Mode& mode : kModes) {
            if (!s.ok()) break;
            absl::StatusOr<Row> r = GemmCase(ctx, direct, mode, n, reps);
            if (r.ok()) rows.push_back(*r);
            s = r.status();
          }
        }
        cublasDestroy(direct);
        if (!s.ok()) return s;
        return rows;
      });
}

absl::StatusOr<std::vector<Row>> BenchSolves(gpu::GpuBackend& gpu,
                                             const std::vector<int64_t>& sizes, int reps) {
  return gpu.RunJob<std::vector<Row>>(
      [&](gpu::GpuContext& ctx) -> absl::StatusOr<std::vector<Row>> {
        std::vector<Row> rows;
        for (int64_t n : sizes) {
          LINALGD_ASSIGN_OR_RETURN(std::vector<Row> r, SolveCases(ctx, n, reps));
          rows.insert(rows.end(), r.begin(), r.end());
        }
        return rows;
      });
}

namespace {

// cases(ctx, t, n, reps) for every size, f64 then f32, in one job.
using DtypeCases = absl::StatusOr<std::vector<Row>> (*)(gpu::GpuContext&, DType, int64_t, int);
absl::StatusOr<std::vector<Row>> BenchF64F32(gpu::GpuBackend& gpu,
                                             const std::vector<int64_t>& sizes, int reps,
                                             DtypeCases cases) {
  return gpu.RunJob<std::vector<Row>>(
      [&](gpu::GpuContext& ctx) -> absl::StatusOr<std::vector<Row>> {
        std::vector<Row> rows;
        for (int64_t n : sizes) {
          for (DType t : {DType::kF64, DType::kF32}) {
            LINALGD_ASSIGN_OR_RETURN(std::vector<Row> r, cases(ctx, t, n, reps));
            rows.insert(rows.end(), r.begin(), r.end());
          }
        }
        return rows;
      });
}

}  // namespace

absl::StatusOr<std::vector<Row>> BenchTrsv(gpu::GpuBackend& gpu, const std::vector<int64_t>& sizes,
                                           int reps) {
  return BenchF64F32(gpu, sizes, reps, TrsvCases);
}

absl::StatusOr<std::vector<Row>> BenchTrsv2(gpu::GpuBackend& gpu, const std::vector<int64_t>& sizes,
                                            int reps) {
  return BenchF64F32(gpu, sizes, reps, Trsv2Cases);
}

absl::StatusOr<std::vector<Row>> BenchTrsvTrace(gpu::GpuBackend& gpu,
                                                const std::vector<int64_t>& sizes, int reps) {
  return BenchF64F32(gpu, sizes, reps, TrsvTraceCases);
}

absl::StatusOr<std::vector<Row>> BenchFactorSolves(gpu::GpuBackend& gpu,
                                                   const std::vector<int64_t>& sizes, int reps) {
  std::vector<Row> rows;
  uint64_t seed = 11;
  for (int64_t n : sizes) {
    for (DType t : {DType::kF64, DType::kF32, DType::kC128, DType::kC64}) {
      for (const bool spd : {false, true}) {
        const Tensor a = BenchMatrix(t, n, n, spd, ++seed);
        FactorizeOp op;
        op.a = a.view();
        op.method = spd ? SolveMethod::kCholesky : SolveMethod::kLu;
        LINALGD_ASSIGN_OR_RETURN(FactorizeResult f, gpu.Factorize(op));
        const auto* factor = dynamic_cast<const gpu::GpuFactor*>(f.factor.get());
        if (factor == nullptr) return absl::InternalError("Factorize made no GpuFactor");
        for (const int64_t k : {1, 2}) {
          if (k == 2 && t != DType::kF64) continue;
          const Tensor b = BenchMatrix(t, n, k, false, ++seed);
          const TensorView bv = b.view();
          Row row{absl::StrCat("factor_solve", k == 2 ? "2_" : "_", spd ? "cholesky" : "lu"),
                  std::string(DTypeName(t)),
                  n,
                  0,
                  0,
                  (IsComplex(t) ? 8.0 : 2.0) * n * n * k};
          using Times = std::pair<double, double>;  // ours, direct
          LINALGD_ASSIGN_OR_RETURN(const Times ms, gpu.RunJob<Times>([&](gpu::GpuContext& ctx) {
            auto by = [&](gpu::FactorSolvePath path) {
              return [&ctx, factor, &bv, path]() -> absl::Status {
                return gpu::RunSolveWithFactor(ctx, *factor, bv, path).status();
              };
            };
            return TimePairMs(ctx.hs.stream, reps, by(gpu::FactorSolvePath::kChain),
                              by(gpu::FactorSolvePath::kCusolver));
          }));
          row.ours_ms = ms.first;
          row.direct_ms = ms.second;
          rows.push_back(row);
          std::fprintf(stderr, "%s %s %lld: chain %.3f ms, cuSOLVER %.3f ms\n", row.op.c_str(),
                       row.mode.c_str(), static_cast<long long>(n), row.ours_ms, row.direct_ms);
        }
      }
    }
  }
  return rows;
}

absl::StatusOr<std::vector<Row>> BenchEndToEnd(gpu::GpuBackend& gpu, int64_t n, int reps) {
  std::mt19937 rng(5);
  std::vector<Row> rows;
  for (DType t : {DType::kF32, DType::kF64}) {
    const Tensor a = HostRandom(t, {n, n}, rng, 0), b = HostRandom(t, {n, n}, rng, 0);
    MatmulOp op;
    op.a = a.view();
    op.b = b.view();
    op.out_dtype = t;
    LINALGD_ASSIGN_OR_RETURN(MatmulPlan plan, PlanMatmul(op));
    absl::Status s;
    Row row{"e2e_matmul", std::string(DTypeName(t)), n, 0, 0, 2.0 * n * n * n};
    row.ours_ms = WallMs(reps, [&] { s.Update(gpu.Matmul(op, plan).status()); });
    LINALGD_RETURN_IF_ERROR(s);
    rows.push_back(row);
  }
  const Tensor a = HostRandom(DType::kF64, {n, n}, rng, n),
               b = HostRandom(DType::kF64, {n, 1}, rng, 0);
  SolveOp op;
  op.a = a.view();
  op.b = b.view();
  op.method = SolveMethod::kLu;
  LINALGD_ASSIGN_OR_RETURN(SolvePlan plan, PlanSolve(op));
  absl::Status s;
  Row row{"e2e_lu_solve", "f64", n, 0, 0, 2.0 / 3.0 * n * n * n};
  row.ours_ms = WallMs(reps, [&] { s.Update(gpu.Solve(op, plan).status()); });
  LINALGD_RETURN_IF_ERROR(s);
  rows.push_back(row);
  return rows;
}

absl::StatusOr<std::vector<Row>> BenchBatching(gpu::GpuBackend& gpu, int64_t n, int count,
                                               int reps) {
  std::mt19937 rng(9);
  std::vector<Tensor> operands;
  operands.reserve(2 * static_cast<size_t>(count));  // the views point into them
  std::vector<MatmulOp> ops(static_cast<size_t>(count));
  for (MatmulOp& op : ops) {
    operands.push_back(HostRandom(DType::kF32, {n, n}, rng, 0));
    op.a = operands.back().view();
    operands.push_back(HostRandom(DType::kF32, {n, n}, rng, 0));
    op.b = operands.back().view();
  }
  // The same operands in page-locked memory (as callers' shared-memory
  // regions are): the batch is gathered on the device.
  const size_t bytes = operands[0].num_bytes();
  HostAllocator alloc =
      MakePinnedHostAllocator(PinnedHostOptions{0, static_cast<int64_t>(operands.size() * bytes)});
  std::shared_ptr<std::byte> block = alloc ? alloc(operands.size() * bytes) : nullptr;
  if (block == nullptr) return absl::InternalError("no page-locked memory for the operands");
  std::vector<MatmulOp> pinned = ops;
  for (size_t i = 0; i < operands.size(); ++i) {
    std::memcpy(block.get() + i * bytes, operands[i].data(), bytes);
    (i % 2 == 0 ? pinned[i / 2].a : pinned[i / 2].b).data = block.get() + i * bytes;
  }
  LINALGD_ASSIGN_OR_RETURN(MatmulPlan plan, PlanMatmul(ops[0]));
  std::vector<Row> rows;
  for (const std::vector<MatmulOp>* group : {&ops, &pinned}) {
    std::vector<const MatmulOp*> ptrs;
    for (const MatmulOp& op : *group) ptrs.push_back(&op);
    absl::Status s;
    Row row{group == &ops ? "batch_vs_single" : "batch_vs_single_pinned",
            "f32",
            n,
            0,
            0,
            2.0 * n * n * n * count};
    std::vector<Tensor> outs;
    row.ours_ms = WallMs(reps, [&] { s.Update(gpu.MatmulBatch(ptrs, plan, &outs)); });
    row.direct_ms = WallMs(reps, [&] {
      for (const MatmulOp& op : *group) s.Update(gpu.Matmul(op, plan).status());
    });
    LINALGD_RETURN_IF_ERROR(s);
    rows.push_back(row);
  }
  return rows;
}

// small_call_lone / small_call_cold: the size, the caller's round trip
// between calls (about an echo's p50 on the GPU hosts), the bytes written to
// evict the host's caches, and the cold rows' calls (each ~10 ms of memset).
constexpr int64_t kLoneCallN = 128;
constexpr std::chrono::microseconds kLoneGap{200};
constexpr size_t kEvictBytes = size_t{256} << 20;
constexpr int kColdReps = 100;

absl::StatusOr<std::vector<Row>> BenchSmallCalls(gpu::GpuBackend& gpu,
                                                 const std::vector<int64_t>& sizes, int reps) {
  gpu::PinnedPool pinned(size_t{8} << 20, 2);
  gpu::TransferCounters transfers;
  gpu::GpuBackendConfig config;
  config.device = gpu.device();
  config.budget_bytes = config.lane_budget_bytes = int64_t{1} << 30;
  config.pinned = &pinned;
  config.transfers = &transfers;
  config.small_job_bytes = 0;
  LINALGD_ASSIGN_OR_RETURN(std::unique_ptr<gpu::GpuBackend> general,
                           gpu::GpuBackend::Create(config));
  // The small path without its graphs (small_graphs.h), for the *_graph rows.
  config.small_job_bytes = gpu::GpuBackendConfig::kDefaultSmallJobBytes;
  config.small_graphs = false;
  LINALGD_ASSIGN_OR_RETURN(std::unique_ptr<gpu::GpuBackend> ungraphed,
                           gpu::GpuBackend::Create(config));
  std::mt19937 rng(11);
  std::vector<Row> rows;
  for (int64_t n : sizes) {
    const Tensor a = HostRandom(DType::kF32, {n, n}, rng, 0);
    const Tensor b = HostRandom(DType::kF32, {n, n}, rng, 0);
    const Tensor bias = HostRandom(DType::kF32, {1, n}, rng, 0);
    MatmulOp op;
    op.a = a.view();
    op.b = b.view();
    op.bias = bias.view();
    op.epilogue = Epilogue::kBias;
    op.out_dtype = DType::kF32;
    op.check_finite = true;
    LINALGD_ASSIGN_OR_RETURN(MatmulPlan plan, PlanMatmul(op));
    absl::Status s;
    Row row{"small_call", "f32", n, 0, 0, 2.0 * n * n * n};
    row.ours_ms = WallMs(reps, [&] { s.Update(gpu.Matmul(op, plan).status()); });
    row.direct_ms = WallMs(reps, [&] { s.Update(general->Matmul(op, plan).status()); });
    LINALGD_RETURN_IF_ERROR(s);
    rows.push_back(row);
    auto graphed = [&] { s.Update(gpu.Matmul(op, plan).status()); };
    auto direct = [&] { s.Update(ungraphed->Matmul(op, plan).status()); };
    Row graph{"small_graph", "f32", n, 0, 0, row.flops};
    std::tie(graph.ours_ms, graph.direct_ms) = WallPairMsBetween(reps, graphed, direct, [] {});
    LINALGD_RETURN_IF_ERROR(s);
    rows.push_back(graph);
    if (n != kLoneCallN) continue;
    // A lone call, as the service's one caller makes them: the worker has
    // slept between calls (the caller's round trip), and gRPC's work on the
    // host has evicted the operands and the staging areas from the caches.
    auto call = [&] { s.Update(gpu.Matmul(op, plan).status()); };
    Row lone{"small_call_lone", "f32", n, 0, row.ours_ms, row.flops};
    lone.ours_ms = WallMsBetween(reps, call, [] { std::this_thread::sleep_for(kLoneGap); });
    Row cold{"small_call_cold", "f32", n, 0, row.ours_ms, row.flops};
    std::vector<char> evict(kEvictBytes);
    char fill = 0;
    cold.ours_ms = WallMsBetween(kColdReps, call, [&] {
      std::memset(evict.data(), ++fill, evict.size());
      std::this_thread::sleep_for(kLoneGap);
    });
    Row graph_lone{"small_graph_lone", "f32", n, 0, 0, row.flops};
    std::tie(graph_lone.ours_ms, graph_lone.direct_ms) =
        WallPairMsBetween(reps, graphed, direct, [] { std::this_thread::sleep_for(kLoneGap); });
    Row graph_cold{"small_graph_cold", "f32", n, 0, 0, row.flops};
    std::tie(graph_cold.ours_ms, graph_cold.direct_ms) =
        WallPairMsBetween(kColdReps, graphed, direct, [&] {
          std::memset(evict.data(), ++fill, evict.size());
          std::this_thread::sleep_for(kLoneGap);
        });
    LINALGD_RETURN_IF_ERROR(s);
    rows.push_back(lone);
    rows.push_back(cold);
    rows.push_back(graph_lone);
    rows.push_back(graph_cold);
  }
  return rows;
}

absl::StatusOr<std::vector<Row>> BenchApiCosts(gpu::GpuBackend& gpu, int count, int reps) {
  return gpu.RunJob<std::vector<Row>>(
      [&](gpu::GpuContext& ctx) -> absl::StatusOr<std::vector<Row>> {
        constexpr size_t kBytes = size_t{64} << 10;
        const cudaStream_t st = ctx.hs.stream;
        void* host = nullptr;
        LINALGD_GPU_CHECK(cudaHostAlloc(&host, count * kBytes, cudaHostAllocPortable));
        std::unique_ptr<void, void (*)(void*)> free_host(host, [](void* p) { cudaFreeHost(p); });
        LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer dev, ctx.Alloc(count * kBytes));
        LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer small, ctx.Alloc(64 * sizeof(float)));
        cudaEvent_t event = nullptr;
        LINALGD_GPU_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
        std::unique_ptr<CUevent_st, cudaError_t (*)(cudaEvent_t)> free_event(event,
                                                                             cudaEventDestroy);
        std::vector<void*> dsts(count);
        std::vector<const void*> srcs(count);
        std::vector<size_t> sizes(count, kBytes);
        for (int i = 0; i < count; ++i) {
          dsts[i] = dev.as<char>() + i * kBytes;
          srcs[i] = static_cast<char*>(host) + i * kBytes;
        }
        absl::Status s;
        // Wall ms of f() (count calls, queued only): the stream is drained
        // before each call, outside the timing, and after the last.
        auto timed = [&](auto&& f) {
          const double ms = WallMsBetween(reps, f, [&] {
            s.Update(gpu::CheckCuda(cudaStreamSynchronize(st), "sync", __FILE__, __LINE__));
          });
          s.Update(gpu::CheckCuda(cudaStreamSynchronize(st), "sync", __FILE__, __LINE__));
          return ms;
        };
        std::vector<Row> rows;
        auto add = [&](const char* name, double ms) {
          rows.push_back(Row{name, "host", count, ms, 0, 0});
        };
        add("api_pointer_attributes", timed([&] {
              for (int i = 0; i < count; ++i) {
                cudaPointerAttributes attr{};
                s.Update(gpu::CheckCuda(cudaPointerGetAttributes(&attr, srcs[i]), "attributes",
                                        __FILE__, __LINE__));
              }
            }));
        add("api_memcpy_async", timed([&] {
              for (int i = 0; i < count; ++i) {
                s.Update(gpu::CheckCuda(
                    cudaMemcpyAsync(dsts[i], srcs[i], kBytes, cudaMemcpyHostToDevice, st),
                    "cudaMemcpyAsync", __FILE__, __LINE__));
              }
            }));
        add("api_memcpy_batch", timed([&] {
              cudaMemcpyAttributes attr{};
              attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
              size_t first = 0;
              s.Update(gpu::CheckCuda(cudaMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(),
                                                           count, &attr, &first, 1, st),
                                      "cudaMemcpyBatchAsync", __FILE__, __LINE__));
            }));
        add("api_launch", timed([&] {
              for (int i = 0; i < count; ++i) {
                s.Update(gpu::FillRandom(DType::kF32, small.data(), 64, i, -1, 1, st));
              }
            }));
        add("api_event", timed([&] {
              for (int i = 0; i < count; ++i) {
                s.Update(gpu::CheckCuda(cudaEventRecord(event, st), "event", __FILE__, __LINE__));
              }
            }));
        // Whether a kernel could read the callers' registered regions in
        // place: memory registered as the shm registry does it
        // (cudaHostRegisterPortable) has a device pointer (ours 1) and it
        // is the host address itself (direct 1).
        std::vector<char> region(size_t{1} << 20);
        LINALGD_GPU_CHECK(cudaHostRegister(region.data(), region.size(), cudaHostRegisterPortable));
        cudaPointerAttributes attr{};
        s.Update(gpu::CheckCuda(cudaPointerGetAttributes(&attr, region.data() + 4096), "attributes",
                                __FILE__, __LINE__));
        cudaHostUnregister(region.data());
        rows.push_back(Row{"api_registered_device_pointer", "host", 1,
                           attr.devicePointer != nullptr ? 1.0 : 0.0,
                           attr.devicePointer == region.data() + 4096 ? 1.0 : 0.0, 0});
        LINALGD_RETURN_IF_ERROR(s);
        return rows;
      });
}

}  // namespace linalgd::bench
