#ifndef LINALGD_SERVER_STORE_SHM_LISTENER_H_
#define LINALGD_SERVER_STORE_SHM_LISTENER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "server/store/shm_registry.h"

namespace linalgd {

// The Unix socket (SOCK_SEQPACKET, mode 0600) through which same-host
// callers hand the server their shared memory. Protocol, one message each
// way per registration:
//   caller: "REGISTER", with one memfd attached (SCM_RIGHTS)
//   server: "OK <region id> <secret> <size> <0|1 pinned>"
//        or "ERR <status code name> <message>"
// A connection may register many regions; they are all released when it
// closes. The peer's SO_PEERCRED uid is its identity for the registry's caps.
// One thread owns every connection (a poll loop); registrations are served
// one at a time. Stop() (or destruction) ends it and removes the socket.
class ShmListener {
 public:
  struct Options {
    // Socket path; empty: "socket" in a new private directory under /tmp.
    std::string path;
    int max_connections = 1024;
  };
  // Binds and starts the loop. `registry` must outlive the listener.
  static absl::StatusOr<std::unique_ptr<ShmListener>> Start(const Options& options,
                                                            ShmRegistry* registry);
  ~ShmListener();
  ShmListener(const ShmListener&) = delete;
  ShmListener& operator=(const ShmListener&) = delete;

  const std::string& path() const { return path_; }
  // Idempotent; not thread-safe against itself.
  void Stop();

 private:
  class Loop;
  ShmListener(std::string path, std::string private_dir, std::unique_ptr<Loop> loop);

  const std::string path_;
  const std::string private_dir_;  // removed at Stop when we made it
  std::unique_ptr<Loop> loop_;
  std::thread thread_;
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_STORE_SHM_LISTENER_H_
