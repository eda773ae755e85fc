// The resident-copy registry (CUDA-free, every build): one per device of one
// engine, so registries never see each other's copies.
#include "server/gpu/resident_registry.h"

#include "gtest/gtest.h"

namespace linalgd {
namespace {

TEST(ResidentRegistryTest, TwoRegistriesDoNotSeeEachOthersCopies) {
  gpu::ResidentRegistry one, two;
  char host[64] = {};
  char on_one = 0, on_two = 0;  // stand-ins for device addresses
  one.Add(host, sizeof(host), &on_one);
  EXPECT_EQ(one.Find(host, sizeof(host)), &on_one);
  EXPECT_EQ(two.Find(host, sizeof(host)), nullptr);
  EXPECT_EQ(two.size(), 0);
  two.Add(host, sizeof(host), &on_two);
  EXPECT_EQ(one.Find(host, sizeof(host)), &on_one);
  EXPECT_EQ(two.Find(host, sizeof(host)), &on_two);
  one.Remove(host, sizeof(host));
  EXPECT_EQ(one.Find(host, sizeof(host)), nullptr);
  EXPECT_EQ(two.Find(host, sizeof(host)), &on_two);
  EXPECT_EQ(one.size(), 0);
  EXPECT_EQ(two.size(), 1);
}

TEST(ResidentRegistryTest, OnlyTheExactHostRangeHasACopy) {
  gpu::ResidentRegistry registry;
  char host[64] = {};
  char copy = 0;
  registry.Add(host, sizeof(host), &copy);
  EXPECT_EQ(registry.Find(host, sizeof(host)), &copy);
  EXPECT_EQ(registry.Find(host, sizeof(host) - 1), nullptr);  // a prefix: not the stored bytes
  EXPECT_EQ(registry.Find(host + 1, sizeof(host) - 1), nullptr);
  EXPECT_EQ(registry.Find(nullptr, sizeof(host)), nullptr);
  EXPECT_EQ(registry.Find(host, 0), nullptr);
  registry.Remove(host, sizeof(host) - 1);  // not an entry: nothing removed
  EXPECT_EQ(registry.size(), 1);
  registry.Remove(host, sizeof(host));
  EXPECT_EQ(registry.size(), 0);
}

}  // namespace
}  // namespace linalgd
