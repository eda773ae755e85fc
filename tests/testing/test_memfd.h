#ifndef LINALGD_TESTS_TESTING_TEST_MEMFD_H_
#define LINALGD_TESTS_TESTING_TEST_MEMFD_H_

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>

#include "gtest/gtest.h"

namespace linalgd::testing {

// The seals a shared-memory region needs.
constexpr int kRegionSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

// A memfd of `size` bytes with `seals` added, mapped by the test (the
// "caller"); closed and unmapped when destroyed.
class TestMemfd {
 public:
  explicit TestMemfd(size_t size, int seals = kRegionSeals) : size_(size) {
    fd_ = memfd_create("linalgd-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    EXPECT_GE(fd_, 0);
    EXPECT_EQ(ftruncate(fd_, static_cast<off_t>(size)), 0);
    if (seals != 0) {
      EXPECT_EQ(fcntl(fd_, F_ADD_SEALS, seals), 0);
    }
    base_ = static_cast<char*>(mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0));
  }
  ~TestMemfd() {
    if (base_ != MAP_FAILED) munmap(base_, size_);
    close(fd_);
  }
  TestMemfd(const TestMemfd&) = delete;
  TestMemfd& operator=(const TestMemfd&) = delete;

  int fd() const { return fd_; }
  char* base() const { return base_; }

 private:
  size_t size_;
  int fd_ = -1;
  char* base_ = nullptr;
};

}  // namespace linalgd::testing

#endif  // LINALGD_TESTS_TESTING_TEST_MEMFD_H_
