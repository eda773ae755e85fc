#ifndef LINALGD_SERVER_GPU_SMALL_MATMUL_H_
#define LINALGD_SERVER_GPU_SMALL_MATMUL_H_

// Small products in one round trip to the device: the operands packed into
// the handle set's page-locked staging area and uploaded with one copy, the
// NaN/Inf scans in one launch, the product, and the scans' verdict and the
// result downloaded with one copy and one stream synchronize; a shape seen
// before replays these as one CUDA graph launch. No device
// allocation (the set's own device staging area), no copy from pageable
// memory (each would be staged and waited for by the driver).

#include <cstddef>
#include <optional>

#include "absl/status/statusor.h"
#include "server/backend/ops.h"
#include "server/backend/plan.h"
#include "server/common/tensor.h"
#include "server/gpu/gpu_context.h"
#include "server/gpu/resident_registry.h"
#include "server/gpu/small_graphs.h"

namespace linalgd::gpu {

// Where each part of a small product lies in the staging areas: byte
// offsets from their starts, the same on the host and on the device, each a
// multiple of 256. a, b and bias are staged at [at, at + bytes) unless they
// are resident on the device (then `resident` is their device copy and
// nothing is staged); the check slots (~0 before the scans) follow them,
// then the result d (holding c expanded first when the product reads c).
// Uploaded: [0, d) ([0, end) with c); downloaded: [slots, end).
struct SmallMatmulLayout {
  struct Part {
    size_t at = 0, bytes = 0;
    const void* resident = nullptr;
  };
  Part a, b, bias;
  size_t slots = 0;
  size_t d = 0, d_bytes = 0;
  size_t end = 0;
  bool use_c = false;
};

// The layout of op (planned as `plan`, with at least one output element);
// `residents` says which operands are resident. Host-only.
SmallMatmulLayout LayOutSmallMatmul(const ResidentRegistry& residents, const MatmulOp& op,
                                    const MatmulPlan& plan);

// What the round trip's device work depends on (small_graphs.h): dtypes,
// compute mode, epilogue, transposes, shape, batch strides, scalars, the
// scans, and the layout with the resident operands' device addresses; not
// the operands' host addresses or values. Nullopt: an operand without a
// uniform batch stride (one product per batch element): not captured.
// Host-only.
std::optional<SmallGraphKey> SmallMatmulGraphKey(const MatmulOp& op, const MatmulPlan& plan,
                                                 const SmallMatmulLayout& layout);

// RunMatmul's result (the same values, statuses and messages) in one round
// trip; with ctx.small_graphs, a repeated key's device work is one graph
// launch (ctx.hs.small_graphs). REQUIRES: layout is
// LayOutSmallMatmul(ctx.residents, op, plan) and layout.end <=
// ctx.hs.small_bytes. ctx.hs's staging areas are this job's until it
// returns (the lease's); the stream is idle when it returns OK.
absl::StatusOr<Tensor> RunSmallMatmul(GpuContext& ctx, const MatmulOp& op, const MatmulPlan& plan,
                                      const SmallMatmulLayout& layout);

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_SMALL_MATMUL_H_
