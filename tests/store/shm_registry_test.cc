#include "server/store/shm_registry.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/test_memfd.h"

namespace linalgd {
namespace {

using ::testing::HasSubstr;

using Memfd = testing::TestMemfd;
constexpr int kSeals = testing::kRegionSeals;

const ShmPeer kPeer{1, 1000, 42};

TEST(ShmRegistryTest, RegisterResolveAndBounds) {
  Memfd mem(4096);
  std::strcpy(mem.base() + 128, "hello");
  ShmRegistry reg(nullptr, ShmLimits{});
  auto grant = reg.Register(mem.fd(), kPeer);
  ASSERT_TRUE(grant.ok()) << grant.status();
  EXPECT_FALSE(grant->pinned);
  EXPECT_EQ(grant->size, 4096);
  EXPECT_EQ(grant->id.size(), 32u);
  EXPECT_NE(grant->id, grant->secret);
  const std::string& id = grant->id;
  const std::string& secret = grant->secret;
  auto range = reg.Resolve(id, secret, 128, 6, 1, "a");
  ASSERT_TRUE(range.ok()) << range.status();
  EXPECT_STREQ(reinterpret_cast<const char*>(range->data), "hello");
  std::memcpy(range->data, "HELLO", 5);  // the server's writes reach the caller
  EXPECT_EQ(std::string(mem.base() + 128, 5), "HELLO");

  EXPECT_EQ(reg.Resolve(id, secret, 4000, 97, 1, "a").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(reg.Resolve(id, secret, 4097, 0, 1, "b").status().message(), HasSubstr("outside"));
  EXPECT_EQ(reg.Resolve(id, secret, -1, 4, 1, "a").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(reg.Resolve(id, secret, 4000, 96, 1, "a").ok());
  EXPECT_THAT(reg.Resolve(id, secret, 4, 8, 8, "a").status().message(), HasSubstr("multiple"));
}

TEST(ShmRegistryTest, AnIdWithoutItsSecretIsNotFound) {
  Memfd mem(4096);
  ShmRegistry reg(nullptr, ShmLimits{});
  auto grant = reg.Register(mem.fd(), kPeer);
  ASSERT_TRUE(grant.ok()) << grant.status();
  for (const std::string& secret : {std::string(), std::string(32, '0'), grant->id}) {
    auto refused = reg.Resolve(grant->id, secret, 0, 8, 1, "a");
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kNotFound);
    EXPECT_THAT(refused.status().message(), HasSubstr("a.shm.region"));
    EXPECT_EQ(reg.Unregister(grant->id, secret).code(), absl::StatusCode::kNotFound);
  }
  EXPECT_EQ(reg.Resolve("q", grant->secret, 0, 8, 1, "a").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(reg.Unregister(grant->id, grant->secret).ok());
}

// A region is the tenant's that names it first; to another it reads as a
// wrong secret.
TEST(ShmRegistryTest, TheFirstTenantToNameARegionOwnsIt) {
  Memfd mem(4096);
  ShmRegistry reg(nullptr, ShmLimits{});
  auto grant = reg.Register(mem.fd(), kPeer);
  ASSERT_TRUE(grant.ok()) << grant.status();
  ASSERT_TRUE(reg.Resolve(grant->id, grant->secret, 0, 8, 1, "a", "alpha").ok());
  auto theirs = reg.Resolve(grant->id, grant->secret, 0, 8, 1, "a", "beta");
  auto wrong = reg.Resolve(grant->id, "x", 0, 8, 1, "a", "alpha");
  EXPECT_EQ(theirs.status(), wrong.status());
  EXPECT_EQ(reg.Unregister(grant->id, grant->secret, "beta").code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(reg.Unregister(grant->id, grant->secret, "alpha").ok());
}

TEST(ShmRegistryTest, OnlySealedMemfdsAreTaken) {
  ShmRegistry reg(nullptr, ShmLimits{});
  Memfd unsealed(4096, 0);
  EXPECT_THAT(reg.Register(unsealed.fd(), kPeer).status().message(), HasSubstr("F_SEAL_SHRINK"));
  Memfd shrinkable(4096, F_SEAL_GROW | F_SEAL_SEAL);
  EXPECT_EQ(reg.Register(shrinkable.fd(), kPeer).status().code(),
            absl::StatusCode::kInvalidArgument);
  Memfd read_only(4096, kSeals | F_SEAL_WRITE);
  EXPECT_THAT(reg.Register(read_only.fd(), kPeer).status().message(), HasSubstr("writes"));
  // A POSIX shared-memory object (shm_open) is born with F_SEAL_SEAL alone, so
  // it can never carry the seals a region needs.
  const std::string key = "/linalgd-test-" + std::to_string(getpid());
  const int posix = shm_open(key.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  ASSERT_GE(posix, 0);
  shm_unlink(key.c_str());
  ASSERT_EQ(ftruncate(posix, 4096), 0);
  EXPECT_THAT(reg.Register(posix, kPeer).status().message(), HasSubstr("lack F_SEAL_SHRINK"));
  // Nor is a regular file.
  FILE* file = tmpfile();
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(reg.Register(fileno(file), kPeer).status().code(), absl::StatusCode::kInvalidArgument);
  fclose(file);
  close(posix);
  Memfd empty(0);
  EXPECT_THAT(reg.Register(empty.fd(), kPeer).status().message(), HasSubstr("size 0"));
  EXPECT_EQ(reg.regions(), 0);
}

TEST(ShmRegistryTest, SealedMemoryCannotShrinkUnderTheMapping) {
  Memfd mem(1 << 20);
  ShmRegistry reg(nullptr, ShmLimits{});
  auto grant = reg.Register(mem.fd(), kPeer);
  ASSERT_TRUE(grant.ok()) << grant.status();
  EXPECT_NE(ftruncate(mem.fd(), 0), 0);
  EXPECT_EQ(errno, EPERM);
  auto range = reg.Resolve(grant->id, grant->secret, (1 << 20) - 8, 8, 1, "a");
  ASSERT_TRUE(range.ok());
  range->data[7] = std::byte{9};  // the last page is still there: no SIGBUS
  EXPECT_EQ(mem.base()[(1 << 20) - 1], 9);
}

TEST(ShmRegistryTest, TheSameMemoryIsRegisteredOnce) {
  Memfd mem(4096);
  ShmRegistry reg(nullptr, ShmLimits{});
  ASSERT_TRUE(reg.Register(mem.fd(), kPeer).ok());
  EXPECT_EQ(reg.Register(mem.fd(), kPeer).status().code(), absl::StatusCode::kAlreadyExists);
  // Another fd of the same inode, from another caller: still the same memory.
  const int again = open(("/proc/self/fd/" + std::to_string(mem.fd())).c_str(), O_RDWR);
  ASSERT_GE(again, 0);
  EXPECT_EQ(reg.Register(again, ShmPeer{2, 1001, 43}).status().code(),
            absl::StatusCode::kAlreadyExists);
  close(again);
  EXPECT_EQ(reg.regions(), 1);
}

TEST(ShmRegistryTest, CapsPerUidAndInTotal) {
  ShmLimits limits;
  limits.max_regions = 3;
  limits.max_regions_per_uid = 2;
  limits.max_bytes_per_uid = 3 * 4096;
  ShmRegistry reg(nullptr, limits);
  Memfd a(4096), b(4096), c(4096), d(4096), big(4 * 4096);
  EXPECT_THAT(reg.Register(big.fd(), kPeer).status().message(),
              HasSubstr("--shm-max-bytes-per-uid 12288"));
  auto first = reg.Register(a.fd(), kPeer);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(reg.Register(b.fd(), kPeer).ok());
  auto refused = reg.Register(c.fd(), kPeer);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(), HasSubstr("uid 1000 has 2 regions"));
  ASSERT_TRUE(reg.Register(c.fd(), ShmPeer{2, 1001, 43}).ok());  // another uid
  EXPECT_THAT(reg.Register(d.fd(), ShmPeer{3, 1002, 44}).status().message(),
              HasSubstr("--shm-max-regions 3"));
  ASSERT_TRUE(reg.Unregister(first->id, first->secret).ok());  // frees a slot
  EXPECT_TRUE(reg.Register(d.fd(), kPeer).ok());
}

TEST(ShmRegistryTest, ClosingAConnectionReleasesItsRegions) {
  Memfd a(4096), b(4096), c(4096);
  ShmRegistry reg(nullptr, ShmLimits{});
  auto ga = reg.Register(a.fd(), kPeer);
  ASSERT_TRUE(ga.ok());
  ASSERT_TRUE(reg.Register(b.fd(), kPeer).ok());
  auto gc = reg.Register(c.fd(), ShmPeer{7, 1000, 42});
  ASSERT_TRUE(gc.ok());
  EXPECT_EQ(reg.ReleaseConnection(kPeer.connection), 2);
  EXPECT_EQ(reg.Resolve(ga->id, ga->secret, 0, 8, 1, "a").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(reg.Resolve(gc->id, gc->secret, 0, 8, 1, "a").ok());
  EXPECT_TRUE(reg.Register(a.fd(), kPeer).ok());  // its inode is free again
}

TEST(ShmRegistryTest, UnregisterWhileInUseIsDeferred) {
  Memfd mem(4096);
  mem.base()[7] = 42;
  bool unpinned = false;
  ShmRegistry reg(
      [&](void*, size_t) -> absl::StatusOr<std::shared_ptr<void>> {
        return std::shared_ptr<void>(nullptr, [&](void*) { unpinned = true; });
      },
      ShmLimits{});
  auto grant = reg.Register(mem.fd(), kPeer);
  ASSERT_TRUE(grant.ok());
  EXPECT_TRUE(grant->pinned);
  auto range = reg.Resolve(grant->id, grant->secret, 0, 4096, 1, "a");  // in flight
  ASSERT_TRUE(range.ok());
  ASSERT_TRUE(reg.Unregister(grant->id, grant->secret).ok());
  EXPECT_EQ(reg.Unregister(grant->id, grant->secret).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(static_cast<int>(range->data[7]), 42);  // still mapped for the operation
  EXPECT_FALSE(unpinned);
  range->keep.reset();
  EXPECT_TRUE(unpinned);
}

// The caps bound what is mapped: a region unregistered while a call holds it
// is still mapped (and pinned, with a GPU), so it counts until that call ends;
// else unregistering and registering again while calls hold the old regions
// would map past every cap.
TEST(ShmRegistryTest, ARegionInUseCountsAgainstTheCapsUntilItIsUnmapped) {
  ShmLimits limits;
  limits.max_bytes_per_uid = 4096;
  ShmRegistry reg(nullptr, limits);
  Memfd a(4096), b(4096);
  auto ga = reg.Register(a.fd(), kPeer);
  ASSERT_TRUE(ga.ok());
  auto held = reg.Resolve(ga->id, ga->secret, 0, 8, 1, "a");  // a call in flight
  ASSERT_TRUE(held.ok());
  ASSERT_TRUE(reg.Unregister(ga->id, ga->secret).ok());
  auto refused = reg.Register(b.fd(), kPeer);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(), HasSubstr("still in use by a call"));
  held->keep.reset();  // the call ends: the old region is unmapped
  EXPECT_TRUE(reg.Register(b.fd(), kPeer).ok());
}

// A read-only (or write-only) fd cannot be mapped read-write: the caller's
// mistake, said as one, not as a full server.
TEST(ShmRegistryTest, AnFdNotOpenForReadAndWriteIsInvalidArgument) {
  Memfd mem(4096);
  const std::string path = "/proc/self/fd/" + std::to_string(mem.fd());
  const int ro = open(path.c_str(), O_RDONLY);
  ASSERT_GE(ro, 0);
  ShmRegistry reg(nullptr, ShmLimits{});
  auto refused = reg.Register(ro, kPeer);
  close(ro);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("opened read-write"));
  EXPECT_TRUE(reg.Register(mem.fd(), kPeer).ok());  // nothing of it stayed reserved
}

}  // namespace
}  // namespace linalgd
