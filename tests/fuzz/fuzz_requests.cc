// libFuzzer target: the checks the service runs on a request before it
// enqueues a job, without a server. Input: one byte picking the message
// kind, then the message's wire bytes (ParseFromArray; unparsable inputs are
// skipped). Kinds:
//   0 MatmulRequest      PrepareMatmul, then the job-cost functions
//   1 SolveRequest       PrepareSolve (without factor_id, as StartSolve routes)
//   2 SparseSolveRequest PrepareSparseSolve, CompleteSparseSolve, UseDensePath
//   3 FactorizeRequest   ResolveTensor(a) and SolveMethodFromProto (the
//                        public pieces; PrepareFactorize is file-local)
//   4 PutTensorRequest   CheckPutHeader on a header (a chunk needs a stream)
//   5 StartUploadRequest CheckPutHeader on its header
// Limits: 1 << 20 elements per tensor, so a valid request cannot make the
// target allocate much (a plan may allocate O(batch) offsets, batch <=
// 1 << 20). Tensors may name a resident id (none exists: NOT_FOUND) or
// shared memory (refused: no registry); keep_result gets a 64 MiB store.
#include <google/protobuf/stubs/logging.h>

#include <cstdlib>

#include "server/service/calls.h"
#include "server/service/requests.h"
#include "server/service/sparse_dense_path.h"
#include "server/service/sparse_request.h"
#include "server/service/store_calls.h"
#include "server/store/resident_store.h"
#include "tests/fuzz/fuzz_support.h"

namespace linalgd {
namespace {

const CallEnv& Env() {
  static ResidentStore* store = [] {
    StoreOptions o;
    o.capacity_bytes = int64_t{64} << 20;
    return new ResidentStore(o);
  }();
  static const CallEnv env = [] {
    CallEnv e;
    e.limits.max_elements = int64_t{1} << 20;
    e.sources.store = store;
    return e;
  }();
  return env;
}

template <typename M>
bool Parse(const uint8_t* data, size_t size, M& m) {
  return m.ParseFromArray(data, static_cast<int>(size));
}

void Matmul(const v1::MatmulRequest& r, const CallEnv& env) {
  absl::StatusOr<PreparedMatmul> p = PrepareMatmul(r, env.limits, env.sources);
  if (!p.ok()) return;
  FUZZ_REQUIRE(NumElements(p->plan.out_shape) <= env.limits.max_elements);
  CheckInputsFinite(*p).IgnoreError();
  FUZZ_REQUIRE(PayloadBytes(*p) >= 0 && Flops(*p) >= 0 && LargestDim(*p) >= 0);
  FUZZ_REQUIRE(DeviceBytes(*p) >= 0);
}

void Solve(const v1::SolveRequest& r, const CallEnv& env) {
  if (!r.factor_id().empty()) return;  // StartFactorSolve's (file-local) checks
  absl::StatusOr<PreparedSolve> p = PrepareSolve(r, env.limits, env.sources);
  if (!p.ok()) return;
  CheckInputsFinite(*p).IgnoreError();
  FUZZ_REQUIRE(PayloadBytes(*p) >= 0 && Flops(*p) >= 0 && LargestDim(*p) >= 0);
  FUZZ_REQUIRE(DeviceBytes(*p) >= 0);
}

void SparseSolve(const v1::SparseSolveRequest& r, const CallEnv& env) {
  absl::StatusOr<PreparedSparseSolve> p = PrepareSparseSolve(r, env.limits, env.sources);
  if (!p.ok() || !CompleteSparseSolve(*p).ok()) return;
  FUZZ_REQUIRE(CompleteSparseSolve(*p).ok());  // idempotent
  UseDensePath(p->op, p->plan, env.sparse_dense_threshold, env.limits.max_elements);
}

void Factorize(const v1::FactorizeRequest& r, const CallEnv& env) {
  InputLeases leases;
  ResolveTensor(r.a(), "a", env.limits, env.sources, leases).status().IgnoreError();
  SolveMethodFromProto(r.method()).status().IgnoreError();
}

}  // namespace
}  // namespace linalgd

// Protobuf logs every string field with invalid UTF-8 it parses: silenced.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace linalgd;
  if (size == 0) return 0;
  const CallEnv& env = Env();
  const uint8_t kind = data[0] % 6;
  ++data;
  --size;
  switch (kind) {
    case 0: {
      v1::MatmulRequest r;
      if (Parse(data, size, r)) Matmul(r, env);
      break;
    }
    case 1: {
      v1::SolveRequest r;
      if (Parse(data, size, r)) Solve(r, env);
      break;
    }
    case 2: {
      v1::SparseSolveRequest r;
      if (Parse(data, size, r)) SparseSolve(r, env);
      break;
    }
    case 3: {
      v1::FactorizeRequest r;
      if (Parse(data, size, r)) Factorize(r, env);
      break;
    }
    case 4: {
      v1::PutTensorRequest r;
      if (Parse(data, size, r) && r.has_header()) CheckPutHeader(env, r.header()).IgnoreError();
      break;
    }
    case 5: {
      v1::StartUploadRequest r;
      if (Parse(data, size, r)) CheckPutHeader(env, r.header()).IgnoreError();
      break;
    }
  }
  return 0;
}
