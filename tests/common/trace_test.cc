// server/common/trace.h without a profiler attached (no NVTX tool injected):
// ranges push nothing and never build their names.
#include "server/common/trace.h"

#include <string>
#include <utility>

#include "gtest/gtest.h"

namespace linalgd::trace {
namespace {

TEST(TraceTest, NoToolMeansDisabled) { EXPECT_FALSE(Enabled()); }

TEST(TraceTest, ScopedRangeBuildsNoNameWithoutATool) {
  int built = 0;
  {
    const ScopedRange range([&] {
      ++built;
      return std::string("Matmul f32 1x1x1 compute");
    });
    EXPECT_FALSE(range.pushed());
  }
  EXPECT_EQ(built, 0);
}

TEST(TraceTest, AsyncRangeBuildsNoNameWithoutATool) {
  int built = 0;
  AsyncRange range([&] {
    ++built;
    return std::string("queue wait");
  });
  EXPECT_FALSE(range.open());
  AsyncRange moved = std::move(range);
  moved.End();
  moved.End();  // a second End is harmless
  EXPECT_FALSE(moved.open());
  EXPECT_EQ(built, 0);
}

TEST(TraceTest, DefaultAsyncRangeIsClosed) {
  AsyncRange range;
  EXPECT_FALSE(range.open());
  range = AsyncRange([] { return std::string("x"); });
  EXPECT_FALSE(range.open());
}

}  // namespace
}  // namespace linalgd::trace
