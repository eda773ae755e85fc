// Data movement into the GPU: direct copies from page-locked (shared-memory
// style, cudaHostRegister'ed) host memory, and stored tensors resident on
// the device (placement gpu:N) used without an upload.
#include <sys/mman.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/backend/plan.h"
#include "server/gpu/device_resident.h"
#include "server/gpu/pinned_host_cache.h"
#include "server/gpu/transfer.h"
#include "server/store/resident_store.h"
#include "tests/gpu/gpu_test_env.h"
#include "tests/testing/test_reference.h"

namespace linalgd {
namespace {

using test_ref::RandomTensor;
using test_ref::RelError;
using test_ref::Values;

constexpr int64_t kN = 512;  // 1 MiB per f32 operand: above the staging threshold

// An anonymous mapping (like a POSIX shared-memory region), unmapped at the end.
struct Mapping {
  explicit Mapping(size_t n) : bytes(n) {
    void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    data = p == MAP_FAILED ? nullptr : static_cast<std::byte*>(p);
  }
  ~Mapping() {
    if (data != nullptr) munmap(data, bytes);
  }
  std::byte* data = nullptr;
  size_t bytes;
};

Tensor MatmulOn(gpu::GpuBackend& g, const TensorView& a, const TensorView& b) {
  MatmulOp op;
  op.a = a;
  op.b = b;
  op.out_dtype = a.dtype;
  absl::StatusOr<MatmulPlan> plan = PlanMatmul(op);
  EXPECT_TRUE(plan.ok()) << plan.status();
  absl::StatusOr<Tensor> out = g.Matmul(op, *plan);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *std::move(out) : Tensor();
}

TEST(GpuTransferTest, RegisteredHostMemoryCopiesDirectlyAndMatchesPageable) {
  LINALGD_REQUIRE_GPU();
  gpu::GpuBackend& g = *gpu_test::FirstGpu();
  std::mt19937 rng(7);
  const Tensor a = RandomTensor(DType::kF32, {kN, kN}, rng);
  const Tensor b = RandomTensor(DType::kF32, {kN, kN}, rng);
  Mapping region(2 * a.num_bytes());
  ASSERT_NE(region.data, nullptr);
  std::memcpy(region.data, a.as<char>(), a.num_bytes());
  std::memcpy(region.data + a.num_bytes(), b.as<char>(), b.num_bytes());
  absl::StatusOr<std::shared_ptr<void>> pin =
      gpu_test::Engine().PinHostMemory(region.data, region.bytes);
  ASSERT_TRUE(pin.ok()) << pin.status();
  EXPECT_TRUE(gpu::IsPinnedHost(region.data, region.bytes));
  EXPECT_FALSE(gpu::IsPinnedHost(a.as<char>(), a.num_bytes()));

  const Tensor ref = MatmulOn(g, a.view(), b.view());
  TensorView pa = a.view(), pb = b.view();
  pa.data = region.data;
  pb.data = region.data + a.num_bytes();
  const gpu::TransferCounters& n = gpu_test::Engine().transfers();
  const int64_t direct_before = n.h2d_pinned_direct.load();
  const Tensor got = MatmulOn(g, pa, pb);
  EXPECT_GE(n.h2d_pinned_direct.load() - direct_before, 2);
  ASSERT_EQ(got.num_bytes(), ref.num_bytes());
  EXPECT_LE(RelError(Values(got), Values(ref)), 1e-6);
  pin->reset();  // unregister before the mapping goes
}

TEST(GpuTransferTest, CopyToHostIntoRegisteredMemoryIsDirect) {
  LINALGD_REQUIRE_GPU();
  gpu::GpuBackend& g = *gpu_test::FirstGpu();
  std::mt19937 rng(8);
  const Tensor a = RandomTensor(DType::kF32, {kN, kN}, rng);
  Mapping region(a.num_bytes());
  ASSERT_NE(region.data, nullptr);
  absl::StatusOr<std::shared_ptr<void>> pin =
      gpu_test::Engine().PinHostMemory(region.data, region.bytes);
  ASSERT_TRUE(pin.ok()) << pin.status();
  const gpu::TransferCounters& n = gpu_test::Engine().transfers();
  const int64_t direct_before = n.d2h_pinned_direct.load();
  absl::Status s =
      g.RunJob<bool>([&](gpu::GpuContext& ctx) -> absl::StatusOr<bool> {
         LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer d, ctx.Alloc(a.num_bytes()));
         LINALGD_RETURN_IF_ERROR(gpu::CopyToDevice(ctx, a.as<char>(), a.num_bytes(), d.data()));
         LINALGD_RETURN_IF_ERROR(gpu::CopyToHost(ctx, d.data(), a.num_bytes(), region.data));
         return true;
       }).status();
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(n.d2h_pinned_direct.load() - direct_before, 1);
  EXPECT_EQ(std::memcmp(region.data, a.as<char>(), a.num_bytes()), 0);
  pin->reset();
}

TEST(GpuTransferTest, ResultsGoStraightIntoTheirPageLockedDestination) {
  LINALGD_REQUIRE_GPU();
  gpu::GpuBackend& g = *gpu_test::FirstGpu();
  std::mt19937 rng(10);
  const Tensor a = RandomTensor(DType::kF32, {kN, kN}, rng);
  const Tensor b = RandomTensor(DType::kF32, {kN, kN}, rng);
  const Tensor ref = MatmulOn(g, a.view(), b.view());
  Mapping region(ref.num_bytes());
  ASSERT_NE(region.data, nullptr);
  absl::StatusOr<std::shared_ptr<void>> pin =
      gpu_test::Engine().PinHostMemory(region.data, region.bytes);
  ASSERT_TRUE(pin.ok()) << pin.status();
  MatmulOp op;
  op.a = a.view();
  op.b = b.view();
  op.out_dtype = DType::kF32;
  op.result_to = ResultDestination(region.data, region.bytes);
  const MatmulPlan plan = PlanMatmul(op).value();
  const gpu::TransferCounters& n = gpu_test::Engine().transfers();
  const int64_t direct_before = n.d2h_pinned_direct.load();
  absl::StatusOr<Tensor> got = g.Matmul(op, plan);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(got->external());
  EXPECT_EQ(got->data(), region.data);
  EXPECT_EQ(n.d2h_pinned_direct.load() - direct_before, 1);
  EXPECT_LE(RelError(Values(*got), Values(ref)), 1e-6);
  // Revoked (an abandoned call's), the destination is left alone.
  std::memset(region.data, 0, region.bytes);
  op.result_to.Revoke();
  absl::StatusOr<Tensor> own = g.Matmul(op, plan);
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_FALSE(own->external());
  EXPECT_EQ(reinterpret_cast<const float*>(region.data)[0], 0.0f);
  EXPECT_LE(RelError(Values(*own), Values(ref)), 1e-6);

  SolveOp solve;  // a solve's x goes there too
  Tensor sa = RandomTensor(DType::kF64, {64, 64}, rng);
  for (int i = 0; i < 64; ++i) sa.mutable_as<double>()[i * 64 + i] += 64;
  const Tensor sb = RandomTensor(DType::kF64, {64, 4}, rng);
  solve.a = sa.view();
  solve.b = sb.view();
  solve.result_to = ResultDestination(region.data, region.bytes);
  absl::StatusOr<SolveResult> x = g.Solve(solve, PlanSolve(solve).value());
  ASSERT_TRUE(x.ok()) << x.status();
  EXPECT_EQ(x->x.data(), region.data);
  EXPECT_LT(x->residual, 1e-12);
  pin->reset();
}

TEST(PinnedHostCacheTest, BlocksArePageLockedReusedBySizeAndCapped) {
  LINALGD_REQUIRE_GPU();
  PinnedHostOptions o;
  o.min_bytes = 1 << 20;
  o.max_bytes = 8 << 20;
  HostAllocator alloc = MakePinnedHostAllocator(o);
  ASSERT_TRUE(alloc);
  EXPECT_EQ(alloc(1000), nullptr);  // small: ordinary memory
  std::shared_ptr<std::byte> a = alloc(3 << 20);
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(gpu::IsPinnedHost(a.get(), 3 << 20));
  std::memset(a.get(), 1, 3 << 20);
  std::byte* const first = a.get();
  a.reset();
  std::shared_ptr<std::byte> again = alloc((3 << 20) - 4096);  // the same size class
  EXPECT_EQ(again.get(), first);
  std::shared_ptr<std::byte> b = alloc(4 << 20);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(b.get(), first);
  EXPECT_EQ(alloc(2 << 20), nullptr);  // 3 + 4 + 2 MiB > the 8 MiB cap, nothing idle
  again.reset();                       // idle now: freed to make room
  std::shared_ptr<std::byte> c = alloc(2 << 20);
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(gpu::IsPinnedHost(c.get(), 2 << 20));
  HostAllocator none = MakePinnedHostAllocator(PinnedHostOptions{1 << 20, 0});
  EXPECT_FALSE(none);  // --pinned-host-bytes 0
}

TEST(PinnedHostCacheTest, KeptResultsAndUploadsOfAGpuServerAreInPageLockedMemory) {
  LINALGD_REQUIRE_GPU();
  gpu::GpuBackend& g = *gpu_test::FirstGpu();
  std::mt19937 rng(12);
  const Tensor a = RandomTensor(DType::kF32, {kN, kN}, rng);
  const Tensor b = RandomTensor(DType::kF32, {kN, kN}, rng);
  const Tensor ref = MatmulOn(g, a.view(), b.view());
  HostAllocator alloc = MakePinnedHostAllocator(PinnedHostOptions());
  // A kept result's destination from the allocator: the device writes there.
  std::shared_ptr<std::byte> out = alloc(ref.num_bytes());
  ASSERT_NE(out, nullptr);
  MatmulOp op;
  op.a = a.view();
  op.b = b.view();
  op.out_dtype = DType::kF32;
  op.result_to = ResultDestination(out.get(), ref.num_bytes());
  const gpu::TransferCounters& n = gpu_test::Engine().transfers();
  const int64_t d2h = n.d2h_pinned_direct.load(), h2d = n.h2d_pinned_direct.load();
  absl::StatusOr<Tensor> got = g.Matmul(op, PlanMatmul(op).value());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->data(), out.get());
  EXPECT_EQ(n.d2h_pinned_direct.load() - d2h, 1);
  EXPECT_LE(RelError(Values(*got), Values(ref)), 1e-6);
  // Operands in allocator memory (as uploads are) go up without staging.
  Tensor pa = NewHostTensor(alloc, DType::kF32, a.shape());
  Tensor pb = NewHostTensor(alloc, DType::kF32, b.shape());
  std::memcpy(pa.mutable_data(), a.data(), a.num_bytes());
  std::memcpy(pb.mutable_data(), b.data(), b.num_bytes());
  const Tensor again = MatmulOn(g, pa.view(), pb.view());
  EXPECT_EQ(n.h2d_pinned_direct.load() - h2d, 2);
  EXPECT_LE(RelError(Values(again), Values(ref)), 1e-6);
}

