#include "client/src/replica_set.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace linalgd::client::internal {
namespace {

ClientOptions WithTarget(ClientOptions options, const std::string& address) {
  options.target = address;
  return options;
}

// GetServerInfo when learning ids: short, as a replica that does not answer
// soon is of no use to the call waiting for it.
constexpr absl::Duration kLearnTimeout = absl::Seconds(5);

}  // namespace

Replica::Replica(const std::string& address, const ClientOptions& options,
                 const std::shared_ptr<grpc::ChannelCredentials>& credentials,
                 const std::string& tls_name)
    : state(std::make_shared<ReplicaState>(address)),
      connection(
          WithTarget(options, address), credentials, [s = state] { return ObserveResponses(s); },
          tls_name) {}

absl::StatusOr<std::unique_ptr<ReplicaSet>> ReplicaSet::Create(
    ClientOptions options, std::shared_ptr<grpc::ChannelCredentials> credentials,
    ReplicaTarget target) {
  std::unique_ptr<ReplicaSet> set(
      new ReplicaSet(std::move(options), std::move(credentials), std::move(target)));
  absl::Status resolved = set->Refresh();
  if (!resolved.ok()) return resolved;
  return set;
}

absl::Status ReplicaSet::Refresh() {
  absl::MutexLock refreshing(&refresh_mu_);
  {
    absl::MutexLock lock(&mu_);
    if (absl::Now() - resolved_at_ < kMinRefresh) return absl::OkStatus();  // just done
  }
  std::vector<std::string> addresses = target_.addresses;
  if (target_.kind == ReplicaTarget::Kind::kDns) {
    absl::StatusOr<std::vector<std::string>> found = ResolveAddresses(target_.host, target_.port);
    if (!found.ok()) {
      DebugLog(options_, absl::StrCat("replicas: ", found.status().message(),
                                      "; keeping the replicas known before"));
      absl::MutexLock lock(&mu_);
      resolved_at_ = absl::Now();
      return replicas_.empty() ? found.status() : absl::OkStatus();
    }
    addresses = *std::move(found);
  }
  std::vector<std::shared_ptr<Replica>> old;
  {
    absl::MutexLock lock(&mu_);
    old = replicas_;
    old.insert(old.end(), retired_.begin(), retired_.end());
  }
  std::vector<std::shared_ptr<Replica>> next;
  for (const std::string& address : addresses) {
    auto same = std::find_if(old.begin(), old.end(),
                             [&](const auto& r) { return r->state->address() == address; });
    next.push_back(same != old.end()
                       ? *same
                       : std::make_shared<Replica>(address, options_, credentials_, target_.host));
  }
  absl::MutexLock lock(&mu_);
  if (next.size() != replicas_.size() || !std::equal(next.begin(), next.end(), replicas_.begin())) {
    DebugLog(options_, absl::StrCat("replicas: ", addresses.size(), " addresses"));
  }
  retired_.clear();
  for (const auto& r : old) {
    if (std::find(next.begin(), next.end(), r) == next.end()) retired_.push_back(r);
  }
  if (retired_.size() > kMaxRetired) {  // the longest retired go first
    retired_.erase(retired_.begin(), retired_.end() - kMaxRetired);
  }
  replicas_ = std::move(next);
  resolved_at_ = absl::Now();
  return absl::OkStatus();
}

std::vector<std::shared_ptr<Replica>> ReplicaSet::Current() {
  bool due = false;
  {
    absl::MutexLock lock(&mu_);
    due = target_.kind == ReplicaTarget::Kind::kDns && absl::Now() - resolved_at_ >= kRefresh;
    if (!due) return replicas_;
  }
  (void)Refresh();  // a failure keeps the set (and was logged)
  absl::MutexLock lock(&mu_);
  return replicas_;
}

std::shared_ptr<Replica> ReplicaSet::PickStateless(const Replica* exclude) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    const std::vector<std::shared_ptr<Replica>> replicas = Current();
    const absl::Time now = absl::Now();
    std::vector<ReplicaLoad> loads;
    loads.reserve(replicas.size());
    for (const auto& r : replicas) {
      loads.push_back(r->state->Load(now));
      if (r.get() == exclude) loads.back().usable = false;
    }
    const int i = PickLeastLoaded(loads, rotation_.fetch_add(1));
    if (i >= 0) return replicas[i];
    if (attempt == 0) (void)Refresh();
  }
  // None usable: a draining or recently unreachable one still beats failing.
  const std::vector<std::shared_ptr<Replica>> replicas = Current();
  const uint64_t start = rotation_.fetch_add(1);
  for (size_t k = 0; k < replicas.size(); ++k) {
    const auto& r = replicas[(start + k) % replicas.size()];
    if (r.get() != exclude) return r;
  }
  return nullptr;
}

void ReplicaSet::LearnIds(const std::vector<std::shared_ptr<Replica>>& replicas,
                          absl::Time deadline) {
  for (const auto& r : replicas) {
    if (!r->state->id().empty() || r->state->Unreachable(absl::Now())) continue;
    CallOptions call;
    call.deadline = std::min(absl::Now() + kLearnTimeout, deadline);
    absl::StatusOr<ServerInfo> info = r->connection.GetServerInfo(call);
    if (!info.ok()) {
      DebugLog(options_, absl::StrCat("replicas: GetServerInfo of ", r->state->address(), ": ",
                                      info.status().ToString()));
      continue;
    }
    if (r->state->id().empty()) r->state->set_id(info->replica_id);
    Remember(*r);
  }
}

void ReplicaSet::Remember(const Replica& replica) {
  std::string id = replica.state->id();
  if (id.empty()) return;
  absl::MutexLock lock(&mu_);
  seen_[std::move(id)] = replica.state->address();
}

std::vector<std::shared_ptr<Replica>> ReplicaSet::Retired() {
  const absl::Time now = absl::Now();
  absl::MutexLock lock(&mu_);
  retired_.erase(std::remove_if(retired_.begin(), retired_.end(),
                                [&](const auto& r) { return r->state->Unreachable(now); }),
                 retired_.end());
  return retired_;
}

std::shared_ptr<Replica> ReplicaSet::Find(absl::string_view replica_id) {
  for (const auto& list : {Current(), Retired()}) {
    for (const auto& r : list) {
      if (r->state->id() == replica_id) {
        Remember(*r);
        return r;
      }
    }
  }
  return nullptr;
}

std::shared_ptr<Replica> ReplicaSet::FindOwner(absl::string_view replica_id, absl::Time deadline) {
  if (auto r = Find(replica_id)) return r;
  LearnIds(Current(), deadline);
  if (auto r = Find(replica_id)) return r;
  if (target_.kind != ReplicaTarget::Kind::kDns) return nullptr;
  (void)Refresh();
  LearnIds(Current(), deadline);
  return Find(replica_id);
}

std::string ReplicaSet::AddressOf(absl::string_view replica_id) const {
  absl::MutexLock lock(&mu_);
  auto it = seen_.find(replica_id);
  return it == seen_.end() ? "" : it->second;
}

void ReplicaSet::ForgetIds() {
  for (const auto& r : Current()) r->state->set_id("");
}

}  // namespace linalgd::client::internal
