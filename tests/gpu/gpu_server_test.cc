// The real server with its GPU engine, called through the real client: routing
// by size, CPU rollback on a device failure and on a job that cannot fit, and
// results against float64 references. Skips without a GPU.
#include <atomic>
#include <cmath>
#include <complex>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cuda_runtime.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "linalgd/client.h"
#include "server/gpu/gpu_engine.h"
#include "server/service/server.h"
#include "tests/testing/real_server.h"
#include "tests/testing/test_reference.h"

namespace linalgd {
namespace {

using ::testing::HasSubstr;

client::Tensor Random(std::vector<int64_t> shape, unsigned seed, double diag = 0) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> v(n);
  for (double& x : v) x = dist(gen);
  if (diag != 0) {
    const int64_t m = shape.back();
    for (int64_t i = 0; i < m; ++i) v[i * m + i] += diag;
  }
  return client::Tensor::FromVector<double>(std::move(shape), absl::MakeConstSpan(v)).value();
}

using Cplx = std::complex<double>;

std::vector<Cplx> ComplexValues(const client::Tensor& t) {
  const absl::Span<const Cplx> v = t.as<Cplx>();
  return std::vector<Cplx>(v.begin(), v.end());
}

// A c128 tensor of uniform (-1, 1) parts, plus `diag` on the diagonal.
client::Tensor RandomComplex(std::vector<int64_t> shape, unsigned seed, double diag = 0) {
  const std::vector<double> re = Random(shape, seed, diag).ToVector<double>();
  const std::vector<double> im = Random(shape, seed + 7919).ToVector<double>();
  std::vector<Cplx> v(re.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = Cplx(re[i], im[i]);
  return client::Tensor::FromVector<Cplx>(std::move(shape), absl::MakeConstSpan(v)).value();
}

// max |out - alpha a b| / max |alpha a b| over rows `rows` of a c128
// product, against a naive reference.
double ComplexMatmulError(const client::Tensor& a, const client::Tensor& b,
                          const client::Tensor& out, Cplx alpha, const std::vector<int64_t>& rows) {
  const int64_t k = a.shape()[1], n = b.shape()[1];
  const auto av = ComplexValues(a), bv = ComplexValues(b), ov = ComplexValues(out);
  double err = 0, ref_max = 0;
  for (int64_t i : rows) {
    for (int64_t j = 0; j < n; ++j) {
      Cplx ref = 0;
      for (int64_t p = 0; p < k; ++p) ref += av[i * k + p] * bv[p * n + j];
      ref *= alpha;
      err = std::max(err, std::abs(ov[i * n + j] - ref));
      ref_max = std::max(ref_max, std::abs(ref));
    }
  }
  return err / ref_max;
}

// max |x - ref| / max |ref| of an f64 [m,n] product against the float64 reference.
double MatmulError(const client::Tensor& a, const client::Tensor& b, const client::Tensor& c) {
  const int64_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
  return test_ref::RelError(c.ToVector<double>(),
                            test_ref::MatMul(a.ToVector<double>(), b.ToVector<double>(), m, k, n));
}

// Starts the server; returns from the test when it failed or has no GPU.
#define START_OR_SKIP(options)               \
  do {                                       \
    ASSERT_NO_FATAL_FAILURE(Start(options)); \
    if (IsSkipped()) return;                 \
  } while (0)

class GpuServerTest : public ::testing::Test {
 protected:
  void Start(ServerOptions options) {
    options.metrics_listen = "";
    auto server = testing::StartRealServer(options, [this](const GpuOptions& gpu_options) {
      std::unique_ptr<GpuEngine> engine = StartGpuEngine(gpu_options);
      engine_ = engine.get();
      return engine;
    });
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    client_ = testing::ConnectClient(*server_).value();
    auto info = client_->ServerInfo();
    ASSERT_TRUE(info.ok()) << info.status();
    if (info->backends.size() < 2) GTEST_SKIP() << "no GPU: " << info->gpu_status;
  }
  void TearDown() override {
    if (server_) server_->Shutdown(absl::Seconds(10));
  }
  // Small products on the GPU, batched: every call queues, with a 1 ms window
  // so that batches form however fast the workers keep up (the default, 0,
  // batches only what queued while they were busy); shared memory allowed.
  static ServerOptions BatchingOnTheGpu() {
    ServerOptions o;
    o.cpu_threshold = 0;
    o.allow_shm = true;
    o.gpu_inline_max_run = absl::ZeroDuration();
    o.max_queue_delay = absl::Milliseconds(1);
    return o;
  }
  // A client of the running server through shared memory (16 regions of 4 MiB).
  std::unique_ptr<Client> SharedMemoryClient() const {
    client::ClientOptions co;
    co.target = testing::LoopbackTarget(*server_);
    co.use_shared_memory = true;
    co.shared_memory_bytes = int64_t{4} << 20;
    co.shared_memory_regions = 16;
    return Client::Create(co).value();
  }
  std::unique_ptr<Server> server_;
  GpuEngine* engine_ = nullptr;  // the server's
  std::unique_ptr<Client> client_;
};

TEST_F(GpuServerTest, LargeRunsOnGpuSmallOnCpuBothCorrect) {
  START_OR_SKIP(ServerOptions{});
  client::MatmulArgs big;
  big.a = Random({1024, 600}, 1);
  big.b = Random({600, 700}, 2);
  auto r = client_->Matmul(big);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->info.backend, "gpu:0");
  EXPECT_LT(MatmulError(big.a, big.b, r->out), 1e-12);
  client::MatmulArgs small;
  small.a = Random({64, 32}, 3);
  small.b = Random({32, 16}, 4);
  auto s = client_->Matmul(small);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->info.backend, "cpu");
  EXPECT_LT(MatmulError(small.a, small.b, s->out), 1e-12);
}

