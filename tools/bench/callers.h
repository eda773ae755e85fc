#ifndef LINALGD_TOOLS_BENCH_CALLERS_H_
#define LINALGD_TOOLS_BENCH_CALLERS_H_

#include <algorithm>
#include <cstdint>
#include <memory>

#include "absl/types/optional.h"
#include "linalgd/client.h"
#include "tools/bench/caller.h"
#include "tools/bench/echo.grpc.pb.h"

namespace linalgd::bench {

// A [rows, cols] tensor of `dtype` (kF32 or kF64) of uniform values in
// [-1, 1) from `seed` (kF64: the same draws, widened).
client::Tensor RandomMatrix(int64_t rows, int64_t cols, uint32_t seed,
                            client::DType dtype = client::DType::kF32);

// The two operands of an M x K by K x N product (f32 or f64), shared read-only by
// every MatmulCaller that points at them.
struct MatmulOperands {
  MatmulOperands(int64_t m, int64_t n, int64_t k, client::DType dtype = client::DType::kF32);
  int64_t m, n, k;
  client::DType dtype;
  client::Tensor a, b;
  int64_t element_bytes() const { return dtype == client::DType::kF64 ? 8 : 4; }
  int64_t request_bytes() const { return (m * k + k * n) * element_bytes(); }
  int64_t response_bytes() const { return m * n * element_bytes(); }
};

// Sizes of a shared-memory Matmul request and response (tensors as
// references into a region, 32-digit id and secret each), rounded up: what
// an echo of such a call sends.
inline constexpr int64_t kShmRequestBytes = 320, kShmResponseBytes = 128;

// linalgd Matmul of fixed operands through a shared Client. Prepare() copies
// the operands into the next request (untimed); Call() sends it (timed).
// in_place: the operands and the result live in SharedTensors of the client
// (which needs use_shared_memory), made by Init() with the operands copied
// there once; each call then sends references alone, and neither side copies
// a tensor (the client's shared-memory path copies them into and out of its
// region on every call).
class MatmulCaller final : public Caller {
 public:
  MatmulCaller(Client& client, const MatmulOperands& operands, bool in_place = false);
  // in_place: creates the shared tensors (once, before the first Call()).
  absl::Status Init();
  absl::Status Prepare() override;
  absl::Status Call() override;
  double mean_run_seconds() const { return total_run_ns_ / 1e9 / std::max<int64_t>(1, calls_); }
  double mean_queue_seconds() const { return total_queue_ns_ / 1e9 / std::max<int64_t>(1, calls_); }
  // ExecutionInfo of the last successful call.
  const client::ExecutionInfo& last_info() const { return last_info_; }
  // Sums over the successful calls since construction or ResetCounters().
  int64_t calls() const { return calls_; }
  int64_t total_run_ns() const { return total_run_ns_; }
  int64_t total_queue_ns() const { return total_queue_ns_; }
  void ResetCounters() { calls_ = total_run_ns_ = total_queue_ns_ = 0; }

 private:
  Client& client_;
  const MatmulOperands& operands_;
  const bool in_place_;
  std::unique_ptr<client::SharedTensor> a_, b_, out_;  // in_place
  client::MatmulArgs next_;
  client::ExecutionInfo last_info_;
  int64_t calls_ = 0, total_run_ns_ = 0, total_queue_ns_ = 0;
};

// The raw gRPC echo of a request of `request_bytes`, answered with
// `response_bytes`, through a shared stub (thread-safe).
class EchoCaller final : public Caller {
 public:
  EchoCaller(echo::Echo::Stub& stub, int64_t request_bytes, int64_t response_bytes);
  absl::Status Call() override;

 private:
  echo::Echo::Stub& stub_;
  echo::EchoRequest request_;
};

}  // namespace linalgd::bench

#endif  // LINALGD_TOOLS_BENCH_CALLERS_H_
