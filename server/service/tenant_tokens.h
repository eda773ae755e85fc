#ifndef LINALGD_SERVER_SERVICE_TENANT_TOKENS_H_
#define LINALGD_SERVER_SERVICE_TENANT_TOKENS_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace linalgd {

// What one tenant may use. Defaults come from the server's flags
// (--tenant-store-bytes, ...); the tokens file overrides them per tenant.
struct TenantQuotas {
  int64_t store_bytes = INT64_MAX;  // its share of --store-bytes
  int64_t max_objects = INT64_MAX;  // stored tensors and factors
  int64_t max_inflight = 0;         // RPCs in progress at once; 0: unlimited
  // Request priorities above it are clamped to it (and below -it to -it).
  int64_t max_priority = 10;
  int64_t max_message_bytes = INT64_MAX;  // largest request message
  // Request bytes of its compute calls admitted and not yet finished (queued
  // or running): a flood is refused at the door instead of filling memory.
  int64_t max_queued_bytes = INT64_MAX;
  // Its share of a device when several tenants have work queued at one
  // priority: jobs taken in turn, `weight` at a time (1..1000).
  int64_t weight = 1;
};

// One line of the tokens file. Immutable once parsed.
struct Tenant {
  std::string name;  // [A-Za-z0-9._-]{1,64}: a metric label
  // SHA-256 of its bearer token; `has_token` false ("-" in the file): the
  // tenant authenticates by client certificate only.
  std::array<unsigned char, 32> token_sha256{};
  bool has_token = false;
  bool admin = false;  // may list every tenant's objects
  TenantQuotas quotas;
};

using TenantList = std::vector<std::shared_ptr<const Tenant>>;

// Parses a tokens file: one tenant per line,
//   TENANT SHA256_HEX_OF_TOKEN [key=value ...]
// keys store_bytes, max_objects, max_inflight, max_priority,
// max_message_bytes, max_queued_bytes (integers >= 0), weight (1..1000) and admin (true/false); the
// hash may be
// "-" (certificate only). '#' starts a comment; blank lines are skipped.
// INVALID_ARGUMENT naming `source`, the line number and what is wrong (never
// the hash): too few fields, a bad name or hash (64 hex digits), an unknown
// key or bad value, a tenant or a token hash given twice.
absl::StatusOr<TenantList> ParseTenantTokens(absl::string_view text, absl::string_view source,
                                             const TenantQuotas& defaults);

// The SHA-256 of `text` (OpenSSL's libcrypto).
std::array<unsigned char, 32> Sha256(absl::string_view text);

}  // namespace linalgd

#endif  // LINALGD_SERVER_SERVICE_TENANT_TOKENS_H_
