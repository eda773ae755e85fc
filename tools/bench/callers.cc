#include "tools/bench/callers.h"

#include <random>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/client_context.h"

namespace linalgd::bench {

client::Tensor RandomMatrix(int64_t rows, int64_t cols, uint32_t seed, client::DType dtype) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> values(static_cast<size_t>(rows * cols));
  for (float& v : values) v = dist(rng);
  if (dtype == client::DType::kF64) {
    return *client::Tensor::FromVector<double>({rows, cols},
                                               std::vector<double>(values.begin(), values.end()));
  }
  return *client::Tensor::FromVector<float>({rows, cols}, values);
}

MatmulOperands::MatmulOperands(int64_t m, int64_t n, int64_t k, client::DType dtype)
    : m(m),
      n(n),
      k(k),
      dtype(dtype),
      a(RandomMatrix(m, k, 1, dtype)),
      b(RandomMatrix(k, n, 2, dtype)) {}

MatmulCaller::MatmulCaller(Client& client, const MatmulOperands& operands)
    : client_(client), operands_(operands) {}

absl::Status MatmulCaller::Prepare() {
  next_ = client::MatmulArgs();
  next_.a = operands_.a;
  next_.b = operands_.b;
  return absl::OkStatus();
}

absl::Status MatmulCaller::Call() {
  absl::StatusOr<client::MatmulResult> result = client_.Matmul(std::move(next_));
  if (!result.ok()) return result.status();
  last_info_ = std::move(result->info);
  ++calls_;
  total_run_ns_ += last_info_.run_time_ns;
  total_queue_ns_ += last_info_.queue_time_ns;
  return absl::OkStatus();
}

EchoCaller::EchoCaller(echo::Echo::Stub& stub, int64_t request_bytes, int64_t response_bytes)
    : stub_(stub) {
  request_.mutable_payload()->resize(static_cast<size_t>(request_bytes));
  request_.set_response_bytes(response_bytes);
}

absl::Status EchoCaller::Call() {
  grpc::ClientContext context;
  echo::EchoResponse response;
  const grpc::Status status = stub_.Echo(&context, request_, &response);
  if (!status.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                        absl::StrCat("echo: ", status.error_message()));
  }
  return absl::OkStatus();
}

}  // namespace linalgd::bench
