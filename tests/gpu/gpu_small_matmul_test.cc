// Small products in one round trip (small_matmul.h): the same answers,
// statuses and messages as the general path (a backend without the small
// path, small_job_bytes 0, is the comparison), one upload and one download
// each, every dtype and form, and callers in flight at once never sharing a
// staging area; a repeated product's device work replayed as a CUDA graph
// with each call's own operands, scalars and verdicts.
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/backend/plan.h"
#include "server/gpu/device_resident.h"
#include "server/gpu/lt_matmul.h"
#include "server/linalg/finite_check.h"
#include "tests/gpu/gpu_test_env.h"
#include "tests/testing/test_reference.h"

namespace linalgd {
namespace {

using test_ref::RandomTensor;
using test_ref::RelError;
using test_ref::Values;

using gpu_test::OwnBackend;

// One product's inputs, owned.
struct Inputs {
  Tensor a, b;
  std::optional<Tensor> c, bias;
  MatmulOp op;
};

struct Form {
  std::string name;
  DType in = DType::kF32, out = DType::kF32;
  Shape a, b;
  std::optional<Shape> c, bias;
  Epilogue epilogue = Epilogue::kNone;
  bool ta = false, tb = false;
  double beta = 0;
};

// RandomTensor, and for a complex dtype random imaginary parts too.
Tensor Random(DType t, const Shape& shape, std::mt19937& rng) {
  if (!IsComplex(t)) return RandomTensor(t, shape, rng);
  Shape parts = shape;
  parts.back() *= 2;
  const Tensor values = RandomTensor(RealPart(t), parts, rng);
  Tensor out(t, shape);
  std::memcpy(out.mutable_data(), values.data(), values.num_bytes());
  return out;
}

Inputs Make(const Form& f, std::mt19937& rng) {
  Inputs in;
  in.a = Random(f.in, f.a, rng);
  in.b = Random(f.in, f.b, rng);
  in.op.a = in.a.view();
  in.op.b = in.b.view();
  if (f.c) {
    in.c = Random(f.out, *f.c, rng);
    in.op.c = in.c->view();
  }
  if (f.bias) {
    in.bias = Random(f.out, *f.bias, rng);
    in.op.bias = in.bias->view();
  }
  in.op.epilogue = f.epilogue;
  in.op.trans_a = f.ta;
  in.op.trans_b = f.tb;
  in.op.alpha = 0.75;
  in.op.beta = f.beta;
  in.op.out_dtype = f.out;
  in.op.check_finite = true;
  return in;
}

// The values of t as doubles; a complex tensor as its (real, imaginary) parts.
std::vector<double> Parts(const Tensor& t) {
  if (t.dtype() == DType::kC64) {
    const auto* p = t.as<float>();
    return std::vector<double>(p, p + 2 * t.num_elements());
  }
  if (t.dtype() == DType::kC128) {
    const auto* p = t.as<double>();
    return std::vector<double>(p, p + 2 * t.num_elements());
  }
  return Values(t);
}

double Tol(DType t) {
  switch (t) {
    case DType::kF64:
    case DType::kC128:
      return 1e-12;
    case DType::kF32:
    case DType::kC64:
      return 1e-5;
    default:
      return 2e-2;
  }
}

std::vector<Form> Forms() {
  std::vector<Form> forms;
  for (DType t : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16, DType::kC64, DType::kC128}) {
    const bool complex = IsComplex(t);
    Form f;
    f.in = f.out = t;
    f.name = absl::StrCat(DTypeName(t), " 67x129 @ 129x45 + c, bias per column");
    f.a = {67, 129};
    f.b = {129, 45};
    f.c = Shape{67, 45};
    f.beta = 0.5;
    f.bias = Shape{45};
    f.epilogue = complex ? Epilogue::kBias : Epilogue::kReluBias;
    forms.push_back(f);
    f = Form();
    f.in = f.out = t;
    f.name = absl::StrCat(DTypeName(t), " batched [3] transposed, bias per row, c[1, n]");
    f.a = {3, 40, 24};
    f.b = {3, 32, 40};
    f.ta = f.tb = true;
    f.c = Shape{1, 32};
    f.beta = -1;
    f.bias = Shape{24, 1};
    f.epilogue = complex ? Epilogue::kBias : Epilogue::kGeluBias;
    forms.push_back(f);
    f = Form();
    f.in = f.out = t;
    f.name = absl::StrCat(DTypeName(t), " broadcast [2,1] x [1,3], c[2,3,m,n]");
    f.a = {2, 1, 20, 36};
    f.b = {1, 3, 36, 28};
    f.c = Shape{2, 3, 20, 28};
    f.beta = 1;
    forms.push_back(f);
  }
  Form mixed;
  mixed.in = DType::kF16;
  mixed.out = DType::kF32;
  mixed.name = "f16 -> f32 128^3, bias";
  mixed.a = {128, 128};
  mixed.b = {128, 128};
  mixed.bias = Shape{128};
  mixed.epilogue = Epilogue::kBias;
  forms.push_back(mixed);
  Form latency;
  latency.name = "f32 128^3 (the latency workload's)";
  latency.a = {128, 128};
  latency.b = {128, 128};
  forms.push_back(latency);
  return forms;
}

// The error of `got` against op's float64 reference (real dtypes).
double RefError(const Tensor& got, const MatmulOp& op) {
  Shape shape;
  return RelError(Values(got), test_ref::ReferenceMatmul(op, &shape));
}

absl::StatusOr<Tensor> MatmulOn(gpu::GpuBackend& g, const MatmulOp& op) {
  absl::StatusOr<MatmulPlan> plan = PlanMatmul(op);
  if (!plan.ok()) return plan.status();
  return g.Matmul(op, *plan);
}

TEST(GpuSmallMatmulTest, EveryFormMatchesTheGeneralPathAndGoesUpAndDownOnce) {
  LINALGD_REQUIRE_GPU();
  OwnBackend small(gpu::GpuBackendConfig::kDefaultSmallJobBytes, 1), general(0, 1);
  ASSERT_TRUE(small.backend && general.backend);
  std::mt19937 rng(41);
  for (const Form& f : Forms()) {
    SCOPED_TRACE(f.name);
    const Inputs in = Make(f, rng);
    const int64_t h2d = small.transfers.h2d_copies.load(), d2h = small.transfers.d2h_copies.load();
    absl::StatusOr<Tensor> got = MatmulOn(*small.backend, in.op);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(small.transfers.h2d_copies.load() - h2d, 1);
    EXPECT_EQ(small.transfers.d2h_copies.load() - d2h, 1);
    absl::StatusOr<Tensor> ref = MatmulOn(*general.backend, in.op);
    ASSERT_TRUE(ref.ok()) << ref.status();
    EXPECT_EQ(general.transfers.small_jobs.load(), 0);
    EXPECT_EQ(got->dtype(), ref->dtype());
    EXPECT_EQ(got->shape(), ref->shape());
    EXPECT_LE(RelError(Parts(*got), Parts(*ref)), Tol(f.in));
    if (!IsComplex(f.in)) {
      EXPECT_LE(RefError(*got, in.op), Tol(f.in));
    }
  }
  EXPECT_EQ(small.transfers.small_jobs.load(), static_cast<int64_t>(Forms().size()));
}

TEST(GpuSmallMatmulTest, ProductsBeyondTheStagingTakeTheGeneralPath) {
  LINALGD_REQUIRE_GPU();
  OwnBackend small(gpu::GpuBackendConfig::kDefaultSmallJobBytes, 1);
  ASSERT_TRUE(small.backend);
  std::mt19937 rng(42);
  Form f;
  f.a = {512, 512};  // 1 MiB per operand: more than the 1 MiB staging
  f.b = {512, 512};
  const Inputs in = Make(f, rng);
  absl::StatusOr<Tensor> got = MatmulOn(*small.backend, in.op);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(small.transfers.small_jobs.load(), 0);
  EXPECT_GE(small.transfers.h2d_copies.load(), 2);
}

enum class Field { kA, kB, kC, kBias };

// Sets element `index` of t to NaN (a complex one: its real part).
void PoisonNaN(Tensor& t, int64_t index) {
  const Tensor nan =
      test_ref::FromValues(RealPart(t.dtype()), {1, 1}, {std::numeric_limits<double>::quiet_NaN()});
  std::memcpy(t.mutable_data() + index * DTypeSize(t.dtype()), nan.data(), nan.num_bytes());
}

TEST(GpuSmallMatmulTest, NonFiniteInputsGiveTheHostChecksMessageOnBothPaths) {
  LINALGD_REQUIRE_GPU();
  OwnBackend small(gpu::GpuBackendConfig::kDefaultSmallJobBytes, 1), general(0, 1);
  ASSERT_TRUE(small.backend && general.backend);
  std::mt19937 rng(43);
  for (const Form& f : Forms()) {
    for (Field field : {Field::kA, Field::kB, Field::kC, Field::kBias}) {
      Inputs in = Make(f, rng);
      Tensor* t = field == Field::kA   ? &in.a
                  : field == Field::kB ? &in.b
                  : field == Field::kC ? (in.c ? &*in.c : nullptr)
                                       : (in.bias ? &*in.bias : nullptr);
      if (t == nullptr) continue;
      PoisonNaN(*t, t->num_elements() / 2 + 1);
      const absl::Status host = CheckMatmulInputsFinite(in.op);
      ASSERT_FALSE(host.ok()) << f.name;
      for (OwnBackend* own : {&small, &general}) {
        SCOPED_TRACE(absl::StrCat(f.name, " field ", static_cast<int>(field),
                                  own == &small ? " small" : " general"));
        absl::StatusOr<Tensor> out = MatmulOn(*own->backend, in.op);
        EXPECT_EQ(out.status().code(), host.code());
        EXPECT_EQ(out.status().message(), absl::StrCat(own->backend->name(), ": ", host.message()));
      }
    }
  }
  EXPECT_FALSE(small.backend->fenced());
  // The staging is clean for the next product.
  const Inputs in = Make(Forms()[0], rng);
  absl::StatusOr<Tensor> ok = MatmulOn(*small.backend, in.op);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_LE(RefError(*ok, in.op), 1e-5);
}

TEST(GpuSmallMatmulTest, ResultGoesIntoItsDestinationUnlessRevoked) {
  LINALGD_REQUIRE_GPU();
  OwnBackend small(gpu::GpuBackendConfig::kDefaultSmallJobBytes, 1);
  ASSERT_TRUE(small.backend);
  std::mt19937 rng(45);
  Inputs in = Make(Forms().back(), rng);
  std::vector<std::byte> dest(128 * 128 * sizeof(float));
  in.op.result_to = ResultDestination(dest.data(), dest.size());
  absl::StatusOr<Tensor> got = MatmulOn(*small.backend, in.op);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(got->external());
  EXPECT_EQ(got->data(), dest.data());
  Shape shape;
  const std::vector<double> ref = test_ref::ReferenceMatmul(in.op, &shape);
  EXPECT_LE(RelError(Values(*got), ref), 1e-5);
  std::fill(dest.begin(), dest.end(), std::byte{0});
  in.op.result_to.Revoke();
  absl::StatusOr<Tensor> own = MatmulOn(*small.backend, in.op);
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_NE(own->data(), dest.data());
  EXPECT_LE(RelError(Values(*own), ref), 1e-5);
  EXPECT_EQ(dest[0], std::byte{0});
}

TEST(GpuSmallMatmulTest, AResidentOperandIsNotStaged) {
  LINALGD_REQUIRE_GPU();
  OwnBackend small(gpu::GpuBackendConfig::kDefaultSmallJobBytes, 1);
  ASSERT_TRUE(small.backend);
  std::mt19937 rng(46);
  const Inputs in = Make(Forms().back(), rng);
  absl::StatusOr<std::shared_ptr<const void>> copy = gpu::MakeDeviceResident(*small.backend, in.a);
  ASSERT_TRUE(copy.ok()) << copy.status();
  const int64_t bytes = small.transfers.h2d_bytes.load();
  absl::StatusOr<Tensor> got = MatmulOn(*small.backend, in.op);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(small.transfers.h2d_bytes.load() - bytes, static_cast<int64_t>(in.b.num_bytes()));
  EXPECT_EQ(small.transfers.small_jobs.load(), 1);
  EXPECT_LE(RefError(*got, in.op), 1e-5);
}

TEST(GpuSmallMatmulTest, EachHandleSetHasItsOwnStaging) {
  LINALGD_REQUIRE_GPU();
  OwnBackend small(gpu::GpuBackendConfig::kDefaultSmallJobBytes, 4);
  ASSERT_TRUE(small.backend);
  gpu::HandlePool& pool = small.backend->handles();
  const auto bytes = static_cast<uintptr_t>(gpu::GpuBackendConfig::kDefaultSmallJobBytes);
  for (int i = 0; i < pool.size(); ++i) {
    const gpu::HandleSet& x = pool.set(i);
    ASSERT_NE(x.small_host, nullptr);
    ASSERT_NE(x.small_device, nullptr);
    EXPECT_EQ(x.small_bytes, bytes);
    for (int j = i + 1; j < pool.size(); ++j) {
      const gpu::HandleSet& y = pool.set(j);
      for (auto [p, q] :
           {std::pair{x.small_host, y.small_host}, std::pair{x.small_device, y.small_device}}) {
        const auto u = reinterpret_cast<uintptr_t>(p), v = reinterpret_cast<uintptr_t>(q);
        EXPECT_TRUE(u + bytes <= v || v + bytes <= u) << i << " and " << j << " overlap";
      }
    }
  }
}

// Callers in flight at once, more than the handle sets: each gets the
// product of its own operands (a shared staging area would mix them).
TEST(GpuSmallMatmulTest, ConcurrentCallersEachGetTheirOwnProduct) {
  LINALGD_REQUIRE_GPU();
  OwnBackend small(gpu::GpuBackendConfig::kDefaultSmallJobBytes, 4);
  ASSERT_TRUE(small.backend);
  constexpr int kThreads = 8, kRounds = 25;
  std::vector<std::vector<double>> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(100 + t);
      const std::vector<Form> forms = Forms();
      for (int r = 0; r < kRounds; ++r) {
        const Form& f = forms[(t + r) % forms.size()];
        if (IsComplex(f.in)) continue;  // the reference is real
        const Inputs in = Make(f, rng);
        absl::StatusOr<Tensor> got = MatmulOn(*small.backend, in.op);
        errors[t].push_back(got.ok() ? RefError(*got, in.op) / Tol(f.in) : 1e9);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    for (double e : errors[t]) EXPECT_LE(e, 1.0) << "thread " << t;
  }
}

// The descriptors of a shape are built once per handle set and reused; a
// bias epilogue's pointer is the call's own each time (the first product's
// bias is resident on the device, the second's uploaded: two addresses).
TEST(GpuSmallMatmulTest, ReusedDescriptorsTakeEachCallsBias) {
  LINALGD_REQUIRE_GPU();
  OwnBackend small(gpu::GpuBackendConfig::kDefaultSmallJobBytes, 1), general(0, 1);
  ASSERT_TRUE(small.backend && general.backend);
  std::mt19937 rng(47);
  const Form f = Forms()[0];  // f32, bias per column, c
  const Inputs first = Make(f, rng);
  const Inputs second = Make(f, rng);
  for (OwnBackend* own : {&small, &general}) {
    absl::StatusOr<std::shared_ptr<const void>> resident =
        gpu::MakeDeviceResident(*own->backend, *first.bias);
    ASSERT_TRUE(resident.ok()) << resident.status();
    for (const Inputs* in : {&first, &second, &first}) {
      absl::StatusOr<Tensor> got = MatmulOn(*own->backend, in->op);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_LE(RefError(*got, in->op), 1e-5);
    }
    EXPECT_EQ(own->backend->handles().set(0).lt_descs.size(), 1u);
  }
}

// Whether op's device work can be a graph (small_matmul.h: one uniform batch
// stride per operand).
bool Graphable(const MatmulOp& op) {
  const MatmulPlan plan = PlanMatmul(op).value();
  return MatmulPlan::UniformStride(plan.a_offsets) && MatmulPlan::UniformStride(plan.b_offsets);
}

bool SameBits(const Tensor& x, const Tensor& y) {
  return x.dtype() == y.dtype() && x.shape() == y.shape() &&
         std::memcmp(x.data(), y.data(), x.num_bytes()) == 0;
}

// Four calls of each form with new operands each time: the first enqueued
// directly, the second captured (and launched), the next two replayed; every result bit for
// bit a backend's without graphs (so a graph reads each call's own staging,
// not what it saw when it was captured).
TEST(GpuSmallMatmulTest, RepeatedProductsReplayAGraphBitForBit) {
  LINALGD_REQUIRE_GPU();
  OwnBackend graphs(gpu::GpuBackendConfig::kDefaultSmallJobBytes, 1);
  OwnBackend plain(gpu::GpuBackendConfig::kDefaultSmallJobBytes, 1, /*small_graphs=*/false);
  ASSERT_TRUE(graphs.backend && plain.backend);
  std::mt19937 rng(48);
  int64_t graphed_forms = 0;
  for (const Form& f : Forms()) {
    SCOPED_TRACE(f.name);
    bool graphable = false;
    for (int call = 0; call < 4; ++call) {
      const Inputs in = Make(f, rng);
      graphable = Graphable(in.op);
      const int64_t replays = graphs.transfers.small_graph_replays.load();
      absl::StatusOr<Tensor> got = MatmulOn(*graphs.backend, in.op);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(graphs.transfers.small_graph_replays.load() - replays,
                graphable && call > 1 ? 1 : 0)
          << "call " << call;
      absl::StatusOr<Tensor> ref = MatmulOn(*plain.backend, in.op);
      ASSERT_TRUE(ref.ok()) << ref.status();
      EXPECT_TRUE(SameBits(*got, *ref)) << "call " << call;
      if (!IsComplex(f.in)) {
        EXPECT_LE(RefError(*got, in.op), Tol(f.in)) << "call " << call;
      }
    }
    graphed_forms += graphable;
  }
  EXPECT_GT(graphed_forms, 0);
  EXPECT_EQ(graphs.backend->handles().set(0).small_graphs.graphs(), graphed_forms);
  EXPECT_EQ(plain.transfers.small_graph_replays.load(), 0);
  EXPECT_EQ(plain.backend->handles().set(0).small_graphs.size(), 0u);
  EXPECT_EQ(graphs.transfers.small_jobs.load(), 4 * static_cast<int64_t>(Forms().size()));
}

// A replayed product still finds a NaN in any operand, with the host check's
// message, and the next replay is clean again.
TEST(GpuSmallMatmulTest, AReplayedProductNamesANonFiniteInput) {
  LINALGD_REQUIRE_GPU();
  OwnBackend graphs(gpu::GpuBackendConfig::kDefaultSmallJobBytes, 1);
  ASSERT_TRUE(graphs.backend);
  std::mt19937 rng(49);
  const Form f = Forms()[0];  // f32, c and bias
  for (int call = 0; call < 2; ++call) {
    ASSERT_TRUE(MatmulOn(*graphs.backend, Make(f, rng).op).ok());
  }
  for (Field field : {Field::kA, Field::kB, Field::kC, Field::kBias}) {
    SCOPED_TRACE(static_cast<int>(field));
    Inputs in = Make(f, rng);
    Tensor& t = field == Field::kA   ? in.a
                : field == Field::kB ? in.b
                : field == Field::kC ? *in.c
                                     : *in.bias;
    PoisonNaN(t, t.num_elements() - 1);
    const absl::Status host = CheckMatmulInputsFinite(in.op);
    ASSERT_FALSE(host.ok());
    const int64_t replays = graphs.transfers.small_graph_replays.load();
    absl::StatusOr<Tensor> out = MatmulOn(*graphs.backend, in.op);
    EXPECT_EQ(graphs.transfers.small_graph_replays.load() - replays, 1);
    EXPECT_EQ(out.status().code(), host.code());
    EXPECT_EQ(out.status().message(), absl::StrCat(graphs.backend->name(), ": ", host.message()));
    const Inputs clean = Make(f, rng);
    absl::StatusOr<Tensor> ok = MatmulOn(*graphs.backend, clean.op);
    ASSERT_TRUE(ok.ok()) << ok.status();
    EXPECT_LE(RefError(*ok, clean.op), 1e-5);
  }
  EXPECT_FALSE(graphs.backend->fenced());
}

// New values in t's own storage (its address, which a resident copy and
// the operand views hold, stays).
void Refill(Tensor& t, std::mt19937& rng) {
  const Tensor values = Random(t.dtype(), t.shape(), rng);
  std::memcpy(t.mutable_data(), values.data(), values.num_bytes());
}

// Scalars and resident operands are part of what a graph keeps: a product
// with another alpha or beta, or with an operand resident (at one device
// address, then another), is a graph of its own, each call's answer its own.
TEST(GpuSmallMatmulTest, ScalarsAndResidentOperandsAreTheirOwnGraphs) {
  LINALGD_REQUIRE_GPU();
  OwnBackend graphs(gpu::GpuBackendConfig::kDefaultSmallJobBytes, 1);
  ASSERT_TRUE(graphs.backend);
  std::mt19937 rng(50);
  const Form f = Forms()[0];
  auto three_calls = [&](Inputs& in, const std::string& what) {
    for (int call = 0; call < 3; ++call) {
      absl::StatusOr<Tensor> got = MatmulOn(*graphs.backend, in.op);
      ASSERT_TRUE(got.ok()) << what << ": " << got.status();
      EXPECT_LE(RefError(*got, in.op), 1e-5) << what << ", call " << call;
      Refill(in.a, rng);
    }
  };
  Inputs in = Make(f, rng);
  for (auto [alpha, beta] :
       {std::pair{0.75, 0.5}, std::pair{-2.0, 0.5}, std::pair{-2.0, 1.5}, std::pair{0.75, 0.5}}) {
    in.op.alpha = alpha;
    in.op.beta = beta;
    three_calls(in, absl::StrCat("alpha ", alpha, " beta ", beta));
  }
  for (int copy = 0; copy < 2; ++copy) {
    Refill(in.b, rng);
    absl::StatusOr<std::shared_ptr<const void>> resident =
        gpu::MakeDeviceResident(*graphs.backend, in.b);
    ASSERT_TRUE(resident.ok()) << resident.status();
    three_calls(in, absl::StrCat("b resident, copy ", copy));
  }
  // Three pairs of scalars, and one or two device addresses of b (the
  // second copy may take the first's freed address).
  const int64_t kept = graphs.backend->handles().set(0).small_graphs.graphs();
  EXPECT_GE(kept, 4);
  EXPECT_LE(kept, 5);
}

// Keys beyond the cache's bound empty it: every answer stays right, and
// each key, three calls in a row, is replayed on its third.
TEST(GpuSmallMatmulTest, TheGraphCacheStaysBounded) {
  LINALGD_REQUIRE_GPU();
  OwnBackend graphs(gpu::GpuBackendConfig::kDefaultSmallJobBytes, 1);
  ASSERT_TRUE(graphs.backend);
  std::mt19937 rng(51);
  Inputs in = Make(Forms().back(), rng);  // f32 128^3
  const gpu::HandleSet& set = graphs.backend->handles().set(0);
  for (size_t i = 0; i < gpu::SmallGraphCache::kMaxEntries + 8; ++i) {
    in.op.alpha = 1.0 + static_cast<double>(i) / 16;
    for (int call = 0; call < 3; ++call) {
      absl::StatusOr<Tensor> got = MatmulOn(*graphs.backend, in.op);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_LE(RefError(*got, in.op), 1e-5) << "key " << i << ", call " << call;
    }
    EXPECT_LE(set.small_graphs.size(), gpu::SmallGraphCache::kMaxEntries);
  }
  EXPECT_EQ(graphs.transfers.small_graph_replays.load(),
            static_cast<int64_t>(gpu::SmallGraphCache::kMaxEntries + 8));
}

}  // namespace
}  // namespace linalgd