// Below --cpu-threshold (512) each product is a CPU one, but a broadcast
// batch of them with the flops of one 512^3 product or more is one
// strided-batched call on the GPU: 12 of 256^3 go there (1.5x 2 * 512^3
// flops), 2 of them stay on the CPU. Every member checked.
TEST_F(GpuServerTest, ABroadcastBatchWithTheWorkOfALargeProductRunsOnTheGpu) {
  START_OR_SKIP(ServerOptions{});
  for (int64_t batch : {12, 2}) {
    SCOPED_TRACE(batch);
    client::MatmulArgs args;
    args.a = Random({batch, 256, 256}, 5);
    args.b = Random({batch, 256, 256}, 6);
    auto r = client_->Matmul(args);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->info.backend, batch == 12 ? "gpu:0" : "cpu");
    const std::vector<double> a = args.a.ToVector<double>(), b = args.b.ToVector<double>(),
                              out = r->out.ToVector<double>();
    const int64_t size = 256 * 256;
    for (int64_t i = 0; i < batch; ++i) {
      auto member = [&](const std::vector<double>& v) {
        return std::vector<double>(v.begin() + i * size, v.begin() + (i + 1) * size);
      };
      EXPECT_LT(
          test_ref::RelError(member(out), test_ref::MatMul(member(a), member(b), 256, 256, 256)),
          1e-12)
          << "member " << i;
    }
  }
}

TEST_F(GpuServerTest, StreamedOperandsAndKeptResultsInPinnedBlocksStayCorrectWhenReused) {
  START_OR_SKIP(ServerOptions{});
  // 4 connections: multi-part uploads; 1: a single PutTensor stream each.
  for (int connections : {4, 1}) {
    client::ClientOptions co;
    co.target = testing::LoopbackTarget(*server_);
    co.stream_threshold_bytes = 1;  // operands PutTensor, result kept and fetched
    co.transfer_part_min_bytes = 1 << 20;
    co.transfer_connections = connections;
    std::unique_ptr<Client> streaming = Client::Create(co).value();
    const gpu::TransferCounters& n = engine_->transfers();
    for (unsigned round = 0; round < 3; ++round) {  // later rounds reuse the pinned blocks
      client::MatmulArgs args;
      args.a = Random({1024, 600}, 10 + round);
      args.b = Random({600, 700}, 20 + round);
      const client::Tensor a = args.a, b = args.b;
      const int64_t h2d = n.h2d_pinned_direct.load(), d2h = n.d2h_pinned_direct.load();
      auto r = streaming->Matmul(std::move(args));
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(r->info.backend, "gpu:0");
      // Both uploads went up from page-locked memory, the kept result came down into it.
      EXPECT_EQ(n.h2d_pinned_direct.load() - h2d, 2) << connections << " connections";
      EXPECT_EQ(n.d2h_pinned_direct.load() - d2h, 1) << connections << " connections";
      EXPECT_LT(MatmulError(a, b, r->out), 1e-12) << "round " << round;
    }
  }
}

