// Wire tensors -> views: shapes, byte counts and limits (ViewOf).
#include "server/service/convert.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace linalgd {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

v1::Tensor Wire(const std::vector<int64_t>& shape, std::string data) {
  v1::Tensor t;
  t.set_dtype(v1::DTYPE_F32);
  for (int64_t d : shape) t.add_shape(d);
  t.set_data(std::move(data));
  return t;
}
v1::Tensor Wire(std::initializer_list<int64_t> shape, std::string data) {
  return Wire(std::vector<int64_t>(shape), std::move(data));
}

// numpy arrays may have a zero dimension: the tensor is empty, no bytes.
TEST(ViewOfTest, ZeroDimensionsMakeAnEmptyTensor) {
  const TensorLimits limits;
  for (const v1::Tensor& t : {Wire({0, 3}, ""), Wire({4, 0}, ""), Wire({0, 2, 2}, "")}) {
    absl::StatusOr<TensorView> view = ViewOf(t, "a", limits);
    ASSERT_TRUE(view.ok()) << view.status();
    EXPECT_EQ(view->num_elements(), 0);
  }
  absl::StatusOr<TensorView> view = ViewOf(Wire({2, 0, 5}, ""), "a", limits);
  ASSERT_TRUE(view.ok());
  EXPECT_THAT(view->shape, ElementsAre(2, 0, 5));
  view = ViewOf(Wire({0, 3}, "abcd"), "b", limits);
  EXPECT_EQ(view.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(view.status().message(), HasSubstr("b.data: 4 bytes, expected 0"));
}

TEST(ViewOfTest, NegativeDimensionsAreRefusedNamingTheField) {
  absl::StatusOr<TensorView> view = ViewOf(Wire({3, -1}, ""), "bias", TensorLimits());
  EXPECT_EQ(view.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(view.status().message(), AllOf(HasSubstr("bias.shape: [3, -1]"),
                                             HasSubstr("dimension 1 = -1"), HasSubstr(">= 0")));
}

// The element limit still bounds the nonzero dimensions of an empty tensor,
// so that no product of them can overflow later.
// A shape of a million ones is one element: its length is bounded on its own
// (a stored tensor's shape is kept and copied with it), and the refusal does
// not spell the shape out.
TEST(ViewOfTest, RankIsAtMostNumpysLimit) {
  EXPECT_TRUE(
      ViewOf(Wire(std::vector<int64_t>(kMaxRank, 1), std::string(4, '\0')), "a", TensorLimits())
          .ok());
  absl::StatusOr<TensorView> view =
      ViewOf(Wire(std::vector<int64_t>(1000000, 1), std::string(4, '\0')), "a", TensorLimits());
  EXPECT_EQ(view.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(view.status().message(),
            "a.shape: rank 1000000 is above 64, the most dimensions a tensor may have");
}

TEST(ViewOfTest, ElementLimitAppliesToTheNonzeroDims) {
  TensorLimits limits;
  limits.max_elements = 1000;
  absl::StatusOr<TensorView> view = ViewOf(Wire({0, 100, 100}, ""), "a", limits);
  EXPECT_EQ(view.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(view.status().message(),
              AllOf(HasSubstr("a.shape: [0, 100, 100]"), HasSubstr("more than 1000 elements")));
  EXPECT_TRUE(ViewOf(Wire({0, 10, 100}, ""), "a", limits).ok());
  const int64_t huge = int64_t{1} << 62;
  EXPECT_FALSE(ViewOf(Wire({0, huge, huge}, ""), "a", TensorLimits()).ok());
}

}  // namespace
}  // namespace linalgd
