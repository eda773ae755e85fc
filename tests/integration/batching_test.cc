// Dynamic batching end to end: many client threads sending small matmuls of
// one shape to the real server get correct results, and some of them report
// a batch size above 1.
#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "tests/integration/test_server.h"

namespace linalgd::testing {
namespace {

class BatchingTest : public ServerTest {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.max_batch = 32;
    options.max_queue_delay = absl::Milliseconds(5);
    // Batching itself is under test: no job may skip the queue on an idle CPU lane.
    options.inline_max_run = absl::ZeroDuration();
    StartServer(options);
  }
};

TEST_F(BatchingTest, ConcurrentSmallMatmulsAreBatchedAndEachGetsItsOwnResult) {
  constexpr int kThreads = 16, kCalls = 20, kN = 16;
  std::atomic<int> max_batch{0}, batched{0}, wrong{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        // a = value * ones, b = ones: every output element is kN * value.
        const float value = static_cast<float>(t * kCalls + i + 1);
        std::vector<float> a(kN * kN, value), b(kN * kN, 1.0f);
        client::MatmulArgs args;
        args.a = client::Tensor::FromVector<float>({kN, kN}, absl::MakeConstSpan(a)).value();
        args.b = client::Tensor::FromVector<float>({kN, kN}, absl::MakeConstSpan(b)).value();
        auto r = client_->Matmul(std::move(args));
        if (!r.ok()) {
          failed.fetch_add(1);
          continue;
        }
        const std::vector<float> out = r->out.ToVector<float>();
        if (std::any_of(out.begin(), out.end(), [&](float x) { return x != kN * value; })) {
          wrong.fetch_add(1);
        }
        int seen = max_batch.load();
        while (r->info.batch_size > seen &&
               !max_batch.compare_exchange_weak(seen, r->info.batch_size)) {
        }
        if (r->info.batch_size > 1) batched.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(max_batch.load(), 1);
  EXPECT_LE(max_batch.load(), 32);
  EXPECT_GT(batched.load(), 0);
  std::cerr << "largest batch " << max_batch.load() << ", " << batched.load() << " of "
            << kThreads * kCalls << " calls batched\n";
}

}  // namespace
}  // namespace linalgd::testing
