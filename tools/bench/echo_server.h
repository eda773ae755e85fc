#ifndef LINALGD_TOOLS_BENCH_ECHO_SERVER_H_
#define LINALGD_TOOLS_BENCH_ECHO_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/channel.h"
#include "tools/bench/echo.grpc.pb.h"

namespace linalgd::bench {

// A gRPC server of the Echo service (callback API), listening on `listen`
// (default 127.0.0.1 on a free port). Replies with response_bytes zero bytes.
// Shuts down when destroyed.
class EchoServer {
 public:
  static absl::StatusOr<std::unique_ptr<EchoServer>> Start(
      int64_t max_message_bytes, const std::string& listen = "127.0.0.1:0");
  ~EchoServer();

  int port() const { return port_; }
  // A channel to it with the same message limit as the server; with
  // own_connection, over a TCP connection of its own (else gRPC shares one
  // among the process's channels).
  std::shared_ptr<grpc::Channel> NewChannel(bool own_connection = false) const;

  // A channel to an echo server at `target` (HOST:PORT) with this message
  // limit, as NewChannel.
  static std::shared_ptr<grpc::Channel> ChannelTo(const std::string& target,
                                                  int64_t max_message_bytes,
                                                  bool own_connection = false);

 private:
  class Service;
  EchoServer() = default;

  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  int max_message_bytes_ = 0;
};

}  // namespace linalgd::bench

#endif  // LINALGD_TOOLS_BENCH_ECHO_SERVER_H_
