// Matrix Market parsing (coordinate real/integer/pattern, general/symmetric/
// skew-symmetric) and the SparseSolve proto conversions.
#include "linalgd/matrix_market.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "client/src/sparse_convert.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace linalgd::client {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<double> Values(const CsrMatrix& m) {
  auto v = m.values.ToVector<double>();
  return v;
}

TEST(MatrixMarketTest, GeneralRealSortsAndSumsDuplicates) {
  const char* text =
      "%%MatrixMarket matrix coordinate real general\n"
      "% a comment\n"
      "3 3 5\n"
      "2 1 -1.5\n"
      "1 1 4\n"
      "3 3 2e0\n"
      "1 3 1\n"
      "1 1 0.5\n";
  auto m = ParseMatrixMarket(text);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->rows, 3);
  EXPECT_EQ(m->cols, 3);
  EXPECT_THAT(m->row_offsets, ElementsAre(0, 2, 3, 4));
  EXPECT_THAT(m->col_indices, ElementsAre(0, 2, 0, 2));
  EXPECT_THAT(Values(*m), ElementsAre(4.5, 1, -1.5, 2));
  EXPECT_EQ(m->values.dtype(), DType::kF64);
}

TEST(MatrixMarketTest, SymmetricFillsTheUpperTriangle) {
  const char* text =
      "%%MatrixMarket matrix coordinate real symmetric\n"
      "2 2 3\n1 1 2\n2 1 -1\n2 2 2\n";
  auto m = ParseMatrixMarket(text, DType::kF32);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(m->row_offsets, ElementsAre(0, 2, 4));
  EXPECT_THAT(m->col_indices, ElementsAre(0, 1, 0, 1));
  EXPECT_THAT(Values(*m), ElementsAre(2, -1, -1, 2));
  EXPECT_EQ(m->values.dtype(), DType::kF32);
}

TEST(MatrixMarketTest, PatternIntegerAndSkew) {
  auto p = ParseMatrixMarket("%%MatrixMarket matrix coordinate pattern general\n2 2 2\n1 2\n2 1\n");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(Values(*p), ElementsAre(1, 1));
  auto i = ParseMatrixMarket("%%MatrixMarket matrix coordinate integer general\n1 1 1\n1 1 7\n");
  ASSERT_TRUE(i.ok()) << i.status();
  EXPECT_THAT(Values(*i), ElementsAre(7));
  auto s =
      ParseMatrixMarket("%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n2 1 3\n");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(Values(*s), ElementsAre(-3, 3));  // (0,1) = -3, (1,0) = 3
}

TEST(MatrixMarketTest, EmptyRowsKeepOffsets) {
  auto m = ParseMatrixMarket("%%MatrixMarket matrix coordinate real general\n4 4 1\n3 2 1\n");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(m->row_offsets, ElementsAre(0, 0, 0, 1, 1));
}

TEST(MatrixMarketTest, RejectsMalformedFiles) {
  EXPECT_THAT(
      ParseMatrixMarket("%%MatrixMarket matrix array real general\n2 2\n").status().message(),
      HasSubstr("coordinate only"));
  EXPECT_THAT(
      ParseMatrixMarket("%%MatrixMarket matrix coordinate complex general\n").status().message(),
      HasSubstr("field 'complex'"));
  EXPECT_THAT(ParseMatrixMarket("hello\n").status().message(), HasSubstr("line 1"));
  EXPECT_THAT(ParseMatrixMarket("%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1\n")
                  .status()
                  .message(),
              HasSubstr("line 3: entry (3, 1) is outside the 2 x 2 matrix"));
  EXPECT_THAT(ParseMatrixMarket("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n")
                  .status()
                  .message(),
              HasSubstr("declares 2 entries, the file has 1"));
  EXPECT_THAT(ParseMatrixMarket("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 x 1\n")
                  .status()
                  .message(),
              HasSubstr("line 3: expected 'row col value'"));
  EXPECT_EQ(ReadMatrixMarket("/nonexistent/a.mtx").status().code(), absl::StatusCode::kNotFound);
}

