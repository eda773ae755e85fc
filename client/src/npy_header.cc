#include "client/src/npy_header.h"

#include <cctype>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace linalgd::client::internal {
namespace {

// A cursor over the header text; every Parse* skips leading white space.
class Cursor {
 public:
  explicit Cursor(absl::string_view text) : text_(text) {}

  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  // Consumes `c` if it is next.
  bool Eat(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool AtEnd() {
    SkipSpace();
    return pos_ >= text_.size();
  }
  // The next ~20 characters, for error messages.
  std::string Near() const { return std::string(text_.substr(pos_, 20)); }

  absl::StatusOr<std::string> ParseString() {
    SkipSpace();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) {
      return Error("a quoted string");
    }
    const char quote = text_[pos_++];
    const size_t end = text_.find(quote, pos_);
    if (end == absl::string_view::npos) return Error("a closing quote");
    std::string out(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return out;
  }

  absl::StatusOr<bool> ParseBool() {
    SkipSpace();
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    return Error("True or False");
  }

  absl::StatusOr<std::vector<int64_t>> ParseShape() {
    if (!Eat('(')) return Error("a tuple '('");
    std::vector<int64_t> shape;
    while (!Eat(')')) {
      SkipSpace();
      size_t end = pos_;
      while (end < text_.size() && std::isdigit(static_cast<unsigned char>(text_[end]))) ++end;
      int64_t dim;
      if (end == pos_ || !absl::SimpleAtoi(text_.substr(pos_, end - pos_), &dim)) {
        return Error("a non-negative integer dimension");
      }
      pos_ = end;
      shape.push_back(dim);
      if (!Eat(',')) {
        if (!Eat(')')) return Error("',' or ')'");
        break;
      }
    }
    return shape;
  }

  absl::Status Error(absl::string_view expected) const {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", expected, " at offset ", pos_, " near '", Near(), "'"));
  }

 private:
  absl::string_view text_;
  size_t pos_ = 0;
};

absl::Status Annotate(absl::string_view field, const absl::Status& s) {
  return absl::InvalidArgumentError(absl::StrCat("header field '", field, "': ", s.message()));
}

// Parses the value of `key` into `header`; `seen` flags the keys done.
absl::Status ParseField(Cursor& c, const std::string& key, NpyHeader& header, int& seen) {
  int bit;
  absl::Status status;
  if (key == "descr") {
    bit = 1;
    absl::StatusOr<std::string> v = c.ParseString();
    status = v.status();
    if (v.ok()) header.descr = *v;
  } else if (key == "fortran_order") {
    bit = 2;
    absl::StatusOr<bool> v = c.ParseBool();
    status = v.status();
    if (v.ok()) header.fortran_order = *v;
  } else if (key == "shape") {
    bit = 4;
    absl::StatusOr<std::vector<int64_t>> v = c.ParseShape();
    status = v.status();
    if (v.ok()) header.shape = *v;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("header: unknown key '", key, "'"));
  }
  if (!status.ok()) return Annotate(key, status);
  if (seen & bit)
    return absl::InvalidArgumentError(absl::StrCat("header: duplicate key '", key, "'"));
  seen |= bit;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<NpyHeader> ParseNpyHeader(absl::string_view text) {
  Cursor c(text);
  if (!c.Eat('{')) return Annotate("dict", c.Error("'{'"));
  NpyHeader header;
  int seen = 0;
  while (!c.Eat('}')) {
    absl::StatusOr<std::string> key = c.ParseString();
    if (!key.ok()) return Annotate("dict", key.status());
    if (!c.Eat(':')) return Annotate(*key, c.Error("':'"));
    if (absl::Status s = ParseField(c, *key, header, seen); !s.ok()) return s;
    if (!c.Eat(',')) {
      if (!c.Eat('}')) return Annotate("dict", c.Error("',' or '}'"));
      break;
    }
  }
  if (!c.AtEnd()) return Annotate("dict", c.Error("the end of the header"));
  for (auto [bit, name] :
       {std::pair<int, const char*>{1, "descr"}, {2, "fortran_order"}, {4, "shape"}}) {
    if (!(seen & bit)) {
      return absl::InvalidArgumentError(absl::StrCat("header: missing key '", name, "'"));
    }
  }
  return header;
}

std::string FormatNpyHeader(const NpyHeader& header) {
  std::string shape = absl::StrJoin(header.shape, ", ");
  if (header.shape.size() == 1) shape += ",";
  return absl::StrCat("{'descr': '", header.descr,
                      "', 'fortran_order': ", header.fortran_order ? "True" : "False",
                      ", 'shape': (", shape, "), }");
}

}  // namespace linalgd::client::internal
