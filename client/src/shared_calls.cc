#include "client/src/shared_calls.h"

#include <utility>

#include "client/src/convert.h"

namespace linalgd::client::internal {
namespace {

// `t` names the whole current extent of `shared`.
void SetShared(const SharedTensor& shared, v1::Tensor* t) {
  t->Clear();
  t->set_dtype(ToProto(shared.dtype()));
  for (int64_t d : shared.shape()) t->add_shape(d);
  SharedRef(shared, shared.num_bytes(), t->mutable_shm());
}

void SetOutput(const SharedTensor& out, v1::SharedMemoryRef* ref) {
  SharedRef(out, out.capacity_bytes(), ref);
}

// Gives `out` the result `t` describes: written in place (shm), or copied
// from inline bytes. `t` is left empty.
absl::Status TakeResult(v1::Tensor* t, SharedTensor& out) {
  if (t->source_case() != v1::Tensor::kShm) {
    absl::StatusOr<Tensor> inline_result = FromProto(t);
    if (!inline_result.ok()) return inline_result.status();
    return out.CopyFrom(*inline_result);
  }
  absl::StatusOr<DType> dtype = FromProto(t->dtype());
  if (!dtype.ok()) return dtype.status();
  absl::Status s = out.Reshape(*dtype, std::vector<int64_t>(t->shape().begin(), t->shape().end()));
  t->Clear();
  return s;
}

}  // namespace

bool UsesShared(const MatmulArgs& args) {
  return args.a_shared != nullptr || args.b_shared != nullptr || args.out_shared != nullptr;
}

bool UsesShared(const SolveArgs& args) {
  return args.a_shared != nullptr || args.b_shared != nullptr || args.x_shared != nullptr;
}

absl::StatusOr<MatmulResult> SharedMatmul(v1::Linalg::Stub& stub, MatmulArgs args,
                                          grpc::ClientContext& context) {
  const SharedTensor* a = args.a_shared;
  const SharedTensor* b = args.b_shared;
  SharedTensor* out = args.out_shared;
  v1::MatmulRequest request = ToProto(std::move(args));
  if (a != nullptr) SetShared(*a, request.mutable_a());
  if (b != nullptr) SetShared(*b, request.mutable_b());
  if (out != nullptr) SetOutput(*out, request.mutable_out_shm());
  v1::MatmulResponse response;
  const grpc::Status status = stub.Matmul(&context, request, &response);
  if (!status.ok()) return FromGrpc(status);
  if (out == nullptr) return FromProto(&response);
  if (absl::Status s = TakeResult(response.mutable_out(), *out); !s.ok()) return s;
  MatmulResult result;
  result.info = FromProto(response.info());
  return result;
}

absl::StatusOr<SolveResult> SharedSolve(v1::Linalg::Stub& stub, SolveArgs args,
                                        grpc::ClientContext& context) {
  const SharedTensor* a = args.a_shared;
  const SharedTensor* b = args.b_shared;
  SharedTensor* x = args.x_shared;
  v1::SolveRequest request = ToProto(std::move(args));
  if (a != nullptr) SetShared(*a, request.mutable_a());
  if (b != nullptr) SetShared(*b, request.mutable_b());
  if (x != nullptr) SetOutput(*x, request.mutable_out_shm());
  v1::SolveResponse response;
  const grpc::Status status = stub.Solve(&context, request, &response);
  if (!status.ok()) return FromGrpc(status);
  if (x != nullptr) {
    if (absl::Status s = TakeResult(response.mutable_x(), *x); !s.ok()) return s;
    response.mutable_x()->set_resident_id("");  // FromProto below: no tensor to read
  }
  return FromProto(&response);
}

}  // namespace linalgd::client::internal
