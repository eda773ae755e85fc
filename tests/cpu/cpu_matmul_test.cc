#include <atomic>
#include <limits>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/backend/plan.h"
#include "server/common/half.h"
#include "server/cpu/cpu_backend.h"
#include "server/cpu/cpu_execution.h"
#include "tests/testing/test_reference.h"

namespace linalgd {
namespace {

using test_ref::RandomTensor;
using test_ref::ReferenceMatmul;
using test_ref::RelError;
using test_ref::Values;

double Tolerance(DType in) {
  switch (in) {
    case DType::kF32:
      return 1e-5;
    case DType::kF64:
      return 1e-12;
    default:
      return 2e-2;
  }
}

// An op on a and b (f32 output unless told); tests set the other fields.
MatmulOp MakeOp(const Tensor& a, const Tensor& b, DType out = DType::kF32) {
  MatmulOp op;
  op.a = a.view();
  op.b = b.view();
  op.out_dtype = out;
  return op;
}

class CpuMatmulTest : public ::testing::Test {
 protected:
  // Runs op on the CPU backend and returns the output values (in double).
  std::vector<double> Run(const MatmulOp& op, Shape* shape = nullptr) {
    absl::StatusOr<MatmulPlan> plan = PlanMatmul(op);
    EXPECT_TRUE(plan.ok()) << plan.status();
    if (!plan.ok()) return {};
    absl::StatusOr<Tensor> out = backend_->Matmul(op, *plan);
    EXPECT_TRUE(out.ok()) << out.status();
    if (!out.ok()) return {};
    EXPECT_EQ(out->dtype(), op.out_dtype);
    EXPECT_EQ(out->shape(), plan->out_shape);
    if (shape) *shape = out->shape();
    return Values(*out);
  }

  // Runs op and checks it against the float64 reference within `tol`.
  void ExpectMatchesReference(const MatmulOp& op, double tol) {
    Shape shape, ref_shape;
    const std::vector<double> got = Run(op, &shape);
    const std::vector<double> ref = ReferenceMatmul(op, &ref_shape);
    ASSERT_EQ(shape, ref_shape);
    EXPECT_LE(RelError(got, ref), tol);
  }

  std::mt19937 rng_{42};
  std::unique_ptr<Backend> backend_ = CreateCpuBackend({.blas_threads = 2, .batch_threads = 3});
};

// MatmulOp::check_finite: the backend refuses a NaN or Inf input, alone and
// in a batch, naming the field and element; without it the NaN flows.
TEST_F(CpuMatmulTest, CheckFiniteRefusesNonFiniteInputsAloneAndInBatches) {
  Tensor a = RandomTensor(DType::kF32, {5, 7}, rng_), b = RandomTensor(DType::kF32, {7, 6}, rng_);
  Tensor bias = RandomTensor(DType::kF32, {6}, rng_);
  bias.mutable_as<float>()[2] = std::numeric_limits<float>::quiet_NaN();
  MatmulOp op = MakeOp(a, b);
  op.bias = bias.view();
  op.epilogue = Epilogue::kBias;
  const MatmulPlan plan = PlanMatmul(op).value();
  EXPECT_TRUE(backend_->Matmul(op, plan).ok());  // allowed: the NaN reaches column 2
  op.check_finite = true;
  absl::StatusOr<Tensor> out = backend_->Matmul(op, plan);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()), testing::HasSubstr("bias: element 2 is NaN"));
  MatmulOp clean = op;
  Tensor clean_bias = RandomTensor(DType::kF32, {6}, rng_);
  clean.bias = clean_bias.view();
  std::vector<Tensor> outs;
  const MatmulOp* batch[] = {&clean, &op, &clean};
  EXPECT_EQ(backend_->MatmulBatch(batch, plan, &outs).code(), absl::StatusCode::kInvalidArgument);
  const MatmulOp* good[] = {&clean, &clean};
  EXPECT_TRUE(backend_->MatmulBatch(good, plan, &outs).ok());
}

