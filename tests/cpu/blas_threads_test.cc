// BlasThreadGovernor: OpenBLAS's count follows how many ops run at once
// and whether a large one is among them (these tests without the hold, but
// for the hold's own), with OpenBLAS's own setter too.
#include "server/cpu/blas_threads.h"

#include <cblas.h>

#include <atomic>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace linalgd {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Records every count the governor sets.
struct Recorder {
  absl::Mutex mu;
  std::vector<int> set;
  BlasThreadGovernor::Setter Setter() {
    return [this](int n) {
      absl::MutexLock lock(&mu);
      set.push_back(n);
    };
  }
};

TEST(BlasThreadGovernorTest, OneOpAloneKeepsEveryThread) {
  Recorder r;
  BlasThreadGovernor g(16, 1, r.Setter(), absl::ZeroDuration());
  { auto op = g.Enter(false); }
  { auto op = g.Enter(false); }
  EXPECT_THAT(r.set, IsEmpty());
  EXPECT_EQ(g.threads_in_force(), 16);
}

TEST(BlasThreadGovernorTest, TwoOpsAtOnceRunOnTheBusyCountUntilOneIsLeft) {
  Recorder r;
  BlasThreadGovernor g(16, 2, r.Setter(), absl::ZeroDuration());
  auto a = std::make_unique<BlasThreadGovernor::Op>(g.Enter(false));
  auto b = std::make_unique<BlasThreadGovernor::Op>(g.Enter(false));
  EXPECT_EQ(g.threads_in_force(), 2);
  auto c = std::make_unique<BlasThreadGovernor::Op>(g.Enter(false));
  b.reset();
  EXPECT_THAT(r.set, ElementsAre(2));  // still two running: no change
  c.reset();
  EXPECT_THAT(r.set, ElementsAre(2, 16));
  a.reset();
  EXPECT_THAT(r.set, ElementsAre(2, 16));
  EXPECT_EQ(g.threads_in_force(), 16);
}

TEST(BlasThreadGovernorTest, ALargeOpKeepsEveryThreadWhateverElseRuns) {
  Recorder r;
  BlasThreadGovernor g(16, 1, r.Setter(), absl::ZeroDuration());
  auto large = std::make_unique<BlasThreadGovernor::Op>(g.Enter(true));
  auto s1 = std::make_unique<BlasThreadGovernor::Op>(g.Enter(false));
  auto s2 = std::make_unique<BlasThreadGovernor::Op>(g.Enter(false));
  EXPECT_THAT(r.set, IsEmpty());
  large.reset();  // two small ones left
  EXPECT_THAT(r.set, ElementsAre(1));
  auto large2 = std::make_unique<BlasThreadGovernor::Op>(g.Enter(true));
  EXPECT_THAT(r.set, ElementsAre(1, 16));
  large2.reset();
  s1.reset();
  EXPECT_THAT(r.set, ElementsAre(1, 16, 1, 16));
}

TEST(BlasThreadGovernorTest, ABusyCountAtOrAboveTheThreadsTurnsItOff) {
  for (int busy : {4, 8}) {
    Recorder r;
    BlasThreadGovernor g(4, busy, r.Setter(), absl::ZeroDuration());
    auto a = g.Enter(false);
    auto b = g.Enter(false);
    EXPECT_THAT(r.set, IsEmpty()) << busy;
    EXPECT_EQ(g.threads_in_force(), 4);
  }
}

TEST(BlasThreadGovernorTest, AMovedOpLeavesOnce) {
  Recorder r;
  BlasThreadGovernor g(8, 1, r.Setter(), absl::ZeroDuration());
  auto a = g.Enter(false);
  {
    auto b = g.Enter(false);
    BlasThreadGovernor::Op moved(std::move(b));
  }  // moved leaves here; b, moved from, does not leave again
  EXPECT_THAT(r.set, ElementsAre(1, 8));
  auto c = g.Enter(false);  // a and c: two running again
  EXPECT_THAT(r.set, ElementsAre(1, 8, 1));
}

TEST(BlasThreadGovernorTest, ConcurrentOpsAlternateTheCountAndEndWithEveryThread) {
  Recorder r;
  BlasThreadGovernor g(16, 1, r.Setter(), absl::ZeroDuration());
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int i = 0; i < 2000; ++i) {
        auto op = g.Enter(rng() % 16 == 0);
        if (rng() % 4 == 0) std::this_thread::yield();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(g.threads_in_force(), 16);
  ASSERT_FALSE(r.set.empty());  // 8 threads of 2000 ops: some overlapped
  EXPECT_EQ(r.set.back(), 16);
  for (size_t i = 0; i < r.set.size(); ++i) {
    EXPECT_EQ(r.set[i], i % 2 == 0 ? 1 : 16) << "set #" << i;  // each a change
  }
}

// A clock the test moves.
struct FakeClock {
  absl::Time now = absl::UnixEpoch();
  BlasThreadGovernor::Clock Clock() {
    return [this] { return now; };
  }
};

