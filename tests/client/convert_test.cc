#include "client/src/convert.h"

#include "gtest/gtest.h"

namespace linalgd::client::internal {
namespace {

TEST(ConvertTest, TensorRoundTrip) {
  Tensor t = *Tensor::FromVector<double>({2, 1}, {1.5, -2});
  v1::Tensor proto;
  ToProto(t, &proto);
  EXPECT_EQ(proto.dtype(), v1::DTYPE_F64);
  EXPECT_EQ(proto.shape_size(), 2);
  EXPECT_EQ(proto.shape(0), 2);
  EXPECT_EQ(proto.data(), t.bytes());
  absl::StatusOr<Tensor> back = FromProto(&proto);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, t);
}

TEST(ConvertTest, EveryDTypeMaps) {
  for (DType d : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16, DType::kC64, DType::kC128}) {
    EXPECT_EQ(*FromProto(ToProto(d)), d);
  }
  EXPECT_FALSE(FromProto(v1::DTYPE_UNSPECIFIED).ok());
}

TEST(ConvertTest, BadResponseTensorsAreErrors) {
  v1::Tensor proto;
  proto.set_dtype(v1::DTYPE_F32);
  proto.add_shape(2);
  EXPECT_EQ(FromProto(&proto).status().code(), absl::StatusCode::kInvalidArgument);  // no data
  proto.set_data("abc");
  EXPECT_EQ(FromProto(&proto).status().code(), absl::StatusCode::kInvalidArgument);  // 3 bytes
  proto.set_dtype(static_cast<v1::DType>(42));
  EXPECT_EQ(FromProto(&proto).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ConvertTest, MatmulArgsSetEveryField) {
  MatmulArgs args;
  args.a = *Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  args.b = *Tensor::FromVector<float>({3, 1}, {1, 1, 1});
  args.c = *Tensor::FromVector<float>({2, 1}, {0, 0});
  args.bias = *Tensor::FromVector<float>({1}, {0.5});
  args.transpose_a = true;
  args.transpose_b = true;
  args.alpha = 2;
  args.beta = 0.5;
  args.alpha_imag = -1;
  args.beta_imag = 0.25;
  args.epilogue = Epilogue::kGeluBias;
  args.compute_mode = ComputeMode::kFast16BF;
  args.output_dtype = DType::kF16;
  args.allow_non_finite = true;
  args.priority = 3;
  const v1::MatmulRequest req = ToProto(args);
  EXPECT_EQ(req.a().shape_size(), 2);
  EXPECT_EQ(req.b().data().size(), 12u);
  EXPECT_TRUE(req.has_c());
  EXPECT_TRUE(req.has_bias());
  EXPECT_TRUE(req.transpose_a());
  EXPECT_TRUE(req.transpose_b());
  ASSERT_TRUE(req.has_alpha());
  EXPECT_EQ(req.alpha(), 2);
  ASSERT_TRUE(req.has_beta());
  EXPECT_EQ(req.beta(), 0.5);
  EXPECT_EQ(req.alpha_imag(), -1);
  EXPECT_EQ(req.beta_imag(), 0.25);
  EXPECT_EQ(req.epilogue(), v1::EPILOGUE_GELU_BIAS);
  EXPECT_EQ(req.compute_mode(), v1::COMPUTE_MODE_FAST_16BF);
  EXPECT_EQ(req.output_dtype(), v1::DTYPE_F16);
  EXPECT_TRUE(req.allow_non_finite());
  EXPECT_EQ(req.priority(), 3);
}

TEST(ConvertTest, MatmulArgsDefaultsLeaveOptionalsUnset) {
  MatmulArgs args;
  args.a = *Tensor::Zeros(DType::kF32, {1, 1});
  args.b = *Tensor::Zeros(DType::kF32, {1, 1});
  const v1::MatmulRequest req = ToProto(args);
  EXPECT_FALSE(req.has_c());
  EXPECT_FALSE(req.has_bias());
  EXPECT_FALSE(req.has_alpha());
  EXPECT_FALSE(req.has_beta());
  EXPECT_EQ(req.output_dtype(), v1::DTYPE_UNSPECIFIED);
  EXPECT_EQ(req.epilogue(), v1::EPILOGUE_NONE);
  EXPECT_EQ(req.compute_mode(), v1::COMPUTE_MODE_DEFAULT);
}

TEST(ConvertTest, EnumsMapOneToOne) {
  EXPECT_EQ(ToProto(Epilogue::kNone), v1::EPILOGUE_NONE);
  EXPECT_EQ(ToProto(Epilogue::kRelu), v1::EPILOGUE_RELU);
  EXPECT_EQ(ToProto(Epilogue::kGelu), v1::EPILOGUE_GELU);
  EXPECT_EQ(ToProto(Epilogue::kBias), v1::EPILOGUE_BIAS);
  EXPECT_EQ(ToProto(Epilogue::kReluBias), v1::EPILOGUE_RELU_BIAS);
  EXPECT_EQ(ToProto(ComputeMode::kTf32), v1::COMPUTE_MODE_TF32);
  EXPECT_EQ(ToProto(ComputeMode::kFast16F), v1::COMPUTE_MODE_FAST_16F);
  for (SolveMethod m : {SolveMethod::kAuto, SolveMethod::kLu, SolveMethod::kCholesky,
                        SolveMethod::kQr, SolveMethod::kLstsq}) {
    EXPECT_EQ(FromProto(ToProto(m)), m);
  }
}

TEST(ConvertTest, SolveRequestAndResponse) {
  SolveArgs args;
  args.a = *Tensor::FromVector<double>({1, 1}, {2});
  args.b = *Tensor::FromVector<double>({1, 1}, {4});
  args.method = SolveMethod::kCholesky;
  args.no_fallback = true;
  args.priority = -1;
  const v1::SolveRequest req = ToProto(args);
  EXPECT_EQ(req.method(), v1::SOLVE_METHOD_CHOLESKY);
  EXPECT_TRUE(req.no_fallback());
  EXPECT_FALSE(req.allow_non_finite());
  EXPECT_EQ(req.priority(), -1);

  v1::SolveResponse resp;
  ToProto(*Tensor::FromVector<double>({1, 1}, {2}), resp.mutable_x());
  resp.set_method_used(v1::SOLVE_METHOD_LU);
  resp.set_fallback("cholesky: leading minor 1 is not positive definite; used lu");
  resp.set_residual(1e-17);
  resp.mutable_info()->set_backend("cpu");
  resp.mutable_info()->set_run_time_ns(1234);
  absl::StatusOr<SolveResult> result = FromProto(&resp);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->x.ToVector<double>(), std::vector<double>({2}));
  EXPECT_EQ(result->method_used, SolveMethod::kLu);
  EXPECT_EQ(result->residual, 1e-17);
  EXPECT_EQ(result->info.backend, "cpu");
  EXPECT_EQ(result->info.run_time_ns, 1234);
  EXPECT_NE(result->fallback.find("minor 1"), std::string::npos);
}