TEST_F(CpuMatmulTest, EveryDtypeAndTranspose) {
  for (DType dt : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      SCOPED_TRACE(testing::Message() << DTypeName(dt) << " trans_a=" << ta << " trans_b=" << tb);
      const int m = 5, k = 7, n = 6;
      Tensor a = RandomTensor(dt, ta ? Shape{k, m} : Shape{m, k}, rng_);
      Tensor b = RandomTensor(dt, tb ? Shape{n, k} : Shape{k, n}, rng_);
      MatmulOp op = MakeOp(a, b, dt);
      op.trans_a = ta;
      op.trans_b = tb;
      ExpectMatchesReference(op, Tolerance(dt));
    }
  }
}

// Products just over OpenBLAS's threading rule run as column pieces on the
// calling thread: the rule's edges, and the same results for every
// transpose, odd widths and a batch, against the float64 reference.
TEST(GemmColumnPiecesTest, SplitsOnlyWhatFitsInAFewSingleThreadedPieces) {
  EXPECT_EQ(GemmColumnPieces(56, 56, 56), 1);     // small already
  EXPECT_EQ(GemmColumnPieces(64, 64, 64), 2);     // 64 x 32 x 64 each
  EXPECT_EQ(GemmColumnPieces(64, 65, 64), 2);     // widest piece 33
  EXPECT_EQ(GemmColumnPieces(80, 80, 80), 3);     // 80 x 27 x 80
  EXPECT_EQ(GemmColumnPieces(128, 128, 128), 1);  // too large: OpenBLAS threads it
  EXPECT_EQ(GemmColumnPieces(4096, 1, 64), 1);    // one column cannot be split
  EXPECT_TRUE(GemmRunsOnOneThread(64, 64, 64));
  EXPECT_FALSE(GemmRunsOnOneThread(128, 128, 128));
}

TEST_F(CpuMatmulTest, ColumnPiecesGiveTheSameProductForEveryTranspose) {
  struct Dims {
    int m, k, n;
  };
  for (const Dims d : {Dims{64, 64, 64}, Dims{70, 61, 67}, Dims{80, 80, 80}}) {
    ASSERT_GT(GemmColumnPieces(d.m, d.n, d.k), 1);
    for (DType dt : {DType::kF32, DType::kF64}) {
      for (int t = 0; t < 4; ++t) {
        const bool ta = t & 1, tb = t & 2;
        SCOPED_TRACE(testing::Message() << d.m << "x" << d.k << "x" << d.n << " " << DTypeName(dt)
                                        << " trans_a=" << ta << " trans_b=" << tb);
        Tensor a = RandomTensor(dt, ta ? Shape{2, d.k, d.m} : Shape{2, d.m, d.k}, rng_);
        Tensor b = RandomTensor(dt, tb ? Shape{2, d.n, d.k} : Shape{2, d.k, d.n}, rng_);
        MatmulOp op = MakeOp(a, b, dt);
        op.trans_a = ta;
        op.trans_b = tb;
        op.alpha = 0.5;
        ExpectMatchesReference(op, dt == DType::kF64 ? 1e-12 : 1e-5);
      }
    }
  }
}

TEST_F(CpuMatmulTest, EpiloguesWithBothBiasFormsAlphaBeta) {
  const int m = 6, k = 9, n = 5;
  Tensor a = RandomTensor(DType::kF64, {m, k}, rng_);
  Tensor b = RandomTensor(DType::kF64, {k, n}, rng_);
  Tensor c = RandomTensor(DType::kF64, {m, n}, rng_);
  const Tensor bias_col = RandomTensor(DType::kF64, {n}, rng_);
  const Tensor bias_col2 = RandomTensor(DType::kF64, {1, n}, rng_);
  const Tensor bias_row = RandomTensor(DType::kF64, {m, 1}, rng_);
  for (Epilogue e : {Epilogue::kNone, Epilogue::kRelu, Epilogue::kGelu, Epilogue::kBias,
                     Epilogue::kReluBias, Epilogue::kGeluBias}) {
    for (const Tensor* bias : {&bias_col, &bias_col2, &bias_row}) {
      SCOPED_TRACE(testing::Message() << EpilogueName(e) << " bias " << ShapeString(bias->shape()));
      MatmulOp op = MakeOp(a, b, DType::kF64);
      op.c = c.view();
      op.alpha = 0.7;
      op.beta = -0.3;
      op.epilogue = e;
      if (EpilogueHasBias(e)) op.bias = bias->view();
      ExpectMatchesReference(op, 1e-12);
      if (!EpilogueHasBias(e)) break;
    }
  }
}