// Without the hold the count flapped at every short lull (OpenBLAS's idle
// threads spinning beside the busy workers each time): with it, a lull
// shorter than the hold keeps the busy count, and the first op after a
// longer quiet gets every thread back.
TEST(BlasThreadGovernorTest, TheBusyCountHoldsThroughALull) {
  Recorder r;
  FakeClock clock;
  BlasThreadGovernor g(16, 1, r.Setter(), absl::Milliseconds(100), clock.Clock());
  auto a = std::make_unique<BlasThreadGovernor::Op>(g.Enter(false));
  auto b = std::make_unique<BlasThreadGovernor::Op>(g.Enter(false));
  b.reset();  // a lull at t = 0: one running
  EXPECT_EQ(g.threads_in_force(), 1);
  clock.now += absl::Milliseconds(50);
  { auto c = g.Enter(false); }  // busy again, until t = 50 ms
  clock.now += absl::Milliseconds(99);
  a.reset();  // 99 ms after the last busy moment: still held
  { auto d = g.Enter(false); }
  EXPECT_EQ(g.threads_in_force(), 1);
  EXPECT_THAT(r.set, ElementsAre(1));
  clock.now += absl::Milliseconds(1);  // 100 ms of quiet
  { auto e = g.Enter(false); }
  EXPECT_THAT(r.set, ElementsAre(1, 16));
  EXPECT_EQ(g.threads_in_force(), 16);
}

TEST(BlasThreadGovernorTest, ALargeOpTakesEveryThreadDuringTheHold) {
  Recorder r;
  FakeClock clock;
  BlasThreadGovernor g(16, 1, r.Setter(), absl::Milliseconds(100), clock.Clock());
  auto a = std::make_unique<BlasThreadGovernor::Op>(g.Enter(false));
  { auto b = g.Enter(false); }  // busy, then a lull
  EXPECT_EQ(g.threads_in_force(), 1);
  { auto large = g.Enter(true); }
  EXPECT_THAT(r.set, ElementsAre(1, 16));
  a.reset();  // after the large op every thread stays, hold or not
  EXPECT_THAT(r.set, ElementsAre(1, 16));
}

// Concurrent ops within one hold (a clock that stands still) set the busy
// count once, where without the hold they alternate it at every lull
// (ConcurrentOpsAlternateTheCountAndEndWithEveryThread).
TEST(BlasThreadGovernorTest, ConcurrentOpsWithinTheHoldSetTheCountOnce) {
  Recorder r;
  FakeClock clock;
  BlasThreadGovernor g(16, 1, r.Setter(), BlasThreadGovernor::kDefaultHold, clock.Clock());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int i = 0; i < 2000; ++i) {
        auto op = g.Enter(false);
        if (rng() % 4 == 0) std::this_thread::yield();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (r.set.empty()) GTEST_SKIP() << "no two ops overlapped";
  EXPECT_THAT(r.set, ElementsAre(1));
}

TEST(BlasThreadGovernorTest, SetsOpenBlasOwnCount) {
  const int threads = openblas_get_num_threads();
  if (threads < 2) GTEST_SKIP() << "OpenBLAS runs on one thread here";
  BlasThreadGovernor g(
      threads, 1, [](int n) { openblas_set_num_threads(n); }, absl::ZeroDuration());
  {
    auto a = g.Enter(false);
    auto b = g.Enter(false);
    EXPECT_EQ(openblas_get_num_threads(), 1);
  }
  EXPECT_EQ(openblas_get_num_threads(), threads);
}

// OpenBLAS products from several threads while the governor changes the
// count under them (each thread's op enters and leaves around its sgemm):
// every product stays right.
TEST(BlasThreadGovernorTest, ProductsStayRightWhileTheCountChanges) {
  const int threads = openblas_get_num_threads();
  if (threads < 2) GTEST_SKIP() << "OpenBLAS runs on one thread here";
  BlasThreadGovernor g(
      threads, 1, [](int n) { openblas_set_num_threads(n); }, absl::ZeroDuration());
  constexpr int n = 96;  // above OpenBLAS's 64^3 threading rule
  std::vector<float> a(n * n), b(n * n), want(n * n, 0.0f);
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> u(-3, 3);  // small integers: exact in float
  for (float& v : a) v = static_cast<float>(u(rng));
  for (float& v : b) v = static_cast<float>(u(rng));
  for (int j = 0; j < n; ++j) {
    for (int k = 0; k < n; ++k) {
      for (int i = 0; i < n; ++i) want[i + j * n] += a[i + k * n] * b[k + j * n];
    }
  }
  std::atomic<int> wrong{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < 6; ++t) {
    workers.emplace_back([&, t] {
      std::vector<float> c(n * n);
      for (int i = 0; i < 150; ++i) {
        auto op = g.Enter((i + t) % 25 == 0);
        cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(),
                    n, 0.0f, c.data(), n);
        if (c != want) wrong.fetch_add(1);
      }
    });
  }
  for (std::thread& w : workers) w.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(openblas_get_num_threads(), threads);
}

}  // namespace
}  // namespace linalgd