// A store whose gpu:N tensors get device copies from `engine`, as the
// server wires it.
std::unique_ptr<ResidentStore> GpuStore(GpuEngine& engine) {
  StoreOptions so;
  so.device_copy = [&engine](absl::string_view placement, const Tensor& t) {
    return engine.MakeResidentCopy(placement, t);
  };
  return std::make_unique<ResidentStore>(so);
}

std::string Put(ResidentStore& store, Tensor t, const std::string& placement) {
  absl::StatusOr<StoreReservation> r = store.Reserve(static_cast<int64_t>(t.num_bytes()));
  EXPECT_TRUE(r.ok()) << r.status();
  absl::StatusOr<std::string> id =
      store.PutTensor(std::move(t), placement, 0, absl::ZeroDuration(), std::move(*r));
  EXPECT_TRUE(id.ok()) << id.status();
  return id.ok() ? *id : "";
}

TEST(GpuResidentTest, MatmulOnResidentTensorSkipsItsUpload) {
  LINALGD_REQUIRE_GPU();
  gpu::GpuBackend& g = *gpu_test::FirstGpu();
  std::mt19937 rng(9);
  const Tensor a = RandomTensor(DType::kF32, {kN, kN}, rng);
  const Tensor b = RandomTensor(DType::kF32, {kN, kN}, rng);
  const Tensor ref = MatmulOn(g, a.view(), b.view());
  auto store = GpuStore(gpu_test::Engine());
  const int64_t count_before = g.residents().size();
  const std::string id = Put(*store, a, absl::StrCat("gpu:", g.device()));
  EXPECT_EQ(g.residents().size(), count_before + 1);
  {
    absl::StatusOr<TensorLease> lease = store->GetTensor(id);
    ASSERT_TRUE(lease.ok()) << lease.status();
    const gpu::TransferCounters& n = gpu_test::Engine().transfers();
    const int64_t h2d_before = n.h2d_bytes.load();
    const Tensor got = MatmulOn(g, lease->tensor->view(), b.view());
    // Only b crossed from the host.
    EXPECT_LE(n.h2d_bytes.load() - h2d_before, static_cast<int64_t>(b.num_bytes()));
    EXPECT_LE(RelError(Values(got), Values(ref)), 1e-6);
  }
  ASSERT_TRUE(store->Delete(id, ResidentKind::kTensor).ok());
  EXPECT_EQ(g.residents().size(), count_before);
}

