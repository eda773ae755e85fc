#ifndef LINALGD_CLIENT_SRC_SHM_REGION_H_
#define LINALGD_CLIENT_SRC_SHM_REGION_H_

// A POSIX shared-memory object created and mapped by this process, for a
// same-host server to map too (RegisterSharedMemory). Internal.

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace linalgd::client::internal {

class ShmRegion {
 public:
  // shm_open(O_CREAT|O_EXCL) of a fresh "/linalgd-<pid>-<n>-<random>" key,
  // ftruncate to `bytes`, mmap read-write shared.
  static absl::StatusOr<std::unique_ptr<ShmRegion>> Create(int64_t bytes);
  ~ShmRegion();  // munmap, and shm_unlink unless Unlink() ran
  ShmRegion(const ShmRegion&) = delete;
  ShmRegion& operator=(const ShmRegion&) = delete;

  // Removes the name; the memory stays mapped here and wherever else it is.
  void Unlink();

  const std::string& key() const { return key_; }    // "/linalgd-..."
  std::string name() const { return key_.substr(1); }  // without the slash
  char* data() const { return data_; }
  int64_t size() const { return size_; }

 private:
  ShmRegion(std::string key, char* data, int64_t size)
      : key_(std::move(key)), data_(data), size_(size) {}

  std::string key_;
  char* data_;
  int64_t size_;
  bool linked_ = true;
};

}  // namespace linalgd::client::internal

#endif  // LINALGD_CLIENT_SRC_SHM_REGION_H_
