#include "client/src/shm_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace linalgd::client::internal {
namespace {

std::string FreshKey() {
  static std::atomic<int> counter{0};
  std::random_device rd;
  return absl::StrFormat("/linalgd-%d-%d-%08x", getpid(), counter++, rd());
}

absl::Status Errno(absl::string_view what, const std::string& key) {
  return absl::InternalError(absl::StrCat(what, " ", key, ": ", std::strerror(errno)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<ShmRegion>> ShmRegion::Create(int64_t bytes) {
  if (bytes <= 0) return absl::InvalidArgumentError("shared-memory region size must be positive");
  const std::string key = FreshKey();
  const int fd = shm_open(key.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return Errno("shm_open", key);
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    absl::Status s = Errno("ftruncate", key);
    close(fd);
    shm_unlink(key.c_str());
    return s;
  }
  void* data = mmap(nullptr, static_cast<size_t>(bytes), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (data == MAP_FAILED) {
    absl::Status s = Errno("mmap", key);
    shm_unlink(key.c_str());
    return s;
  }
  return std::unique_ptr<ShmRegion>(new ShmRegion(key, static_cast<char*>(data), bytes));
}

ShmRegion::~ShmRegion() {
  munmap(data_, static_cast<size_t>(size_));
  Unlink();
}

void ShmRegion::Unlink() {
  if (linked_) shm_unlink(key_.c_str());
  linked_ = false;
}

}  // namespace linalgd::client::internal
