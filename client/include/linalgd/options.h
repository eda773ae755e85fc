#ifndef LINALGD_CLIENT_OPTIONS_H_
#define LINALGD_CLIENT_OPTIONS_H_

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "absl/types/optional.h"

namespace linalgd::client {

// How a Client connects. The channel is insecure (plaintext) in v1.
struct ClientOptions {
  std::string target = "localhost:50051";  // any gRPC target string
  // Largest message sent or received; the server's default is 1 GiB too.
  int64_t max_message_bytes = int64_t{1} << 30;
  // Deadline of a call that sets none; absl::InfiniteDuration(): no deadline.
  absl::Duration default_timeout = absl::Seconds(30);
  // Matmul/Solve operands of at least this many bytes are streamed with
  // PutTensor (chunk_bytes per message, one stream per operand, in parallel)
  // and referred to by id; a result of at least this size is kept on the
  // server and streamed back with GetTensor. 0: never.
  int64_t stream_threshold_bytes = int64_t{64} << 20;
  int64_t chunk_bytes = int64_t{2} << 20;
};

// Per-call settings. `deadline` wins over `timeout`; with neither, the
// client's default_timeout applies. An expired deadline is DEADLINE_EXCEEDED.
struct CallOptions {
  absl::optional<absl::Duration> timeout;
  absl::optional<absl::Time> deadline;
};

}  // namespace linalgd::client

#endif  // LINALGD_CLIENT_OPTIONS_H_
