#ifndef LINALGD_SERVER_SERVICE_AUTHENTICATOR_H_
#define LINALGD_SERVER_SERVICE_AUTHENTICATOR_H_

#include <sys/stat.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/service/tenant_tokens.h"

namespace linalgd {

struct AuthOptions {
  // --auth-tokens: the tokens file (tenant_tokens.h); empty: every caller is
  // the one tenant "default" with the default quotas.
  std::string tokens_file;
  // --tenant-from-cert: a caller without a token is the tenant its client
  // certificate names (subject CN or a SAN), when the file lists it.
  bool tenant_from_cert = false;
  TenantQuotas defaults;  // the quota flags
  // The file is checked (stat) at most this often and read again when its
  // modification time, size or inode changed.
  absl::Duration reload_check = absl::Seconds(1);
  std::function<absl::Time()> now = [] { return absl::Now(); };
};

// An authenticated call: its tenant, and its place among the tenant's calls
// in flight (quota max_inflight), given back when `inflight` is destroyed.
struct Caller {
  std::shared_ptr<const Tenant> tenant;
  std::shared_ptr<const void> inflight;
  // The tenant's request bytes queued or running (quota max_queued_bytes).
  std::shared_ptr<std::atomic<int64_t>> queued_bytes;
};

// Who is calling: checks every RPC's credentials against the tenants of the
// tokens file (re-read when it changes; a file that no longer parses is
// logged and the previous tenants stay) and counts each tenant's calls in
// flight. Token hashes are compared in constant time, against every tenant.
// Thread-safe.
class Authenticator {
 public:
  // INVALID_ARGUMENT for an unreadable or malformed tokens file (naming the
  // line), or --tenant-from-cert without a tokens file.
  static absl::StatusOr<std::unique_ptr<Authenticator>> Create(AuthOptions options);

  // `authorization`: the call's "authorization" metadata ("Bearer TOKEN"),
  // empty when absent; `cert_names`: the CN and SANs of the client
  // certificate TLS verified, empty without one. UNAUTHENTICATED (saying
  // nothing of the tenants) when they name no tenant; RESOURCE_EXHAUSTED
  // "tenant quota max_inflight=N reached (N in flight)".
  absl::StatusOr<Caller> Admit(absl::string_view authorization,
                               const std::vector<std::string>& cert_names) ABSL_LOCKS_EXCLUDED(mu_);

  // Every tenant's name ("default" when there is no tokens file).
  std::vector<std::string> TenantNames() const ABSL_LOCKS_EXCLUDED(mu_);
  bool has_tokens_file() const { return !options_.tokens_file.empty(); }

 private:
  explicit Authenticator(AuthOptions options) : options_(std::move(options)) {}
  // Reads and parses the tokens file; remembers its identity.
  absl::Status Load() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MaybeReload() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::shared_ptr<const Tenant> Identify(absl::string_view authorization,
                                         const std::vector<std::string>& cert_names) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  struct FileId {
    int64_t mtime_ns = 0;
    int64_t size = 0;
    ino_t inode = 0;
    bool operator==(const FileId& o) const {
      return mtime_ns == o.mtime_ns && size == o.size && inode == o.inode;
    }
  };

  static FileId IdOf(const struct stat& st);

  const AuthOptions options_;
  mutable absl::Mutex mu_;
  TenantList tenants_ ABSL_GUARDED_BY(mu_);
  FileId file_ ABSL_GUARDED_BY(mu_);
  absl::Time checked_ ABSL_GUARDED_BY(mu_);
  // Calls in flight per tenant name; kept across reloads.
  absl::flat_hash_map<std::string, std::shared_ptr<std::atomic<int64_t>>> inflight_
      ABSL_GUARDED_BY(mu_);
  // Request bytes queued or running per tenant name; kept across reloads.
  absl::flat_hash_map<std::string, std::shared_ptr<std::atomic<int64_t>>> queued_bytes_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_SERVICE_AUTHENTICATOR_H_
