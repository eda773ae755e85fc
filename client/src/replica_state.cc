#include "client/src/replica_state.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"

namespace linalgd::client::internal {
namespace {

std::optional<int64_t> Integer(grpc::string_ref value) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(absl::string_view(value.data(), value.size()), &v)) return std::nullopt;
  return v;
}

class ObserverInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit ObserverInterceptor(ReplicaState& state) : state_(state) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      // The replica's load comes back only when asked for (server/service/rpc.h).
      methods->GetSendInitialMetadata()->emplace("linalgd-load", "1");
    }
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::POST_RECV_STATUS)) {
      const grpc::Status* status = methods->GetRecvStatus();
      const auto* trailing = methods->GetRecvTrailingMetadata();
      if (status != nullptr && trailing != nullptr) {
        state_.Observe(ParseResponseMeta(status->error_code(), *trailing), absl::Now());
      }
    }
    methods->Proceed();
  }

 private:
  ReplicaState& state_;  // the factory's, which the channel keeps
};

class ObserverFactory : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit ObserverFactory(std::shared_ptr<ReplicaState> state) : state_(std::move(state)) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo*) override {
    return new ObserverInterceptor(*state_);
  }

 private:
  const std::shared_ptr<ReplicaState> state_;
};

}  // namespace

ResponseMeta ParseResponseMeta(grpc::StatusCode code,
                               const std::multimap<grpc::string_ref, grpc::string_ref>& trailing) {
  ResponseMeta meta;
  bool answered = false;  // the server's own metadata: it was reached
  for (const auto& [key, value] : trailing) {
    if (absl::StartsWith(absl::string_view(key.data(), key.size()), "linalgd-")) answered = true;
    if (key == "linalgd-replica") {
      meta.replica = std::string(value.data(), value.size());
    } else if (key == "linalgd-queue-depth") {
      meta.queue_depth = Integer(value);
    } else if (key == "linalgd-predicted-wait-us") {
      meta.predicted_wait_us = Integer(value);
    } else if (key == "linalgd-draining") {
      meta.draining = value == "1";
    } else if (key == "linalgd-owner-replica") {
      meta.owner = std::string(value.data(), value.size());
    }
  }
  // A draining replica refuses new work UNAVAILABLE, but it is there.
  meta.unreachable = code == grpc::StatusCode::UNAVAILABLE && !answered;
  return meta;
}

std::string ReplicaState::id() const {
  absl::MutexLock lock(&mu_);
  return id_;
}

void ReplicaState::set_id(std::string id) {
  absl::MutexLock lock(&mu_);
  id_ = std::move(id);
}

void ReplicaState::Observe(const ResponseMeta& meta, absl::Time now) {
  absl::MutexLock lock(&mu_);
  if (meta.unreachable) {
    down_at_ = now;
    return;
  }
  down_at_ = absl::InfinitePast();
  if (meta.owner.has_value()) {
    ++misrouted_.count;
    misrouted_.owner = *meta.owner;
  }
  if (meta.replica.has_value() && !meta.replica->empty()) id_ = *meta.replica;
  if (meta.queue_depth.has_value() || meta.predicted_wait_us.has_value()) {
    queue_depth_ = meta.queue_depth.value_or(-1);
    predicted_wait_us_ = meta.predicted_wait_us.value_or(-1);
    load_at_ = now;
  }
  draining_at_ = meta.draining ? now : absl::InfinitePast();
}

ReplicaLoad ReplicaState::Load(absl::Time now) const {
  absl::MutexLock lock(&mu_);
  ReplicaLoad load;
  load.usable = now - draining_at_ >= kDrainTtl && now - down_at_ >= kDownTtl;
  if (now - load_at_ < kLoadTtl) {
    load.queue_depth = queue_depth_;
    load.predicted_wait_us = predicted_wait_us_;
  }
  load.inflight = inflight_;
  return load;
}

bool ReplicaState::Unreachable(absl::Time now) const {
  absl::MutexLock lock(&mu_);
  return now - down_at_ < kDownTtl;
}

void ReplicaState::AddInflight(int delta) {
  absl::MutexLock lock(&mu_);
  inflight_ += delta;
}

ReplicaState::Misrouted ReplicaState::misrouted() const {
  absl::MutexLock lock(&mu_);
  return misrouted_;
}

InterceptorFactories ObserveResponses(std::shared_ptr<ReplicaState> state) {
  InterceptorFactories out;
  out.push_back(std::make_unique<ObserverFactory>(std::move(state)));
  return out;
}

}  // namespace linalgd::client::internal
