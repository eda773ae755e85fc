#ifndef LINALGD_COMMON_CRC32C_H_
#define LINALGD_COMMON_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace linalgd {

// CRC32C (Castagnoli, reflected polynomial 0x82F63B78, as iSCSI, ext4 and
// google-crc32c compute it). Extend(Extend(0, a), b) == Crc32c(a + b), so a
// tensor's checksum is computed chunk by chunk. Uses the SSE4.2 crc32
// instruction when the CPU has it (three interleaved streams), else a
// slicing-by-8 table. Thread-safe.
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n);
inline uint32_t Crc32c(const void* data, size_t n) { return Crc32cExtend(0, data, n); }

// Crc32c(a + b) from Crc32c(a), Crc32c(b) and b's length, without the bytes
// (zlib's crc32_combine for the Castagnoli polynomial: multiplication by
// x^(8 * len_b) in GF(2)[x] mod P, O(log len_b)). Crc32cCombine(c, 0, 0) == c.
uint32_t Crc32cCombine(uint32_t crc_a, uint32_t crc_b, size_t len_b);

// The portable table path, for tests that compare the two.
uint32_t Crc32cExtendPortable(uint32_t crc, const void* data, size_t n);

}  // namespace linalgd

#endif  // LINALGD_COMMON_CRC32C_H_