TEST(GpuResidentTest, SolveOnResidentMatrixSkipsItsUploadAndKeepsIt) {
  LINALGD_REQUIRE_GPU();
  gpu::GpuBackend& g = *gpu_test::FirstGpu();
  std::mt19937 rng(10);
  Tensor a = RandomTensor(DType::kF64, {kN, kN}, rng);
  for (int64_t i = 0; i < kN; ++i) a.mutable_as<double>()[i * kN + i] += kN;  // well conditioned
  const Tensor b = RandomTensor(DType::kF64, {kN, 4}, rng);
  auto store = GpuStore(gpu_test::Engine());
  const std::string id = Put(*store, a, absl::StrCat("gpu:", g.device()));
  absl::StatusOr<TensorLease> lease = store->GetTensor(id);
  ASSERT_TRUE(lease.ok()) << lease.status();
  auto solve = [&](const TensorView& av) {
    SolveOp op;
    op.a = av;
    op.b = b.view();
    absl::StatusOr<SolvePlan> plan = PlanSolve(op);
    EXPECT_TRUE(plan.ok()) << plan.status();
    absl::StatusOr<SolveResult> r = g.Solve(op, *plan);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? std::move(r->x) : Tensor();
  };
  const Tensor ref = solve(a.view());
  const gpu::TransferCounters& n = gpu_test::Engine().transfers();
  const int64_t h2d_before = n.h2d_bytes.load();
  // Twice: the factorization works on a copy, the resident a stays intact.
  const Tensor x1 = solve(lease->tensor->view());
  const Tensor x2 = solve(lease->tensor->view());
  const int64_t a_bytes = static_cast<int64_t>(a.num_bytes());
  EXPECT_LT(n.h2d_bytes.load() - h2d_before, a_bytes);
  EXPECT_LE(RelError(Values(x1), Values(ref)), 1e-10);
  EXPECT_LE(RelError(Values(x2), Values(ref)), 1e-10);
}

