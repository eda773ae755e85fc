#ifndef LINALGD_TOOLS_BENCH_BENCH_OPTIONS_H_
#define LINALGD_TOOLS_BENCH_BENCH_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "server/gpu/gpu_wait.h"

namespace linalgd::bench {

// Everything a run of linalgd-bench is told, filled from flags. The defaults
// keep a run under a minute on a 2-core machine.
struct BenchOptions {
  std::string target;     // empty: start linalgd in-process on 127.0.0.1:0
  std::string json_path;  // empty: no JSON file
  // The raw gRPC echo: empty serves it in this process (its client and server
  // then share one gRPC runtime); HOST:PORT uses one served by another
  // process (`linalgd-bench --serve-echo HOST:PORT`), as linalgd is.
  std::string echo_target;
  std::string serve_echo;  // non-empty: only serve the echo there until stopped
  std::vector<std::string> workloads = {"latency", "throughput", "large"};
  int64_t max_message_bytes = int64_t{1} << 30;
  // (a) small-call latency and (b) throughput: an n x n x n f32 product.
  int small_n = 64;
  int small_warmup = 200;
  int small_iterations = 2000;
  bool small_sequential = false;  // latency: every linalgd call, then every echo
  int concurrency = 4;            // callers of the throughput workload
  double throughput_seconds = 2;  // measured phase, per target
  // (c) one large f32 product, end to end.
  int large_n = 2048;
  int large_warmup = 1;
  int large_iterations = 3;
  // (d) batching: batch_n^3 f32 matmuls from batch_callers callers against
  // two in-process servers run one after the other (--max-batch=batch_max
  // and --max-batch=1); then one caller's p50 on each (the added latency).
  int batch_n = 128;
  int batch_callers = 256;
  double batch_seconds = 2;
  int batch_max = 64;
  double batch_delay_us = 0;  // the server's default
  int batch_latency_iterations = 300;
  int64_t batch_cpu_threshold = 0;  // 0: the matmuls go to a GPU when there is one
  // The callers share batch_connections clients, each on a TCP connection of
  // its own (the echo likewise). With batch_shm the clients pass operands and
  // result through same-host shared memory, a region per caller; without
  // --batch-connections each caller then has a client of its own.
  int batch_connections = 1;
  bool batch_shm = false;
  // With batch_shm: each caller's operands and result are SharedTensors of
  // its client, filled once; a call sends references alone and nothing is
  // copied on either side (a caller whose tensors already live in shared
  // memory), where batch_shm alone copies them through the client's region.
  bool batch_shm_in_place = false;
  int batch_handles = 4;  // --handles-per-device (GPU workers) of the batching servers
  // --inline-max-us of the batching servers; negative: the server's default.
  // 0 sends every CPU job through the queue and the batcher, the path a GPU
  // lane's jobs take, so that it can be measured on a machine without one.
  int batch_inline_max_us = -1;
  // batching: --gpu-inline-max-us of the servers (200, the server's default; 0: GPU jobs
  // queue).
  int batch_gpu_inline_max_us = 200;
  // --gpu-wait of every server this process starts (the device's flag is the
  // process's: they share it).
  GpuWait gpu_wait = GpuWait::kAuto;
  // gpu_inline: --gpu-inline-max-us of its first server (the second: 0); it
  // reuses batch_n, batch_shm, batch_handles, batch_cpu_threshold and
  // batch_latency_iterations.
  int gpu_inline_max_us = 200;
  // e2e64: f64 matmuls and LU solves through the service vs in-process
  // OpenBLAS/LAPACK (large_warmup / large_iterations runs each).
  std::vector<int> e2e_matmul_sizes = {256, 1024};
  std::vector<int> e2e_solve_sizes = {512, 1024};
  // sparse: grid extents of the 2-D (n = m^2) and 3-D (n = m^3) Poisson
  // systems and the order of the graph Laplacian (0: skip one); methods
  // "cholesky" (direct) and "cg" (Jacobi CG). About 1e6 unknowns each:
  // --sparse-2d 1000 --sparse-3d 100 --sparse-graph 1000000.
  // stress: callers, duration, size of its large matmuls and solves.
  int stress_callers = 8;
  double stress_seconds = 3;
  int stress_large_n = 256;
  int64_t sparse_2d = 64;
  int64_t sparse_3d = 16;
  int64_t sparse_graph = 4096;
  std::vector<std::string> sparse_methods = {"cholesky", "cg"};
  // data: a data_n^3 matmul round trip (data_dtype: "f32" or "f64") through each transfer path
  // (1 warm-up, data_iterations timed; 4096 on the GPU host), and
  // factor_solves k=1 solves against a cached factor_n^2 f64 LU factor vs
  // as many full solves (1000 and 8192 on the GPU host); full solves beyond
  // factor_full_seconds are extrapolated from those timed.
  int data_n = 1024;
  std::string data_dtype = "f32";
  int data_iterations = 3;
  int data_connections = 8;  // the streaming path's ClientOptions.transfer_connections
  int factor_n = 1024;
  int factor_solves = 100;
  double factor_full_seconds = 10;
};

}  // namespace linalgd::bench

#endif  // LINALGD_TOOLS_BENCH_BENCH_OPTIONS_H_
