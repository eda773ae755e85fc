#include "server/gpu/super_sweep.h"

#include <cuComplex.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/gpu/cuda_check.h"

namespace linalgd::gpu {
namespace {

constexpr int64_t kBaseRows = 32;  // InvertLowerBlocks32's blocks

int64_t Elem(DType t) { return static_cast<int64_t>(DTypeSize(t)); }

// A GEMM's data type, compute type and its scalars -1, 0 and 1 (in the
// compute type's scale type) for t.
struct GemmTypes {
  cudaDataType data = CUDA_R_64F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_64F;
  alignas(16) unsigned char minus_one[16] = {}, zero[16] = {}, one[16] = {};
};

GemmTypes TypesFor(DType t) {
  GemmTypes g;
  auto set = [&g](auto m1, auto p1) {
    static_assert(sizeof(m1) <= 16);
    std::memcpy(g.minus_one, &m1, sizeof(m1));
    std::memcpy(g.one, &p1, sizeof(p1));
  };
  switch (t) {
    case DType::kF32:
      g.data = CUDA_R_32F;
      g.compute = CUBLAS_COMPUTE_32F;  // full fp32: the handles' math mode is the default
      set(-1.0f, 1.0f);
      break;
    case DType::kC64:
      g.data = CUDA_C_32F;
      g.compute = CUBLAS_COMPUTE_32F;
      set(make_cuComplex(-1.0f, 0.0f), make_cuComplex(1.0f, 0.0f));
      break;
    case DType::kC128:
      g.data = CUDA_C_64F;
      g.compute = CUBLAS_COMPUTE_64F;
      set(make_cuDoubleComplex(-1.0, 0.0), make_cuDoubleComplex(1.0, 0.0));
      break;
    default:
      g.data = CUDA_R_64F;
      g.compute = CUBLAS_COMPUTE_64F;
      set(-1.0, 1.0);
      break;
  }
  return g;
}

// `stream` waits for everything queued on `side` (joined on every path, so
// that stream's later work and frees come after the side's products).
void Join(cudaStream_t stream, cudaStream_t side, cudaEvent_t join) {
  if (cudaEventRecord(join, side) == cudaSuccess) {
    cudaStreamWaitEvent(stream, join, 0);
  } else {
    cudaStreamSynchronize(side);
  }
}

}  // namespace

int64_t SuperSweep::BlockRowsFor(int64_t n, int64_t min_n) {
  if (min_n <= 0 || n < min_n) return 0;
  for (int64_t nb : {1024, 512, 256}) {
    if (n % nb == 0) return nb;
  }
  return 0;
}

absl::StatusOr<std::unique_ptr<SuperSweep>> SuperSweep::Create(GpuContext& ctx, cublasHandle_t blas,
                                                               cudaStream_t stream, DType t,
                                                               int64_t n, const void* l, int64_t nb,
                                                               cudaStream_t beside) {
  if (t != DType::kF32 && t != DType::kF64 && t != DType::kC64 && t != DType::kC128) {
    return absl::InvalidArgumentError(
        absl::StrCat("SuperSweep: dtype ", DTypeName(t), " is not F32, F64, C64 or C128"));
  }
  if (nb < 2 * kBaseRows || (nb & (nb - 1)) != 0 || n <= 0 || n % nb != 0) {
    return absl::InvalidArgumentError(absl::StrCat("SuperSweep: block rows ", nb,
                                                   " must be a power of two >= 64 dividing n ", n));
  }
  std::unique_ptr<SuperSweep> s(new SuperSweep(t, n, nb, l));
  const int64_t e = Elem(t);
  LINALGD_ASSIGN_OR_RETURN(s->dinv_, ctx.mem.Allocate(n * (nb + 1) * e, stream));
  LINALGD_ASSIGN_OR_RETURN(s->tmp_, ctx.mem.Allocate(n * nb / 4 * e, stream));
  LINALGD_ASSIGN_OR_RETURN(s->r_, ctx.mem.Allocate(2 * n * e, stream));
  s->alloc_stream_ = stream;
  if (beside == nullptr) {
    LINALGD_RETURN_IF_ERROR(s->Invert(blas, stream));
    return s;
  }
  // `beside` starts after the buffers' allocation and the factor's making;
  // inverted_ exists before anything is queued there, so the destructor
  // orders the frees after whatever was.
  LINALGD_GPU_CHECK(cudaEventCreateWithFlags(&s->inverted_, cudaEventDisableTiming));
  LINALGD_GPU_CHECK(cudaEventRecord(s->inverted_, stream));
  LINALGD_GPU_CHECK(cudaStreamWaitEvent(beside, s->inverted_, 0));
  const absl::Status inverted = s->Invert(blas, beside);
  LINALGD_GPU_CHECK(cudaEventRecord(s->inverted_, beside));
  LINALGD_RETURN_IF_ERROR(inverted);
  return s;
}

SuperSweep::~SuperSweep() {
  for (cudaEvent_t ev : events_) {
    if (ev != nullptr) cudaEventDestroy(ev);
  }
  if (inverted_ != nullptr) {
    // The buffers are freed on alloc_stream_ after this body: after the
    // inverses' products (a failed wait syncs the device instead).
    if (cudaStreamWaitEvent(alloc_stream_, inverted_, 0) != cudaSuccess) cudaDeviceSynchronize();
    cudaEventDestroy(inverted_);
  }
}

absl::Status SuperSweep::Invert(cublasHandle_t blas, cudaStream_t stream) {
  // Zero above every block's diagonal: each level's GEMMs read its
  // inverses as full squares.
  LINALGD_GPU_CHECK(cudaMemsetAsync(dinv_.data(), 0, dinv_.bytes(), stream));
  LINALGD_RETURN_IF_ERROR(InvertLowerBlocks32(t_, l_, n_, n_, dinv_.data(), nb_, stream));
  const GemmTypes g = TypesFor(t_);
  const int64_t e = Elem(t_);
  const int ld_l = static_cast<int>(n_), ld_d = static_cast<int>(nb_);
  for (int64_t h = kBaseRows; h < nb_; h *= 2) {
    // The blocks of 2 h rows at r = 2 h b: [[A, 0], [C, B]], C = L(r + h, r).
    const int batch = static_cast<int>(n_ / (2 * h));
    const int ih = static_cast<int>(h);
    const long long stride_l = 2 * h * (n_ + 1), stride_d = 2 * h * (nb_ + 1), stride_t = h * h;
    const char* c = L(h, 0);
    char* a_inv = dinv_.as<char>();
    char* b_inv = a_inv + h * (nb_ + 1) * e;
    char* x = a_inv + h * e;  // the block's lower left
    // tmp = C A^-1, then X = -B^-1 tmp.
    LINALGD_GPU_CHECK(cublasGemmStridedBatchedEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, ih, ih, ih, g.one,
                                                 c, g.data, ld_l, stride_l, a_inv, g.data, ld_d,
                                                 stride_d, g.zero, tmp_.data(), g.data, ih,
                                                 stride_t, batch, g.compute, CUBLAS_GEMM_DEFAULT));
    LINALGD_GPU_CHECK(cublasGemmStridedBatchedEx(
        blas, CUBLAS_OP_N, CUBLAS_OP_N, ih, ih, ih, g.minus_one, b_inv, g.data, ld_d, stride_d,
        tmp_.data(), g.data, ih, stride_t, g.zero, x, g.data, ld_d, stride_d, batch, g.compute,
        CUBLAS_GEMM_DEFAULT));
  }
  return absl::OkStatus();
}