TEST(GpuResidentTest, UnknownDeviceStaysHostOnlyAndPutSucceeds) {
  LINALGD_REQUIRE_GPU();
  gpu::GpuBackend& g = *gpu_test::FirstGpu();
  std::mt19937 rng(11);
  auto store = GpuStore(gpu_test::Engine());
  const int64_t count_before = g.residents().size();
  const std::string id = Put(*store, RandomTensor(DType::kF32, {64, 64}, rng), "gpu:999");
  EXPECT_FALSE(id.empty());
  EXPECT_EQ(g.residents().size(), count_before);
  EXPECT_TRUE(store->GetTensor(id).ok());
}

// Two engines in one process share nothing: a tensor resident through one is
// not resident for the other (whose backend uploads it), and each engine
// counts only its own copies.
TEST(GpuResidentTest, ResidentCopiesAndTransferCountsArePerEngine) {
  LINALGD_REQUIRE_GPU();
  gpu::GpuBackend& g = *gpu_test::FirstGpu();
  GpuOptions options;
  options.devices = {g.device()};
  options.handles_per_device = 1;
  std::unique_ptr<GpuEngine> other = StartGpuEngine(options);
  ASSERT_EQ(other->backends().size(), 1u) << other->status();
  gpu::GpuBackend& h = *dynamic_cast<gpu::GpuBackend*>(other->backends()[0]);
  ASSERT_EQ(h.device(), g.device());
  std::mt19937 rng(13);
  const Tensor a = RandomTensor(DType::kF32, {kN, kN}, rng);
  const Tensor b = RandomTensor(DType::kF32, {kN, kN}, rng);
  auto store = GpuStore(gpu_test::Engine());
  const int64_t ours_before = g.residents().size();
  const std::string id = Put(*store, a, absl::StrCat("gpu:", g.device()));
  EXPECT_EQ(g.residents().size(), ours_before + 1);
  EXPECT_EQ(h.residents().size(), 0);
  {
    absl::StatusOr<TensorLease> lease = store->GetTensor(id);
    ASSERT_TRUE(lease.ok()) << lease.status();
    const gpu::TransferCounters& ours = gpu_test::Engine().transfers();
    const gpu::TransferCounters& theirs = other->transfers();
    const int64_t ours_h2d = ours.h2d_bytes.load(), theirs_h2d = theirs.h2d_bytes.load();
    const Tensor got = MatmulOn(h, lease->tensor->view(), b.view());
    // Both operands crossed from the host, counted by the other engine only.
    EXPECT_GE(theirs.h2d_bytes.load() - theirs_h2d,
              static_cast<int64_t>(a.num_bytes() + b.num_bytes()));
    EXPECT_EQ(ours.h2d_bytes.load(), ours_h2d);
    EXPECT_LE(RelError(Values(got), Values(MatmulOn(g, a.view(), b.view()))), 1e-6);
  }
  ASSERT_TRUE(store->Delete(id, ResidentKind::kTensor).ok());
  EXPECT_EQ(g.residents().size(), ours_before);
}

}  // namespace
}  // namespace linalgd
