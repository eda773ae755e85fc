#include "server/service/tenant_tokens.h"

#include <openssl/sha.h>

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "server/common/caller_string.h"

namespace linalgd {
namespace {

constexpr size_t kMaxNameLength = 64;

bool IsTenantName(absl::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

absl::Status ParseHash(absl::string_view hex, Tenant& t) {
  if (hex == "-") return absl::OkStatus();
  if (hex.size() != 64) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the token hash has ", hex.size(), " characters; a SHA-256 is 64 hex digits (or \"-\")"));
  }
  for (size_t i = 0; i < 32; ++i) {
    int byte = 0;
    for (char c : hex.substr(2 * i, 2)) {
      if (!absl::ascii_isxdigit(c)) {
        return absl::InvalidArgumentError("the token hash is not hex digits");
      }
      byte = byte * 16 + (absl::ascii_isdigit(c) ? c - '0' : absl::ascii_tolower(c) - 'a' + 10);
    }
    t.token_sha256[i] = static_cast<unsigned char>(byte);
  }
  t.has_token = true;
  return absl::OkStatus();
}

absl::Status ParseKey(absl::string_view field, Tenant& t) {
  std::pair<absl::string_view, absl::string_view> kv =
      absl::StrSplit(field, absl::MaxSplits('=', 1));
  const auto& [key, value] = kv;
  if (key == "admin") {
    if (value != "true" && value != "false") {
      return absl::InvalidArgumentError(
          absl::StrCat("admin=", Quoted(value), " is not true or false"));
    }
    t.admin = value == "true";
    return absl::OkStatus();
  }
  const absl::flat_hash_map<absl::string_view, int64_t*> numbers = {
      {"store_bytes", &t.quotas.store_bytes},
      {"max_objects", &t.quotas.max_objects},
      {"max_inflight", &t.quotas.max_inflight},
      {"max_priority", &t.quotas.max_priority},
      {"max_message_bytes", &t.quotas.max_message_bytes},
      {"max_queued_bytes", &t.quotas.max_queued_bytes},
      {"weight", &t.quotas.weight}};
  auto it = numbers.find(key);
  if (it == numbers.end() || field.find('=') == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        Quoted(field),
        " is not key=value with a key of store_bytes, max_objects, max_inflight, max_priority, "
        "max_message_bytes, max_queued_bytes, weight, admin"));
  }
  int64_t n = 0;
  if (!absl::SimpleAtoi(value, &n) || n < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(key, "=", Quoted(value), " is not an integer >= 0"));
  }
  if (key == "weight" && (n < 1 || n > 1000)) {
    return absl::InvalidArgumentError(absl::StrCat("weight=", n, " is not in 1..1000"));
  }
  *it->second = n;
  return absl::OkStatus();
}

absl::StatusOr<Tenant> ParseLine(absl::string_view line, const TenantQuotas& defaults) {
  std::vector<absl::string_view> fields =
      absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (fields.size() < 2) {
    return absl::InvalidArgumentError("expected TENANT SHA256_HEX_OF_TOKEN [key=value ...]");
  }
  Tenant t;
  t.quotas = defaults;
  if (!IsTenantName(fields[0])) {
    return absl::InvalidArgumentError(
        absl::StrCat("tenant name ", Quoted(fields[0]), " is not 1-64 of [A-Za-z0-9._-]"));
  }
  t.name = std::string(fields[0]);
  if (absl::Status s = ParseHash(fields[1], t); !s.ok()) return s;
  for (size_t i = 2; i < fields.size(); ++i) {
    if (absl::Status s = ParseKey(fields[i], t); !s.ok()) return s;
  }
  return t;
}

}  // namespace

std::array<unsigned char, 32> Sha256(absl::string_view text) {
  std::array<unsigned char, 32> out{};
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), out.data());
  return out;
}

absl::StatusOr<TenantList> ParseTenantTokens(absl::string_view text, absl::string_view source,
                                             const TenantQuotas& defaults) {
  TenantList out;
  absl::flat_hash_map<std::string, int> name_line;
  absl::flat_hash_map<std::string, int> hash_line;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    line = absl::StripAsciiWhitespace(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    auto fail = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat(source, " line ", number, ": ", why));
    };
    absl::StatusOr<Tenant> t = ParseLine(line, defaults);
    if (!t.ok()) return fail(t.status().message());
    if (auto [it, fresh] = name_line.emplace(t->name, number); !fresh) {
      return fail(absl::StrCat("tenant ", t->name, " is already on line ", it->second));
    }
    if (t->has_token) {
      const std::string key(t->token_sha256.begin(), t->token_sha256.end());
      if (auto [it, fresh] = hash_line.emplace(key, number); !fresh) {
        return fail(absl::StrCat("the same token hash as line ", it->second));
      }
    }
    out.push_back(std::make_shared<const Tenant>(*std::move(t)));
  }
  return out;
}

}  // namespace linalgd
