#ifndef LINALGD_CLIENT_OPTIONS_H_
#define LINALGD_CLIENT_OPTIONS_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"

namespace linalgd::client {

// How a Client connects: plaintext, or TLS when any tls_ field is set.
struct ClientOptions {
  std::string target = "localhost:50051";  // any gRPC target string
  // TLS, for every connection the client opens (calls, transfers, health):
  // paths of PEM files, read once by Client::Create. tls_ca: the CA that
  // signed the server's certificate (empty: the system's roots); the
  // server's certificate must name the target's host. tls_cert and tls_key:
  // this client's certificate and key, for a server that requires them (mTLS).
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  // The tenant's bearer token, sent as "authorization: Bearer TOKEN" on every
  // call of every connection (a server with --auth-tokens requires one).
  // Empty: none. Send it over TLS: in plaintext anyone on the path reads it.
  std::string token;
  // Largest message sent or received; the server's default is 1 GiB too.
  int64_t max_message_bytes = int64_t{1} << 30;
  // Deadline of a call that sets none; absl::InfiniteDuration(): no deadline.
  absl::Duration default_timeout = absl::Seconds(30);
  // A TCP connection of this client's own. By default gRPC gives every
  // channel of a process with the same target and options one shared
  // connection, so many Clients in one process (a pipeline's worker pool)
  // share one socket and its bandwidth.
  bool own_connection = false;
  // Matmul/Solve operands of at least this many bytes are streamed with
  // PutTensor (chunk_bytes per message, all operands at once) and referred
  // to by id; a result of at least this size is kept on the server and
  // streamed back with GetTensor. 0: never. 4 MiB: on the H200 host a
  // 1024^2 f32 round trip (4 MiB a tensor) took 14.3 ms streamed against
  // 22.5 ms inline, 2048^2 31 vs 92 ms (bench/results run 14, data
  // workload): one large unary message crosses at 0.4-1.1 GB/s.
  int64_t stream_threshold_bytes = int64_t{4} << 20;
  int64_t chunk_bytes = int64_t{2} << 20;
  // A streamed tensor (the above, and PutTensor/GetTensor of at least
  // stream_threshold_bytes) goes in up to transfer_connections parts of at
  // least transfer_part_min_bytes each, part i over TCP connection i at
  // the same time (connection 0 is the client's own; the others are opened
  // on first use). 1: one stream per tensor. A server without multi-part
  // uploads or ranged downloads gets one stream.
  int transfer_connections = 8;  // 8 beat 4 in each of 3 paired H200 runs (bench/results run 5)
  int64_t transfer_part_min_bytes = int64_t{8} << 20;
  // Progress of each PutTensor/GetTensor transfer (Matmul/Solve's streamed
  // operands and results included): called with the bytes done so far and
  // the tensor's total as each chunk moves, `done` growing to `total` (an
  // upload retried in one stream, for an older server, starts again from 0). The calls of one
  // tensor come one at a time; those of tensors sent at once (a Matmul's operands) interleave, each
  // with its own counts. Called on the transfer's threads: keep it quick. Unset: none.
  std::function<void(int64_t done, int64_t total)> transfer_progress;
  // Same-host shared memory. When set and the target is on this host
  // (unix:..., localhost, 127.x.y.z, [::1]), the first Matmul/Solve creates a
  // sealed memfd of shared_memory_bytes and hands it to the server over its
  // Unix socket (shared_memory_socket; docs/shared-memory.md); from then on the inline operands of
  // each call are written into a region and the result is asked for there (out_shm), so no tensor
  // bytes cross the socket. A region serves one call at a time: concurrent calls register more, up
  // to shared_memory_regions (the server maps and, with a GPU, page-locks each one whole); calls
  // that arrive while the first is being registered wait for it. A call whose tensors do not fit,
  // that names resident a/b, or that finds every region in use goes through the socket as before;
  // so does every call when registration fails (e.g. a server without --allow-shm), which debug_log
  // reports once.
  bool use_shared_memory = false;
  int64_t shared_memory_bytes = int64_t{256} << 20;
  int shared_memory_regions = 1;
  // The server's shared-memory Unix socket; empty: the path its
  // GetServerInfo reports (set this when the client sees the socket at
  // another path, e.g. another container's mount of the same volume).
  std::string shared_memory_socket;
  // Receives the client's debug lines (e.g. why shared memory is not used),
  // from the calling and the transfer threads, several at once: it must be
  // thread-safe. Unset: stderr when the environment has LINALGD_CLIENT_DEBUG,
  // else nowhere.
  std::function<void(absl::string_view)> debug_log;
};

// Per-call settings. `deadline` wins over `timeout`; with neither, the
// client's default_timeout applies. An expired deadline is DEADLINE_EXCEEDED.
struct CallOptions {
  absl::optional<absl::Duration> timeout;
  absl::optional<absl::Time> deadline;
};

}  // namespace linalgd::client

#endif  // LINALGD_CLIENT_OPTIONS_H_
