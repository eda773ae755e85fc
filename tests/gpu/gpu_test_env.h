#ifndef LINALGD_TESTS_GPU_GPU_TEST_ENV_H_
#define LINALGD_TESTS_GPU_GPU_TEST_ENV_H_

#include <cstdint>
#include <memory>
#include <string>

#include "server/gpu/gpu_backend.h"
#include "server/gpu/gpu_engine.h"

namespace linalgd::gpu_test {

// The process-wide engine of the tests (default options), started on first
// use. Never null.
GpuEngine& Engine();

// Its first backend, or null when the machine has no usable GPU.
gpu::GpuBackend* FirstGpu();

// A backend of its own on the first GPU (REQUIRES: one), with its own
// staging pool and counters: `handle_sets` sets, the small path's staging of
// `small_job_bytes` (and its graphs unless `small_graphs` is false), a
// 512 MiB budget. `backend` is null (and the test failed) when Create fails.
struct OwnBackend {
  OwnBackend(int64_t small_job_bytes, int handle_sets, bool small_graphs = true);
  gpu::PinnedPool pinned;
  gpu::TransferCounters transfers;
  std::unique_ptr<gpu::GpuBackend> backend;
};

// Prints one line of the accuracy table: "ACCURACY <case> err=<e> tol=<t>".
void ReportAccuracy(const std::string& name, double err, double tol);

}  // namespace linalgd::gpu_test

// Skips the test (cleanly) on a machine without a usable GPU.
#define LINALGD_REQUIRE_GPU()                                               \
  do {                                                                      \
    if (::linalgd::gpu_test::FirstGpu() == nullptr) {                       \
      GTEST_SKIP() << "no GPU: " << ::linalgd::gpu_test::Engine().status(); \
    }                                                                       \
  } while (0)

#endif  // LINALGD_TESTS_GPU_GPU_TEST_ENV_H_