// Concurrent shared-memory callers of one client: their matmuls are batched
// on the GPU (gathered there from the callers' regions, results written
// back into them), each answer is the caller's own, and a caller's NaN
// fails only its own call, naming the element.
TEST_F(GpuServerTest, BatchedSharedMemoryCallersEachGetTheirOwnAnswer) {
  START_OR_SKIP(BatchingOnTheGpu());
  std::unique_ptr<Client> shm = SharedMemoryClient();
  std::atomic<int> batched{0}, wrong{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 12; ++i) {
        client::MatmulArgs args;
        args.a = Random({96, 80}, 100 * t + i);
        args.b = Random({80, 72}, 100 * t + i + 50);
        const client::Tensor a = args.a, b = args.b;
        const bool poison = t == 3 && i == 5;
        if (poison) args.b.mutable_as<double>()[61] = std::nan("");
        auto r = shm->Matmul(std::move(args));
        if (poison) {
          if (r.ok() || r.status().message().find("b: element 61 is NaN") == std::string::npos) {
            failed++;
          }
          continue;
        }
        if (!r.ok()) {
          failed++;
          continue;
        }
        if (r->info.batch_size > 1) batched++;
        if (r->info.backend != "gpu:0" || MatmulError(a, b, r->out) > 1e-12) wrong++;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(batched.load(), 0);
}

// A GPU batch's NaN members fail alone: 16 callers send 96x80 by 80x72 f64
// products at once, a quarter of them with a NaN at an element of their own
// in b. Each of those is refused naming its element; every other caller gets
// its own product from the GPU, and good calls still share batches (the rest
// of a batch that failed for its NaN members runs again as one batch). Over
// the socket (operands stacked on the host) and through shared memory
// (operands copied straight to the device, NaNs found there).
TEST_F(GpuServerTest, ABatchsNanMembersFailAloneAndTheRestStayBatchedOnTheGpu) {
  START_OR_SKIP(BatchingOnTheGpu());
  std::unique_ptr<Client> shm = SharedMemoryClient();
  for (Client* client : {client_.get(), shm.get()}) {
    SCOPED_TRACE(client == shm.get() ? "shared memory" : "socket");
    std::atomic<int> batched{0}, good{0}, refused{0};
    std::vector<std::string> problems;
    std::mutex mu;
    std::vector<std::thread> threads;
    for (int t = 0; t < 16; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 16; ++i) {
          const int id = t * 16 + i;
          client::MatmulArgs args;
          args.a = Random({96, 80}, 1000 + id);
          args.b = Random({80, 72}, 5000 + id);
          const client::Tensor a = args.a, b = args.b;
          const bool nan = id % 4 == 1;
          const int at = id % (80 * 72);
          if (nan) args.b.mutable_as<double>()[at] = std::nan("");
          auto r = client->Matmul(std::move(args));
          std::string problem;
          if (nan) {
            const std::string want = "b: element " + std::to_string(at) + " is NaN";
            if (r.ok() || r.status().code() != absl::StatusCode::kInvalidArgument ||
                r.status().message().find(want) == std::string::npos) {
              problem = "call " + std::to_string(id) + ": " +
                        (r.ok() ? std::string("OK") : r.status().ToString());
            } else {
              refused++;
            }
          } else if (!r.ok()) {
            problem = "call " + std::to_string(id) + ": " + r.status().ToString();
          } else if (r->info.backend != "gpu:0" || MatmulError(a, b, r->out) > 1e-12) {
            problem = "call " + std::to_string(id) + ": on " + r->info.backend + ", error " +
                      std::to_string(MatmulError(a, b, r->out));
          } else {
            good++;
            if (r->info.batch_size > 1) batched++;
          }
          if (!problem.empty()) {
            std::lock_guard<std::mutex> lock(mu);
            problems.push_back(problem);
          }
        }
      });
    }
    for (std::thread& th : threads) th.join();
    EXPECT_THAT(problems, ::testing::IsEmpty());
    EXPECT_EQ(refused.load(), 64);
    EXPECT_EQ(good.load(), 192);
    std::cerr << batched.load() << " of " << good.load() << " good calls were batched\n";
    EXPECT_GT(batched.load(), 0) << "no good call shared a batch";
  }
}

