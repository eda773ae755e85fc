#include "server/store/crc32c.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace linalgd {
namespace {

TEST(Crc32cTest, KnownVectors) {
  // RFC 3720 B.4 and the usual check value.
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
  std::string zeros(32, '\0');
  EXPECT_EQ(Crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  std::string ones(32, '\xff');
  EXPECT_EQ(Crc32c(ones.data(), ones.size()), 0x62A8AB43u);
  std::string inc(32, '\0');
  for (int i = 0; i < 32; ++i) inc[i] = static_cast<char>(i);
  EXPECT_EQ(Crc32c(inc.data(), inc.size()), 0x46DD794Eu);
  EXPECT_EQ(Crc32c("", 0), 0u);
}

TEST(Crc32cTest, HardwareMatchesPortableOnOddSizesAndSplits) {
  std::mt19937 gen(7);
  std::vector<unsigned char> data(3 * 8192 * 2 + 1000);
  for (auto& b : data) b = static_cast<unsigned char>(gen());
  for (size_t n : {0ul, 1ul, 7ul, 8ul, 9ul, 63ul, 24575ul, 24576ul, 24577ul, data.size()}) {
    EXPECT_EQ(Crc32c(data.data(), n), Crc32cExtendPortable(0, data.data(), n)) << n;
  }
  const uint32_t whole = Crc32c(data.data(), data.size());
  for (size_t split : {1ul, 13ul, 8192ul, 24576ul, data.size() - 1}) {
    uint32_t c = Crc32cExtend(0, data.data(), split);
    c = Crc32cExtend(c, data.data() + split, data.size() - split);
    EXPECT_EQ(c, whole) << split;
  }
}

}  // namespace
}  // namespace linalgd
