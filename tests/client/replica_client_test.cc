#include "client/src/replica_client.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace linalgd::client::internal {

bool operator==(const NamedId& x, const NamedId& y) { return x.field == y.field && x.id == y.id; }

namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(IdsOfTest, MatmulNamesEveryResidentOperand) {
  MatmulArgs args;
  EXPECT_THAT(IdsOf(args), IsEmpty());  // inline operands: stateless
  args.a_resident_id = "a-1";
  args.c_resident_id = "a-3";
  args.bias_resident_id = "a-4";
  EXPECT_THAT(IdsOf(args),
              ElementsAre(NamedId{"a_resident_id", "a-1"}, NamedId{"c_resident_id", "a-3"},
                          NamedId{"bias_resident_id", "a-4"}));
}

TEST(IdsOfTest, SolveNamesItsFactor) {
  SolveArgs args;
  EXPECT_THAT(IdsOf(args), IsEmpty());
  args.factor_id = "b-9";
  args.b_resident_id = "b-2";
  EXPECT_THAT(IdsOf(args),
              ElementsAre(NamedId{"b_resident_id", "b-2"}, NamedId{"factor_id", "b-9"}));
}

}  // namespace
}  // namespace linalgd::client::internal
