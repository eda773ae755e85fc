#include "tools/cli/json_writer.h"

namespace linalgd::cli {

std::string DumpJson(const Json& json) {
  // nlohmann writes NaN and infinities as null; `replace` turns invalid
  // UTF-8 into U+FFFD where the default would throw.
  return json.dump(/*indent=*/-1, /*indent_char=*/' ', /*ensure_ascii=*/false,
                   Json::error_handler_t::replace);
}

Json TensorJson(const client::Tensor& tensor) {
  return Json{{"dtype", tensor.dtype()}, {"shape", tensor.shape()}};
}

}  // namespace linalgd::cli
