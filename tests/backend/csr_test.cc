// CSR validation, canonicalization (sorting, duplicate summing, int64
// narrowing), structure analysis and the sparse plan.
#include "server/backend/csr.h"

#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/backend/sparse_plan.h"

namespace linalgd {
namespace {

using ::testing::HasSubstr;

template <typename I>
RawCsr Raw(int64_t n, const std::vector<I>& offsets, const std::vector<I>& indices,
           const std::vector<double>& values) {
  RawCsr r;
  r.rows = r.cols = n;
  r.index_bytes = sizeof(I);
  r.row_offsets = offsets.data();
  r.col_indices = indices.data();
  r.nnz = static_cast<int64_t>(indices.size());
  r.dtype = DType::kF64;
  r.values = values.data();
  return r;
}

absl::Status Check(int64_t n, const std::vector<int32_t>& o, const std::vector<int32_t>& i,
                   const std::vector<double>& v) {
  return ValidateCsr(Raw(n, o, i, v), "a").status();
}

TEST(CsrTest, CanonicalInt32IsViewedNotCopied) {
  std::vector<int32_t> o = {0, 2, 3}, i = {0, 1, 1};
  std::vector<double> v = {1, 2, 3};
  auto m = ValidateCsr(Raw<int32_t>(2, o, i, v), "a");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_FALSE(m->copied());
  EXPECT_EQ(m->view().row_offsets, o.data());
  EXPECT_EQ(m->view().nnz(), 3);
}

TEST(CsrTest, RejectsMalformedOffsetsAndIndices) {
  const std::vector<double> v = {1, 2, 3};
  absl::Status s = Check(2, {1, 2, 3}, {0, 1, 1}, v);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("a.row_offsets[0]: 1, must be 0"));
  s = Check(2, {0, 2, 2}, {0, 1, 1}, v);
  EXPECT_THAT(s.message(), HasSubstr("a.row_offsets[2]: 2, must equal nnz 3"));
  s = Check(3, {0, 2, 1, 3}, {0, 1, 1}, v);
  EXPECT_THAT(s.message(), HasSubstr("decreasing at row 1 (2 then 1)"));
  s = Check(2, {0, 2, 3}, {0, 2, 1}, v);
  EXPECT_THAT(s.message(), HasSubstr("a.col_indices[1]: 2 (row 0) is outside [0, 2)"));
  s = Check(2, {0, 2, 3}, {0, -1, 1}, v);
  EXPECT_THAT(s.message(), HasSubstr("a.col_indices[1]: -1"));
}

// An offset past nnz in a middle row was followed into col_indices before the
// last offset was checked: a heap read past the array, its bytes echoed in the
// message. Every offset is now checked before any index is read (ASan would
// report the old read; the message says which offset is wrong).
TEST(CsrTest, OffsetBeyondNnzIsRefusedBeforeIndicesAreRead) {
  const std::vector<int64_t> o = {0, int64_t{1} << 40, 2};
  const std::vector<int64_t> i = {0, 0};
  const std::vector<double> v = {1, 2};
  absl::Status s = ValidateCsr(Raw<int64_t>(2, o, i, v), "a").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("a.row_offsets[1]: 1099511627776 is beyond nnz 2"));
  const std::vector<int32_t> o32 = {0, 3, 2}, i32 = {0, 0};
  s = ValidateCsr(Raw<int32_t>(2, o32, i32, v), "a").status();
  EXPECT_THAT(s.message(), HasSubstr("a.row_offsets[1]: 3 is beyond nnz 2"));
  const std::vector<int32_t> neg = {0, -5, 2};
  s = ValidateCsr(Raw<int32_t>(2, neg, i32, v), "a").status();
  EXPECT_THAT(s.message(), HasSubstr("decreasing at row 0 (0 then -5)"));
}

TEST(CsrTest, SortsRowsAndSumsDuplicates) {
  // Row 0: (1, 2), (0, 1), (1, 5) -> (0, 1), (1, 7).
  std::vector<int64_t> o = {0, 3, 4}, i = {1, 0, 1, 0};
  std::vector<double> v = {2, 1, 5, 4};
  auto m = ValidateCsr(Raw<int64_t>(2, o, i, v), "a");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->copied());
  EXPECT_EQ(m->duplicates_summed(), 1);
  const CsrView& c = m->view();
  EXPECT_EQ(std::vector<int32_t>(c.row_offsets, c.row_offsets + 3),
            (std::vector<int32_t>{0, 2, 3}));
  EXPECT_EQ(std::vector<int32_t>(c.col_indices, c.col_indices + 3),
            (std::vector<int32_t>{0, 1, 0}));
  EXPECT_EQ(std::vector<double>(c.as<double>(), c.as<double>() + 3),
            (std::vector<double>{1, 7, 4}));
  CsrMatrix moved = std::move(*m);  // the view survives a move
  EXPECT_EQ(moved.view().as<double>()[1], 7);
}

