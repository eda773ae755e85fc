#ifndef LINALGD_SERVER_BACKEND_RESULT_DESTINATION_H_
#define LINALGD_SERVER_BACKEND_RESULT_DESTINATION_H_

#include <cstddef>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace linalgd {

// Host memory a job's caller wants its result written into (an out_shm
// range): `capacity` writable bytes at `data`, valid until the job is
// destroyed, overlapping no operand. A backend may write the result there,
// between Begin() and End(), and return Tensor::External(dtype, shape, data)
// (the GPU copies straight from the device into a page-locked range), or
// ignore it and return an owning tensor. Split pieces carry none; a stacked
// batch carries its own result block (server/backend/batch_stack.h). Copies share one state;
// thread-safe.
class ResultDestination {
 public:
  ResultDestination() = default;
  ResultDestination(std::byte* data, size_t capacity)
      : data_(data), capacity_(capacity), state_(std::make_shared<State>()) {}

  std::byte* data() const { return data_; }
  size_t capacity() const { return capacity_; }
  bool Fits(size_t bytes) const { return data_ != nullptr && bytes <= capacity_; }

  // False once revoked (the caller then allocates its own result); true
  // starts a write that must be closed with End().
  bool Begin() const ABSL_LOCKS_EXCLUDED(state_->mu);
  void End() const ABSL_LOCKS_EXCLUDED(state_->mu);
  // No write may start after this returns; one in progress goes on to its
  // End. Used when a backend call is abandoned (op-timeout) and the job
  // reruns elsewhere. Never waits: the watchdog, which serves every lane,
  // calls it, and a stalled device must not stall the others' timeouts.
  void Revoke() const ABSL_LOCKS_EXCLUDED(state_->mu);
  // Waits until no write is in progress or `deadline` passes; true when
  // none is. Whoever answers the call waits so first, so that an abandoned
  // backend's late write cannot land after the answer or on a rerun's result.
  bool AwaitNoWrite(absl::Time deadline) const ABSL_LOCKS_EXCLUDED(state_->mu);

 private:
  struct State {
    absl::Mutex mu;
    bool revoked ABSL_GUARDED_BY(mu) = false;
    bool writing ABSL_GUARDED_BY(mu) = false;
  };
  std::byte* data_ = nullptr;
  size_t capacity_ = 0;
  std::shared_ptr<State> state_;
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_BACKEND_RESULT_DESTINATION_H_
