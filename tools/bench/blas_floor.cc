#include "tools/bench/blas_floor.h"

#include <cblas.h>

#include <chrono>

namespace linalgd::bench {

std::vector<double> TimeSgemm(const MatmulOperands& operands, int warmup, int iterations) {
  const int m = static_cast<int>(operands.m);
  const int n = static_cast<int>(operands.n);
  const int k = static_cast<int>(operands.k);
  std::vector<float> c(static_cast<size_t>(operands.m * operands.n));
  const float* a = operands.a.as<float>().data();
  const float* b = operands.b.as<float>().data();
  std::vector<double> seconds;
  for (int i = 0; i < warmup + iterations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f,
                c.data(), n);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (i >= warmup) seconds.push_back(s);
  }
  return seconds;
}

}  // namespace linalgd::bench
