#include "tests/testing/real_server.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace linalgd::testing {

absl::StatusOr<std::unique_ptr<Server>> StartRealServer(ServerOptions options,
                                                        GpuEngineStarter start_gpu) {
  options.listen = "127.0.0.1:0";
  if (options.metrics_listen == ServerOptions{}.metrics_listen) options.metrics_listen = "";
  return Server::Start(options, std::move(start_gpu));
}

std::string LoopbackTarget(const Server& server) {
  return absl::StrCat("127.0.0.1:", server.port());
}

absl::StatusOr<std::unique_ptr<Client>> ConnectClient(const Server& server,
                                                      client::ClientOptions options) {
  options.target = LoopbackTarget(server);
  return Client::Create(std::move(options));
}

}  // namespace linalgd::testing
