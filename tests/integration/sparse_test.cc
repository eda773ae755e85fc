// SparseSolve through the real server and client: methods, the density
// switch, validation messages, NaN policy and failures.
#include "linalgd/sparse.h"

#include <cmath>
#include <string>
#include <vector>

#include "linalgd/client.h"
#include "tests/integration/test_server.h"

namespace linalgd::testing {
namespace {

using ::testing::HasSubstr;

// The 5-point Laplacian on an m x m grid.
client::CsrMatrix Poisson(int m) {
  std::vector<int32_t> offsets = {0}, indices;
  std::vector<double> values;
  for (int y = 0; y < m; ++y) {
    for (int x = 0; x < m; ++x) {
      const int i = y * m + x;
      auto add = [&](int j, double v) {
        indices.push_back(j);
        values.push_back(v);
      };
      if (y > 0) add(i - m, -1);
      if (x > 0) add(i - 1, -1);
      add(i, 4);
      if (x + 1 < m) add(i + 1, -1);
      if (y + 1 < m) add(i + m, -1);
      offsets.push_back(static_cast<int32_t>(indices.size()));
    }
  }
  return client::CsrMatrix::FromArrays(m * m, m * m, offsets, indices, values).value();
}

class SparseIntegrationTest : public ServerTest {
 protected:
  client::SparseSolveArgs Args(client::CsrMatrix a, client::SparseMethod method) {
    client::SparseSolveArgs args;
    const int64_t n = a.rows;
    args.a = std::move(a);
    args.b = RandomTensor<double>({n, 2}, 5);
    args.method = method;
    return args;
  }
};

TEST_F(SparseIntegrationTest, EveryMethodSolvesPoisson) {
  for (auto m : {client::SparseMethod::kAuto, client::SparseMethod::kCholesky,
                 client::SparseMethod::kLu, client::SparseMethod::kQr, client::SparseMethod::kCg,
                 client::SparseMethod::kBicgstab, client::SparseMethod::kGmres}) {
    client::SparseSolveArgs args = Args(Poisson(16), m);
    if (m == client::SparseMethod::kCg) args.preconditioner = client::Preconditioner::kIc0;
    auto r = client_->SparseSolve(std::move(args));
    ASSERT_TRUE(r.ok()) << client::SparseMethodName(m) << ": " << r.status();
    EXPECT_LT(r->residual, 1e-9) << client::SparseMethodName(m);
    EXPECT_EQ(r->x.shape(), (std::vector<int64_t>{256, 2}));
    EXPECT_FALSE(r->dense_path);
    EXPECT_EQ(r->info.backend, "cpu");  // n = 256 is below --cpu-threshold
    EXPECT_EQ(r->method_used,
              m == client::SparseMethod::kAuto ? client::SparseMethod::kCholesky : m);
  }
}

TEST_F(SparseIntegrationTest, DenseMatrixTakesTheDensePath) {
  // 3 x 3 tridiagonal: nnz 7 > 0.1 * 9.
  auto a = client::CsrMatrix::FromArrays(3, 3, {0, 2, 5, 7}, {0, 1, 0, 1, 2, 1, 2},
                                         {2, -1, -1, 2, -1, -1, 2})
               .value();
  client::SparseSolveArgs args;
  args.a = std::move(a);
  args.b = client::Tensor::FromVector<double>({3, 1}, {1, 0, 1}).value();
  auto r = client_->SparseSolve(std::move(args));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->dense_path);
  EXPECT_EQ(r->method_used, client::SparseMethod::kCholesky);
  const auto x = r->x.ToVector<double>();
  for (double v : x) EXPECT_NEAR(v, 1.0, 1e-12);
  // Iterative methods stay sparse whatever the density.
  args.a = client::CsrMatrix::FromArrays(3, 3, {0, 2, 5, 7}, {0, 1, 0, 1, 2, 1, 2},
                                         {2, -1, -1, 2, -1, -1, 2})
               .value();
  args.b = client::Tensor::FromVector<double>({3, 1}, {1, 0, 1}).value();
  args.method = client::SparseMethod::kCg;
  r = client_->SparseSolve(std::move(args));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->dense_path);
  EXPECT_GT(r->iterations, 0);
}

TEST_F(SparseIntegrationTest, ThresholdFlagMovesTheSwitch) {
  server_->Shutdown(absl::Seconds(1));
  ServerOptions options;
  options.sparse_dense_threshold = 1.0;  // never dense
  StartServer(options);
  client::SparseSolveArgs args;
  args.a = client::CsrMatrix::FromArrays(2, 2, {0, 2, 4}, {0, 1, 0, 1}, {2, 1, 1, 2}).value();
  args.b = client::Tensor::FromVector<double>({2, 1}, {3, 3}).value();
  auto r = client_->SparseSolve(std::move(args));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->dense_path);
  EXPECT_NEAR(r->x.ToVector<double>()[0], 1.0, 1e-12);
}

