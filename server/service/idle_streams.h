#ifndef LINALGD_SERVER_SERVICE_IDLE_STREAMS_H_
#define LINALGD_SERVER_SERVICE_IDLE_STREAMS_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace linalgd {

// Cancels streaming calls (PutTensor, GetTensor) that make no progress for
// `limit`: a stream that sent its header and then nothing, or a reader that
// stops reading, would otherwise hold its buffer and reservation forever.
// Thread-safe; one watcher thread.
class IdleStreams {
 public:
  explicit IdleStreams(absl::Duration limit);
  ~IdleStreams();  // stops the watcher
  IdleStreams(const IdleStreams&) = delete;
  IdleStreams& operator=(const IdleStreams&) = delete;

  // Watches `context` from now on. REQUIRES: Remove(id) before the call's
  // OnDone returns (the context dies then).
  uint64_t Add(grpc::CallbackServerContext* context) ABSL_LOCKS_EXCLUDED(mu_);
  // The stream made progress (a message read or written).
  void Touch(uint64_t id) ABSL_LOCKS_EXCLUDED(mu_);
  void Remove(uint64_t id) ABSL_LOCKS_EXCLUDED(mu_);

  absl::Duration limit() const { return limit_; }
  // Streams cancelled so far.
  int64_t cancelled() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Stream {
    grpc::CallbackServerContext* context;
    absl::Time last;
  };
  void Watch();

  const absl::Duration limit_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, Stream> streams_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t cancelled_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Notification stop_;
  std::thread watcher_;
};

// Watches one stream for the life of its reactor (which deletes itself in
// OnDone, so the watch ends before the context does). Null streams: none.
class IdleWatch {
 public:
  IdleWatch(IdleStreams* streams, grpc::CallbackServerContext* context)
      : streams_(streams), id_(streams ? streams->Add(context) : 0) {}
  ~IdleWatch() {
    if (streams_) streams_->Remove(id_);
  }
  IdleWatch(const IdleWatch&) = delete;
  IdleWatch& operator=(const IdleWatch&) = delete;
  void Touch() {
    if (streams_) streams_->Touch(id_);
  }

 private:
  IdleStreams* const streams_;
  const uint64_t id_;
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_SERVICE_IDLE_STREAMS_H_
