#ifndef LINALGD_SERVER_GPU_BATCHED_SOLVER_H_
#define LINALGD_SERVER_GPU_BATCHED_SOLVER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/dtype.h"
#include "server/gpu/dense_solver.h"
#include "server/gpu/gpu_context.h"

namespace linalgd::gpu {

// Solves `batch` small square systems at once: a_all [batch, n, n], b_all
// [batch, n, k] and x_all [batch, n, k], contiguous row-major on the device.
// Matrix i is factored by Cholesky (cusolverDn potrfBatched/potrsBatched)
// when use_cholesky[i], else by LU (cublas getrfBatched/getrsBatched).
// Returns one SolveFailure per matrix (ok: x_all[i] is its solution; checked
// as by LuSolve and CholeskySolve, the zero pivot 0-based, the condition
// estimated for all members in lockstep with batched solves);
// failed matrices leave garbage in x_all[i]. cond: one per matrix, anorm
// and rcond_factor in, rcond out. F32 or F64; meant for n <= 64.
absl::StatusOr<std::vector<SolveFailure>> BatchedSmallSolve(GpuContext& ctx, DType t, int64_t n,
                                                            int64_t k, int64_t batch,
                                                            const void* a_all, const void* b_all,
                                                            void* x_all,
                                                            const std::vector<bool>& use_cholesky,
                                                            std::vector<ConditionCheck>& cond);

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_BATCHED_SOLVER_H_
