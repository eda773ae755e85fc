#include "gtest/gtest.h"
#include "linalgd/client.h"
#include "linalgd/dtype.h"
#include "linalgd/matmul.h"
#include "linalgd/solve.h"

namespace linalgd::client {
namespace {

TEST(NamesTest, DTypes) {
  for (DType d : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    EXPECT_EQ(*ParseDType(DTypeName(d)), d);
  }
  EXPECT_EQ(*ParseDType("float64"), DType::kF64);
  EXPECT_EQ(DTypeSize(DType::kBF16), 2u);
  EXPECT_FALSE(ParseDType("int8").ok());
}

TEST(NamesTest, EpiloguesRoundTrip) {
  for (Epilogue e : {Epilogue::kNone, Epilogue::kRelu, Epilogue::kGelu, Epilogue::kBias,
                     Epilogue::kReluBias, Epilogue::kGeluBias}) {
    EXPECT_EQ(*ParseEpilogue(EpilogueName(e)), e);
  }
  EXPECT_EQ(EpilogueName(Epilogue::kGeluBias), "gelu_bias");
  absl::StatusOr<Epilogue> bad = ParseEpilogue("tanh");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("relu_bias"), std::string::npos) << bad.status();
}

TEST(NamesTest, ComputeModesAndSolveMethods) {
  for (ComputeMode m :
       {ComputeMode::kDefault, ComputeMode::kTf32, ComputeMode::kFast16F, ComputeMode::kFast16BF}) {
    EXPECT_EQ(*ParseComputeMode(ComputeModeName(m)), m);
  }
  for (SolveMethod m : {SolveMethod::kAuto, SolveMethod::kLu, SolveMethod::kCholesky,
                        SolveMethod::kQr, SolveMethod::kLstsq}) {
    EXPECT_EQ(*ParseSolveMethod(SolveMethodName(m)), m);
  }
  EXPECT_FALSE(ParseSolveMethod("svd").ok());
  EXPECT_EQ(HealthStatusName(HealthStatus::kNotServing), "NOT_SERVING");
}

}  // namespace
}  // namespace linalgd::client