absl::Status SuperSweep::Product(TriangleOp op, int columns, const char* a, int64_t lda, int64_t m,
                                 int64_t k, bool lower, const char* x, char* out, bool assign,
                                 cudaStream_t stream) const {
  if (op == TriangleOp::kNoTranspose) {
    return SweepGemvN(t_, columns, a, lda, m, k, lower, x, n_, out, n_, assign, stream);
  }
  return SweepGemvT(t_, columns, op == TriangleOp::kConjTranspose, a, lda, m, k, lower, x, n_, out,
                    n_, assign, stream);
}

absl::Status SuperSweep::Solve(TriangleOp op, int columns, void* x, int64_t first_row,
                               cudaStream_t stream, cudaStream_t side) {
  if (columns != 1 && columns != 2) {
    return absl::InternalError(absl::StrCat("SuperSweep: ", columns, " columns (1 or 2)"));
  }
  char* v = static_cast<char*>(x);
  const bool forward = op == TriangleOp::kNoTranspose, forked = side != nullptr;
  const int64_t e = Elem(t_), blocks = n_ / nb_;
  const int64_t first = forward && first_row > 0 ? std::min(first_row / nb_, blocks - 1) : 0;
  // The block a step solves: forward from `first` on, backward from the last.
  auto block_at = [&](int64_t step) { return forward ? first + step : blocks - 1 - step; };
  if (forked && events_.empty()) {  // made on the first forked sweep, all or none
    std::vector<cudaEvent_t> made;
    made.reserve(2 * blocks + 2);
    for (int64_t i = 0; i < 2 * blocks + 2; ++i) {
      cudaEvent_t ev = nullptr;
      const cudaError_t err = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
      if (err != cudaSuccess) {
        for (cudaEvent_t m : made) cudaEventDestroy(m);
        return CheckCuda(err, "cudaEventCreateWithFlags", __FILE__, __LINE__);
      }
      made.push_back(ev);
    }
    events_ = std::move(made);
  }
  auto solved = [&](int64_t b) { return events_[b]; };
  auto updated = [&](int64_t b) { return events_[blocks + b]; };
  cudaEvent_t fork = forked ? events_[2 * blocks] : nullptr;
  cudaEvent_t join = forked ? events_[2 * blocks + 1] : nullptr;
  if (inverted_ != nullptr) LINALGD_GPU_CHECK(cudaStreamWaitEvent(stream, inverted_, 0));
  // r <- x from the first block on (x's rows above are zero, and stay so).
  LINALGD_GPU_CHECK(cudaMemcpy2DAsync(R(first * nb_), n_ * e, v + first * nb_ * e, n_ * e,
                                      (n_ - first * nb_) * e, columns, cudaMemcpyDeviceToDevice,
                                      stream));
  if (forked) {
    LINALGD_GPU_CHECK(cudaEventRecord(fork, stream));
    LINALGD_GPU_CHECK(cudaStreamWaitEvent(side, fork, 0));
  }
  absl::Cleanup joined = [&] {
    if (forked) Join(stream, side, join);
  };
  for (int64_t step = 0; step < blocks - first; ++step) {
    const int64_t b = block_at(step);
    if (forked && step >= 2) {
      LINALGD_GPU_CHECK(cudaStreamWaitEvent(stream, updated(block_at(step - 2)), 0));
    }
    if (forked && step >= 1) {  // r_b -= op(M) y_prev, M the factor's block between b and prev
      const int64_t prev = block_at(step - 1);
      LINALGD_RETURN_IF_ERROR(Product(op, columns,
                                      L(std::max(b, prev) * nb_, std::min(b, prev) * nb_), n_, nb_,
                                      nb_, false, v + prev * nb_ * e, R(b * nb_), false, stream));
    }
    // y_b = op(inverse_b) r_b
    LINALGD_RETURN_IF_ERROR(Product(op, columns, Inverse(b), nb_, nb_, nb_, true, R(b * nb_),
                                    v + b * nb_ * e, true, stream));
    if (!forked) {
      // Every row still to solve, in one product: forward r_{b+1..} -=
      // L(b+1.., b) y_b; backward r_{..b-1} -= op(L(b, ..b-1)) y_b.
      const int64_t rest = forward ? blocks - 1 - b : b;
      if (rest > 0) {
        const char* a = forward ? L((b + 1) * nb_, b * nb_) : L(b * nb_, 0);
        char* out = forward ? R((b + 1) * nb_) : R(0);
        LINALGD_RETURN_IF_ERROR(Product(op, columns, a, n_, rest * nb_, nb_, false, v + b * nb_ * e,
                                        out, false, stream));
      }
      continue;
    }
    LINALGD_GPU_CHECK(cudaEventRecord(solved(b), stream));
    // The rows beyond the next block: forward r_{b+2..} -= L(b+2.., b) y_b;
    // backward r_{..b-2} -= op(L(b, ..b-2)) y_b.
    const int64_t rest = forward ? blocks - 2 - b : b - 1;
    if (rest > 0) {
      LINALGD_GPU_CHECK(cudaStreamWaitEvent(side, solved(b), 0));
      const char* a = forward ? L((b + 2) * nb_, b * nb_) : L(b * nb_, 0);
      char* out = forward ? R((b + 2) * nb_) : R(0);
      LINALGD_RETURN_IF_ERROR(
          Product(op, columns, a, n_, rest * nb_, nb_, false, v + b * nb_ * e, out, false, side));
      LINALGD_GPU_CHECK(cudaEventRecord(updated(b), side));
    }
  }
  return absl::OkStatus();
}

}  // namespace linalgd::gpu
