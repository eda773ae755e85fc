// Measures when OpenBLAS threads one sgemm and what two concurrent callers
// gain, the numbers behind server/cpu/cpu_execution.h. Not a test: run
// build/bin/openblas_threading_probe on an idle machine. A cpu/wall ratio near
// 1 means the call ran on one thread.
#include <cblas.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <thread>
#include <vector>

namespace {

double CpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void Gemm(int s, const std::vector<float>& a, std::vector<float>& c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s, s, s, 1, a.data(), s, a.data(), s, 0,
              c.data(), s);
}

}  // namespace

int main() {
  std::printf("openblas threads %d, cores %d\n", openblas_get_num_threads(),
              openblas_get_num_procs());
  for (int s : {32, 48, 56, 60, 62, 64, 72, 96, 128}) {
    std::vector<float> a(s * s, 1.0f), c(s * s);
    const int reps = static_cast<int>(2e9 / (2.0 * s * s * s));
    Gemm(s, a, c);
    const double w0 = WallSeconds(), c0 = CpuSeconds();
    for (int r = 0; r < reps; ++r) Gemm(s, a, c);
    const double wall = WallSeconds() - w0;
    std::printf("sgemm %3d^3 (m*n*k %8d): cpu/wall %.2f, %.1f GFLOP/s\n", s, s * s * s,
                (CpuSeconds() - c0) / wall, 2.0 * s * s * s * reps / wall / 1e9);
  }
  for (int s : {32, 48, 256}) {
    const std::vector<float> a(s * s, 1.0f);
    const int reps = static_cast<int>(4e9 / (2.0 * s * s * s));
    auto work = [&] {
      std::vector<float> c(s * s);
      for (int r = 0; r < reps / 2; ++r) Gemm(s, a, c);
    };
    double w0 = WallSeconds();
    work();
    work();
    const double sequential = WallSeconds() - w0;
    w0 = WallSeconds();
    std::thread t1(work), t2(work);
    t1.join();
    t2.join();
    std::printf("sgemm %3d^3, two halves: one after the other %.3f s, two callers at once %.3f s\n",
                s, sequential, WallSeconds() - w0);
  }
  return 0;
}
