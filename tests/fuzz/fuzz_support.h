#ifndef LINALGD_TESTS_FUZZ_FUZZ_SUPPORT_H_
#define LINALGD_TESTS_FUZZ_FUZZ_SUPPORT_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

// Aborts (a crash libFuzzer reports) naming the condition when a contract
// the target checks does not hold.
#define FUZZ_REQUIRE(cond) ((cond) ? (void)0 : ::linalgd::fuzz::Fail(#cond, __FILE__, __LINE__))

namespace linalgd::fuzz {

[[noreturn]] inline void Fail(const char* what, const char* file, int line) {
  std::fprintf(stderr, "FUZZ_REQUIRE failed: %s at %s:%d\n", what, file, line);
  std::abort();
}

// Consumes a fuzzer input front to back. Reads past the end yield zeros
// (numbers) or short strings, so every input decodes to something.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : p_(data), left_(size) {}
  size_t left() const { return left_; }
  template <typename T>
  T Get() {
    T v{};
    const size_t n = left_ < sizeof(T) ? left_ : sizeof(T);
    std::memcpy(&v, p_, n);
    Skip(n);
    return v;
  }
  // Up to `n` bytes.
  std::string Bytes(size_t n) {
    if (n > left_) n = left_;
    std::string s(reinterpret_cast<const char*>(p_), n);
    Skip(n);
    return s;
  }
  std::string Rest() { return Bytes(left_); }

 private:
  void Skip(size_t n) {
    p_ += n;
    left_ -= n;
  }
  const uint8_t* p_;
  size_t left_;
};

}  // namespace linalgd::fuzz

#endif  // LINALGD_TESTS_FUZZ_FUZZ_SUPPORT_H_
