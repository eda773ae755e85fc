#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "tools/cli/cli_common.h"
#include "tools/cli/json_writer.h"

namespace linalgd::cli {
namespace {

TEST(JsonWriterTest, StringsAreEscaped) {
  EXPECT_EQ(JsonString("a\"b\\c\nd\te\x01"), "\"a\\\"b\\\\c\\nd\\te\\u0001\"");
  EXPECT_EQ(JsonString("gpu:0 µs"), "\"gpu:0 µs\"");  // UTF-8 passes through
}

TEST(JsonWriterTest, NumbersRoundTripAndNonFiniteIsNull) {
  EXPECT_EQ(JsonNumber(0.1), "0.10000000000000001");
  EXPECT_EQ(JsonNumber(3), "3");
  EXPECT_EQ(JsonNumber(std::numeric_limits<double>::quiet_NaN()), "null");
  EXPECT_EQ(JsonNumber(INFINITY), "null");
}

TEST(JsonWriterTest, ObjectKeepsKeyOrder) {
  const std::string json = JsonObject()
                               .Str("id", "x")
                               .Int("n", -4)
                               .Bool("ok", true)
                               .Raw("shape", JsonIntArray({2, 3}))
                               .Raw("none", JsonArray({}))
                               .str();
  EXPECT_EQ(json, R"({"id": "x", "n": -4, "ok": true, "shape": [2, 3], "none": []})");
}

TEST(JsonWriterTest, ErrorNamesCodeMessageAndExitCode) {
  EXPECT_EQ(ErrorJson(absl::NotFoundError("no \"t\""), kExitServerError),
            R"({"error": {"code": "NOT_FOUND", "message": "no \"t\"", "exit_code": 1}})");
}

}  // namespace
}  // namespace linalgd::cli
