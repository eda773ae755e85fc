#ifndef LINALGD_SERVER_COMMON_MEMORY_BUDGET_H_
#define LINALGD_SERVER_COMMON_MEMORY_BUDGET_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace linalgd {

// The device bytes one GPU may use (--gpu-memory-fraction of its total
// memory). Every device byte the server allocates is reserved here first:
// the scheduler reserves a job's operands, outputs and workspace before the
// backend call (the backend then allocates inside that reservation and must
// not reserve the same bytes again); long-lived allocations (handle-set
// workspaces, resident tensors) hold their own reservations. The sum of live
// reservations never exceeds budget(). No CUDA here. Thread-safe.
class MemoryBudget {
 public:
  // Bytes held against a budget until destroyed or Release()d. Move-only.
  // The budget must outlive its reservations.
  class Reservation {
   public:
    Reservation() = default;
    Reservation(Reservation&& other) noexcept { *this = std::move(other); }
    Reservation& operator=(Reservation&& other) noexcept;
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;
    ~Reservation() { Release(); }

    int64_t bytes() const { return bytes_; }
    // Returns the bytes to the budget now. Idempotent.
    void Release();

   private:
    friend class MemoryBudget;
    Reservation(MemoryBudget* budget, int64_t bytes) : budget_(budget), bytes_(bytes) {}
    MemoryBudget* budget_ = nullptr;
    int64_t bytes_ = 0;
  };

  // `on_change` (may be empty) is called with the reserved byte count after
  // every change, with the budget's lock held: it must be quick and must not
  // call back into this budget (e.g. a metrics gauge).
  MemoryBudget(std::string device, int64_t budget_bytes,
               std::function<void(int64_t reserved)> on_change = {});
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // Reserves `bytes` if they fit now; RESOURCE_EXHAUSTED (naming the device,
  // the bytes, what is reserved and the budget) if not.
  absl::StatusOr<Reservation> TryReserve(int64_t bytes) ABSL_LOCKS_EXCLUDED(mu_);

  // Waits up to `timeout` for `bytes` to fit. RESOURCE_EXHAUSTED at once when
  // they can never fit (bytes > budget()); DEADLINE_EXCEEDED after the
  // timeout. Waiters are served as releases allow, not in strict order.
  absl::StatusOr<Reservation> TryReserveFor(int64_t bytes, absl::Duration timeout)
      ABSL_LOCKS_EXCLUDED(mu_);

  bool CanEverFit(int64_t bytes) const { return bytes <= budget_; }
  const std::string& device() const { return device_; }
  int64_t budget() const { return budget_; }
  int64_t reserved() const ABSL_LOCKS_EXCLUDED(mu_);
  // The largest reserved() seen since construction or ResetPeak().
  int64_t peak() const ABSL_LOCKS_EXCLUDED(mu_);
  void ResetPeak() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Return(int64_t bytes) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status NoRoom(int64_t bytes, absl::string_view after) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Reservation Take(int64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string device_;
  const int64_t budget_;
  const std::function<void(int64_t)> on_change_;
  mutable absl::Mutex mu_;
  int64_t reserved_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t peak_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_COMMON_MEMORY_BUDGET_H_
