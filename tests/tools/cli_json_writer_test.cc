#include <cmath>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "linalgd/execution_info.h"
#include "linalgd/tensor.h"
#include "tools/cli/cli_common.h"
#include "tools/cli/json_writer.h"

namespace linalgd::cli {
namespace {

// What a JSON consumer sees: the printed line parsed back.
Json RoundTrip(const Json& json) { return Json::parse(DumpJson(json)); }

TEST(JsonWriterTest, OneLineThatParsesBackToTheSameValue) {
  Json json;
  json["id"] = "x";
  json["n"] = -4;
  json["ok"] = true;
  json["shape"] = std::vector<int64_t>{2, 3};
  json["none"] = Json::array();
  const std::string line = DumpJson(json);
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  EXPECT_EQ(Json::parse(line), json);
}

TEST(JsonWriterTest, KeysKeepTheirInsertionOrder) {
  Json json;
  json["z"] = 1;
  json["a"] = 2;
  json["m"] = 3;
  EXPECT_EQ(DumpJson(json), R"({"z":1,"a":2,"m":3})");
}

TEST(JsonWriterTest, QuotesBackslashesAndControlCharactersAreEscaped) {
  const std::string text = "a\"b\\c\nd\te\x01";
  const std::string line = DumpJson(Json{{"s", text}});
  EXPECT_NE(line.find(R"(a\"b\\c\nd\te\u0001)"), std::string::npos) << line;
  EXPECT_EQ(RoundTrip(Json{{"s", text}})["s"], text);
}

TEST(JsonWriterTest, Utf8PassesThroughAndInvalidBytesBecomeReplacementCharacters) {
  EXPECT_EQ(DumpJson(Json{{"s", "gpu:0 µs"}}), R"({"s":"gpu:0 µs"})");
  const Json bad{{"s", std::string("ab\xff") + "c"}};
  EXPECT_EQ(RoundTrip(bad)["s"],
            "ab\xEF\xBF\xBD"
            "c");  // U+FFFD
}

TEST(JsonWriterTest, NumbersRoundTripAndNonFiniteIsNull) {
  EXPECT_EQ(RoundTrip(Json(0.1)).get<double>(), 0.1);
  EXPECT_EQ(RoundTrip(Json(1e-300)).get<double>(), 1e-300);
  EXPECT_EQ(RoundTrip(Json(int64_t{1} << 62)).get<int64_t>(), int64_t{1} << 62);
  EXPECT_EQ(DumpJson(Json(std::numeric_limits<double>::quiet_NaN())), "null");
  EXPECT_EQ(DumpJson(Json(INFINITY)), "null");
  EXPECT_EQ(DumpJson(Json(-INFINITY)), "null");
}

TEST(JsonWriterTest, ClientStructsHaveTheirFieldsAsKeysAndEnumsAsNames) {
  absl::StatusOr<client::Tensor> t =
      client::Tensor::FromVector<float>({2, 3}, std::vector<float>(6));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(RoundTrip(TensorJson(*t)), Json::parse(R"({"dtype": "f32", "shape": [2, 3]})"));
  client::ExecutionInfo info;
  info.backend = "gpu:1";
  info.queue_time_ns = 5;
  info.run_time_ns = 7;
  info.batch_size = 2;
  const Json info_json = Json::parse(R"({"backend": "gpu:1", "queue_time_ns": 5,
                                        "run_time_ns": 7, "batch_size": 2, "fallback_reason": ""})");
  EXPECT_EQ(RoundTrip(Json(info)), info_json);
  client::FactorInfo f;
  f.factor_id = "abc";
  f.method = client::SolveMethod::kCholesky;
  f.n = 16;
  f.dtype = client::DType::kF64;
  f.rcond = 0.5;
  f.placement = "cpu";
  f.bytes = 2048;
  f.info = info;
  EXPECT_EQ(RoundTrip(Json(f)), Json::parse(R"({"factor_id": "abc", "method": "cholesky",
      "n": 16, "dtype": "f64", "rcond": 0.5, "placement": "cpu", "bytes": 2048, "fallback": "",
      "info": )" + info_json.dump() + "}"));
}

TEST(JsonWriterTest, ErrorNamesCodeMessageAndExitCode) {
  const Json error =
      RoundTrip(ErrorJson(absl::NotFoundError("no \"t\""), kExitServerError))["error"];
  EXPECT_EQ(error, Json::parse(R"({"code": "NOT_FOUND", "message": "no \"t\"", "exit_code": 1})"));
}

}  // namespace
}  // namespace linalgd::cli