// The latency workload's kind of call (--cpu-threshold 0, one caller): each
// small product goes up and down the GPU in one copy each (small_matmul.h),
// with its bias, and a NaN is refused naming its element.
TEST_F(GpuServerTest, SmallProductsOnTheGpuTakeOneCopyEachWay) {
  ServerOptions o;
  o.cpu_threshold = 0;
  START_OR_SKIP(o);
  const gpu::TransferCounters& n = engine_->transfers();
  const int64_t small = n.small_jobs.load(), h2d = n.h2d_copies.load(), d2h = n.d2h_copies.load();
  constexpr int kCalls = 20;
  for (int i = 0; i < kCalls; ++i) {
    client::MatmulArgs args;
    args.a = Random({128, 96}, 300 + i);
    args.b = Random({96, 80}, 400 + i);
    args.bias = Random({80}, 500 + i);
    args.epilogue = client::Epilogue::kBias;
    const client::Tensor a = args.a, b = args.b, bias = *args.bias;
    auto r = client_->Matmul(std::move(args));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->info.backend, "gpu:0");
    std::vector<double> ref =
        test_ref::MatMul(a.ToVector<double>(), b.ToVector<double>(), 128, 96, 80);
    const std::vector<double> bv = bias.ToVector<double>();
    for (size_t j = 0; j < ref.size(); ++j) ref[j] += bv[j % 80];
    EXPECT_LT(test_ref::RelError(r->out.ToVector<double>(), ref), 1e-12);
  }
  EXPECT_EQ(n.small_jobs.load() - small, kCalls);
  EXPECT_EQ(n.h2d_copies.load() - h2d, kCalls);
  EXPECT_EQ(n.d2h_copies.load() - d2h, kCalls);
  client::MatmulArgs bad;
  bad.a = Random({128, 96}, 1);
  bad.b = Random({96, 80}, 2);
  bad.bias = Random({80}, 3);
  bad.bias->mutable_as<double>()[3] = std::nan("");
  bad.epilogue = client::Epilogue::kBias;
  auto r = client_->Matmul(std::move(bad));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("bias: element 3 is NaN"));
}

// --gpu-inline-max-us 200: a small product on an idle GPU runs on the gRPC
// thread that received it, with no queue wait, and is right. (No minimum
// idle time: the calls follow each other as fast as this host's round trip
// goes; the scheduler's tests cover gpu_inline_min_idle.)
TEST_F(GpuServerTest, SmallProductOnAnIdleGpuRunsInline) {
  ServerOptions o;
  o.cpu_threshold = 0;
  o.gpu_inline_max_run = absl::Microseconds(200);
  o.gpu_inline_min_idle = absl::ZeroDuration();
  START_OR_SKIP(o);
  for (int i = 0; i < 5; ++i) {
    client::MatmulArgs args;
    args.a = Random({128, 96}, 600 + i);
    args.b = Random({96, 80}, 700 + i);
    const client::Tensor a = args.a, b = args.b;
    auto r = client_->Matmul(std::move(args));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->info.backend, "gpu:0");
    EXPECT_EQ(r->info.queue_time_ns, 0) << "call " << i;  // it waited in no queue
    EXPECT_EQ(r->info.batch_size, 1);
    const std::vector<double> ref =
        test_ref::MatMul(a.ToVector<double>(), b.ToVector<double>(), 128, 96, 80);
    EXPECT_LT(test_ref::RelError(r->out.ToVector<double>(), ref), 1e-12);
  }
}

// --gpu-wait block: the device's scheduling flag becomes the blocking sync
// (the flag is the process's: restored after), and the products that wait
// on it, the one-round-trip path and a cuBLASLt one, are right.
TEST_F(GpuServerTest, GpuWaitBlockSetsTheDevicesSchedulingFlag) {
  unsigned int before = 0;
  const bool had = cudaSetDevice(0) == cudaSuccess && cudaGetDeviceFlags(&before) == cudaSuccess;
  ServerOptions o;
  o.cpu_threshold = 0;
  o.gpu_wait = GpuWait::kBlock;
  START_OR_SKIP(o);
  ASSERT_TRUE(had);
  unsigned int flags = 0;
  ASSERT_EQ(cudaGetDeviceFlags(&flags), cudaSuccess);
  EXPECT_EQ(flags & cudaDeviceScheduleMask, static_cast<unsigned>(cudaDeviceScheduleBlockingSync));
  for (int64_t n : {128, 1024}) {
    client::MatmulArgs args;
    args.a = Random({n, 96}, 900);
    args.b = Random({96, 80}, 901);
    const client::Tensor a = args.a, b = args.b;
    auto r = client_->Matmul(std::move(args));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->info.backend, "gpu:0");
    EXPECT_LT(MatmulError(a, b, r->out), 1e-12) << n;
  }
  EXPECT_EQ(cudaSetDeviceFlags(before), cudaSuccess);
}

