// ThreadSanitizer builds only (cmake/Warnings.cmake links it into every
// executable when LINALGD_SANITIZE=thread).
//
// absl::Mutex, CondVar and Notification live in Debian's libabsl_synchronization,
// which is not built with -fsanitize=thread: TSan sees neither their locks nor
// the happens-before edges they make, and reports every access that a mutex
// protects. This file defines the same member functions in the executable
// (exported with ENABLE_EXPORTS, so they also interpose for the library's
// calls into itself); each calls the library's own definition, found with
// dlsym(RTLD_NEXT) under the mangled name dladdr gives for ours, and tells TSan
// what it did: a release on the mutex's address before it lets go, an acquire
// after it holds it. Reader and writer locks are modelled alike (stronger
// than needed, so it can hide a race between readers but never invent one).
// absl evaluates a waiter's Condition inside the lock calls (in the waiter or
// in the thread that unlocks), where these annotations cannot place it:
// accesses made by Condition::Eval are ignored (a condition only reads state
// guarded by the mutex it waits on).
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"

namespace {

// The library's definition of the member function `ours` overrides.
template <typename Fn, typename Member>
Fn Real(Member ours) {
  void* address = nullptr;
  static_assert(sizeof(ours) >= sizeof(address));
  std::memcpy(&address, &ours, sizeof(address));  // Itanium ABI: non-virtual
  Dl_info info;
  void* real = nullptr;
  if (dladdr(address, &info) != 0 && info.dli_sname != nullptr) {
    real = dlsym(RTLD_NEXT, info.dli_sname);
  }
  if (real == nullptr || real == address) {
    std::fprintf(stderr, "tsan_absl_annotations: no library definition of %s\n",
                 info.dli_sname != nullptr ? info.dli_sname : "(unnamed)");
    std::abort();
  }
  return reinterpret_cast<Fn>(real);
}

}  // namespace

// TSan's dynamic-annotation entry points (not in its public headers).
extern "C" void AnnotateIgnoreReadsBegin(const char* file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char* file, int line);
extern "C" void AnnotateIgnoreWritesBegin(const char* file, int line);
extern "C" void AnnotateIgnoreWritesEnd(const char* file, int line);

#define LINALGD_REAL(Sig, member) static const auto real = Real<Sig>(member)

namespace absl {
ABSL_NAMESPACE_BEGIN

bool Condition::Eval() const {
  LINALGD_REAL(bool (*)(const Condition*), &Condition::Eval);
  AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
  AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
  const bool met = real(this);
  AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
  AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
  return met;
}

void Mutex::Lock() {
  LINALGD_REAL(void (*)(Mutex*), &Mutex::Lock);
  real(this);
  __tsan_acquire(this);
}
void Mutex::ReaderLock() {
  LINALGD_REAL(void (*)(Mutex*), &Mutex::ReaderLock);
  real(this);
  __tsan_acquire(this);
}
bool Mutex::TryLock() {
  LINALGD_REAL(bool (*)(Mutex*), &Mutex::TryLock);
  const bool locked = real(this);
  if (locked) __tsan_acquire(this);
  return locked;
}
bool Mutex::ReaderTryLock() {
  LINALGD_REAL(bool (*)(Mutex*), &Mutex::ReaderTryLock);
  const bool locked = real(this);
  if (locked) __tsan_acquire(this);
  return locked;
}
void Mutex::Unlock() {
  LINALGD_REAL(void (*)(Mutex*), &Mutex::Unlock);
  __tsan_release(this);
  real(this);
}
void Mutex::ReaderUnlock() {
  LINALGD_REAL(void (*)(Mutex*), &Mutex::ReaderUnlock);
  __tsan_release(this);
  real(this);
}
void Mutex::LockWhen(const Condition& cond) {
  LINALGD_REAL(void (*)(Mutex*, const Condition&), &Mutex::LockWhen);
  real(this, cond);
  __tsan_acquire(this);
}
void Mutex::ReaderLockWhen(const Condition& cond) {
  LINALGD_REAL(void (*)(Mutex*, const Condition&), &Mutex::ReaderLockWhen);
  real(this, cond);
  __tsan_acquire(this);
}
bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout) {
  LINALGD_REAL(bool (*)(Mutex*, const Condition&, Duration), &Mutex::LockWhenWithTimeout);
  const bool met = real(this, cond, timeout);
  __tsan_acquire(this);  // held either way
  return met;
}
bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline) {
  LINALGD_REAL(bool (*)(Mutex*, const Condition&, Time), &Mutex::LockWhenWithDeadline);
  const bool met = real(this, cond, deadline);
  __tsan_acquire(this);
  return met;
}
bool Mutex::ReaderLockWhenWithTimeout(const Condition& cond, Duration timeout) {
  LINALGD_REAL(bool (*)(Mutex*, const Condition&, Duration), &Mutex::ReaderLockWhenWithTimeout);
  const bool met = real(this, cond, timeout);
  __tsan_acquire(this);
  return met;
}
bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond, Time deadline) {
  LINALGD_REAL(bool (*)(Mutex*, const Condition&, Time), &Mutex::ReaderLockWhenWithDeadline);
  const bool met = real(this, cond, deadline);
  __tsan_acquire(this);
  return met;
}
void Mutex::Await(const Condition& cond) {
  LINALGD_REAL(void (*)(Mutex*, const Condition&), &Mutex::Await);
  __tsan_release(this);
  real(this, cond);
  __tsan_acquire(this);
}
bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  LINALGD_REAL(bool (*)(Mutex*, const Condition&, Duration), &Mutex::AwaitWithTimeout);
  __tsan_release(this);
  const bool met = real(this, cond, timeout);
  __tsan_acquire(this);
  return met;
}
bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  LINALGD_REAL(bool (*)(Mutex*, const Condition&, Time), &Mutex::AwaitWithDeadline);
  __tsan_release(this);
  const bool met = real(this, cond, deadline);
  __tsan_acquire(this);
  return met;
}

