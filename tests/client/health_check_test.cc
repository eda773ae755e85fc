#include "client/src/health_check.h"

#include "gtest/gtest.h"

namespace linalgd::client::internal {
namespace {

using grpc::health::v1::HealthCheckResponse;

TEST(HealthCheckTest, MapsServingStatus) {
  EXPECT_EQ(HealthStatusFromProto(HealthCheckResponse::UNKNOWN), HealthStatus::kUnknown);
  EXPECT_EQ(HealthStatusFromProto(HealthCheckResponse::SERVING), HealthStatus::kServing);
  EXPECT_EQ(HealthStatusFromProto(HealthCheckResponse::NOT_SERVING), HealthStatus::kNotServing);
  EXPECT_EQ(HealthStatusFromProto(HealthCheckResponse::SERVICE_UNKNOWN),
            HealthStatus::kServiceUnknown);
  EXPECT_EQ(HealthStatusFromProto(9), HealthStatus::kUnknown);  // a newer server's value
}

TEST(HealthCheckTest, MessagesAreTheStandardOnes) {
  EXPECT_EQ(HealthCheckResponse::descriptor()->full_name(), "grpc.health.v1.HealthCheckResponse");
  EXPECT_EQ(HealthCheckResponse::descriptor()->file()->name(), "grpc/health/v1/health.proto");
}

}  // namespace
}  // namespace linalgd::client::internal
