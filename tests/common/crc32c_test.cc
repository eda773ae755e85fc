#include "common/crc32c.h"

#include <algorithm>
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

// Crc32c of random splits of random data into parts (some empty, odd sizes)
// combined in order equals Crc32c of the concatenation.
TEST(Crc32cTest, CombineMatchesCrcOfConcatenation) {
  std::mt19937 gen(11);
  std::vector<unsigned char> data(100003);
  for (auto& b : data) b = static_cast<unsigned char>(gen());
  for (int trial = 0; trial < 50; ++trial) {
    const size_t n = gen() % data.size();
    std::vector<size_t> cuts = {0, n};
    for (int k = gen() % 6; k > 0; --k) cuts.push_back(gen() % (n + 1));
    if (trial % 5 == 0) cuts.push_back(cuts.back());  // an empty part
    std::sort(cuts.begin(), cuts.end());
    uint32_t combined = 0;
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
      const size_t len = cuts[i + 1] - cuts[i];
      combined = Crc32cCombine(combined, Crc32c(data.data() + cuts[i], len), len);
    }
    EXPECT_EQ(combined, Crc32c(data.data(), n)) << "trial " << trial << " n " << n;
  }
}

TEST(Crc32cTest, CombineWithEmptyPartsIsIdentity) {
  const uint32_t c = Crc32c("123456789", 9);
  EXPECT_EQ(Crc32cCombine(c, 0, 0), c);
  EXPECT_EQ(Crc32cCombine(0, c, 9), c);
  EXPECT_EQ(Crc32cCombine(Crc32c("1234", 4), Crc32c("56789", 5), 5), c);
}

}  // namespace
}  // namespace linalgd