TEST_F(SparseIntegrationTest, MalformedCsrIsInvalidArgumentNamingTheField) {
  client::SparseSolveArgs args;
  args.a = client::CsrMatrix::FromArrays(2, 2, {0, 2, 1}, {0, 1}, {1, 1}).value();
  args.b = client::Tensor::FromVector<double>({2, 1}, {1, 1}).value();
  auto r = client_->SparseSolve(std::move(args));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("a.row_offsets: decreasing at row 1 (2 then 1)"));

  args.a = client::CsrMatrix::FromArrays(2, 2, {0, 1, 2}, {0, 5}, {1, 1}).value();
  args.b = client::Tensor::FromVector<double>({2, 1}, {1, 1}).value();
  r = client_->SparseSolve(std::move(args));
  EXPECT_THAT(r.status().message(), HasSubstr("a.col_indices[1]: 5 (row 1) is outside [0, 2)"));

  args.a = client::CsrMatrix::FromArrays(2, 2, {0, 1, 2}, {0, 1}, {1, 1}).value();
  args.b = client::Tensor::FromVector<double>({3, 1}, {1, 1, 1}).value();
  r = client_->SparseSolve(std::move(args));
  EXPECT_THAT(r.status().message(), HasSubstr("b.shape: [3, 1] must be [2, k]"));
}

TEST_F(SparseIntegrationTest, CholeskyOnNonsymmetricAndSingularFailures) {
  client::SparseSolveArgs args = Args(Poisson(4), client::SparseMethod::kCholesky);
  args.a.values.mutable_as<double>()[1] = -2;  // a[0][1] != a[1][0]
  auto r = client_->SparseSolve(std::move(args));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("needs a symmetric a"));

  // Singular (a zero row), LU without fallback.
  client::SparseSolveArgs s;
  s.a = client::CsrMatrix::FromArrays(20, 20, std::vector<int32_t>(21, 0), {}, {}).value();
  for (int i = 0; i < 19; ++i) {  // identity except the last row
    s.a.row_offsets[i + 1] = i + 1;
    s.a.col_indices.push_back(i);
  }
  s.a.row_offsets[20] = 19;
  s.a.values = client::Tensor::FromVector<double>({19}, std::vector<double>(19, 1.0)).value();
  s.b = RandomTensor<double>({20, 1}, 3);
  s.method = client::SparseMethod::kLu;
  s.no_fallback = true;
  r = client_->SparseSolve(std::move(s));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("lu: a is singular"));
}

TEST_F(SparseIntegrationTest, NanIsRejectedUnlessAllowed) {
  client::SparseSolveArgs args = Args(Poisson(4), client::SparseMethod::kLu);
  args.a.values.mutable_as<double>()[3] = std::nan("");
  auto r = client_->SparseSolve(args);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("a.values: stored entry 3 is NaN"));
}

TEST_F(SparseIntegrationTest, F32AndPreconditionedIterative) {
  client::CsrMatrix a = Poisson(20);
  std::vector<float> v32(a.values.ToVector<float>());
  a.values = client::Tensor::FromVector<float>({a.nnz()}, absl::MakeConstSpan(v32)).value();
  client::SparseSolveArgs args;
  args.a = std::move(a);
  args.b = RandomTensor<float>({400, 1}, 9);
  args.method = client::SparseMethod::kBicgstab;
  args.preconditioner = client::Preconditioner::kIlu0;
  auto r = client_->SparseSolve(std::move(args));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->x.dtype(), client::DType::kF32);
  EXPECT_EQ(r->preconditioner_used, client::Preconditioner::kIlu0);
  EXPECT_LT(r->residual, 1e-4);
}

// The C++ client passes x0; a start at the answer ends GMRES at once.
TEST_F(SparseIntegrationTest, StartingPointReachesTheServer) {
  client::SparseSolveArgs cold = Args(Poisson(16), client::SparseMethod::kGmres);
  auto r = client_->SparseSolve(std::move(cold));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->iterations, 5);
  client::SparseSolveArgs warm = Args(Poisson(16), client::SparseMethod::kGmres);
  warm.x0 = std::move(r->x);
  auto w = client_->SparseSolve(std::move(warm));
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_LE(w->iterations, 1);
  EXPECT_LT(w->residual, 1e-9);
}

}  // namespace
}  // namespace linalgd::testing
