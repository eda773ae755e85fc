#include "server/store/upload_table.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/common/caller_string.h"
#include "server/common/status_macros.h"
#include "server/store/resident_id.h"

namespace linalgd {
namespace {

constexpr size_t kGoneMemory = 1024;  // gone upload ids remembered for messages

}  // namespace

absl::StatusOr<std::shared_ptr<UploadSession>> UploadTable::Start(UploadSpec spec,
                                                                  StoreReservation reservation) {
  DropExpired();
  absl::StatusOr<std::string> id = NewResidentId(replica_);
  if (!id.ok()) return id.status();
  auto session =
      std::make_shared<UploadSession>(*id, std::move(spec), std::move(reservation), now_, alloc_);
  absl::MutexLock lock(&mu_);
  if (!sessions_.emplace(*id, session).second) {  // p = 2^-128
    return absl::InternalError("upload id collision");
  }
  next_expiry_ = std::min(next_expiry_, session->ExpiresNoSoonerThan(now_()));
  return session;
}

absl::StatusOr<UploadTable::SessionPtr> UploadTable::FindLocked(absl::string_view id,
                                                                absl::string_view owner,
                                                                std::vector<SessionPtr>& dropped) {
  auto it = sessions_.find(id);
  if (it != sessions_.end() && it->second->spec().owner == owner) {
    if (!it->second->Expired(now_())) return it->second;
    Expire(SessionPtr(it->second), dropped);  // `it` is gone after this
  }
  auto gone = gone_.find(id);
  if (gone != gone_.end() && gone->second.first == owner) {
    return absl::NotFoundError(gone->second.second);
  }
  LINALGD_RETURN_IF_ERROR(CheckReplica("upload id", id, replica_));
  return absl::NotFoundError(
      absl::StrCat("upload id ", Quoted(id), " is unknown (ids come from StartUpload)"));
}

absl::StatusOr<std::shared_ptr<UploadSession>> UploadTable::Find(absl::string_view id,
                                                                 absl::string_view owner) {
  std::vector<SessionPtr> dropped;
  absl::MutexLock lock(&mu_);
  DropExpiredLocked(dropped);
  return FindLocked(id, owner, dropped);
}

absl::StatusOr<UploadSession::Finished> UploadTable::Finish(absl::string_view id,
                                                            absl::string_view owner) {
  std::vector<SessionPtr> dropped;
  absl::MutexLock lock(&mu_);
  DropExpiredLocked(dropped);
  absl::StatusOr<SessionPtr> session = FindLocked(id, owner, dropped);
  if (!session.ok()) return session.status();
  absl::StatusOr<UploadSession::Finished> finished = (*session)->Finish();
  if (finished.ok()) {
    Remove(*session, "finished", dropped);
  } else if (absl::IsDataLoss(finished.status())) {
    Remove(*session, "dropped: its bytes failed the CRC32C check", dropped);
  }
  return finished;
}

absl::Status UploadTable::Abort(absl::string_view id, absl::string_view owner) {
  std::vector<SessionPtr> dropped;
  absl::MutexLock lock(&mu_);
  DropExpiredLocked(dropped);
  absl::StatusOr<SessionPtr> session = FindLocked(id, owner, dropped);
  if (!session.ok()) return session.status();
  Remove(*session, "aborted", dropped);
  return absl::OkStatus();
}

void UploadTable::DropExpired() {
  std::vector<SessionPtr> dropped;
  absl::MutexLock lock(&mu_);
  DropExpiredLocked(dropped);
}

int64_t UploadTable::size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(sessions_.size());
}

int64_t UploadTable::sweeps() const {
  absl::MutexLock lock(&mu_);
  return sweeps_;
}

void UploadTable::DropExpiredLocked(std::vector<SessionPtr>& dropped) {
  const absl::Time now = now_();
  if (now < next_expiry_) return;
  ++sweeps_;
  next_expiry_ = absl::InfiniteFuture();
  std::vector<SessionPtr> expired;
  for (const auto& [id, session] : sessions_) {
    if (session->Expired(now)) {
      expired.push_back(session);
    } else {
      next_expiry_ = std::min(next_expiry_, session->ExpiresNoSoonerThan(now));
    }
  }
  for (const SessionPtr& session : expired) Expire(session, dropped);
}

void UploadTable::Expire(const SessionPtr& session, std::vector<SessionPtr>& dropped) {
  const UploadSpec& spec = session->spec();
  Remove(session,
         absl::StrCat("expired (no activity for ",
                      absl::FormatDuration(std::min(spec.ttl, spec.idle_timeout)),
                      ": its TTL or --stream-idle-timeout)"),
         dropped);
}

void UploadTable::Remove(const SessionPtr& session, absl::string_view why,
                         std::vector<SessionPtr>& dropped) {
  session->Close(why);
  const std::string& id = session->id();
  if (gone_order_.size() >= kGoneMemory) {
    gone_.erase(gone_order_.front());
    gone_order_.pop_front();
  }
  gone_[id] = {session->spec().owner, absl::StrCat("upload ", id, " was ", why)};
  gone_order_.push_back(id);
  dropped.push_back(session);
  sessions_.erase(id);
}

}  // namespace linalgd