TEST(CsrTest, Int64IndicesAreNarrowed) {
  std::vector<int64_t> o = {0, 1, 2}, i = {1, 0};
  std::vector<double> v = {1, 1};
  auto m = ValidateCsr(Raw<int64_t>(2, o, i, v), "a");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->view().col_indices[0], 1);
  std::vector<int64_t> big = {0, int64_t{1} << 40, 2};
  EXPECT_EQ(ValidateCsr(Raw<int64_t>(2, big, i, v), "a").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CsrTest, AnalyzeFindsSymmetryAndDiagonal) {
  std::vector<int32_t> o = {0, 2, 4}, i = {0, 1, 0, 1};
  std::vector<double> sym = {2, -1, -1, 3}, asym = {2, -1, 5, 3}, neg = {2, -1, -1, -3};
  auto view = [&](const std::vector<double>& v) {
    return CsrView{2, 2, DType::kF64, o.data(), i.data(), v.data()};
  };
  CsrStructure s = AnalyzeCsr(view(sym));
  EXPECT_TRUE(s.symmetric);
  EXPECT_TRUE(s.positive_diagonal);
  s = AnalyzeCsr(view(asym));
  EXPECT_FALSE(s.symmetric);
  EXPECT_EQ(s.asym_row, 0);
  EXPECT_EQ(s.asym_col, 1);
  s = AnalyzeCsr(view(neg));
  EXPECT_TRUE(s.symmetric);
  EXPECT_FALSE(s.positive_diagonal);
}

TEST(SparsePlanTest, DefaultsAutoAndShapeChecks) {
  std::vector<int32_t> o = {0, 2, 4}, i = {0, 1, 0, 1};
  std::vector<double> v = {2, -1, -1, 3}, b = {1, 1};
  SparseSolveOp op;
  op.a = CsrView{2, 2, DType::kF64, o.data(), i.data(), v.data()};
  op.b = TensorView{DType::kF64, {2, 1}, reinterpret_cast<const std::byte*>(b.data())};
  auto plan = PlanSparseSolve(op);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->first, SparseMethod::kCholesky);
  EXPECT_EQ(op.tolerance, 1e-10);
  EXPECT_EQ(op.max_iterations, 1000);
  EXPECT_DOUBLE_EQ(plan->density(), 1.0);
  op.b.shape = {3, 1};
  EXPECT_THAT(PlanSparseSolve(op).status().message(), HasSubstr("b.shape: [3, 1] must be [2, k]"));
  op.b.shape = {2, 1};
  op.tolerance = -1;
  EXPECT_THAT(PlanSparseSolve(op).status().message(), HasSubstr("tolerance: -1"));
}

TEST(SparsePlanTest, FallbackOrder) {
  SparseSolvePlan plan;
  plan.structure.symmetric = plan.structure.positive_diagonal = true;
  EXPECT_EQ(SparseFallback(SparseMethod::kCholesky, plan), SparseMethod::kLu);
  EXPECT_EQ(SparseFallback(SparseMethod::kLu, plan), SparseMethod::kQr);
  EXPECT_EQ(SparseFallback(SparseMethod::kQr, plan), SparseMethod::kAuto);
  EXPECT_EQ(SparseFallback(SparseMethod::kCg, plan), SparseMethod::kCholesky);
  plan.structure.symmetric = false;
  EXPECT_EQ(SparseFallback(SparseMethod::kGmres, plan), SparseMethod::kLu);
  plan.complex = true;  // complex sparse QR is absent: a failed lu is final
  EXPECT_EQ(SparseFallback(SparseMethod::kLu, plan), SparseMethod::kAuto);
}

TEST(CsrTest, ComplexDuplicatesSumBothParts) {
  // Row 0: (0, 1 + 2i), (0, 3 - 1i) -> (0, 4 + 1i); values as packed pairs.
  std::vector<int32_t> o = {0, 2}, i = {0, 0};
  std::vector<double> v = {1, 2, 3, -1};
  RawCsr raw = Raw<int32_t>(1, o, i, v);
  raw.dtype = DType::kC128;
  auto m = ValidateCsr(raw, "a");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->duplicates_summed(), 1);
  EXPECT_EQ(std::vector<double>(m->view().as<double>(), m->view().as<double>() + 2),
            (std::vector<double>{4, 1}));
}

// Complex a: auto means lu; the other methods and preconditioners are
// INVALID_ARGUMENT naming the method and the dtype.
TEST(SparsePlanTest, ComplexTakesLuAndAutoAlone) {
  std::vector<int32_t> o = {0, 1, 2}, i = {0, 1};
  std::vector<float> v = {1, 1, 2, 0};  // diag(1 + i, 2) in c64
  std::vector<float> b = {1, 0, 1, 0};
  SparseSolveOp op;
  op.a = CsrView{2, 2, DType::kC64, o.data(), i.data(), v.data()};
  op.b = TensorView{DType::kC64, {2, 1}, reinterpret_cast<const std::byte*>(b.data())};
  auto plan = PlanSparseSolve(op);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->first, SparseMethod::kLu);
  EXPECT_TRUE(plan->complex);
  EXPECT_EQ(op.tolerance, 1e-5);
  for (SparseMethod m : {SparseMethod::kCholesky, SparseMethod::kQr, SparseMethod::kCg,
                         SparseMethod::kBicgstab, SparseMethod::kGmres}) {
    op.method = m;
    EXPECT_THAT(PlanSparseSolve(op).status().message(),
                HasSubstr(absl::StrCat("method: ", SparseMethodName(m),
                                       " is not implemented for c64 sparse solves")));
  }
  op.method = SparseMethod::kLu;
  op.preconditioner = Preconditioner::kJacobi;
  EXPECT_THAT(PlanSparseSolve(op).status().message(), HasSubstr("preconditioner: jacobi"));
}

}  // namespace
}  // namespace linalgd
