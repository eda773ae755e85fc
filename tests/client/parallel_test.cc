// The client's parallel copy: every byte lands once, at its place, for
// sizes around its thresholds and page boundaries.
#include "client/src/parallel.h"

#include <atomic>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace linalgd::client::internal {
namespace {

std::string Pattern(size_t n) {
  std::string s(n, '\0');
  uint32_t x = 12345;
  for (char& c : s) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  return s;
}

TEST(ParallelCopyTest, CopiesEveryByteForSizesAroundThePieceThresholds) {
  const size_t piece = kParallelCopyPieceBytes;
  const std::string src = Pattern(9 * piece + 4);  // each size copies a prefix of it
  for (size_t n : {size_t{0}, size_t{1}, size_t{4097}, 2 * piece - 1, 2 * piece, 2 * piece + 4095,
                   5 * piece + 17, 9 * piece + 1}) {
    for (int threads : {1, 3, 8}) {
      std::string dst(n + 6, 'z');
      ParallelCopy(dst.data() + 3, src.data() + 3, n, threads);  // unaligned both sides
      EXPECT_EQ(dst.substr(0, 3), "zzz") << n;
      EXPECT_EQ(dst.compare(3, n, src, 3, n), 0) << n << " bytes, " << threads << " threads";
      EXPECT_EQ(dst.substr(n + 3), "zzz") << n;
    }
  }
}

TEST(RunParallelTest, RunsEveryIndexOnceAndReturnsTheFirstErrorInIndexOrder) {
  std::vector<std::atomic<int>> runs(6);
  absl::Status s = RunParallel(runs.size(), [&](size_t i) {
    runs[i].fetch_add(1);
    if (i == 2) return absl::InternalError("two");
    if (i == 4) return absl::InternalError("four");
    return absl::OkStatus();
  });
  for (auto& r : runs) EXPECT_EQ(r.load(), 1);
  EXPECT_EQ(s.message(), "two");
  EXPECT_TRUE(RunParallel(0, [](size_t) { return absl::InternalError("never"); }).ok());
}

}  // namespace
}  // namespace linalgd::client::internal
