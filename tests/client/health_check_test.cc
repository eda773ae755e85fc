#include "client/src/health_check.h"

#include "gtest/gtest.h"

namespace linalgd::client::internal {
namespace {

TEST(HealthCheckTest, EncodesRequest) {
  EXPECT_EQ(EncodeHealthCheckRequest(""), "");
  EXPECT_EQ(EncodeHealthCheckRequest("linalgd.v1.Linalg"), "\x0a\x11linalgd.v1.Linalg");
}

TEST(HealthCheckTest, DecodesResponse) {
  EXPECT_EQ(*DecodeHealthCheckResponse(""), HealthStatus::kUnknown);
  EXPECT_EQ(*DecodeHealthCheckResponse("\x08\x01"), HealthStatus::kServing);
  EXPECT_EQ(*DecodeHealthCheckResponse("\x08\x02"), HealthStatus::kNotServing);
  EXPECT_EQ(*DecodeHealthCheckResponse("\x08\x03"), HealthStatus::kServiceUnknown);
  EXPECT_EQ(*DecodeHealthCheckResponse("\x08\x09"), HealthStatus::kUnknown);
  // Unknown fields are skipped.
  EXPECT_EQ(*DecodeHealthCheckResponse(absl::string_view("\x12\x02hi\x08\x01\x1d\0\0\0\0", 11)),
            HealthStatus::kServing);
}

TEST(HealthCheckTest, RejectsMalformedResponse) {
  EXPECT_FALSE(DecodeHealthCheckResponse("\x08").ok());
  EXPECT_FALSE(DecodeHealthCheckResponse("\x12\x05hi").ok());
  EXPECT_FALSE(DecodeHealthCheckResponse("\x0f").ok());
}

}  // namespace
}  // namespace linalgd::client::internal
