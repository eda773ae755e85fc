#include "server/store/shm_registry.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/common/caller_string.h"

namespace linalgd {

// One mapping; unpinned, then unmapped, when the last reference goes.
class ShmRegistry::Region {
 public:
  Region(void* base, int64_t size) : base_(base), size_(size) {}
  ~Region() {
    pin_.reset();
    munmap(base_, static_cast<size_t>(size_));
  }
  std::byte* base() const { return static_cast<std::byte*>(base_); }
  int64_t size() const { return size_; }
  bool pinned() const { return pinned_; }
  void set_pin(std::shared_ptr<void> pin) {
    pin_ = std::move(pin);
    pinned_ = true;
  }

 private:
  void* const base_;
  const int64_t size_;
  std::shared_ptr<void> pin_;
  bool pinned_ = false;
};

namespace {

absl::Status CheckKey(absl::string_view key) {
  if (key.size() < 2 || key[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat(
        "key: ", Quoted(key), " is not a POSIX shared-memory name (\"/name\")"));
  }
  return CheckName(key.substr(1), "key");
}

// Region names: [A-Za-z0-9._-], at most 64 bytes, after an optional '/'.
absl::Status CheckRegionName(absl::string_view name) {
  return CheckName(absl::StartsWith(name, "/") ? name.substr(1) : name, "name");
}

// Opens and maps `key`; the mapping covers `size` bytes.
absl::StatusOr<void*> MapObject(const std::string& key, int64_t size) {
  const int fd = shm_open(key.c_str(), O_RDWR, 0);
  if (fd < 0) {
    return absl::NotFoundError(absl::StrCat(
        "key: shm_open(", key, "): ", std::strerror(errno),
        " (shared memory needs the caller on the server's host, in its IPC namespace)"));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size < size) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat(
        "size: ", size, " bytes, but shared-memory object ", key, " holds ", st.st_size));
  }
  void* base = mmap(nullptr, static_cast<size_t>(size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int mmap_errno = errno;
  close(fd);
  if (base == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrCat("mmap of ", key, " (", size, " bytes): ", std::strerror(mmap_errno)));
  }
  return base;
}

}  // namespace

ShmRegistry::~ShmRegistry() = default;

absl::StatusOr<ShmRegionInfo> ShmRegistry::Register(absl::string_view name,
                                                    absl::string_view key, int64_t size) {
  if (absl::Status s = CheckRegionName(name); !s.ok()) return s;
  if (size <= 0) return absl::InvalidArgumentError(absl::StrCat("size: ", size, " must be > 0"));
  if (absl::Status s = CheckKey(key); !s.ok()) return s;
  {
    absl::MutexLock lock(&mu_);
    if (regions_.contains(name)) {
      return absl::AlreadyExistsError(absl::StrCat("shared-memory region ", Quoted(name),
                                                   " is already registered"));
    }
  }
  absl::StatusOr<void*> base = MapObject(std::string(key), size);
  if (!base.ok()) return base.status();
  auto region = std::make_shared<Region>(*base, size);
  if (pinner_) {
    absl::StatusOr<std::shared_ptr<void>> pin = pinner_(*base, static_cast<size_t>(size));
    if (!pin.ok()) return pin.status();  // `region` unmaps
    region->set_pin(std::move(*pin));
  }
  ShmRegionInfo info{size, region->pinned()};
  absl::MutexLock lock(&mu_);
  if (!regions_.emplace(std::string(name), std::move(region)).second) {
    return absl::AlreadyExistsError(
        absl::StrCat("shared-memory region ", Quoted(name), " is already registered"));
  }
  return info;
}

absl::Status ShmRegistry::Unregister(absl::string_view name) {
  std::shared_ptr<Region> region;  // unmapped here, outside the lock, if unused
  absl::MutexLock lock(&mu_);
  auto it = regions_.find(name);
  if (it == regions_.end()) {
    return absl::NotFoundError(absl::StrCat("shared-memory region ", Quoted(name), " is not registered"));
  }
  region = std::move(it->second);
  regions_.erase(it);
  return absl::OkStatus();
}

absl::StatusOr<ShmRange> ShmRegistry::Resolve(absl::string_view name, int64_t offset,
                                              int64_t bytes, int64_t align,
                                              absl::string_view field) {
  std::shared_ptr<Region> region;
  {
    absl::MutexLock lock(&mu_);
    auto it = regions_.find(name);
    if (it == regions_.end()) {
      return absl::NotFoundError(absl::StrCat(field, ".shm.region: ", Quoted(name),
                                              " is not registered (RegisterSharedMemory)"));
    }
    region = it->second;
  }
  if (offset < 0 || bytes < 0 || offset > region->size() || bytes > region->size() - offset) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".shm: offset ", offset, " + bytes ", bytes, " is outside region ", Quoted(name), " of ",
        region->size(), " bytes"));
  }
  if (align > 1 && offset % align != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".shm.offset: ", offset, " is not a multiple of the element size ", align));
  }
  ShmRange range;
  range.data = region->base() + offset;
  range.bytes = bytes;
  range.keep = std::move(region);
  return range;
}

}  // namespace linalgd