TEST_F(CpuMatmulTest, ReluZeroesNegativesAndGeluIsTheTanhForm) {
  // a = identity, so the product is b itself: the epilogue is seen directly.
  Tensor a = test_ref::FromValues(DType::kF64, {1, 1}, {1.0});
  Tensor b = test_ref::FromValues(DType::kF64, {1, 3}, {-2.0, 0.5, 3.0});
  MatmulOp op = MakeOp(a, b, DType::kF64);
  op.epilogue = Epilogue::kRelu;
  EXPECT_EQ(Run(op), (std::vector<double>{0.0, 0.5, 3.0}));
  op.epilogue = Epilogue::kGelu;
  const std::vector<double> g = Run(op);
  ASSERT_EQ(g.size(), 3u);
  EXPECT_NEAR(g[0], -0.04540230591222, 1e-12);  // tanh form; erf form gives -0.04550026
  EXPECT_NEAR(g[1], 0.34571400982514394, 1e-12);
  EXPECT_NEAR(g[2], 2.996362607918227, 1e-12);
}

TEST_F(CpuMatmulTest, BatchBroadcasting) {
  for (DType dt : {DType::kF32, DType::kF64, DType::kBF16}) {
    SCOPED_TRACE(DTypeName(dt));
    Tensor a = RandomTensor(dt, {2, 1, 4, 3}, rng_);
    Tensor b = RandomTensor(dt, {3, 3, 5}, rng_);
    MatmulOp op = MakeOp(a, b, dt);
    ExpectMatchesReference(op, Tolerance(dt));
    Tensor a2 = RandomTensor(dt, {4, 3}, rng_);  // one a for every b
    op.a = a2.view();
    op.trans_b = true;
    Tensor b2 = RandomTensor(dt, {4, 5, 3}, rng_);
    op.b = b2.view();
    ExpectMatchesReference(op, Tolerance(dt));
  }
}

TEST_F(CpuMatmulTest, CBroadcasts) {
  const int m = 4, k = 3, n = 5;
  Tensor a = RandomTensor(DType::kF32, {2, 3, m, k}, rng_);
  Tensor b = RandomTensor(DType::kF32, {k, n}, rng_);
  for (const Shape& cs : {Shape{1, n}, Shape{m, n}, Shape{m, 1}, Shape{2, 3, m, n}, Shape{3, m, n},
                          Shape{2, 1, 1, n}, Shape{n}}) {
    SCOPED_TRACE(ShapeString(cs));
    Tensor c = RandomTensor(DType::kF32, cs, rng_);
    Tensor bias = RandomTensor(DType::kF32, {n}, rng_);
    MatmulOp op = MakeOp(a, b);
    op.c = c.view();
    op.bias = bias.view();
    op.alpha = 1.5;
    op.beta = 2.0;
    op.epilogue = Epilogue::kGeluBias;
    ExpectMatchesReference(op, 1e-5);
  }
}

TEST_F(CpuMatmulTest, HalfInputsWithF32AndHalfOutputs) {
  for (DType dt : {DType::kF16, DType::kBF16}) {
    for (DType out : {DType::kF32, dt}) {
      SCOPED_TRACE(testing::Message() << DTypeName(dt) << " -> " << DTypeName(out));
      Tensor a = RandomTensor(dt, {2, 8, 16}, rng_);
      Tensor b = RandomTensor(dt, {16, 8}, rng_);
      Tensor c = RandomTensor(out, {8, 8}, rng_);
      Tensor bias = RandomTensor(out, {8, 1}, rng_);
      MatmulOp op = MakeOp(a, b, out);
      op.c = c.view();
      op.bias = bias.view();
      op.beta = 0.5;
      op.epilogue = Epilogue::kReluBias;
      // f32 output keeps the f32 accumulation: much tighter than 2e-2.
      ExpectMatchesReference(op, out == DType::kF32 ? 1e-5 : 2e-2);
    }
  }
}