// Found by the fuzz_client_readers fuzz target: a symmetric file that is not
// square mirrored (1, 2) of a 1 x 3 matrix to row 2, past the row offsets; a
// size line declaring 10^18 entries reserved them up front.
TEST(MatrixMarketTest, RejectsNonSquareSymmetricAndHugeDeclarations) {
  for (const char* kind : {"symmetric", "skew-symmetric"}) {
    auto m = ParseMatrixMarket(
        absl::StrCat("%%MatrixMarket matrix coordinate pattern ", kind, "\n1 3 1\n1 2\n"));
    EXPECT_THAT(m.status().message(), HasSubstr("must be square, not 1 x 3")) << kind;
  }
  EXPECT_THAT(ParseMatrixMarket("%%MatrixMarket matrix coordinate real general\n"
                                "9999999999 2 1\n1 1 1\n")
                  .status()
                  .message(),
              HasSubstr("below 2^31"));
  auto m = ParseMatrixMarket(
      "%%MatrixMarket matrix coordinate real general\n"
      "2 2 1000000000000000000\n1 1 1\n");
  EXPECT_THAT(m.status().message(), HasSubstr("declares 1000000000000000000 entries"));
}

// A size line alone must not make the reader allocate gigabytes of row
// offsets (a 30-byte file declaring 863 million rows, which the fuzzer
// found): rows beyond max_rows are refused naming both numbers; the
// bound's edge is accepted, and a caller may raise it.
TEST(MatrixMarketTest, RowsBeyondMaxRowsAreRefusedBeforeAllocating) {
  const std::string huge = "%%MatrixMarket matrix coordinate real general\n863958625 1 0\n";
  EXPECT_THAT(ParseMatrixMarket(huge).status().message(),
              HasSubstr("863958625 rows exceed max_rows 33554432"));
  const std::string over = "%%MatrixMarket matrix coordinate real general\n9 9 1\n9 9 1\n";
  EXPECT_THAT(ParseMatrixMarket(over, DType::kF64, 8).status().message(),
              HasSubstr("line 2: 9 rows exceed max_rows 8"));
  auto edge = ParseMatrixMarket(over, DType::kF64, 9);
  ASSERT_TRUE(edge.ok()) << edge.status();
  EXPECT_EQ(edge->rows, 9);
  EXPECT_EQ(edge->nnz(), 1);
}

TEST(SparseConvertTest, RequestCarriesPackedInt32Arrays) {
  SparseSolveArgs args;
  args.a = *CsrMatrix::FromArrays(2, 2, {0, 1, 2}, {0, 1}, {2, 3});
  args.b = *Tensor::FromVector<double>({2, 1}, {1, 1});
  args.method = SparseMethod::kGmres;
  args.preconditioner = Preconditioner::kIlu0;
  args.tolerance = 1e-8;
  const auto r = internal::ToProto(std::move(args));
  EXPECT_EQ(r.a().index_type(), v1::INDEX_TYPE_INT32);
  EXPECT_EQ(r.a().row_offsets().size(), 12u);
  EXPECT_EQ(r.a().col_indices().size(), 8u);
  EXPECT_EQ(r.a().values().size(), 16u);
  EXPECT_EQ(r.method(), v1::SPARSE_METHOD_GMRES);
  EXPECT_EQ(r.preconditioner(), v1::PRECONDITIONER_ILU0);
  EXPECT_EQ(r.tolerance(), 1e-8);
  EXPECT_FALSE(CsrMatrix::FromArrays(2, 2, {0, 1}, {0}, {1}).ok());
}

TEST(SparseNamesTest, ParseAndName) {
  EXPECT_EQ(*ParseSparseMethod("bicgstab"), SparseMethod::kBicgstab);
  EXPECT_EQ(SparseMethodName(SparseMethod::kCg), "cg");
  EXPECT_EQ(*ParsePreconditioner("ic0"), Preconditioner::kIc0);
  EXPECT_THAT(ParsePreconditioner("ilu9").status().message(), HasSubstr("none, jacobi, ilu0, ic0"));
}

}  // namespace
}  // namespace linalgd::client