void CondVar::Wait(Mutex* mu) {
  LINALGD_REAL(void (*)(CondVar*, Mutex*), &CondVar::Wait);
  __tsan_release(mu);
  real(this, mu);
  __tsan_acquire(mu);
}
bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  LINALGD_REAL(bool (*)(CondVar*, Mutex*, Duration), &CondVar::WaitWithTimeout);
  __tsan_release(mu);
  const bool timed_out = real(this, mu, timeout);
  __tsan_acquire(mu);
  return timed_out;
}
bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  LINALGD_REAL(bool (*)(CondVar*, Mutex*, Time), &CondVar::WaitWithDeadline);
  __tsan_release(mu);
  const bool timed_out = real(this, mu, deadline);
  __tsan_acquire(mu);
  return timed_out;
}

void Notification::Notify() {
  LINALGD_REAL(void (*)(Notification*), &Notification::Notify);
  __tsan_release(this);
  real(this);
}
void Notification::WaitForNotification() const {
  LINALGD_REAL(void (*)(const Notification*), &Notification::WaitForNotification);
  real(this);
  __tsan_acquire(const_cast<Notification*>(this));
}
bool Notification::WaitForNotificationWithTimeout(Duration timeout) const {
  LINALGD_REAL(bool (*)(const Notification*, Duration),
               &Notification::WaitForNotificationWithTimeout);
  const bool notified = real(this, timeout);
  if (notified) __tsan_acquire(const_cast<Notification*>(this));
  return notified;
}
bool Notification::WaitForNotificationWithDeadline(Time deadline) const {
  LINALGD_REAL(bool (*)(const Notification*, Time), &Notification::WaitForNotificationWithDeadline);
  const bool notified = real(this, deadline);
  if (notified) __tsan_acquire(const_cast<Notification*>(this));
  return notified;
}

ABSL_NAMESPACE_END
}  // namespace absl

// spdlog's registry (the default logger, its sink and their formatter) is a function-local
// static built inside the uninstrumented libspdlog: TSan cannot see its guard, so when the
// first two threads to log are workers logging at once, it reports the formatter's buffers
// as raced against their construction (SchedulerTest.NothingLostNothingAnsweredTwiceUnderFaults
// did, once in a CI run: MoveToCpu's warning against the registry built by another worker's).
// Built here, during static initialization on the main thread (before any thread exists), it
// is ordered before every later use by the threads' creation. Executables without spdlog skip
// it.
namespace {
struct SpdlogRegistryFirst {
  SpdlogRegistryFirst() {
    using Instance = void* (*)();  // spdlog::details::registry& registry::instance()
    if (void* f = dlsym(RTLD_DEFAULT, "_ZN6spdlog7details8registry8instanceEv")) {
      reinterpret_cast<Instance>(f)();
    }
  }
} spdlog_registry_first;
}  // namespace
