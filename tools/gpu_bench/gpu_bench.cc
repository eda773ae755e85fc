// linalgd-gpu-bench: device time of linalgd's GPU engine (the code paths the
// backend runs, on device-resident random data) against direct cuBLAS /
// cuSOLVER calls in the same process, plus whole Backend calls with host
// operands. CUDA events, median of --reps after 3 warm-up runs.
//
//   linalgd-gpu-bench [--json FILE] [--reps N] [--commit SHA] [--quick] [--version]
//                     [--sizes N,N,...] [--only PART,PART,...]
//
// --sizes: the solve and trsv sizes (default 1024,4096,8192; --quick 4096).
// --only: the parts to run, of gemm, solves, factor_solves, trsv, trsv2, trsv_trace, e2e,
// batching, api, small (default all), and super (an experiment: only when named).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/version.h"
#include "nlohmann/json.hpp"
#include "server/backend/device_info.h"
#include "server/gpu/gpu_backend.h"
#include "server/gpu/gpu_engine.h"
#include "tools/gpu_bench/bench_cases.h"

namespace linalgd::bench {
namespace {

struct Flags {
  std::string json, commit;
  std::vector<int64_t> sizes;     // empty: the default
  std::vector<std::string> only;  // empty: every part
  int reps = 10;
  bool quick = false;
  bool version = false;
};

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json" && i + 1 < argc)
      f.json = argv[++i];
    else if (a == "--reps" && i + 1 < argc)
      f.reps = std::atoi(argv[++i]);
    else if (a == "--commit" && i + 1 < argc)
      f.commit = argv[++i];
    else if (a == "--sizes" && i + 1 < argc)
      for (absl::string_view v : absl::StrSplit(argv[++i], ',', absl::SkipEmpty()))
        f.sizes.push_back(std::atoll(std::string(v).c_str()));
    else if (a == "--only" && i + 1 < argc)
      f.only = absl::StrSplit(argv[++i], ',', absl::SkipEmpty());
    else if (a == "--quick")
      f.quick = true;
    else if (a == "--version")
      f.version = true;
  }
  return f;
}

double Tflops(double flops, double ms) { return ms > 0 ? flops / (ms * 1e-3) / 1e12 : 0; }

// "2x NVIDIA H100 80GB HBM3": the devices the engine serves, counted by name.
std::string HostLine(const std::vector<DeviceInfo>& devices) {
  std::map<std::string, int> counts;
  for (const DeviceInfo& d : devices) ++counts[d.name];
  std::string line;
  for (const auto& [name, n] : counts)
    absl::StrAppend(&line, line.empty() ? "" : ", ", n, "x ", name);
  return line;
}

std::string Json(const Flags& f, const std::vector<DeviceInfo>& devices,
                 const std::vector<Row>& rows, int argc, char** argv) {
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  std::string cmd;
  for (int i = 0; i < argc; ++i) absl::StrAppend(&cmd, i ? " " : "", argv[i]);
  using Ordered = nlohmann::ordered_json;
  Ordered out_rows = Ordered::array();
  for (const Row& r : rows) {
    Ordered row{{"op", r.op}, {"mode", r.mode}, {"n", r.n}};
    row["ours_ms"] = r.ours_ms;
    row["direct_ms"] = r.direct_ms;
    row["ours_tflops"] = Tflops(r.flops, r.ours_ms);
    row["direct_tflops"] = Tflops(r.flops, r.direct_ms);
    row["rate_ratio"] = r.direct_ms > 0 ? r.direct_ms / r.ours_ms : 0;
    out_rows.push_back(std::move(row));
  }
  // --commit names what the build cannot know (a patch applied on the host, say).
  const std::string commit = f.commit.empty() ? LinalgdGitCommit() : f.commit;
  const Ordered out{{"date", date},
                    {"host", HostLine(devices)},
                    {"device", devices[0].name},
                    {"command", cmd},
                    {"commit", commit},
                    {"reps", f.reps},
                    {"rows", std::move(out_rows)}};
  return out.dump(/*indent=*/2, ' ', /*ensure_ascii=*/false, Ordered::error_handler_t::replace) +
         "\n";
}

void PrintTable(const std::vector<Row>& rows) {
  std::printf("\n%-15s %-5s %6s %11s %11s %9s %9s %7s\n", "op", "mode", "n", "ours_ms", "direct_ms",
              "ours_TF", "direct_TF", "ratio");
  for (const Row& r : rows) {
    std::printf("%-15s %-5s %6lld %11.3f %11.3f %9.1f %9.1f %7.3f\n", r.op.c_str(), r.mode.c_str(),
                static_cast<long long>(r.n), r.ours_ms, r.direct_ms, Tflops(r.flops, r.ours_ms),
                Tflops(r.flops, r.direct_ms), r.direct_ms > 0 ? r.direct_ms / r.ours_ms : 0.0);
  }
}

