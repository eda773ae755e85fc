#include "tools/bench/echo_server.h"

#include <algorithm>
#include <limits>

#include "absl/status/status.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"

namespace linalgd::bench {

class EchoServer::Service final : public echo::Echo::CallbackService {
 public:
  grpc::ServerUnaryReactor* Echo(grpc::CallbackServerContext* context,
                                 const echo::EchoRequest* request,
                                 echo::EchoResponse* response) override {
    response->mutable_payload()->resize(static_cast<size_t>(request->response_bytes()));
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

absl::StatusOr<std::unique_ptr<EchoServer>> EchoServer::Start(int64_t max_message_bytes) {
  std::unique_ptr<EchoServer> server(new EchoServer());
  server->max_message_bytes_ =
      static_cast<int>(std::min<int64_t>(max_message_bytes, std::numeric_limits<int>::max()));
  server->service_ = std::make_unique<Service>();
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &server->port_);
  builder.SetMaxReceiveMessageSize(server->max_message_bytes_);
  builder.SetMaxSendMessageSize(server->max_message_bytes_);
  builder.RegisterService(server->service_.get());
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError("echo server: cannot listen on 127.0.0.1:0");
  }
  return server;
}

EchoServer::~EchoServer() {
  if (server_ != nullptr) server_->Shutdown();
}

std::shared_ptr<grpc::Channel> EchoServer::NewChannel(bool own_connection) const {
  grpc::ChannelArguments args;
  if (own_connection) args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetMaxReceiveMessageSize(max_message_bytes_);
  args.SetMaxSendMessageSize(max_message_bytes_);
  return grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port_),
                                   grpc::InsecureChannelCredentials(), args);
}

}  // namespace linalgd::bench
