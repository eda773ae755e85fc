#include "tools/bench/callers.h"

#include <memory>
#include <random>
#include <utility>

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

MatmulCaller::MatmulCaller(Client& client, const MatmulOperands& operands, bool in_place)
    : client_(client), operands_(operands), in_place_(in_place) {}

absl::Status MatmulCaller::Init() {
  if (!in_place_) return absl::OkStatus();
  for (auto [dst, src] : {std::pair{&a_, &operands_.a}, std::pair{&b_, &operands_.b}}) {
    absl::StatusOr<std::unique_ptr<client::SharedTensor>> t =
        client_.CreateSharedTensor(src->dtype(), src->shape());
    if (!t.ok()) return t.status();
    *dst = *std::move(t);
    if (absl::Status s = (*dst)->CopyFrom(*src); !s.ok()) return s;
  }
  absl::StatusOr<std::unique_ptr<client::SharedTensor>> out =
      client_.CreateSharedTensor(operands_.dtype, {operands_.m, operands_.n});
  if (!out.ok()) return out.status();
  out_ = *std::move(out);
  return absl::OkStatus();
}

absl::Status MatmulCaller::Prepare() {
  next_ = client::MatmulArgs();
  if (in_place_) {
    if (out_ == nullptr) return absl::FailedPreconditionError("MatmulCaller: Init() first");
    next_.a_shared = a_.get();
    next_.b_shared = b_.get();
    next_.out_shared = out_.get();
    return absl::OkStatus();
  }
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
