#include "server/store/shm_registry.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace linalgd {
namespace {

using ::testing::HasSubstr;

// A POSIX shared-memory object of `size` bytes, unlinked at the end.
class ShmObject {
 public:
  explicit ShmObject(size_t size)
      : key_("/linalgd-test-" + std::to_string(getpid()) + "-" + std::to_string(counter_++)) {
    const int fd = shm_open(key_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(ftruncate(fd, static_cast<off_t>(size)), 0);
    base_ = static_cast<char*>(mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    size_ = size;
    close(fd);
  }
  ~ShmObject() {
    munmap(base_, size_);
    shm_unlink(key_.c_str());
  }
  const std::string& key() const { return key_; }
  char* base() const { return base_; }

 private:
  static inline int counter_ = 0;
  std::string key_;
  char* base_ = nullptr;
  size_t size_ = 0;
};

TEST(ShmRegistryTest, RegisterResolveAndBounds) {
  ShmObject obj(4096);
  std::strcpy(obj.base() + 128, "hello");
  ShmRegistry reg(nullptr);
  auto info = reg.Register("r", obj.key(), 4096);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_FALSE(info->pinned);
  EXPECT_EQ(reg.Register("r", obj.key(), 4096).status().code(), absl::StatusCode::kAlreadyExists);
  auto range = reg.Resolve("r", 128, 6, 1, "a");
  ASSERT_TRUE(range.ok()) << range.status();
  EXPECT_STREQ(reinterpret_cast<const char*>(range->data), "hello");
  // Writes by the server are seen by the caller.
  std::memcpy(range->data, "HELLO", 5);
  EXPECT_EQ(std::string(obj.base() + 128, 5), "HELLO");

  EXPECT_EQ(reg.Resolve("r", 4000, 97, 1, "a").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(reg.Resolve("r", 4097, 0, 1, "b").status().message(), HasSubstr("outside"));
  EXPECT_EQ(reg.Resolve("r", -1, 4, 1, "a").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(reg.Resolve("r", 4000, 96, 1, "a").ok());
  EXPECT_THAT(reg.Resolve("r", 4, 8, 8, "a").status().message(), HasSubstr("multiple"));
  EXPECT_THAT(reg.Resolve("q", 0, 8, 1, "a").status().message(), HasSubstr("not registered"));
}

TEST(ShmRegistryTest, BadKeysAndSizes) {
  ShmObject obj(4096);
  ShmRegistry reg(nullptr);
  EXPECT_EQ(reg.Register("r", "noslash", 10).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(reg.Register("r", "/a/b", 10).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(reg.Register("r", "/linalgd-no-such-object", 10).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_THAT(reg.Register("r", obj.key(), 8192).status().message(), HasSubstr("holds 4096"));
  EXPECT_EQ(reg.Register("r", obj.key(), 0).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ShmRegistryTest, UnregisterWhileInUseIsDeferred) {
  ShmObject obj(4096);
  obj.base()[7] = 42;
  ShmRegistry reg(nullptr);
  bool unpinned = false;
  ShmRegistry pinned_reg([&](void*, size_t) -> absl::StatusOr<std::shared_ptr<void>> {
    return std::shared_ptr<void>(nullptr, [&](void*) { unpinned = true; });
  });
  ASSERT_TRUE(reg.Register("r", obj.key(), 4096).ok());
  auto range = reg.Resolve("r", 0, 4096, 1, "a");  // an operation in flight
  ASSERT_TRUE(range.ok());
  ASSERT_TRUE(reg.Unregister("r").ok());
  EXPECT_EQ(reg.Unregister("r").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(reg.Resolve("r", 0, 8, 1, "a").status().code(), absl::StatusCode::kNotFound);
  // Still mapped for the operation (ASan/SEGV would catch an unmapped read).
  EXPECT_EQ(static_cast<int>(range->data[7]), 42);
  range->data[8] = std::byte{5};
  EXPECT_EQ(obj.base()[8], 5);

  auto info = pinned_reg.Register("p", obj.key(), 4096);
  ASSERT_TRUE(info.ok());
  EXPECT_TRUE(info->pinned);
  auto held = pinned_reg.Resolve("p", 0, 1, 1, "a");
  ASSERT_TRUE(pinned_reg.Unregister("p").ok());
  EXPECT_FALSE(unpinned);
  held->keep.reset();
  EXPECT_TRUE(unpinned);
  // The registry re-registers the name after it is released.
  EXPECT_TRUE(reg.Register("r", obj.key(), 4096).ok());
}

}  // namespace
}  // namespace linalgd
