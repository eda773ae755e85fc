#ifndef LINALGD_SERVER_STORE_RESIDENT_ID_H_
#define LINALGD_SERVER_STORE_RESIDENT_ID_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace linalgd {

// A new unguessable id: 128 bits from the kernel CSPRNG (getrandom(2)) as 32
// lowercase hex digits, after "REPLICA-" when `replica` is set (the server's
// --replica-id: which of several servers behind one name owns the object).
// INTERNAL if the kernel refuses. Thread-safe.
absl::StatusOr<std::string> NewResidentId(absl::string_view replica = "");

// True for 32 lowercase hex digits, optionally after a replica id and '-'.
bool IsResidentId(absl::string_view id);

// True for 1 to 16 of [a-z0-9]: what --replica-id accepts.
bool IsReplicaId(absl::string_view replica);

// The replica id an id names ("" for a plain 32-hex id or a malformed one).
absl::string_view ReplicaOf(absl::string_view id);

// --replica-id auto: 8 hex digits of a hash of `host` (a pod's name).
std::string ReplicaIdOfHost(absl::string_view host);

// Status payload carrying the replica that owns an id (sent to the caller as
// trailing metadata "linalgd-owner-replica").
inline constexpr char kOwnerReplicaPayload[] = "linalgd/owner-replica";

// OK when `id` may be owned here; for an id minted by another replica than
// `self`, FAILED_PRECONDITION naming `what` (e.g. "resident id"), the owner
// and this replica, with kOwnerReplicaPayload: the call went to the wrong
// server, and a NOT_FOUND would hide that.
absl::Status CheckReplica(absl::string_view what, absl::string_view id, absl::string_view self);

}  // namespace linalgd

#endif  // LINALGD_SERVER_STORE_RESIDENT_ID_H_
