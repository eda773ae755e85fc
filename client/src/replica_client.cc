#include "client/src/replica_client.h"

#include <initializer_list>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace linalgd::client::internal {
namespace {

const absl::Status& StatusOf(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& StatusOf(const absl::StatusOr<T>& s) {
  return s.status();
}

// A call's deadline (fixed: Calls); absl::InfiniteFuture() when it has none.
absl::Time DeadlineOf(const CallOptions& call) {
  return call.deadline.value_or(absl::InfiniteFuture());
}

// Counts one call of this client on `replica` while it lives.
class Inflight {
 public:
  explicit Inflight(Replica& replica) : state_(*replica.state) { state_.AddInflight(1); }
  ~Inflight() { state_.AddInflight(-1); }
  Inflight(const Inflight&) = delete;
  Inflight& operator=(const Inflight&) = delete;

 private:
  ReplicaState& state_;
};

template <typename Fn>
auto Run(Replica& replica, const Fn& fn) -> decltype(fn(replica.connection)) {
  Inflight counted(replica);
  return fn(replica.connection);
}

absl::Status GoneError(absl::string_view replica, absl::string_view address, const NamedId& named,
                       absl::string_view detail) {
  absl::Status s = absl::UnavailableError(
      absl::StrCat("replica ", replica, " (", address.empty() ? "address unknown" : address,
                   ") that owns ", named.field, " ", named.id, " is gone: ", detail));
  s.SetPayload(kReplicaGonePayload, absl::Cord(replica));
  return s;
}

// The replica all of `ids` name ("" when none names one); INVALID_ARGUMENT
// when they name several. `named` gets the first id naming it.
absl::StatusOr<std::string> OwnerOf(const std::vector<NamedId>& ids, const NamedId*& named) {
  std::string owner;
  named = ids.empty() ? nullptr : &ids.front();
  for (const NamedId& n : ids) {
    const absl::string_view r = ReplicaOfId(n.id);
    if (r.empty()) continue;
    if (owner.empty()) {
      owner = std::string(r);
      named = &n;
    } else if (r != owner) {
      return absl::InvalidArgumentError(
          absl::StrCat(named->field, " ", named->id, " is on replica ", owner, " but ", n.field,
                       " ", n.id, " is on replica ", r, ": one call's ids must be on one replica"));
    }
  }
  return owner;
}

void AddId(const char* field, const std::string& id, std::vector<NamedId>& out) {
  if (!id.empty()) out.push_back({field, id});
}

// The shared-memory regions and the ids named by a call's fields.
std::vector<NamedId> Named(
    std::initializer_list<std::pair<const char*, const SharedTensor*>> shared,
    std::initializer_list<std::pair<const char*, const std::string*>> ids) {
  std::vector<NamedId> out;
  for (const auto& [field, t] : shared) {
    if (t != nullptr) out.push_back({field, t->region()});
  }
  for (const auto& [field, id] : ids) AddId(field, *id, out);
  return out;
}

}  // namespace

std::vector<NamedId> IdsOf(const MatmulArgs& a) {
  return Named({{"a_shared", a.a_shared}, {"b_shared", a.b_shared}, {"out_shared", a.out_shared}},
               {{"a_resident_id", &a.a_resident_id},
                {"b_resident_id", &a.b_resident_id},
                {"c_resident_id", &a.c_resident_id},
                {"bias_resident_id", &a.bias_resident_id}});
}

std::vector<NamedId> IdsOf(const SolveArgs& a) {
  return Named({{"a_shared", a.a_shared}, {"b_shared", a.b_shared}, {"x_shared", a.x_shared}},
               {{"a_resident_id", &a.a_resident_id},
                {"b_resident_id", &a.b_resident_id},
                {"factor_id", &a.factor_id}});
}

// `call`'s deadline is fixed (Calls), so the second try has what the first
// left of it, not a timeout of its own.
template <typename Fn>
auto ReplicaClient::Stateless(const Fn& fn) -> decltype(fn(std::declval<Connection&>())) {
  using R = decltype(fn(std::declval<Connection&>()));
  const std::shared_ptr<Replica> first = replicas_->PickStateless();
  if (first == nullptr) {
    return R(absl::UnavailableError(
        absl::StrCat("no replica of '", replicas_->options().target, "' to send the call to")));
  }
  R result = Run(*first, fn);
  if (!absl::IsUnavailable(StatusOf(result))) return result;
  const std::shared_ptr<Replica> second = replicas_->PickStateless(first.get());
  if (second == nullptr) return result;
  DebugLog(replicas_->options(),
           absl::StrCat("replica ", first->state->address(), ": ", StatusOf(result).message(),
                        "; trying ", second->state->address()));
  return Run(*second, fn);
}

template <typename Fn>
auto ReplicaClient::Owned(const std::vector<NamedId>& ids, const CallOptions& call, const Fn& fn)
    -> decltype(fn(std::declval<Connection&>())) {
  using R = decltype(fn(std::declval<Connection&>()));
  if (ids.empty()) return Stateless(fn);
  const NamedId* named = nullptr;
  const absl::StatusOr<std::string> owner = OwnerOf(ids, named);
  if (!owner.ok()) return R(owner.status());
  std::shared_ptr<Replica> replica;
  if (owner->empty()) {
    // Plain ids (servers without --replica-id) name no replica: the first.
    const std::vector<std::shared_ptr<Replica>> all = replicas_->Current();
    if (all.empty()) return Stateless(fn);
    replica = all.front();
  } else {
    replica = replicas_->FindOwner(*owner, DeadlineOf(call));
  }
  if (replica == nullptr) {
    return R(GoneError(*owner, replicas_->AddressOf(*owner), *named,
                       absl::StrCat("no address of '", replicas_->options().target,
                                    "' answers as that replica now")));
  }
  const int64_t misrouted = replica->state->misrouted().count;
  R result = Run(*replica, fn);
  const absl::Status& status = StatusOf(result);
  // UNAVAILABLE from the replica itself (a draining one refusing new work)
  // is its answer; gRPC's own (no connection) means the replica is gone.
  if (absl::IsUnavailable(status) && !owner->empty() && replica->state->Unreachable(absl::Now())) {
    return R(GoneError(*owner, replica->state->address(), *named, status.message()));
  }
  const ReplicaState::Misrouted now = replica->state->misrouted();
  if (!absl::IsFailedPrecondition(status) || now.count == misrouted) return result;
  // The replica answered that another one owns the id: our idea of which
  // replica is which is stale. Learn again, and go to the owner once.
  replicas_->ForgetIds();
  const std::shared_ptr<Replica> owner_replica = replicas_->FindOwner(now.owner, DeadlineOf(call));
  if (owner_replica == nullptr) {
    return R(GoneError(now.owner, replicas_->AddressOf(now.owner), *named,
                       absl::StrCat(replica->state->address(), " answered as another replica (",
                                    status.message(), ") and no address answers as ", now.owner)));
  }
  if (owner_replica == replica) return result;
  DebugLog(replicas_->options(),
           absl::StrCat("replica ", replica->state->address(), ": not the owner of ", named->id,
                        "; sending to ", owner_replica->state->address()));
  return Run(*owner_replica, fn);
}

absl::StatusOr<MatmulResult> ReplicaClient::Matmul(MatmulArgs args, const CallOptions& call) {
  return Owned(IdsOf(args), call, [&](Connection& c) { return c.Matmul(args, call); });
}

absl::StatusOr<SolveResult> ReplicaClient::SolveOnce(SolveArgs args, const CallOptions& call) {
  return Owned(IdsOf(args), call, [&](Connection& c) { return c.Solve(args, call); });
}

absl::StatusOr<SolveResult> ReplicaClient::Solve(SolveArgs args, const CallOptions& call) {
  const std::shared_ptr<Recreatable> entry =
      args.factor_id.empty() ? nullptr : RecreatableOf(args.factor_id);
  if (entry == nullptr) return SolveOnce(std::move(args), call);
  {
    absl::MutexLock lock(&entry->mu);
    args.factor_id = entry->current;
  }
  // The factorization made again and the solve on it keep `call`'s deadline
  // (Calls): they are the rest of this call, not calls of their own.
  absl::StatusOr<SolveResult> result = SolveOnce(args, call);
  if (result.ok() || !result.status().GetPayload(kReplicaGonePayload).has_value()) return result;
  absl::StatusOr<std::string> again = Recreate(*entry, args.factor_id, call);
  if (!again.ok()) {
    return absl::Status(again.status().code(),
                        absl::StrCat(result.status().message(),
                                     "; factorizing it again failed: ", again.status().message()));
  }
  args.factor_id = *std::move(again);
  return SolveOnce(std::move(args), call);
}

std::shared_ptr<ReplicaClient::Recreatable> ReplicaClient::RecreatableOf(
    const std::string& factor_id) {
  absl::MutexLock lock(&mu_);
  auto it = recreatable_.find(factor_id);
  return it == recreatable_.end() ? nullptr : it->second;
}

absl::StatusOr<std::string> ReplicaClient::Recreate(Recreatable& entry, const std::string& lost,
                                                    const CallOptions& call) {
  absl::MutexLock lock(&entry.mu);
  if (entry.current != lost) return entry.current;  // another call made it again
  absl::StatusOr<FactorInfo> info =
      Stateless([&](Connection& c) { return c.Factorize(entry.args, call); });
  if (!info.ok()) return info.status();
  DebugLog(
      replicas_->options(),
      absl::StrCat("factor ", lost, " was lost with its replica; made again as ", info->factor_id));
  entry.current = info->factor_id;
  return entry.current;
}

absl::StatusOr<FactorInfo> ReplicaClient::Factorize(FactorizeArgs args, const CallOptions& call) {
  std::vector<NamedId> ids;
  AddId("a_resident_id", args.a_resident_id, ids);
  if (!args.recreate_on_loss) {
    return Owned(ids, call, [&](Connection& c) { return c.Factorize(args, call); });
  }
  auto entry = std::make_shared<Recreatable>();
  entry->args = args;
  entry->args.recreate_on_loss = false;
  if (!args.a_resident_id.empty()) {  // keep the matrix here: its replica may go too
    absl::StatusOr<Tensor> a = Get(args.a_resident_id, call, nullptr);
    if (!a.ok()) return a.status();
    entry->args.a = *std::move(a);
    entry->args.a_resident_id.clear();
  }
  absl::StatusOr<FactorInfo> info =
      Owned(ids, call, [&](Connection& c) { return c.Factorize(args, call); });
  if (!info.ok()) return info;
  {
    absl::MutexLock lock(&entry->mu);
    entry->current = info->factor_id;
  }
  absl::MutexLock lock(&mu_);
  recreatable_[info->factor_id] = std::move(entry);
  return info;
}

absl::Status ReplicaClient::ReleaseFactor(const std::string& id, const CallOptions& call) {
  std::string current = id;
  std::shared_ptr<Recreatable> entry;
  {
    absl::MutexLock lock(&mu_);
    auto it = recreatable_.find(id);
    if (it != recreatable_.end()) {
      entry = std::move(it->second);
      recreatable_.erase(it);
    }
  }
  if (entry != nullptr) {
    absl::MutexLock lock(&entry->mu);
    current = entry->current;
  }
  return Owned({{"factor_id", current}}, call,
               [&](Connection& c) { return c.ReleaseFactor(current, call); });
}

absl::StatusOr<SparseSolveResult> ReplicaClient::SparseSolve(SparseSolveArgs args,
                                                             const CallOptions& call) {
  return Stateless([&](Connection& c) { return c.SparseSolve(args, call); });
}

absl::StatusOr<ServerInfo> ReplicaClient::GetServerInfo(const CallOptions& call) {
  return Stateless([&](Connection& c) { return c.GetServerInfo(call); });
}

absl::StatusOr<TensorInfo> ReplicaClient::Put(const Tensor& tensor, const PutOptions& put,
                                              const CallOptions& call) {
  return Stateless([&](Connection& c) { return c.Put(tensor, put, call); });
}

absl::StatusOr<Tensor> ReplicaClient::Get(const std::string& id, const CallOptions& call,
                                          TensorInfo* info) {
  return Owned({{"id", id}}, call, [&](Connection& c) { return c.Get(id, call, info); });
}

absl::Status ReplicaClient::Delete(const std::string& id, const CallOptions& call) {
  return Owned({{"id", id}}, call, [&](Connection& c) { return c.Delete(id, call); });
}

absl::StatusOr<StoreListing> ReplicaClient::List(const CallOptions& call) {
  StoreListing all;
  absl::Status first_error;
  int answered = 0;
  for (const std::shared_ptr<Replica>& r : replicas_->Current()) {
    absl::StatusOr<StoreListing> one = Run(*r, [&](Connection& c) { return c.List(call); });
    if (!one.ok()) {
      if (first_error.ok()) first_error = one.status();
      continue;
    }
    ++answered;
    for (TensorInfo& t : one->objects) all.objects.push_back(std::move(t));
    all.used_bytes += one->used_bytes;
    all.capacity_bytes += one->capacity_bytes;
  }
  if (answered == 0 && !first_error.ok()) return first_error;
  return all;
}

absl::StatusOr<std::unique_ptr<SharedTensor>> ReplicaClient::CreateSharedTensor(
    DType dtype, std::vector<int64_t> shape, int64_t capacity_bytes, const CallOptions& call) {
  return Stateless(
      [&](Connection& c) { return c.CreateSharedTensor(dtype, shape, capacity_bytes, call); });
}

absl::StatusOr<HealthStatus> ReplicaClient::Health(const CallOptions& call) {
  absl::StatusOr<HealthStatus> first = absl::UnavailableError("no replica");
  bool have_first = false;
  for (const std::shared_ptr<Replica>& r : replicas_->Current()) {
    absl::StatusOr<HealthStatus> one = r->connection.Health(call);
    if (one.ok() && *one == HealthStatus::kServing) return one;
    if (!have_first) {
      first = std::move(one);
      have_first = true;
    }
  }
  return first;
}

}  // namespace linalgd::client::internal
