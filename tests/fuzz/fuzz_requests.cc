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
// 1 << 20). Tensors may name a resident id (none exists: NOT_FOUND);
// keep_result gets a 64 MiB store. Shared memory is a real registry holding
// one sealed 1 MiB memfd: every SharedMemoryRef of the input whose region is
// not empty and does not start with '!' is pointed at it, with its secret,
// so offsets and sizes meet real bounds checks ('!' names stay unknown ids).
// Checked: every view and output range a prepared request holds inside the
// region stays inside it, aligned, and a result the backend may write
// straight into out_shm overlaps no operand.
#include <fcntl.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/stubs/logging.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "server/service/calls.h"
#include "server/service/requests.h"
#include "server/service/sparse_dense_path.h"
#include "server/service/sparse_request.h"
#include "server/service/store_calls.h"
#include "server/store/resident_store.h"
#include "server/store/shm_registry.h"
#include "tests/fuzz/fuzz_support.h"

namespace linalgd {
namespace {

constexpr int64_t kRegionBytes = int64_t{1} << 20;

// The registry's one region: its grant and where the server mapped it.
struct Region {
  ShmGrant grant;
  ShmRange range;
};

const Region& SharedRegion(ShmRegistry& registry) {
  static const Region* region = [&registry] {
    const int fd = memfd_create("fuzz_requests", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    FUZZ_REQUIRE(fd >= 0);
    FUZZ_REQUIRE(ftruncate(fd, kRegionBytes) == 0);
    FUZZ_REQUIRE(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0);
    absl::StatusOr<ShmGrant> grant = registry.Register(fd, ShmPeer{1, getuid(), getpid()});
    close(fd);
    FUZZ_REQUIRE(grant.ok());
    absl::StatusOr<ShmRange> range =
        registry.Resolve(grant->id, grant->secret, 0, kRegionBytes, 1, "fuzz");
    FUZZ_REQUIRE(range.ok() && range->bytes == kRegionBytes);
    return new Region{*std::move(grant), *std::move(range)};
  }();
  return *region;
}

const CallEnv& Env() {
  static ShmRegistry* shm = new ShmRegistry(nullptr, ShmLimits{});
  static ResidentStore* store = [] {
    StoreOptions o;
    o.capacity_bytes = int64_t{64} << 20;
    return new ResidentStore(o);
  }();
  static const CallEnv env = [] {
    CallEnv e;
    e.limits.max_elements = int64_t{1} << 20;
    e.sources.store = store;
    e.sources.shm = shm;
    return e;
  }();
  SharedRegion(*shm);
  return env;
}

// Points every SharedMemoryRef in `m` (at any depth) at the region, as the
// file comment says.
void UseRegion(google::protobuf::Message& m, const ShmGrant& grant) {
  if (m.GetDescriptor() == v1::SharedMemoryRef::descriptor()) {
    auto& ref = static_cast<v1::SharedMemoryRef&>(m);
    if (!ref.region().empty() && ref.region()[0] != '!') {
      ref.set_region(grant.id);
      ref.set_secret(grant.secret);
    }
    return;
  }
  const google::protobuf::Reflection* r = m.GetReflection();
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  r->ListFields(m, &fields);
  for (const google::protobuf::FieldDescriptor* f : fields) {
    if (f->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (!f->is_repeated()) {
      UseRegion(*r->MutableMessage(&m, f), grant);
      continue;
    }
    for (int i = 0; i < r->FieldSize(m, f); ++i) {
      UseRegion(*r->MutableRepeatedMessage(&m, f, i), grant);
    }
  }
}

// Parses `m` and points its SharedMemoryRefs at the region.
bool Parse(const uint8_t* data, size_t size, const ShmGrant& grant, google::protobuf::Message& m) {
  if (!m.ParseFromArray(data, static_cast<int>(size))) return false;
  UseRegion(m, grant);
  return true;
}

// p's offset in the region, or -1 where p lies outside it (one past its end
// included: an empty range there reads nothing).
int64_t RegionOffset(const std::byte* p) {
  const std::byte* base = SharedRegion(*Env().sources.shm).range.data;
  return p >= base && p <= base + kRegionBytes ? p - base : -1;
}

bool InRegion(const std::byte* p) {
  const int64_t offset = RegionOffset(p);
  return offset >= 0 && offset < kRegionBytes;
}

// `bytes` from p lie wholly inside the region.
bool RangeInside(const std::byte* p, int64_t bytes) {
  const int64_t offset = RegionOffset(p);
  return offset >= 0 && bytes >= 0 && bytes <= kRegionBytes - offset;
}

// A view into the region lies wholly inside it, at a multiple of its
// element size.
void RequireInside(const TensorView* v) {
  if (v == nullptr || !InRegion(v->data)) return;
  FUZZ_REQUIRE(RangeInside(v->data, static_cast<int64_t>(v->num_bytes())));
  FUZZ_REQUIRE(RegionOffset(v->data) % static_cast<int64_t>(DTypeSize(v->dtype)) == 0);
}

// Every input view into the region lies inside it, the output range too and
// holds a result of `bytes`, and where the backend may write it directly, it
// overlaps none of `inputs`.
void RequireOutput(const OutputSpec& out, const ResultDestination& to, int64_t bytes,
                   std::initializer_list<const TensorView*> inputs) {
  for (const TensorView* in : inputs) RequireInside(in);
  if (out.shm) FUZZ_REQUIRE(RangeInside(out.shm->data, out.shm->bytes) && out.shm->bytes >= bytes);
  if (to.data() == nullptr || !InRegion(to.data())) return;
  FUZZ_REQUIRE(out.shm && to.data() == out.shm->data);
  FUZZ_REQUIRE(static_cast<int64_t>(to.capacity()) >= bytes);
  for (const TensorView* in : inputs) {
    if (in == nullptr || in->data == nullptr || in->num_bytes() == 0) continue;
    FUZZ_REQUIRE(in->data >= to.data() + to.capacity() || to.data() >= in->data + in->num_bytes());
  }
}

void Matmul(const v1::MatmulRequest& r, const CallEnv& env) {
  absl::StatusOr<PreparedMatmul> p = PrepareMatmul(r, env.limits, env.sources);
  if (!p.ok()) return;
  FUZZ_REQUIRE(NumElements(p->plan.out_shape) <= env.limits.max_elements);
  CheckInputsFinite(*p).IgnoreError();
  FUZZ_REQUIRE(PayloadBytes(*p) >= 0 && Flops(*p) >= 0 && LargestDim(*p) >= 0);
  FUZZ_REQUIRE(DeviceBytes(*p) >= 0);
  const TensorView* c = p->op.c ? &*p->op.c : nullptr;
  const TensorView* bias = p->op.bias ? &*p->op.bias : nullptr;
  RequireOutput(p->output, p->op.result_to,
                NumElements(p->plan.out_shape) * static_cast<int64_t>(DTypeSize(p->op.out_dtype)),
                {&p->op.a, &p->op.b, c, bias});
}

void Solve(const v1::SolveRequest& r, const CallEnv& env) {
  if (!r.factor_id().empty()) return;  // StartFactorSolve's (file-local) checks
  absl::StatusOr<PreparedSolve> p = PrepareSolve(r, env.limits, env.sources);
  if (!p.ok()) return;
  CheckInputsFinite(*p).IgnoreError();
  FUZZ_REQUIRE(PayloadBytes(*p) >= 0 && Flops(*p) >= 0 && LargestDim(*p) >= 0);
  FUZZ_REQUIRE(DeviceBytes(*p) >= 0);
  RequireOutput(p->output, p->op.result_to,
                NumElements(p->plan.x_shape) * static_cast<int64_t>(DTypeSize(p->op.a.dtype)),
                {&p->op.a, &p->op.b});
}

void SparseSolve(const v1::SparseSolveRequest& r, const CallEnv& env) {
  absl::StatusOr<PreparedSparseSolve> p = PrepareSparseSolve(r, env.limits, env.sources);
  if (!p.ok() || !CompleteSparseSolve(*p).ok()) return;
  FUZZ_REQUIRE(CompleteSparseSolve(*p).ok());  // idempotent
  UseDensePath(p->op, p->plan, env.sparse_dense_threshold, env.limits.max_elements);
}

void Factorize(const v1::FactorizeRequest& r, const CallEnv& env) {
  InputLeases leases;
  absl::StatusOr<TensorView> a = ResolveTensor(r.a(), "a", env.limits, env.sources, leases);
  if (a.ok()) RequireInside(&*a);
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
  const ShmGrant& grant = SharedRegion(*env.sources.shm).grant;
  const uint8_t kind = data[0] % 6;
  ++data;
  --size;
  switch (kind) {
    case 0: {
      v1::MatmulRequest r;
      if (Parse(data, size, grant, r)) Matmul(r, env);
      break;
    }
    case 1: {
      v1::SolveRequest r;
      if (Parse(data, size, grant, r)) Solve(r, env);
      break;
    }
    case 2: {
      v1::SparseSolveRequest r;
      if (Parse(data, size, grant, r)) SparseSolve(r, env);
      break;
    }
    case 3: {
      v1::FactorizeRequest r;
      if (Parse(data, size, grant, r)) Factorize(r, env);
      break;
    }
    case 4: {
      v1::PutTensorRequest r;
      if (Parse(data, size, grant, r) && r.has_header())
        CheckPutHeader(env, r.header()).IgnoreError();
      break;
    }
    case 5: {
      v1::StartUploadRequest r;
      if (Parse(data, size, grant, r)) CheckPutHeader(env, r.header()).IgnoreError();
      break;
    }
  }
  return 0;
}
