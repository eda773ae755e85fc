#ifndef LINALGD_CLIENT_SRC_SHM_REGION_H_
#define LINALGD_CLIENT_SRC_SHM_REGION_H_

// Shared memory created by this process and handed to a same-host server: a
// sealed memfd passed over the server's Unix socket (SCM_RIGHTS), which
// answers with a region id and a secret. The region lives as long as that
// connection: closing it (or this process dying) releases it on the server.
// Internal.

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/client_context.h"
#include "linalgd/v1/linalgd.grpc.pb.h"

namespace linalgd::client::internal {

class ShmRegion {
 public:
  // memfd_create of `bytes`, sealed (F_SEAL_SHRINK | F_SEAL_GROW |
  // F_SEAL_SEAL), mapped read-write, and registered through `socket_path`,
  // waiting at most `timeout` for the server's answer.
  static absl::StatusOr<std::unique_ptr<ShmRegion>> Create(int64_t bytes,
                                                           const std::string& socket_path,
                                                           absl::Duration timeout);
  ~ShmRegion();  // closes the connection (the server releases the region), unmaps
  ShmRegion(const ShmRegion&) = delete;
  ShmRegion& operator=(const ShmRegion&) = delete;

  const std::string& id() const { return id_; }
  const std::string& secret() const { return secret_; }
  bool pinned() const { return pinned_; }
  char* data() const { return data_; }
  int64_t size() const { return size_; }

  // Points `ref` at [offset, offset + bytes) of this region, secret included.
  void Ref(int64_t offset, int64_t bytes, v1::SharedMemoryRef* ref) const;

 private:
  ShmRegion(char* data, int64_t size) : data_(data), size_(size) {}

  char* const data_;
  const int64_t size_;
  int connection_ = -1;
  std::string id_;
  std::string secret_;
  bool pinned_ = false;
};

// Sends `text` with `fd` attached (SCM_RIGHTS) on a connected socket.
absl::Status SendWithFd(int connection, absl::string_view text, int fd);

// The server's shared-memory socket: `configured` when set, else the
// shm_socket of GetServerInfo (FAILED_PRECONDITION when the server has none:
// it runs without --allow-shm). `context` is used for that call.
absl::StatusOr<std::string> FindShmSocket(v1::Linalg::Stub& stub, grpc::ClientContext& context,
                                          const std::string& configured);

// How long to wait for the socket's answer: until the call's deadline, at
// most 10 s.
absl::Duration RegisterTimeout(const grpc::ClientContext& context);

}  // namespace linalgd::client::internal

#endif  // LINALGD_CLIENT_SRC_SHM_REGION_H_
