#include "client/src/replica_target.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace linalgd::client::internal {
namespace {

// Splits "host:port" or "[v6]:port"; false without a port.
bool SplitHostPort(absl::string_view text, std::string& host, std::string& port) {
  size_t colon;
  if (absl::StartsWith(text, "[")) {
    const size_t close = text.find(']');
    if (close == absl::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return false;
    }
    host = std::string(text.substr(1, close - 1));
    colon = close + 1;
  } else {
    colon = text.rfind(':');
    if (colon == absl::string_view::npos) return false;
    host = std::string(text.substr(0, colon));
  }
  port = std::string(text.substr(colon + 1));
  return !port.empty();
}

absl::StatusOr<ReplicaTarget> ParseList(absl::string_view target, absl::string_view scheme,
                                        absl::string_view list) {
  ReplicaTarget out;
  for (absl::string_view entry : absl::StrSplit(list, ',')) {
    std::string host, port;
    if (entry.empty() || !SplitHostPort(entry, host, port) || host.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("ClientOptions.target '", target, "': entry '", entry,
                       "' is not host:port (each address of a list needs its port)"));
    }
    out.addresses.push_back(absl::StrCat(scheme, entry));
  }
  if (out.addresses.size() > 1) out.kind = ReplicaTarget::Kind::kList;
  return out;
}

absl::StatusOr<ReplicaTarget> ParseDns(absl::string_view target, absl::string_view rest) {
  ReplicaTarget out;
  out.kind = ReplicaTarget::Kind::kDns;
  if (!SplitHostPort(rest, out.host, out.port) || out.host.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("ClientOptions.target '", target,
                                                   "': a dns target of replicas needs host:port"));
  }
  return out;
}

}  // namespace

absl::StatusOr<ReplicaTarget> ParseReplicaTarget(absl::string_view target) {
  absl::string_view rest = target;
  for (absl::string_view scheme : {"ipv4:", "ipv6:"}) {
    if (absl::ConsumePrefix(&rest, scheme)) return ParseList(target, scheme, rest);
  }
  if (absl::ConsumePrefix(&rest, "dns:///")) return ParseDns(target, rest);
  if (!absl::StartsWith(rest, "dns://") && absl::ConsumePrefix(&rest, "dns:")) {
    return ParseDns(target, rest);
  }
  return ReplicaTarget{};  // anything else (incl. dns with an authority): gRPC's own
}

absl::StatusOr<std::vector<std::string>> ResolveAddresses(const std::string& host,
                                                          const std::string& port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot resolve '", host, ":", port, "': ", gai_strerror(rc)));
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owner(found, &freeaddrinfo);
  std::vector<std::string> out;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char text[NI_MAXHOST];
    if (getnameinfo(a->ai_addr, a->ai_addrlen, text, sizeof text, nullptr, 0, NI_NUMERICHOST) !=
        0) {
      continue;
    }
    out.push_back(a->ai_family == AF_INET6 ? absl::StrCat("ipv6:[", text, "]:", port)
                                           : absl::StrCat("ipv4:", text, ":", port));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (out.empty()) {
    return absl::UnavailableError(absl::StrCat("'", host, ":", port, "' has no TCP address"));
  }
  return out;
}

absl::string_view ReplicaOfId(absl::string_view id) {
  const size_t dash = id.find('-');
  if (dash == absl::string_view::npos || dash == 0 || dash > 16) return "";
  const absl::string_view replica = id.substr(0, dash);
  const absl::string_view hex = id.substr(dash + 1);
  if (hex.size() != 32) return "";
  for (char c : replica) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z'))) return "";
  }
  for (char c : hex) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return "";
  }
  return replica;
}

int PickLeastLoaded(absl::Span<const ReplicaLoad> loads, uint64_t rotation) {
  auto key = [](const ReplicaLoad& l) {
    return std::make_pair(std::max<int64_t>(l.predicted_wait_us, 0),
                          std::max<int64_t>(l.queue_depth, 0) + l.inflight);
  };
  std::vector<int> best;
  for (int i = 0; i < static_cast<int>(loads.size()); ++i) {
    if (!loads[i].usable) continue;
    if (!best.empty() && key(loads[i]) > key(loads[best[0]])) continue;
    if (!best.empty() && key(loads[i]) < key(loads[best[0]])) best.clear();
    best.push_back(i);
  }
  if (best.empty()) return -1;
  return best[rotation % best.size()];
}

}  // namespace linalgd::client::internal
