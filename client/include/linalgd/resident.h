#ifndef LINALGD_CLIENT_RESIDENT_H_
#define LINALGD_CLIENT_RESIDENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "linalgd/dtype.h"
#include "linalgd/execution_info.h"
#include "linalgd/solve.h"
#include "linalgd/tensor.h"

namespace linalgd::client {

// A tensor or factorization held by the server (linalgd.v1.TensorInfo).
struct TensorInfo {
  std::string id;  // 32 hex digits
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  int64_t bytes = 0;
  std::string placement;  // "host", "cpu", "gpu:N"
  uint32_t crc32c = 0;
  double ttl_seconds = 0;  // counted from the last use
  double expires_in_seconds = 0;
  std::string kind;  // "tensor" or "factor"
  bool in_use = false;
};

struct PutOptions {
  std::string placement;                      // "" / "host", or "gpu:N"
  absl::Duration ttl = absl::ZeroDuration();  // zero: the server's --store-ttl
  // The server evicts nothing to make room for it: RESOURCE_EXHAUSTED
  // (linalgd-store-refused) unless the room is free. Matmul, Solve and
  // Factorize set it on the operands they upload for one call, so those never
  // push out what the caller stored. Unset: the least recently used unused
  // tensors are evicted as needed.
  bool no_evict = false;
};

struct StoreListing {
  std::vector<TensorInfo> objects;  // least recently used first
  int64_t used_bytes = 0;
  int64_t capacity_bytes = 0;
};

// Factorize one square matrix [n, n] for later Solve calls with factor_id.
struct FactorizeArgs {
  Tensor a;
  std::string a_resident_id;                // instead of a, when set
  SolveMethod method = SolveMethod::kAuto;  // kAuto, kLu or kCholesky
  bool no_fallback = false;
  absl::Duration ttl = absl::ZeroDuration();
  bool allow_non_finite = false;
  int32_t priority = 0;
  // With a target of several replicas (ClientOptions::target): the client
  // keeps a copy of the matrix (a, or a_resident_id's tensor, fetched once
  // here), and when the factor's replica is gone, a Solve naming the returned
  // factor_id factorizes it again on another replica and is retried once; that
  // factor_id keeps naming the new factorization. The copy lives until
  // ReleaseFactor (or the Client). Ignored with a single server.
  bool recreate_on_loss = false;
};

struct FactorInfo {
  std::string factor_id;
  SolveMethod method = SolveMethod::kLu;
  int64_t n = 0;
  DType dtype = DType::kF64;
  double rcond = 0;
  std::string fallback;
  std::string placement;  // where the factors live: "cpu", "gpu:N"
  int64_t bytes = 0;
  ExecutionInfo info;
};

}  // namespace linalgd::client

#endif  // LINALGD_CLIENT_RESIDENT_H_
