// metrics_fixture: serves a LinalgdMetrics on 127.0.0.1 (port 0 unless
// --listen is given) and applies the traffic it reads on stdin, one command a
// line, answering "ok" (or "error: ...") to each:
//   request OP CODE BACKEND SECONDS | queue_wait BACKEND SECONDS
//   compute OP BACKEND SECONDS | batch OP BACKEND JOBS
//   fallback OP REASON | flops OP BACKEND N | received TRANSPORT BYTES
//   sent TRANSPORT BYTES | queue_depth DEVICE N | healthy DEVICE 0|1
//   quit
// Prints "metrics_address=HOST:PORT" first. For the Prometheus integration
// test of the metrics library, independent of the server.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "server/metrics/linalgd_metrics.h"
#include "server/metrics/metrics_endpoint.h"

namespace {

bool Apply(linalgd::LinalgdMetrics& m, const std::vector<std::string>& w) {
  double x = 0;
  const std::string& cmd = w[0];
  const size_t n = w.size();
  if (n < 3 || !absl::SimpleAtod(w[n - 1], &x)) return false;
  if (cmd == "request" && n == 5) {
    m.RecordRequest(w[1], w[2], w[3], x);
  } else if (cmd == "queue_wait" && n == 3) {
    m.ObserveQueueWait(w[1], x);
  } else if (cmd == "compute" && n == 4) {
    m.ObserveCompute(w[1], w[2], x);
  } else if (cmd == "batch" && n == 4) {
    m.ObserveBatchSize(w[1], w[2], static_cast<int64_t>(x));
  } else if (cmd == "flops" && n == 4) {
    m.AddFlops(w[1], w[2], x);
  } else if (cmd == "received" && n == 3) {
    m.AddBytesReceived(w[1], static_cast<int64_t>(x));
  } else if (cmd == "sent" && n == 3) {
    m.AddBytesSent(w[1], static_cast<int64_t>(x));
  } else if (cmd == "queue_depth" && n == 3) {
    m.SetQueueDepth(w[1], static_cast<int64_t>(x));
  } else if (cmd == "healthy" && n == 3) {
    m.SetDeviceHealthy(w[1], x != 0);
  } else {
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  auto registry = std::make_shared<prometheus::Registry>();
  auto metrics = linalgd::LinalgdMetrics::Create(registry.get(), "fixture", "fixturecommit");
  linalgd::metrics::MetricsEndpointOptions options;
  options.listen = argc > 2 && std::string(argv[1]) == "--listen" ? argv[2] : "127.0.0.1:0";
  auto exposer = linalgd::metrics::MetricsEndpoint::Start(
      options, registry,
      metrics.ok() ? (*metrics)->families() : std::vector<linalgd::metrics::FamilyHeader>{});
  if (!metrics.ok() || !exposer.ok()) {
    std::fprintf(stderr, "metrics_fixture: %s\n",
                 (metrics.ok() ? exposer.status() : metrics.status()).ToString().c_str());
    return 1;
  }
  std::cout << "metrics_address=" << (*exposer)->address() << std::endl;
  std::string line;
  while (std::getline(std::cin, line) && line != "quit") {
    std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (words.empty()) continue;
    if (words[0] == "fallback" && words.size() == 3) {
      (*metrics)->RecordFallback(words[1], words[2]);
      std::cout << "ok" << std::endl;
    } else {
      std::cout << (Apply(**metrics, words) ? "ok" : "error: bad command") << std::endl;
    }
  }
  (*exposer)->Stop();
  return 0;
}
