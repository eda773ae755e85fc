#ifndef LINALGD_SERVER_STORE_UPLOAD_TABLE_H_
#define LINALGD_SERVER_STORE_UPLOAD_TABLE_H_

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/store/upload_session.h"

namespace linalgd {

// The multi-part uploads in progress, by id (32 hex digits, from the same
// generator as resident ids). An upload without activity for its TTL and
// with no part being written is expired and dropped (its reservation
// released) by the next call. The table keeps a time before which no upload
// can expire and scans them only from then on, so that many open uploads
// cost a call O(1), not a scan of them all. Ids that are gone are remembered
// (bounded) so NOT_FOUND says why: finished, aborted, expired or failed its CRC32C check. Lock
// order: the table's lock before a session's. Thread-safe.
class UploadTable {
 public:
  // `alloc` (may be empty) gives the uploads' buffers.
  // `replica`: --replica-id (resident_id.h), prefix of the upload ids.
  explicit UploadTable(std::function<absl::Time()> now, HostAllocator alloc = {},
                       std::string replica = "")
      : now_(std::move(now)), alloc_(std::move(alloc)), replica_(std::move(replica)) {}
  UploadTable(const UploadTable&) = delete;
  UploadTable& operator=(const UploadTable&) = delete;

  // A new upload of `spec`; `reservation` covers its bytes.
  absl::StatusOr<std::shared_ptr<UploadSession>> Start(UploadSpec spec,
                                                       StoreReservation reservation)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The live upload `id` of tenant `owner` (spec.owner); NOT_FOUND naming
  // why not, and for another tenant's upload as for an unknown id.
  absl::StatusOr<std::shared_ptr<UploadSession>> Find(absl::string_view id,
                                                      absl::string_view owner = "default")
      ABSL_LOCKS_EXCLUDED(mu_);
  // UploadSession::Finish; the id is gone afterwards unless the parts do not
  // cover the tensor yet (FAILED_PRECONDITION).
  absl::StatusOr<UploadSession::Finished> Finish(absl::string_view id,
                                                 absl::string_view owner = "default")
      ABSL_LOCKS_EXCLUDED(mu_);
  // Drops the upload; a part still being written fails at its end.
  absl::Status Abort(absl::string_view id, absl::string_view owner = "default")
      ABSL_LOCKS_EXCLUDED(mu_);
  // Drops the expired uploads (also done by every call above).
  void DropExpired() ABSL_LOCKS_EXCLUDED(mu_);
  int64_t size() const ABSL_LOCKS_EXCLUDED(mu_);
  // Sweeps (scans of every upload) so far; for tests.
  int64_t sweeps() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  using SessionPtr = std::shared_ptr<UploadSession>;
  // Moves expired sessions to `dropped` (destroyed outside the lock); scans
  // only once next_expiry_ has come.
  void DropExpiredLocked(std::vector<SessionPtr>& dropped) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The live upload `id` of `owner`; one that has expired is dropped here.
  absl::StatusOr<SessionPtr> FindLocked(absl::string_view id, absl::string_view owner,
                                        std::vector<SessionPtr>& dropped)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Expire(const SessionPtr& session, std::vector<SessionPtr>& dropped)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Closes the session, forgets its id and remembers why.
  void Remove(const SessionPtr& session, absl::string_view why, std::vector<SessionPtr>& dropped)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::function<absl::Time()> now_;
  const HostAllocator alloc_;
  const std::string replica_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, SessionPtr> sessions_ ABSL_GUARDED_BY(mu_);
  // id -> (owner, why)
  absl::flat_hash_map<std::string, std::pair<std::string, std::string>> gone_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> gone_order_ ABSL_GUARDED_BY(mu_);
  // No upload expires before this (a lower bound: activity only delays).
  absl::Time next_expiry_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  int64_t sweeps_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_STORE_UPLOAD_TABLE_H_
