#ifndef LINALGD_SERVER_COMMON_UNIX_SOCKET_H_
#define LINALGD_SERVER_COMMON_UNIX_SOCKET_H_

#include <string>

namespace linalgd {

// Whether a process accepts connections of `type` (SOCK_STREAM,
// SOCK_SEQPACKET) on the unix socket file at `path` now: a non-blocking
// connect succeeds or waits for a full backlog. False with no such file, a
// stale socket file (no listener: what a killed server leaves), another kind
// of socket, or a path too long for sockaddr_un. A server that would unlink
// the file to bind its own asks this first, so as not to take the path from a
// live one.
bool UnixSocketInUse(const std::string& path, int type);

}  // namespace linalgd

#endif  // LINALGD_SERVER_COMMON_UNIX_SOCKET_H_
