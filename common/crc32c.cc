#include "common/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace linalgd {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;

struct Tables {
  uint32_t t[8][256];
  Tables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ ((c & 1) ? kPoly : 0);
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i) {
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
    }
  }
};

const Tables& GetTables() {
  static const Tables* tables = new Tables();
  return *tables;
}

uint32_t PortableRaw(uint32_t c, const unsigned char* p, size_t n) {
  const Tables& tb = GetTables();
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);  // little-endian host
    w ^= c;
    c = tb.t[7][w & 0xff] ^ tb.t[6][(w >> 8) & 0xff] ^ tb.t[5][(w >> 16) & 0xff] ^
        tb.t[4][(w >> 24) & 0xff] ^ tb.t[3][(w >> 32) & 0xff] ^ tb.t[2][(w >> 40) & 0xff] ^
        tb.t[1][(w >> 48) & 0xff] ^ tb.t[0][w >> 56];
    p += 8;
    n -= 8;
  }
  while (n--) c = (c >> 8) ^ tb.t[0][(c ^ *p++) & 0xff];
  return c;
}

// a * b in GF(2)[x] mod P, both in the reflected representation.
uint32_t GfMultiply(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (int i = 0; i < 32; ++i) {
    if (b & 0x80000000u) product ^= a;
    b <<= 1;
    a = (a >> 1) ^ ((a & 1) ? kPoly : 0);
  }
  return product;
}

// x^(8n) mod P in the reflected representation: multiplying a raw CRC by it
// shifts the CRC past n zero bytes (O(log n) squarings).
uint32_t ShiftConstant(size_t n) {
  uint32_t result = 0x80000000u;  // x^0
  uint32_t square = 0x00800000u;  // x^8
  size_t bits = n;
  while (bits) {
    if (bits & 1) result = GfMultiply(result, square);
    square = GfMultiply(square, square);
    bits >>= 1;
  }
  return result;
}

#if defined(__x86_64__)
constexpr size_t kStripe = 8192;  // bytes per stream of one interleaved block

__attribute__((target("sse4.2"))) uint32_t HardwareRaw(uint32_t c, const unsigned char* p,
                                                       size_t n) {
  static const uint32_t shift = ShiftConstant(kStripe);
  uint64_t c0 = c;
  while (n >= 3 * kStripe) {  // three independent crc32 chains hide its latency
    uint64_t c1 = 0, c2 = 0;
    for (size_t i = 0; i < kStripe; i += 8) {
      uint64_t w0, w1, w2;
      std::memcpy(&w0, p + i, 8);
      std::memcpy(&w1, p + kStripe + i, 8);
      std::memcpy(&w2, p + 2 * kStripe + i, 8);
      c0 = _mm_crc32_u64(c0, w0);
      c1 = _mm_crc32_u64(c1, w1);
      c2 = _mm_crc32_u64(c2, w2);
    }
    c0 = GfMultiply(static_cast<uint32_t>(c0), shift) ^ c1;
    c0 = GfMultiply(static_cast<uint32_t>(c0), shift) ^ c2;
    p += 3 * kStripe;
    n -= 3 * kStripe;
  }
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c0 = _mm_crc32_u64(c0, w);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c0);
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}

bool HasSse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

}  // namespace

uint32_t Crc32cExtendPortable(uint32_t crc, const void* data, size_t n) {
  return ~PortableRaw(~crc, static_cast<const unsigned char*>(data), n);
}

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n) {
#if defined(__x86_64__)
  if (HasSse42()) return ~HardwareRaw(~crc, static_cast<const unsigned char*>(data), n);
#endif
  return Crc32cExtendPortable(crc, data, n);
}

uint32_t Crc32cCombine(uint32_t crc_a, uint32_t crc_b, size_t len_b) {
  return GfMultiply(crc_a, ShiftConstant(len_b)) ^ crc_b;
}

}  // namespace linalgd