TEST_F(CpuMatmulTest, ComputeModesRoundTheInputs) {
  const int m = 16, k = 64, n = 16;
  Tensor a = RandomTensor(DType::kF32, {m, k}, rng_);
  Tensor b = RandomTensor(DType::kF32, {k, n}, rng_);
  MatmulOp op = MakeOp(a, b);
  const std::vector<double> exact = Run(op);
  struct Case {
    ComputeMode mode;
    float (*round)(float);
    double tol;
  };
  for (const Case& cs :
       {Case{ComputeMode::kTf32, RoundToTf32, 5e-3}, Case{ComputeMode::kFast16F, RoundToHalf, 2e-2},
        Case{ComputeMode::kFast16BF, RoundToBFloat16, 2e-2}}) {
    SCOPED_TRACE(ComputeModeName(cs.mode));
    op.compute = cs.mode;
    Shape shape;
    const std::vector<double> got = Run(op);
    EXPECT_LE(RelError(got, exact), cs.tol);
    EXPECT_GT(RelError(got, exact), 1e-6) << "mode had no effect";
    // Equal to an f32 product of the rounded inputs.
    std::vector<float> ra = ToFloatVector(a.view()), rb = ToFloatVector(b.view());
    for (float& v : ra) v = cs.round(v);
    for (float& v : rb) v = cs.round(v);
    Tensor ta = FromFloats(DType::kF32, {m, k}, ra.data());
    Tensor tb = FromFloats(DType::kF32, {k, n}, rb.data());
    MatmulOp rounded = MakeOp(ta, tb);
    EXPECT_LE(RelError(got, ReferenceMatmul(rounded, &shape)), 1e-5);
  }
}

TEST_F(CpuMatmulTest, ManySmallAndFewLargeBatchElements) {
  // 64 elements of 8^3 spread over the pool; 3 elements of 80^3 run in turn.
  for (const auto& [batch, size] : {std::pair{64, 8}, std::pair{3, 80}}) {
    SCOPED_TRACE(testing::Message() << batch << " x " << size);
    Tensor a = RandomTensor(DType::kF32, {batch, size, size}, rng_);
    Tensor b = RandomTensor(DType::kF32, {batch, size, size}, rng_);
    Tensor c = RandomTensor(DType::kF32, {batch, size, size}, rng_);
    MatmulOp op = MakeOp(a, b);
    op.c = c.view();
    op.beta = 1.0;
    op.epilogue = Epilogue::kRelu;
    ExpectMatchesReference(op, 1e-5);
  }
}

TEST_F(CpuMatmulTest, ConcurrentCallsAreIndependent) {
  Tensor a = RandomTensor(DType::kF64, {16, 12, 12}, rng_);
  Tensor b = RandomTensor(DType::kF64, {12, 12}, rng_);
  MatmulOp op = MakeOp(a, b, DType::kF64);
  const MatmulPlan plan = *PlanMatmul(op);
  Shape shape;
  const std::vector<double> ref = ReferenceMatmul(op, &shape);
  std::vector<double> errors(4, 1.0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep) {
        absl::StatusOr<Tensor> out = backend_->Matmul(op, plan);
        errors[t] = out.ok() ? std::max(rep ? errors[t] : 0.0, RelError(Values(*out), ref)) : 1.0;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (double e : errors) EXPECT_LE(e, 1e-12);
}

// A product larger than kStopCheckMnk runs as column panels with a look at
// the stop token before each: a deadline that passes during it ends it within
// a panel (DEADLINE_EXCEEDED), not when the whole product is done. One
// caller's large product held a CPU worker past its deadline and the
// op-timeout while the calls queued behind it expired.
TEST_F(CpuMatmulTest, ALargeProductStopsBetweenItsPanels) {
  EXPECT_EQ(GemmStopPanels(4096, 4096, 4096), 2);       // 6.9e10 multiply-adds
  EXPECT_EQ(GemmStopPanels(8192, 8192, 8192), 8);       // 1024 columns a panel at least
  EXPECT_EQ(GemmStopPanels(2048, 1000, 65536), 1);      // too narrow to split
  EXPECT_EQ(GemmStopPanels(2048, 2048, 2048, 2e9), 2);  // a smaller panel, as below
  // Panels of 4e9 here, so that a product of a few tenths of a second shows it.
  backend_ = CreateCpuBackend({.blas_threads = 2, .batch_threads = 3, .stop_check_mnk = 4e9});
  Tensor a = RandomTensor(DType::kF32, Shape{2048, 2048}, rng_);
  Tensor b = RandomTensor(DType::kF32, Shape{2048, 2048}, rng_);
  MatmulOp op = MakeOp(a, b, DType::kF32);
  absl::StatusOr<MatmulPlan> plan = PlanMatmul(op);
  ASSERT_TRUE(plan.ok()) << plan.status();
  auto state = std::make_shared<StopState>();
  // Well inside the first of its two panels (~17 GFLOP: tenths of a second here).
  state->SetDeadline(absl::Now() + absl::Milliseconds(20), /*is_op_timeout=*/false);
  op.stop = StopToken(state);
  absl::StatusOr<Tensor> out = backend_->Matmul(op, *plan);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDeadlineExceeded) << out.status();
}

