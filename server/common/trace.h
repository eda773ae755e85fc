// NVTX ranges for profilers (`nsys profile -t cuda,nvtx`): named spans of a
// request's phases (queue wait, upload, compute, download, CPU fallback) in
// the "linalgd" NVTX domain.
//
// They cost nothing measurable when no profiler is attached: NVTX3 is
// header-only and without an injected tool its domain is null, so a range
// checks one pointer and never builds its name (the name is a callable run
// only when a tool records it). Only trace.cc sees NVTX (CUDA builds define
// LINALGD_HAVE_NVTX for it alone); builds without CUDA compile it to no-ops.
#ifndef LINALGD_SERVER_COMMON_TRACE_H_
#define LINALGD_SERVER_COMMON_TRACE_H_

#include <cstdint>
#include <string>
#include <utility>

namespace linalgd::trace {

// True when a profiler records NVTX ranges (never in builds without CUDA).
bool Enabled();

// The NVTX calls behind the classes below (no-ops without NVTX).
bool PushRange(const std::string& name);       // true when pushed
void PopRange();                               // pops what PushRange pushed
uint64_t StartRange(const std::string& name);  // 0: none started
void EndRange(uint64_t id);

// A push/pop range on the calling thread, from construction to destruction.
// `name` (a callable returning std::string) runs only when Enabled().
class ScopedRange {
 public:
  template <typename NameFn>
  explicit ScopedRange(NameFn&& name) {
    if (Enabled()) pushed_ = PushRange(std::forward<NameFn>(name)());
  }
  ~ScopedRange() {
    if (pushed_) PopRange();
  }
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;

  // True when a range was pushed (a tool is attached).
  bool pushed() const { return pushed_; }

 private:
  bool pushed_ = false;
};

// A start/end range that may end on another thread than the one that began
// it (a job's queue wait: enqueued by a gRPC thread, taken by a worker).
// Movable; ends at End() or destruction, whichever comes first.
class AsyncRange {
 public:
  AsyncRange() = default;
  template <typename NameFn>
  explicit AsyncRange(NameFn&& name) {
    if (Enabled()) id_ = StartRange(std::forward<NameFn>(name)());
  }
  AsyncRange(AsyncRange&& other) noexcept : id_(std::exchange(other.id_, 0)) {}
  AsyncRange& operator=(AsyncRange&& other) noexcept {
    if (this != &other) {
      End();
      id_ = std::exchange(other.id_, 0);
    }
    return *this;
  }
  ~AsyncRange() { End(); }

  void End() {
    if (id_ != 0) EndRange(std::exchange(id_, 0));
  }
  // True while a started range has not ended.
  bool open() const { return id_ != 0; }

 private:
  uint64_t id_ = 0;
};

}  // namespace linalgd::trace

#endif  // LINALGD_SERVER_COMMON_TRACE_H_
