#include "server/metrics/text_format.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace linalgd::metrics {
namespace {

TEST(FormatValueTest, IntegersAreExact) {
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(42), "42");
  EXPECT_EQ(FormatValue(-7), "-7");
  EXPECT_EQ(FormatValue(1234567890123.0), "1234567890123");
  EXPECT_EQ(FormatValue(9007199254740992.0), "9007199254740992");
}

TEST(FormatValueTest, FractionsRoundTrip) {
  EXPECT_EQ(FormatValue(0.005), "0.005");
  EXPECT_EQ(FormatValue(0.1), "0.1");
  EXPECT_EQ(FormatValue(2.5), "2.5");
  const double third = 1.0 / 3.0;
  EXPECT_EQ(std::stod(FormatValue(third)), third);
  EXPECT_EQ(std::stod(FormatValue(1e300)), 1e300);
}

TEST(FormatValueTest, SpecialValues) {
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatValue(std::nan("")), "NaN");
}

TEST(EscapeTest, LabelValueEscapesBackslashQuoteNewline) {
  EXPECT_EQ(EscapeLabelValue("plain"), "plain");
  EXPECT_EQ(EscapeLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
}

TEST(EscapeTest, HelpEscapesBackslashAndNewlineOnly) {
  EXPECT_EQ(EscapeHelp("say \"hi\"\\\n"), "say \"hi\"\\\\\\n");
}

TEST(RenderTextFormatTest, RendersHeadersAndSamples) {
  FamilySnapshot counter{"x_total", "Things.", MetricType::kCounter, {}};
  counter.samples.push_back(Sample{"", {{"op", "Mat\"mul"}, {"code", "OK"}}, 3});
  FamilySnapshot gauge{"y", "Level\nnow.", MetricType::kGauge, {}};
  gauge.samples.push_back(Sample{"", {}, 1.5});
  FamilySnapshot empty{"z", "Nothing yet.", MetricType::kHistogram, {}};
  const FamilySnapshot all[] = {counter, gauge, empty};
  EXPECT_EQ(RenderTextFormat(all),
            "# HELP x_total Things.\n"
            "# TYPE x_total counter\n"
            "x_total{op=\"Mat\\\"mul\",code=\"OK\"} 3\n"
            "# HELP y Level\\nnow.\n"
            "# TYPE y gauge\n"
            "y 1.5\n"
            "# HELP z Nothing yet.\n"
            "# TYPE z histogram\n");
}

}  // namespace
}  // namespace linalgd::metrics
