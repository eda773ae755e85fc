#include "server/store/resident_id.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace linalgd {

absl::StatusOr<std::string> NewResidentId(absl::string_view replica) {
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::InternalError(absl::StrCat("getrandom: ", std::strerror(errno)));
    }
    got += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(32, '0');
  for (int i = 0; i < 16; ++i) {
    id[2 * i] = kHex[bytes[i] >> 4];
    id[2 * i + 1] = kHex[bytes[i] & 0xf];
  }
  if (!replica.empty()) id = absl::StrCat(replica, "-", id);
  return id;
}

namespace {

bool IsHex32(absl::string_view id) {
  if (id.size() != 32) return false;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

bool IsReplicaId(absl::string_view replica) {
  if (replica.empty() || replica.size() > 16) return false;
  for (char c : replica) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z'))) return false;
  }
  return true;
}

absl::string_view ReplicaOf(absl::string_view id) {
  const size_t dash = id.find('-');
  if (dash == absl::string_view::npos) return "";
  const absl::string_view replica = id.substr(0, dash);
  return IsReplicaId(replica) && IsHex32(id.substr(dash + 1)) ? replica : "";
}

std::string ReplicaIdOfHost(absl::string_view host) {
  uint32_t h = 2166136261u;  // FNV-1a
  for (char c : host) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  return absl::StrCat(absl::Hex(h, absl::kZeroPad8));
}

bool IsResidentId(absl::string_view id) { return IsHex32(id) || !ReplicaOf(id).empty(); }

absl::Status CheckReplica(absl::string_view what, absl::string_view id, absl::string_view self) {
  const absl::string_view owner = ReplicaOf(id);
  if (owner.empty() || owner == self) return absl::OkStatus();
  absl::Status s = absl::FailedPreconditionError(
      absl::StrCat(what, " ", id, " belongs to replica ", owner, ", not to this one (",
                   self.empty() ? "no --replica-id" : self,
                   "): send calls naming it to that replica (trailing metadata "
                   "linalgd-owner-replica)"));
  s.SetPayload(kOwnerReplicaPayload, absl::Cord(owner));
  return s;
}

}  // namespace linalgd
