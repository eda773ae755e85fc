#ifndef LINALGD_SERVER_STORE_UPLOAD_SESSION_H_
#define LINALGD_SERVER_STORE_UPLOAD_SESSION_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/common/host_allocator.h"
#include "server/common/tensor.h"
#include "server/store/store_reservation.h"

namespace linalgd {

// What StartUpload was told: the tensor, where it goes and its checksum.
struct UploadSpec {
  DType dtype = DType::kF32;
  Shape shape;
  std::string placement;
  uint32_t crc32c = 0;  // of all the bytes
  absl::Duration ttl;   // of the upload without activity, and of the stored tensor
  // The upload expires sooner when no part is written for this long
  // (--stream-idle-timeout): an abandoned upload gives its space back.
  absl::Duration idle_timeout = absl::InfiniteDuration();
  std::string owner = std::string("default");  // the tenant that started it
  Evict evict = Evict::kLeastRecentlyUsed;     // how StartUpload makes room
};

// One tensor being uploaded in parts (StartUpload, PutTensor parts,
// FinishUpload): the tensor's final buffer, allocated at construction (from
// the store's HostAllocator when it gives memory: page-locked, not
// zero-filled, and never read before every byte is written, which Finish
// checks; else zero-filled), and the byte ranges that part streams have claimed and
// finished. Part streams write their claimed ranges concurrently, outside
// the lock, straight into the buffer; ranges never overlap, so no two
// writers touch a byte. Thread-safe.
class UploadSession {
 public:
  // The stored result of a successful Finish.
  struct Finished {
    UploadSpec spec;
    Tensor tensor;
    uint32_t crc32c = 0;
    StoreReservation reservation;
  };

  // `reservation` covers the tensor's bytes; `now` is the store's clock;
  // `alloc` (may be empty) gives the buffer.
  UploadSession(std::string id, UploadSpec spec, StoreReservation reservation,
                std::function<absl::Time()> now, const HostAllocator& alloc = {});
  UploadSession(const UploadSession&) = delete;
  UploadSession& operator=(const UploadSession&) = delete;

  const std::string& id() const { return id_; }
  const UploadSpec& spec() const { return spec_; }
  int64_t total_bytes() const { return total_; }

  // Claims [offset, offset + bytes) for one part stream and returns where
  // its bytes go (valid while the caller holds this session).
  // INVALID_ARGUMENT naming the numbers when the range is empty, leaves the
  // tensor or overlaps a claimed part; NOT_FOUND once the upload is closed.
  absl::StatusOr<char*> Claim(int64_t offset, int64_t bytes) ABSL_LOCKS_EXCLUDED(mu_);
  // The part claimed at `offset` now holds its bytes, whose CRC32C is
  // `crc32c` (checked by the caller). NOT_FOUND when the upload was closed
  // meanwhile (aborted).
  absl::Status Commit(int64_t offset, uint32_t crc32c) ABSL_LOCKS_EXCLUDED(mu_);
  // Gives back the range of a claimed, uncommitted part (its stream failed).
  void Unclaim(int64_t offset) ABSL_LOCKS_EXCLUDED(mu_);

  // FAILED_PRECONDITION naming the first missing byte range or a part still
  // being written (the session stays usable); DATA_LOSS when the combined
  // part CRCs differ from spec().crc32c. On success (and on DATA_LOSS) the
  // session is closed.
  absl::StatusOr<Finished> Finish() ABSL_LOCKS_EXCLUDED(mu_);

  // Later calls fail with NOT_FOUND "upload <id> was <why>".
  void Close(absl::string_view why) ABSL_LOCKS_EXCLUDED(mu_);
  // No part is being written and the last activity is `ttl` old or more.
  bool Expired(absl::Time now) const ABSL_LOCKS_EXCLUDED(mu_);
  // A time before which the upload cannot expire, as seen at `now`: its
  // expiry, or with a part being written, `now` plus its TTL (the part's end
  // is activity). Activity only moves it later.
  absl::Time ExpiresNoSoonerThan(absl::Time now) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Part {
    int64_t bytes = 0;
    uint32_t crc32c = 0;
    bool done = false;
  };

  absl::Status CheckOpen() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckRange(int64_t offset, int64_t bytes) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The CRC32C of all parts in offset order; FAILED_PRECONDITION as Finish.
  absl::StatusOr<uint32_t> CoveredCrc() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string id_;
  const UploadSpec spec_;
  const int64_t total_;
  const std::function<absl::Time()> now_;
  const HostAllocator alloc_;
  mutable absl::Mutex mu_;
  // total_ bytes, allocated when the first part is claimed (an upload that
  // never sends a part takes no memory); the parts write into it unlocked.
  Tensor tensor_;
  StoreReservation reservation_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, Part> parts_ ABSL_GUARDED_BY(mu_);  // by offset
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time last_activity_ ABSL_GUARDED_BY(mu_);
  std::string closed_ ABSL_GUARDED_BY(mu_);  // why, once closed
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_STORE_UPLOAD_SESSION_H_
