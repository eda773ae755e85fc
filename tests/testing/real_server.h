#ifndef LINALGD_TESTS_TESTING_REAL_SERVER_H_
#define LINALGD_TESTS_TESTING_REAL_SERVER_H_

// The real linalgd server in the test's process, for the integration, TLS
// and GPU server tests: one way to start it, reach it and connect to it.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "linalgd/client.h"
#include "server/service/server.h"

namespace linalgd::testing {

// Starts the server on a free loopback port (listen "127.0.0.1:0"), with
// metrics off unless `options` names a metrics address other than the
// default; the rest of `options` as given. It is listening when this
// returns; the caller shuts it down (Server::Shutdown).
absl::StatusOr<std::unique_ptr<Server>> StartRealServer(
    ServerOptions options, GpuEngineStarter start_gpu = StartGpuEngine);

// "127.0.0.1:<port>" of a started server.
std::string LoopbackTarget(const Server& server);

// A client of `server`: `options` with its target set to LoopbackTarget.
absl::StatusOr<std::unique_ptr<Client>> ConnectClient(const Server& server,
                                                      client::ClientOptions options = {});

}  // namespace linalgd::testing

#endif  // LINALGD_TESTS_TESTING_REAL_SERVER_H_