// With --gpu-inline-max-us 0 the same product queues for a lane worker.
TEST_F(GpuServerTest, WithoutGpuInlineASmallProductQueues) {
  ServerOptions o;
  o.cpu_threshold = 0;
  o.gpu_inline_max_run = absl::ZeroDuration();
  START_OR_SKIP(o);
  client::MatmulArgs args;
  args.a = Random({128, 96}, 800);
  args.b = Random({96, 80}, 801);
  auto r = client_->Matmul(std::move(args));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->info.backend, "gpu:0");
  EXPECT_GT(r->info.queue_time_ns, 0);
}

TEST_F(GpuServerTest, SolveOnGpuHasSmallResidual) {
  START_OR_SKIP(ServerOptions{});
  client::SolveArgs args;
  args.a = Random({1024, 1024}, 5, 1024);
  args.b = Random({1024, 3}, 6);
  auto r = client_->Solve(args);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->info.backend, "gpu:0");
  EXPECT_LT(r->residual, 1e-15);
}

// Complex products, solves and factorizations above --cpu-threshold run on
// the GPU (ExecutionInfo names it), with no fallback.
TEST_F(GpuServerTest, ComplexMatmulSolveAndFactorizeRunOnGpu) {
  START_OR_SKIP(ServerOptions{});
  client::MatmulArgs mm;
  mm.a = RandomComplex({1024, 600}, 31);
  mm.b = RandomComplex({600, 700}, 32);
  mm.alpha = 0.5;
  mm.alpha_imag = -1;
  auto r = client_->Matmul(mm);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->info.backend, "gpu:0");
  EXPECT_EQ(r->info.fallback_reason, "");
  EXPECT_LT(ComplexMatmulError(mm.a, mm.b, r->out, Cplx(0.5, -1), {0, 1, 511, 1023}), 1e-12);

  client::SolveArgs s;
  s.a = RandomComplex({1024, 1024}, 33, 1024);
  s.b = RandomComplex({1024, 2}, 34);
  auto x = client_->Solve(s);
  ASSERT_TRUE(x.ok()) << x.status();
  EXPECT_EQ(x->info.backend, "gpu:0");
  EXPECT_EQ(x->info.fallback_reason, "");
  EXPECT_EQ(x->method_used, client::SolveMethod::kLu);
  EXPECT_LT(x->residual, 1e-14);

  client::FactorizeArgs f;
  f.a = s.a;
  auto factor = client_->Factorize(f);
  ASSERT_TRUE(factor.ok()) << factor.status();
  EXPECT_EQ(factor->placement, "gpu:0");
  EXPECT_EQ(factor->info.backend, "gpu:0");
  EXPECT_EQ(factor->method, client::SolveMethod::kLu);
  client::SolveArgs with_factor;
  with_factor.factor_id = factor->factor_id;
  with_factor.b = s.b;
  auto y = client_->Solve(with_factor);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->info.backend, "gpu:0");
  const auto xv = ComplexValues(x->x), yv = ComplexValues(y->x);
  double diff = 0;
  for (size_t i = 0; i < xv.size(); ++i) diff = std::max(diff, std::abs(xv[i] - yv[i]));
  EXPECT_LT(diff, 1e-12);
}

// A singular complex system: the GPU's LU sees it, the GPU has no complex
// lstsq, so the job is rerun on the CPU, which answers by lstsq and says why.
TEST_F(GpuServerTest, SingularComplexSolveTakesItsLeastSquaresOnCpu) {
  START_OR_SKIP(ServerOptions{});
  const int64_t n = 600;
  std::vector<Cplx> av = ComplexValues(RandomComplex({n, n}, 35));
  for (int64_t j = 0; j < n; ++j) av[7 * n + j] = av[1 * n + j];
  client::SolveArgs s;
  s.a = client::Tensor::FromVector<Cplx>({n, n}, absl::MakeConstSpan(av)).value();
  s.b = RandomComplex({n, 1}, 36);
  auto x = client_->Solve(s);
  ASSERT_TRUE(x.ok()) << x.status();
  EXPECT_EQ(x->method_used, client::SolveMethod::kLstsq);
  EXPECT_EQ(x->info.backend, "cpu");
  EXPECT_THAT(x->info.fallback_reason, HasSubstr("gpu:0"));
  EXPECT_THAT(x->info.fallback_reason, HasSubstr("no GPU path"));
  EXPECT_FALSE(x->fallback.empty());
  s.no_fallback = true;
  auto refused = client_->Solve(s);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
}

