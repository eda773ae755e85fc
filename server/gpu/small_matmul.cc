#include "server/gpu/small_matmul.h"

#include <cstring>
#include <optional>

#include "absl/base/casts.h"
#include "server/backend/trace_names.h"
#include "server/common/status_macros.h"
#include "server/common/trace.h"
#include "server/gpu/cuda_check.h"
#include "server/gpu/gpu_ops.h"

namespace linalgd::gpu {
namespace {

constexpr size_t kAlign = 256;

size_t RoundUp(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// c broadcast to the output shape, written to `out` (batch * m * n
// elements of c's dtype, which is the output's).
void ExpandC(const MatmulOp& op, const MatmulPlan& plan, char* out) {
  const TensorView& c = *op.c;
  if (!plan.c_full_matrix) {
    const Tensor expanded = BroadcastTo(c, plan.out_shape);
    std::memcpy(out, expanded.data(), expanded.num_bytes());
    return;
  }
  const size_t es = DTypeSize(c.dtype);
  const size_t matrix = static_cast<size_t>(plan.m * plan.n) * es;
  for (size_t i = 0; i < plan.c_offsets.size(); ++i) {
    std::memcpy(out + i * matrix, c.data + plan.c_offsets[i] * es, matrix);
  }
}

// The host staging area as the upload copies it: the staged operands, the
// slots at ~0, and c expanded where the product reads it.
void Pack(const MatmulOp& op, const MatmulPlan& plan, const SmallMatmulLayout& l, char* host) {
  auto put = [host](const TensorView& t, const SmallMatmulLayout::Part& p) {
    if (p.resident == nullptr) std::memcpy(host + p.at, t.data, p.bytes);
  };
  put(op.a, l.a);
  put(op.b, l.b);
  if (op.bias) put(*op.bias, l.bias);
  std::memset(host + l.slots, 0xff, kMatmulCheckSlots * sizeof(unsigned long long));
  if (l.use_c) ExpandC(op, plan, host + l.d);
}

// Bytes of tensor data the upload carries (counted as h2d_bytes).
int64_t PayloadBytes(const SmallMatmulLayout& l) {
  return static_cast<int64_t>(l.a.bytes + l.b.bytes + l.bias.bytes + (l.use_c ? l.d_bytes : 0));
}

// The result from the host staging area: into op.result_to when it fits
// there (as Download does), else into a new tensor.
absl::StatusOr<Tensor> CopyOut(const char* src, const MatmulOp& op, const MatmulPlan& plan,
                               size_t bytes) {
  const ResultDestination& to = op.result_to;
  if (to.Fits(bytes) && to.Begin()) {
    std::memcpy(to.data(), src, bytes);
    to.End();
    return Tensor::External(op.out_dtype, plan.out_shape, to.data());
  }
  Tensor out(op.out_dtype, plan.out_shape);
  std::memcpy(out.mutable_data(), src, bytes);
  return out;
}

}  // namespace

SmallMatmulLayout LayOutSmallMatmul(const ResidentRegistry& residents, const MatmulOp& op,
                                    const MatmulPlan& plan) {
  SmallMatmulLayout l;
  size_t at = 0;
  auto place = [&](const TensorView& t, SmallMatmulLayout::Part& p) {
    p.resident = residents.Find(t.data, t.num_bytes());
    if (p.resident != nullptr) return;
    p.at = at;
    p.bytes = t.num_bytes();
    at += RoundUp(p.bytes);
  };
  place(op.a, l.a);
  place(op.b, l.b);
  if (op.bias) place(*op.bias, l.bias);
  l.slots = at;
  at += RoundUp(kMatmulCheckSlots * sizeof(unsigned long long));
  l.d = at;
  l.d_bytes = static_cast<size_t>(plan.batch * plan.m * plan.n) * DTypeSize(op.out_dtype);
  l.end = at + RoundUp(l.d_bytes);
  l.use_c = op.c.has_value() && (op.beta != 0 || op.beta_imag != 0);
  return l;
}

std::optional<SmallGraphKey> SmallMatmulGraphKey(const MatmulOp& op, const MatmulPlan& plan,
                                                 const SmallMatmulLayout& l) {
  const std::optional<int64_t> sa = MatmulPlan::UniformStride(plan.a_offsets);
  const std::optional<int64_t> sb = MatmulPlan::UniformStride(plan.b_offsets);
  if (!sa || !sb) return std::nullopt;
  SmallGraphKey key{};
  size_t i = 0;
  auto put = [&key, &i](int64_t v) { key.at(i++) = v; };
  auto bits = [](double v) { return absl::bit_cast<int64_t>(v); };
  auto part = [&put](const SmallMatmulLayout::Part& p) {
    put(static_cast<int64_t>(p.at));
    put(static_cast<int64_t>(p.bytes));
    put(static_cast<int64_t>(reinterpret_cast<intptr_t>(p.resident)));
  };
  for (DType t : {op.a.dtype, op.b.dtype, op.out_dtype}) put(static_cast<int64_t>(t));
  put(static_cast<int64_t>(op.compute));
  put(static_cast<int64_t>(op.epilogue));
  put(op.trans_a * 2 + op.trans_b);
  for (int64_t v : {plan.m, plan.n, plan.k, plan.batch, *sa, *sb}) put(v);
  put(plan.bias_per_row);
  for (double v : {op.alpha, op.beta, op.alpha_imag, op.beta_imag}) put(bits(v));
  put(op.check_finite);
  put(op.a.num_elements());
  put(op.b.num_elements());
  put(op.bias ? static_cast<int64_t>(op.bias->dtype) : -1);
  put(op.bias ? op.bias->num_elements() : -1);
  put(l.use_c);
  part(l.a);
  part(l.b);
  part(l.bias);
  for (size_t v : {l.slots, l.d, l.d_bytes, l.end}) put(static_cast<int64_t>(v));
  return key;
}

absl::StatusOr<Tensor> RunSmallMatmul(GpuContext& ctx, const MatmulOp& op, const MatmulPlan& plan,
                                      const SmallMatmulLayout& l) {
  HandleSet& hs = ctx.hs;
  char* host = static_cast<char*>(hs.small_host);
  char* dev = static_cast<char*>(hs.small_device);
  std::optional<trace::ScopedRange> phase;  // NVTX: upload, compute, download
  phase.emplace([&] { return MatmulRangeName(op, plan, "upload"); });
  // The staging areas are free once the set's stream is idle (it is, unless
  // the set's last job ended without waiting for it).
  LINALGD_GPU_CHECK(cudaStreamSynchronize(hs.stream));
  Pack(op, plan, l, host);
  auto at = [dev](const SmallMatmulLayout::Part& p) -> const void* {
    return p.resident != nullptr ? p.resident : dev + p.at;
  };
  // The device work: no host-side effect but its launches (a graph's
  // capture makes the same calls).
  auto enqueue = [&]() -> absl::Status {
    const size_t up = l.use_c ? l.end : l.d;
    LINALGD_GPU_CHECK(cudaMemcpyAsync(dev, host, up, cudaMemcpyHostToDevice, hs.stream));
    const void* bias = op.bias ? at(l.bias) : nullptr;
    auto* slots = reinterpret_cast<unsigned long long*>(dev + l.slots);
    phase.reset();
    phase.emplace([&] { return MatmulRangeName(op, plan, "compute"); });
    if (op.check_finite) {
      LINALGD_RETURN_IF_ERROR(ScanMatmulOperands(op, at(l.a), at(l.b), bias, slots, hs.stream));
    }
    LINALGD_RETURN_IF_ERROR(
        LaunchMatmul(ctx, op, plan, at(l.a), at(l.b), bias, dev + l.d, l.use_c));
    phase.reset();
    phase.emplace([&] { return MatmulRangeName(op, plan, "download"); });
    LINALGD_GPU_CHECK(cudaMemcpyAsync(host + l.slots, dev + l.slots, l.end - l.slots,
                                      cudaMemcpyDeviceToHost, hs.stream));
    return absl::OkStatus();
  };
  const std::optional<SmallGraphKey> key =
      ctx.small_graphs ? SmallMatmulGraphKey(op, plan, l) : std::nullopt;
  if (key) {
    LINALGD_ASSIGN_OR_RETURN(SmallGraphCache::Ran ran,
                             hs.small_graphs.Run(hs.stream, *key, enqueue));
    if (ran == SmallGraphCache::Ran::kReplayed) ctx.transfers.small_graph_replays.fetch_add(1);
  } else {
    LINALGD_RETURN_IF_ERROR(enqueue());
  }
  ctx.transfers.h2d_copies.fetch_add(1);
  ctx.transfers.h2d_bytes.fetch_add(PayloadBytes(l));
  ctx.transfers.small_jobs.fetch_add(1);
  LINALGD_GPU_CHECK(cudaStreamSynchronize(hs.stream));
  ctx.transfers.d2h_copies.fetch_add(1);
  ctx.transfers.d2h_bytes.fetch_add(static_cast<int64_t>(l.d_bytes));
  LINALGD_RETURN_IF_ERROR(
      MatmulFiniteVerdict(op, reinterpret_cast<const unsigned long long*>(host + l.slots)));
  return CopyOut(host + l.d, op, plan, l.d_bytes);
}

}  // namespace linalgd::gpu
