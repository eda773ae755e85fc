#ifndef LINALGD_SERVER_COMMON_UNIX_SOCKET_H_
#define LINALGD_SERVER_COMMON_UNIX_SOCKET_H_

#include <string>

namespace linalgd {

// Whether a live socket is bound at the unix socket file `path`: a
// non-blocking SOCK_STREAM connect succeeds, waits for a full backlog, or
// finds a socket of another type there (EPROTOTYPE: a SOCK_SEQPACKET or
// SOCK_DGRAM one is as live). False with no such file, a stale socket file
// (ECONNREFUSED: what a killed server leaves), a file that is no socket, or a
// path too long for sockaddr_un. A server that would unlink the file to bind
// its own asks this first, so as not to take the path from a live one.
bool UnixSocketInUse(const std::string& path);

}  // namespace linalgd

#endif  // LINALGD_SERVER_COMMON_UNIX_SOCKET_H_
