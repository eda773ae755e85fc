// Dynamic batching end to end: many client threads sending small matmuls of
// one shape to the real server get correct results, and some of them report
// a batch size above 1; products that OpenBLAS threads are never batched on
// the CPU; a member's bad input fails that member alone.
#include <algorithm>
#include <atomic>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "tests/integration/test_server.h"

namespace linalgd::testing {
namespace {

class BatchingTest : public ServerTest {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.max_batch = 32;
    options.max_queue_delay = absl::Milliseconds(5);
    // Batching itself is under test: no job may skip the queue on an idle lane.
    options.inline_max_run = absl::ZeroDuration();
    options.gpu_inline_max_run = absl::ZeroDuration();
    StartServer(options);
  }
};

struct Outcome {
  int max_batch = 0, batched = 0, wrong = 0, failed = 0;
};

// 16 threads send 20 matmuls of n x n f32 each, concurrently; each result is
// checked exactly.
Outcome SendConcurrentMatmuls(Client& client, int64_t n) {
  constexpr int kThreads = 16, kCalls = 20;
  std::atomic<int> max_batch{0}, batched{0}, wrong{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        // a = value * ones, b = ones: every output element is n * value
        // (exact: small integers).
        const float value = static_cast<float>(t * kCalls + i + 1);
        std::vector<float> a(n * n, value), b(n * n, 1.0f);
        client::MatmulArgs args;
        args.a = client::Tensor::FromVector<float>({n, n}, absl::MakeConstSpan(a)).value();
        args.b = client::Tensor::FromVector<float>({n, n}, absl::MakeConstSpan(b)).value();
        auto r = client.Matmul(std::move(args));
        if (!r.ok()) {
          failed.fetch_add(1);
          continue;
        }
        const std::vector<float> out = r->out.ToVector<float>();
        if (std::any_of(out.begin(), out.end(),
                        [&](float x) { return x != static_cast<float>(n) * value; })) {
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
  std::cerr << n << "^3: largest batch " << max_batch.load() << ", " << batched.load() << " of "
            << kThreads * kCalls << " calls batched\n";
  return Outcome{max_batch.load(), batched.load(), wrong.load(), failed.load()};
}

TEST_F(BatchingTest, ConcurrentSmallMatmulsAreBatchedAndEachGetsItsOwnResult) {
  const Outcome out = SendConcurrentMatmuls(*client_, 16);
  EXPECT_EQ(out.failed, 0);
  EXPECT_EQ(out.wrong, 0);
  EXPECT_GT(out.max_batch, 1);
  EXPECT_LE(out.max_batch, 32);
  EXPECT_GT(out.batched, 0);
}

// Products that OpenBLAS threads (128^3 with 2 OpenBLAS threads) would run one
// after another in a CPU batch: they are never batched on the CPU lane, and
// run side by side on its workers instead.
TEST_F(BatchingTest, ProductsThatOpenBlasThreadsAreNotBatchedOnTheCpu) {
  const Outcome out = SendConcurrentMatmuls(*client_, 128);
  EXPECT_EQ(out.failed, 0);
  EXPECT_EQ(out.wrong, 0);
  EXPECT_EQ(out.max_batch, 1);
  EXPECT_EQ(out.batched, 0);
}

// A batch is shared, its failures are not: 16 threads send 16^3 products at once, a quarter
// of them with a NaN at an element of their own in a (the same batch key as the rest). Each
// NaN caller is refused naming its own element, every other caller gets its own exact result,
// and batches still form.
TEST_F(BatchingTest, ABatchMembersBadInputFailsOnlyThatMember) {
  constexpr int kThreads = 16, kCalls = 20;
  constexpr int64_t n = 16;
  std::atomic<int> batched{0}, good{0}, refused{0};
  std::vector<std::string> problems;
  absl::Mutex mu;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        const int id = t * kCalls + i;
        const float value = static_cast<float>(id + 1);
        std::vector<float> a(n * n, value), b(n * n, 1.0f);
        const bool nan = id % 4 == 1;
        const int64_t at = id % (n * n);
        if (nan) a[static_cast<size_t>(at)] = std::numeric_limits<float>::quiet_NaN();
        client::MatmulArgs args;
        args.a = client::Tensor::FromVector<float>({n, n}, absl::MakeConstSpan(a)).value();
        args.b = client::Tensor::FromVector<float>({n, n}, absl::MakeConstSpan(b)).value();
        auto r = client_->Matmul(std::move(args));
        std::string problem;
        if (nan) {
          const std::string want = absl::StrCat("a: element ", at, " is NaN");
          if (r.ok() || r.status().code() != absl::StatusCode::kInvalidArgument ||
              !absl::StrContains(r.status().message(), want)) {
            problem = absl::StrCat("call ", id, " (NaN at ", at,
                                   "): ", r.ok() ? "OK" : r.status().ToString());
          } else {
            refused.fetch_add(1);
          }
        } else if (!r.ok()) {
          problem = absl::StrCat("call ", id, ": ", r.status().ToString());
        } else {
          const std::vector<float> out = r->out.ToVector<float>();
          if (std::any_of(out.begin(), out.end(),
                          [&](float x) { return x != static_cast<float>(n) * value; })) {
            problem = absl::StrCat("call ", id, ": a wrong result");
          } else {
            good.fetch_add(1);
            if (r->info.batch_size > 1) batched.fetch_add(1);
          }
        }
        if (!problem.empty()) {
          absl::MutexLock lock(&mu);
          problems.push_back(problem);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_THAT(problems, ::testing::IsEmpty());
  EXPECT_EQ(refused.load(), kThreads * kCalls / 4);
  EXPECT_EQ(good.load(), kThreads * kCalls * 3 / 4);
  std::cerr << batched.load() << " of " << good.load() << " good calls were batched\n";
  EXPECT_GT(batched.load(), 0) << "no good call shared a batch";
}

}  // namespace
}  // namespace linalgd::testing
