#include "tools/bench/echo_server.h"

#include <algorithm>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
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

namespace {

int MessageLimit(int64_t max_message_bytes) {
  return static_cast<int>(std::min<int64_t>(max_message_bytes, std::numeric_limits<int>::max()));
}

}  // namespace

absl::StatusOr<std::unique_ptr<EchoServer>> EchoServer::Start(int64_t max_message_bytes,
                                                              const std::string& listen) {
  std::unique_ptr<EchoServer> server(new EchoServer());
  server->max_message_bytes_ = MessageLimit(max_message_bytes);
  server->service_ = std::make_unique<Service>();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &server->port_);
  builder.SetMaxReceiveMessageSize(server->max_message_bytes_);
  builder.SetMaxSendMessageSize(server->max_message_bytes_);
  builder.RegisterService(server->service_.get());
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("echo server: cannot listen on ", listen));
  }
  return server;
}

EchoServer::~EchoServer() {
  if (server_ != nullptr) server_->Shutdown();
}

std::shared_ptr<grpc::Channel> EchoServer::NewChannel(bool own_connection) const {
  return ChannelTo("127.0.0.1:" + std::to_string(port_), max_message_bytes_, own_connection);
}

std::shared_ptr<grpc::Channel> EchoServer::ChannelTo(const std::string& target,
                                                     int64_t max_message_bytes,
                                                     bool own_connection) {
  grpc::ChannelArguments args;
  if (own_connection) args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetMaxReceiveMessageSize(MessageLimit(max_message_bytes));
  args.SetMaxSendMessageSize(MessageLimit(max_message_bytes));
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
}

}  // namespace linalgd::bench
