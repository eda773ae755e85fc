// heap.h: the malloc in use is named, and freed memory goes back to the OS,
// in a binary without jemalloc (heap_test) and in one that links it as the
// server does (heap_jemalloc_test, the same source).
#include "server/common/heap.h"

#include <cstdlib>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"

#ifndef LINALGD_EXPECT_JEMALLOC
#define LINALGD_EXPECT_JEMALLOC 0
#endif

namespace linalgd {
namespace {

TEST(HeapTest, NamesTheMallocInUse) {
  const std::string name = MallocName();
  if (LINALGD_EXPECT_JEMALLOC) {
    EXPECT_EQ(name.rfind("jemalloc 5.", 0), 0u) << name;
  } else {
    EXPECT_EQ(name, "glibc");
  }
}

// jemalloc_conf.cc's settings reach jemalloc: every size from the ordinary
// arenas (none of the dedicated arena that returns large blocks at once).
TEST(HeapTest, JemallocTakesTheCompiledInSettings) {
  const std::optional<size_t> threshold = JemallocSizeOption("oversize_threshold");
  if (!LINALGD_EXPECT_JEMALLOC) {
    EXPECT_FALSE(threshold.has_value());
    EXPECT_EQ(MallocDescription(), "glibc");
    return;
  }
  if (std::getenv("MALLOC_CONF") != nullptr) GTEST_SKIP() << "MALLOC_CONF overrides the settings";
  ASSERT_TRUE(threshold.has_value());
  EXPECT_EQ(*threshold, 0u);
  EXPECT_FALSE(JemallocSizeOption("no_such_option").has_value());
  EXPECT_NE(MallocDescription().find("(oversize_threshold 0)"), std::string::npos)
      << MallocDescription();
}

TEST(HeapTest, ReleasingFreedMemoryKeepsLiveMemoryIntact) {
  std::vector<char*> blocks;
  for (int i = 0; i < 64; ++i) {
    char* p = static_cast<char*>(std::malloc(256 << 10));
    ASSERT_NE(p, nullptr);
    std::memset(p, i, 256 << 10);
    blocks.push_back(p);
  }
  for (size_t i = 0; i < blocks.size(); i += 2) std::free(blocks[i]);
  ReleaseFreeHeap();
  ReleaseFreeHeap();  // twice: nothing left to release is no error
  for (size_t i = 1; i < blocks.size(); i += 2) {
    EXPECT_EQ(blocks[i][0], static_cast<char>(i));
    EXPECT_EQ(blocks[i][(256 << 10) - 1], static_cast<char>(i));
    std::free(blocks[i]);
  }
}

}  // namespace
}  // namespace linalgd