TEST_F(GpuServerTest, DeviceFailureIsRerunOnCpuWithReason) {
  ServerOptions o;
  o.inject_faults = "gpu:matmul:fail=internal";
  START_OR_SKIP(o);
  client::MatmulArgs big;
  big.a = Random({600, 600}, 7);
  big.b = Random({600, 600}, 8);
  auto r = client_->Matmul(big);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->info.backend, "cpu");
  EXPECT_THAT(r->info.fallback_reason, HasSubstr("gpu:0: injected fault"));
  EXPECT_LT(MatmulError(big.a, big.b, r->out), 1e-12);
}

TEST_F(GpuServerTest, JobThatCannotFitComesBackCorrectFromCpu) {
  ServerOptions o;
  o.gpu_memory_fraction = 0.002;  // ~280 MB of an H200, most of it workspaces
  START_OR_SKIP(o);
  client::MatmulArgs big;  // output 6000 x 6000 f64 = 288 MB
  big.a = Random({6000, 2}, 9);
  big.b = Random({2, 6000}, 10);
  auto r = client_->Matmul(big);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->info.backend, "cpu");
  EXPECT_FALSE(r->info.fallback_reason.empty());
  EXPECT_LT(MatmulError(big.a, big.b, r->out), 1e-12);
}

// A solve with a GPU factor runs where the factor lives: a b whose device
// bytes exceed the whole budget ends with RESOURCE_EXHAUSTED naming the
// numbers (it is never rerun on the CPU, which has no copy of the factor),
// and the factor stays usable for the next caller's solve.
TEST_F(GpuServerTest, AFactorSolvePastTheBudgetIsRefusedAndTheFactorStaysUsable) {
  ServerOptions o;
  o.gpu_memory_fraction = 0.002;  // ~160 MB of an H100, ~280 MB of an H200
  o.cpu_threshold = 0;            // the factorization on the GPU
  START_OR_SKIP(o);
  const int64_t n = 512;
  client::FactorizeArgs f;
  f.a = Random({n, n}, 41, n);
  auto factor = client_->Factorize(f);
  ASSERT_TRUE(factor.ok()) << factor.status();
  ASSERT_EQ(factor->placement, "gpu:0");
  const int64_t budget = client_->ServerInfo().value().devices.at(0).budget_bytes;
  ASSERT_GT(budget, 0);
  client::SolveArgs past;
  past.factor_id = factor->factor_id;
  past.b = Random({n, budget / (n * 8) + 1}, 42);  // b alone is more than the budget
  auto refused = client_->Solve(past);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
  EXPECT_THAT(refused.status().message(), HasSubstr("gpu:0 memory budget: the job needs"));
  EXPECT_THAT(refused.status().message(), HasSubstr(absl::StrCat("budget of ", budget)));
  EXPECT_THAT(refused.status().message(), HasSubstr("not rerun elsewhere"));

  client::SolveArgs fits;
  fits.factor_id = factor->factor_id;
  fits.b = Random({n, 2}, 43);
  auto x = client_->Solve(fits);
  ASSERT_TRUE(x.ok()) << x.status();
  EXPECT_EQ(x->info.backend, "gpu:0");
  const std::vector<double> ax =
      test_ref::MatMul(f.a.ToVector<double>(), x->x.ToVector<double>(), n, n, 2);
  const std::vector<double> bv = fits.b.ToVector<double>();
  double diff = 0;
  for (size_t i = 0; i < bv.size(); ++i) diff = std::max(diff, std::abs(ax[i] - bv[i]));
  EXPECT_LT(diff, 1e-10);
}

TEST_F(GpuServerTest, ServerInfoDescribesTheDevice) {
  START_OR_SKIP(ServerOptions{});
  auto info = client_->ServerInfo().value();
  ASSERT_FALSE(info.devices.empty());
  EXPECT_TRUE(info.devices[0].healthy);
  EXPECT_GT(info.devices[0].budget_bytes, 0);
  EXPECT_LE(info.devices[0].budget_bytes, info.devices[0].total_memory_bytes * 0.8 + 1);
}

}  // namespace
}  // namespace linalgd
