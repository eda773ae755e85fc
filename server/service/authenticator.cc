#include "server/service/authenticator.h"

#include <openssl/crypto.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/store/resident_store.h"
#include "spdlog/spdlog.h"

namespace linalgd {
namespace {

// The token of "Bearer TOKEN" (the scheme is case-insensitive); empty if
// `authorization` is not one.
absl::string_view BearerToken(absl::string_view authorization) {
  constexpr absl::string_view kScheme = "bearer ";
  if (authorization.size() <= kScheme.size() ||
      !absl::EqualsIgnoreCase(authorization.substr(0, kScheme.size()), kScheme)) {
    return {};
  }
  return absl::StripLeadingAsciiWhitespace(authorization.substr(kScheme.size()));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Authenticator>> Authenticator::Create(AuthOptions options) {
  if (options.tenant_from_cert && options.tokens_file.empty()) {
    return absl::InvalidArgumentError(
        "--tenant-from-cert: needs --auth-tokens (the file lists the tenants certificates may "
        "name, and their quotas)");
  }
  std::unique_ptr<Authenticator> auth(new Authenticator(std::move(options)));
  absl::MutexLock lock(&auth->mu_);
  if (auth->options_.tokens_file.empty()) {
    auto t = std::make_shared<Tenant>();
    t->name = std::string(kDefaultTenant);
    t->quotas = auth->options_.defaults;
    auth->tenants_.push_back(std::move(t));
    return auth;
  }
  if (absl::Status s = auth->Load(); !s.ok()) return s;
  auth->checked_ = auth->options_.now();
  return auth;
}

Authenticator::FileId Authenticator::IdOf(const struct stat& st) {
  return FileId{int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec, st.st_size,
                st.st_ino};
}

absl::Status Authenticator::Load() {
  const std::string& path = options_.tokens_file;
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--auth-tokens: cannot read ", path, ": ", std::strerror(errno)));
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (!in || !(text << in.rdbuf())) {
    return absl::InvalidArgumentError(absl::StrCat("--auth-tokens: cannot read ", path));
  }
  absl::StatusOr<TenantList> tenants =
      ParseTenantTokens(text.str(), absl::StrCat("--auth-tokens ", path), options_.defaults);
  if (!tenants.ok()) return tenants.status();
  tenants_ = *std::move(tenants);
  file_ = IdOf(st);
  return absl::OkStatus();
}

void Authenticator::MaybeReload() {
  if (options_.tokens_file.empty()) return;
  const absl::Time now = options_.now();
  if (now - checked_ < options_.reload_check) return;
  checked_ = now;
  struct stat st {};
  if (stat(options_.tokens_file.c_str(), &st) != 0) return;  // mid-replace: keep the tenants
  const FileId id = IdOf(st);
  if (id == file_) return;
  if (absl::Status s = Load(); !s.ok()) {
    spdlog::error("{}; keeping the {} tenants loaded before", std::string(s.message()),
                  tenants_.size());
    file_ = id;  // not again until it changes
    return;
  }
  spdlog::info("--auth-tokens {}: reloaded, {} tenants", options_.tokens_file, tenants_.size());
}

std::shared_ptr<const Tenant> Authenticator::Identify(
    absl::string_view authorization, const std::vector<std::string>& cert_names) const {
  if (options_.tokens_file.empty()) return tenants_.front();
  const absl::string_view token = BearerToken(authorization);
  if (!token.empty()) {
    const std::array<unsigned char, 32> hash = Sha256(token);
    std::shared_ptr<const Tenant> found;
    for (const auto& t : tenants_) {  // every tenant, whichever matches
      const bool same = CRYPTO_memcmp(hash.data(), t->token_sha256.data(), hash.size()) == 0;
      if (same && t->has_token) found = t;
    }
    return found;
  }
  if (!authorization.empty() || !options_.tenant_from_cert) return nullptr;
  for (const std::string& name : cert_names) {
    for (const auto& t : tenants_) {
      if (t->name == name) return t;
    }
  }
  return nullptr;
}

absl::StatusOr<Caller> Authenticator::Admit(absl::string_view authorization,
                                            const std::vector<std::string>& cert_names) {
  absl::MutexLock lock(&mu_);
  MaybeReload();
  Caller caller;
  caller.tenant = Identify(authorization, cert_names);
  if (caller.tenant == nullptr) {
    return absl::UnauthenticatedError(
        authorization.empty()
            ? "no credentials: send 'authorization: Bearer TOKEN' (or a client certificate "
              "naming a tenant, where the server takes them)"
            : "the credentials are not valid");
  }
  auto& count = inflight_[caller.tenant->name];
  if (count == nullptr) count = std::make_shared<std::atomic<int64_t>>(0);
  const int64_t limit = caller.tenant->quotas.max_inflight;
  const int64_t now = count->fetch_add(1);
  if (limit > 0 && now >= limit) {
    count->fetch_sub(1);
    return absl::ResourceExhaustedError(
        absl::StrCat("tenant quota max_inflight=", limit, " reached (", now, " in flight)"));
  }
  caller.inflight =
      std::shared_ptr<const void>(nullptr, [count](const void*) { count->fetch_sub(1); });
  auto& queued = queued_bytes_[caller.tenant->name];
  if (queued == nullptr) queued = std::make_shared<std::atomic<int64_t>>(0);
  caller.queued_bytes = queued;
  return caller;
}

std::vector<std::string> Authenticator::TenantNames() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> names;
  for (const auto& t : tenants_) names.push_back(t->name);
  return names;
}

}  // namespace linalgd