TEST(ConvertTest, ServerInfoCopiesEverything) {
  v1::GetServerInfoResponse resp;
  resp.set_version("0.1.0");
  resp.add_backends("cpu");
  resp.add_backends("gpu:0");
  v1::Device* d = resp.add_devices();
  d->set_index(0);
  d->set_name("H200");
  d->set_compute_capability("9.0");
  d->set_total_memory_bytes(100);
  d->set_budget_bytes(80);
  d->set_healthy(true);
  d->set_status("ok");
  resp.mutable_limits()->set_max_message_bytes(1 << 30);
  resp.mutable_limits()->set_cpu_threshold(512);
  resp.mutable_limits()->set_cpu_threads(2);
  resp.mutable_limits()->set_cpu_thresholds_measured(true);
  v1::CpuThreshold* t = resp.mutable_limits()->add_cpu_thresholds();
  t->set_op("solve");
  t->set_dtype(v1::DTYPE_F64);
  t->set_threshold(256);
  resp.set_gpu_status("");
  const ServerInfo info = FromProto(resp);
  EXPECT_EQ(info.version, "0.1.0");
  EXPECT_EQ(info.backends, std::vector<std::string>({"cpu", "gpu:0"}));
  ASSERT_EQ(info.devices.size(), 1u);
  EXPECT_EQ(info.devices[0].compute_capability, "9.0");
  EXPECT_EQ(info.devices[0].budget_bytes, 80);
  EXPECT_TRUE(info.devices[0].healthy);
  EXPECT_EQ(info.limits.max_message_bytes, 1 << 30);
  EXPECT_EQ(info.limits.cpu_threshold, 512);
  EXPECT_EQ(info.limits.cpu_threads, 2);
  EXPECT_TRUE(info.limits.cpu_thresholds_measured);
  ASSERT_EQ(info.limits.cpu_thresholds.size(), 1u);
  EXPECT_EQ(info.limits.cpu_thresholds[0].op, "solve");
  EXPECT_EQ(info.limits.cpu_thresholds[0].dtype, DType::kF64);
  EXPECT_EQ(info.limits.cpu_thresholds[0].threshold, 256);
}

TEST(ConvertTest, ServerInfoSaysWhetherTheReplicaDrains) {
  v1::GetServerInfoResponse resp;
  EXPECT_FALSE(FromProto(resp).draining);
  resp.set_draining(true);
  EXPECT_TRUE(FromProto(resp).draining);
}

TEST(ConvertTest, GrpcStatusKeepsCodeAndMessage) {
  EXPECT_TRUE(FromGrpc(grpc::Status::OK).ok());
  const absl::Status s =
      FromGrpc(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "lu: pivot 3 is zero"));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "lu: pivot 3 is zero");
  EXPECT_EQ(FromGrpc(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "x")).code(),
            absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace linalgd::client::internal
