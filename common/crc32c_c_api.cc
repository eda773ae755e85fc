// C entry point of CRC32C for other languages: liblinalgd_crc32c.so, which the
// Python client loads with ctypes (a ctypes call releases the GIL, so the parts
// of a parallel transfer are checksummed on several cores at once).

#include <cstddef>
#include <cstdint>

#include "common/crc32c.h"

extern "C" __attribute__((visibility("default"))) uint32_t linalgd_crc32c_extend(uint32_t crc,
                                                                                 const void* data,
                                                                                 size_t n) {
  return linalgd::Crc32cExtend(crc, data, n);
}
