#include "server/linalg/finite_check.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/usable_cores.h"
#include "server/common/half.h"
#include "server/common/status_macros.h"

namespace linalgd {
namespace {

// Inf and NaN are the values whose exponent bits are all ones. Blocks are
// scanned without branches (the compiler vectorizes the reduction: a lane's
// compare is all ones where it holds, and the lanes are or-ed as they are);
// only a block that holds one is searched for the first index.
template <typename Bits>
[[gnu::always_inline]] inline int64_t FirstAllOnesIn(const Bits* p, int64_t n, Bits exp_mask) {
  constexpr int64_t kBlock = 1024;
  for (int64_t begin = 0; begin < n; begin += kBlock) {
    const int64_t end = std::min(n, begin + kBlock);
    Bits hit = 0;
#pragma GCC unroll 4
    for (int64_t i = begin; i < end; ++i) {
      hit |= static_cast<Bits>(Bits{0} - static_cast<Bits>((p[i] & exp_mask) == exp_mask));
    }
    if (hit == 0) continue;
    for (int64_t i = begin; i < end; ++i) {
      if ((p[i] & exp_mask) == exp_mask) return i;
    }
  }
  return -1;
}

// The scan is on every small call's path (a 64^3 product's two operands are
// 8,192 floats): where the CPU has AVX2 it runs on 256-bit vectors, a third
// of the baseline's (SSE2) instructions per element. The choice is made at
// run time, once, so one build serves every x86-64 host.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define LINALGD_HAS_AVX2_SCAN 1
template <typename Bits>
__attribute__((target("avx2"))) int64_t FirstAllOnesAvx2(const Bits* p, int64_t n, Bits mask) {
  return FirstAllOnesIn(p, n, mask);
}
#endif

template <typename Bits>
int64_t FirstAllOnes(const Bits* p, int64_t n, Bits exp_mask) {
#ifdef LINALGD_HAS_AVX2_SCAN
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) return FirstAllOnesAvx2(p, n, exp_mask);
#endif
  return FirstAllOnesIn(p, n, exp_mask);
}

template <typename T>
int64_t FirstNonFinite(const T* p, int64_t n) {
  static_assert(std::numeric_limits<T>::is_iec559);
  if constexpr (sizeof(T) == 4) {
    return FirstAllOnes(reinterpret_cast<const uint32_t*>(p), n, uint32_t{0x7f800000});
  } else {
    return FirstAllOnes(reinterpret_cast<const uint64_t*>(p), n, uint64_t{0x7ff0000000000000});
  }
}

// Index of the first non-finite element of t in [begin, end), or -1.
int64_t FirstNonFiniteIn(const TensorView& t, int64_t begin, int64_t end) {
  const int64_t n = end - begin;
  int64_t bad = -1;
  switch (t.dtype) {
    case DType::kF32:
      bad = FirstNonFinite(t.as<float>() + begin, n);
      break;
    case DType::kF64:
      bad = FirstNonFinite(t.as<double>() + begin, n);
      break;
    case DType::kF16:
      bad = FirstAllOnes(t.as<uint16_t>() + begin, n, uint16_t{0x7c00});
      break;
    case DType::kBF16:
      bad = FirstAllOnes(t.as<uint16_t>() + begin, n, uint16_t{0x7f80});
      break;
    case DType::kC64:  // (real, imaginary) pairs: element = part / 2
      bad = FirstNonFinite(t.as<float>() + 2 * begin, 2 * n);
      if (bad >= 0) bad /= 2;
      break;
    case DType::kC128:
      bad = FirstNonFinite(t.as<double>() + 2 * begin, 2 * n);
      if (bad >= 0) bad /= 2;
      break;
  }
  return bad < 0 ? -1 : begin + bad;
}

// Large tensors (a 64 MiB operand takes ~10 ms on one core, as long as its
// DMA into the GPU) are scanned in pieces of at least kScanPieceBytes on
// up to kMaxScanThreads threads.
constexpr size_t kScanPieceBytes = size_t{8} << 20;
constexpr int64_t kMaxScanThreads = 16;

}  // namespace

int64_t FirstNonFinite(const TensorView& t) {
  const int64_t n = t.num_elements();
  static const int64_t hw = UsableCores();  // read once
  const int64_t pieces =
      std::min({kMaxScanThreads, hw, static_cast<int64_t>(t.num_bytes() / kScanPieceBytes)});
  if (pieces <= 1) return FirstNonFiniteIn(t, 0, n);
  const int64_t per = (n + pieces - 1) / pieces;
  std::vector<int64_t> first(static_cast<size_t>(pieces), -1);
  std::vector<std::thread> threads;
  for (int64_t i = 1; i < pieces; ++i) {
    threads.emplace_back([&t, &first, i, per, n] {
      first[static_cast<size_t>(i)] = FirstNonFiniteIn(t, i * per, std::min(n, (i + 1) * per));
    });
  }
  first[0] = FirstNonFiniteIn(t, 0, std::min(n, per));
  for (std::thread& th : threads) th.join();
  for (int64_t f : first) {
    if (f >= 0) return f;
  }
  return -1;
}

absl::Status NonFiniteError(const TensorView& t, absl::string_view field, int64_t index) {
  // A complex element is read as its two parts; the first non-finite one is named.
  const std::vector<double> parts = ToDoubleVector(TensorView{
      RealPart(t.dtype), {1, IsComplex(t.dtype) ? 2 : 1}, t.data + index * DTypeSize(t.dtype)});
  const double value = std::isfinite(parts[0]) ? parts.back() : parts[0];
  return absl::InvalidArgumentError(absl::StrCat(
      field, ": element ", index, " is ", std::isnan(value) ? "NaN" : (value > 0 ? "+Inf" : "-Inf"),
      "; non-finite inputs are rejected unless allow_non_finite is set"));
}

absl::Status CheckFinite(const TensorView& t, absl::string_view field) {
  const int64_t bad = FirstNonFinite(t);
  return bad < 0 ? absl::OkStatus() : NonFiniteError(t, field, bad);
}

absl::Status CheckMatmulInputsFinite(const MatmulOp& op) {
  if (!op.check_finite) return absl::OkStatus();
  LINALGD_RETURN_IF_ERROR(CheckFinite(op.a, "a"));
  LINALGD_RETURN_IF_ERROR(CheckFinite(op.b, "b"));
  if (op.c) LINALGD_RETURN_IF_ERROR(CheckFinite(*op.c, "c"));
  if (op.bias) LINALGD_RETURN_IF_ERROR(CheckFinite(*op.bias, "bias"));
  return absl::OkStatus();
}

}  // namespace linalgd
