#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <sstream>

#include "gtest/gtest.h"
#include "tools/cli/progress_line.h"

namespace linalgd::cli {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

TEST(FormatTest, BytesInBinaryUnits) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(12 * kMiB), "12.0 MiB");
  EXPECT_EQ(FormatBytes(int64_t{3} << 30), "3.0 GiB");
  EXPECT_EQ(FormatBytes(int64_t{5} << 40), "5.0 TiB");
}

TEST(FormatTest, EtaInSecondsMinutesHours) {
  EXPECT_EQ(FormatEta(absl::Seconds(3.9)), "3s");
  EXPECT_EQ(FormatEta(absl::Seconds(65)), "1m05s");
  EXPECT_EQ(FormatEta(absl::Hours(2) + absl::Minutes(3)), "2h03m");
}

TEST(FormatTest, ProgressHasBytesPercentRateAndEta) {
  EXPECT_EQ(FormatProgress(256 * kMiB, 1024 * kMiB, absl::Seconds(2)),
            "256.0 MiB / 1.0 GiB (25%)  128.0 MiB/s  ETA 6s");
  EXPECT_EQ(FormatProgress(0, 8 * kMiB, absl::Seconds(1)), "0 B / 8.0 MiB (0%)  0 B/s  ETA ?");
  EXPECT_EQ(FormatProgress(0, 0, absl::ZeroDuration()), "0 B / 0 B (100%)  0 B/s  ETA ?");
}

// Updates at start + offsets; returns what was drawn.
class ProgressLineTest : public ::testing::Test {
 protected:
  absl::Time At(absl::Duration offset) const { return start_ + offset; }
  const absl::Time start_ = absl::FromUnixSeconds(1000);
  std::ostringstream out_;
};

TEST_F(ProgressLineTest, QuickTransferDrawsNothing) {
  ProgressLine line(out_, /*enabled=*/true, start_);
  line.Update(kMiB, 2 * kMiB, At(absl::Milliseconds(500)));
  line.Update(2 * kMiB, 2 * kMiB, At(absl::Seconds(3)));  // complete at its first draw
  line.Finish();
  EXPECT_EQ(out_.str(), "");
}

TEST_F(ProgressLineTest, RedrawsInPlaceAtMostEveryIntervalAndEndsTheLine) {
  ProgressLine line(out_, /*enabled=*/true, start_);
  line.Update(1 * kMiB, 4 * kMiB, At(absl::Seconds(1)));
  line.Update(2 * kMiB, 4 * kMiB, At(absl::Milliseconds(1050)));  // too soon: skipped
  line.Update(3 * kMiB, 4 * kMiB, At(absl::Milliseconds(1100)));
  line.Update(4 * kMiB, 4 * kMiB, At(absl::Milliseconds(1120)));  // the last: always drawn
  line.Finish();                                                  // already ended
  const std::string clear = "\033[K";
  EXPECT_EQ(out_.str(), "\r" + FormatProgress(1 * kMiB, 4 * kMiB, absl::Seconds(1)) + clear + "\r" +
                            FormatProgress(3 * kMiB, 4 * kMiB, absl::Milliseconds(1100)) + clear +
                            "\r" + FormatProgress(4 * kMiB, 4 * kMiB, absl::Milliseconds(1120)) +
                            clear + "\n");
}

TEST_F(ProgressLineTest, FinishEndsALineLeftOpen) {
  ProgressLine line(out_, /*enabled=*/true, start_);
  line.Update(kMiB, 4 * kMiB, At(absl::Seconds(2)));  // then the transfer failed
  line.Finish();
  EXPECT_EQ(out_.str().back(), '\n');
  EXPECT_EQ(out_.str().find('\n'), out_.str().size() - 1);
}

TEST_F(ProgressLineTest, DisabledDrawsNothing) {
  ProgressLine line(out_, /*enabled=*/false, start_);
  line.Update(kMiB, 4 * kMiB, At(absl::Seconds(2)));
  line.Update(4 * kMiB, 4 * kMiB, At(absl::Seconds(3)));
  line.Finish();
  EXPECT_EQ(out_.str(), "");
}

TEST(ProgressWantedTest, OnlyOnATerminalWithoutQuietOrJson) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  EXPECT_FALSE(ProgressWanted(pipe_fds[1], /*quiet=*/false, /*json=*/false));
  close(pipe_fds[0]);
  close(pipe_fds[1]);

  const int master = posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0) GTEST_SKIP() << "no pseudo-terminals here";
  ASSERT_EQ(grantpt(master), 0);
  ASSERT_EQ(unlockpt(master), 0);
  const int terminal = open(ptsname(master), O_RDWR | O_NOCTTY);
  ASSERT_GE(terminal, 0);
  EXPECT_TRUE(ProgressWanted(terminal, /*quiet=*/false, /*json=*/false));
  EXPECT_FALSE(ProgressWanted(terminal, /*quiet=*/true, /*json=*/false));
  EXPECT_FALSE(ProgressWanted(terminal, /*quiet=*/false, /*json=*/true));
  close(terminal);
  close(master);
}

}  // namespace
}  // namespace linalgd::cli
