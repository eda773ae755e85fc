#ifndef LINALGD_SERVER_BACKEND_RESULT_DESTINATION_H_
#define LINALGD_SERVER_BACKEND_RESULT_DESTINATION_H_

#include <cstddef>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

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
  // No write may start after this returns; waits for one in progress. Used
  // when a backend call is abandoned (op-timeout) and the job reruns
  // elsewhere, so a late write cannot land on the rerun's result.
  void Revoke() const ABSL_LOCKS_EXCLUDED(state_->mu);

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