int Main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  if (flags.version) {
    std::cout << "linalgd-gpu-bench " << LinalgdVersionString() << "\n";
    return 0;
  }
  auto engine = StartGpuEngine(GpuOptions{});
  if (engine->backends().empty()) {
    std::fprintf(stderr, "no GPU: %s\n", engine->status().c_str());
    return 2;
  }
  auto* gpu = dynamic_cast<gpu::GpuBackend*>(engine->backends()[0]);
  const std::string device = engine->Devices()[0].name;
  std::vector<Row> rows;
  const std::vector<int64_t> gemm_sizes =
      flags.quick ? std::vector<int64_t>{2048} : std::vector<int64_t>{2048, 4096, 8192};
  std::vector<int64_t> solve_sizes =
      flags.quick ? std::vector<int64_t>{4096} : std::vector<int64_t>{1024, 4096, 8192};
  if (!flags.sizes.empty()) solve_sizes = flags.sizes;
  auto named = [&](const char* name) {
    return std::find(flags.only.begin(), flags.only.end(), name) != flags.only.end();
  };
  auto wanted = [&](const char* name) {
    return named(name) || (flags.only.empty() && std::string_view(name) != "super");
  };
  using Part = std::function<absl::StatusOr<std::vector<Row>>()>;
  const std::pair<const char*, Part> parts[] = {
      {"gemm", [&] { return BenchGemm(*gpu, gemm_sizes, flags.reps); }},
      {"solves", [&] { return BenchSolves(*gpu, solve_sizes, flags.reps); }},
      {"factor_solves", [&] { return BenchFactorSolves(*gpu, solve_sizes, flags.reps); }},
      {"trsv", [&] { return BenchTrsv(*gpu, solve_sizes, flags.reps); }},
      {"trsv2", [&] { return BenchTrsv2(*gpu, solve_sizes, flags.reps); }},
      {"trsv_trace", [&] { return BenchTrsvTrace(*gpu, solve_sizes, flags.reps); }},
      {"super", [&] { return BenchSuperTrsv(*gpu, solve_sizes, flags.reps); }},
      {"e2e", [&] { return BenchEndToEnd(*gpu, 4096, 3); }},
      {"batching", [&] { return BenchBatching(*gpu, 128, 256, 5); }},
      {"api", [&] { return BenchApiCosts(*gpu, 256, flags.quick ? 5 : 20); }},
      {"small",
       [&] {
         return BenchSmallCalls(*gpu, {64, 128, 256}, flags.quick ? 200 : 1000);
       }},
  };
  for (const auto& [name, run] : parts) {
    if (!wanted(name)) continue;
    absl::StatusOr<std::vector<Row>> part = run();
    if (!part.ok()) {
      std::fprintf(stderr, "benchmark failed: %s\n", std::string(part.status().message()).c_str());
      PrintTable(rows);
      return 1;
    }
    rows.insert(rows.end(), part->begin(), part->end());
  }
  if (!flags.json.empty()) {
    FILE* f = std::fopen(flags.json.c_str(), "w");
    if (f == nullptr) {
      std::fprintf(stderr, "cannot write %s\n", flags.json.c_str());
      return 1;
    }
    const std::string j = Json(flags, engine->Devices(), rows, argc, argv);
    std::fwrite(j.data(), 1, j.size(), f);
    std::fclose(f);
  }
  std::printf(
      "device: %s; ratio = direct_ms / ours_ms (rate of ours over the library's;\n"
      "batch_vs_single: 256 one-by-one Matmul calls over one MatmulBatch of them;\n"
      "_pinned: with the operands in page-locked memory, the batch gathered on the device;\n"
      "*_solve_no_estimate: ours = the solve with the condition estimate, direct = the\n"
      "same solve without it; *_solve_overlap_vs_sequential: ours = the estimate on the\n"
      "side stream beside the solve (the default), direct = estimate, then solve;\n"
      "small_call: the ms of one Matmul (bias, NaN/Inf check),\n"
      "ours through the small products' one round trip, direct without it;\n"
      "small_call_lone: ours = that call after a 200 us sleep, direct = back to back;\n"
      "small_call_cold: the same with 256 MiB written before each call (the host's caches\n"
      "evicted); gemm: ours and direct called in turn; trsv_*: ours =\n"
      "linalgd's triangular solve kernel, direct = cuBLAS trsv, L/U the triangle, N/T the op;\n"
      "trsv64_*: ours = that kernel with 64-row blocks, direct = with 32-row blocks;\n"
      "factor_solve*_*: a solve with a cached factor (b in, x out), ours = by that kernel,\n"
      "direct = by getrs / potrs;\n"
      "trsv2_*: ours = that kernel on two columns in one launch, direct = two launches;\n"
      "*_rcond_vs_cublas: ours = the condition estimate, direct = the same estimate with\n"
      "cuBLAS trsv; *_rcond_vs_one_by_one: direct = the estimate with one vector per solve;\n"
      "*_rcond_vs_one_stream: direct = a paired solve's two columns in one launch;\n"
      "*_beside_vs_first: ours = the super-block estimate with its inverses made beside\n"
      "its first solve (the chain's), direct = made before it (every solve super-block);\n"
      "cholesky_solve_super_no_estimate: ours = the solve with that estimate, direct = none;\n"
      "cholesky_solve_beside_vs_one_lane: direct = its first solve's columns in one launch;\n"
      "cholesky_solve_priority_*_no_estimate: ours = the solve with the super (beside) or\n"
      "chain estimate on streams of the greatest priority, direct = no estimate;\n"
      "api_*: ours = the host's ms for n of that CUDA call (the batched path's per-member\n"
      "calls: pointer queries, copies queued one by one or as one batch, launches, events))\n",
      device.c_str());
  PrintTable(rows);
  return 0;
}

}  // namespace
}  // namespace linalgd::bench

int main(int argc, char** argv) { return linalgd::bench::Main(argc, argv); }