// A batch's flops are counted once: 32 products of 96^3 (57 MFLOP in all)
// are no large op (1e9 flops, blas_threads.h), so two such calls at once run
// on the busy count (1 here). Counted batch^2 times (1.8 GFLOP) they were
// large and kept every OpenBLAS thread while the other ran.
TEST_F(CpuMatmulTest, ABatchedProductIsLargeByItsOwnFlops) {
  std::atomic<bool> busy{false};
  backend_ = CreateCpuBackend({.blas_threads = 2,
                               .batch_threads = 1,
                               .busy_blas_threads = 1,
                               .on_blas_threads = [&busy](int threads) {
                                 if (threads == 1) busy = true;
                               }});
  Tensor a = RandomTensor(DType::kF32, Shape{32, 96, 96}, rng_);
  Tensor b = RandomTensor(DType::kF32, Shape{32, 96, 96}, rng_);
  MatmulOp op = MakeOp(a, b, DType::kF32);
  const MatmulPlan plan = *PlanMatmul(op);
  ASSERT_LT(MatmulFlops(plan), 1e9);
  ASSERT_GE(MatmulFlops(plan) * plan.batch, 1e9);
  // Two callers until the governor has gone to the busy count (their calls
  // overlap within milliseconds) or 5 s have passed.
  const absl::Time end = absl::Now() + absl::Seconds(5);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      while (!busy && absl::Now() < end) ASSERT_TRUE(backend_->Matmul(op, plan).ok());
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_TRUE(busy) << "two batched products at once never ran on the busy count";
  backend_ = CreateCpuBackend({});  // OpenBLAS's process-wide count back to every core
}

TEST(CpuBackendTest, NameIsCpu) { EXPECT_EQ(CreateCpuBackend({})->name(), "cpu"); }

// A batch of products or solves whose BLAS/LAPACK calls OpenBLAS threads runs
// them one after another on one worker: the scheduler is told not to batch
// them (separate calls overlap on the CPU workers). Those that run on one
// thread (or every one with one OpenBLAS thread) are batched.
TEST(CpuBackendTest, BatchesOnlyOpsThatRunOnOneThreadEach) {
  auto matmul = [](int64_t m, int64_t n, int64_t k) {
    MatmulPlan plan;
    plan.m = m;
    plan.n = n;
    plan.k = k;
    return plan;
  };
  auto solve = [](int64_t n, int64_t k) {
    SolvePlan plan;
    plan.m = plan.n = n;
    plan.k = k;
    return plan;
  };
  std::unique_ptr<Backend> threaded = CreateCpuBackend({.blas_threads = 2, .batch_threads = 2});
  EXPECT_TRUE(threaded->GainsFromBatching(matmul(32, 32, 32)));
  EXPECT_TRUE(threaded->GainsFromBatching(matmul(64, 64, 64)));  // as four column pieces
  EXPECT_FALSE(threaded->GainsFromBatching(matmul(128, 128, 128)));
  EXPECT_FALSE(threaded->GainsFromBatching(matmul(1024, 1024, 1024)));
  EXPECT_TRUE(threaded->GainsFromBatching(solve(64, 1)));
  EXPECT_FALSE(threaded->GainsFromBatching(solve(65, 1)));
  EXPECT_FALSE(threaded->GainsFromBatching(solve(8, 100)));
  std::unique_ptr<Backend> one = CreateCpuBackend({.blas_threads = 1, .batch_threads = 2});
  EXPECT_TRUE(one->GainsFromBatching(matmul(128, 128, 128)));
  EXPECT_TRUE(one->GainsFromBatching(solve(500, 1)));
}

}  // namespace
}  // namespace linalgd
