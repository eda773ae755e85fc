#ifndef LINALGD_SERVER_GPU_SMALL_GRAPHS_H_
#define LINALGD_SERVER_GPU_SMALL_GRAPHS_H_

// A handle set's CUDA graphs of repeated small jobs (small_matmul.h): the
// work a job enqueues on the set's stream, captured once per key and
// replayed with one cudaGraphLaunch from then on. A small product's host
// side (cuBLASLt's planning and launch, the driver's launch and copy paths)
// costs more CPU than the device spends on it, and runs cold between calls;
// a graph replaces it with one launch.
//
// The key must name everything the enqueued work depends on but the bytes
// it reads at run time: a graph keeps the pointers, sizes, scalars and
// launch shapes it was captured with.

#include <cuda_runtime.h>

#include <array>
#include <cstdint>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"

namespace linalgd::gpu {

using SmallGraphKey = std::array<int64_t, 40>;

// Not thread-safe: owned by a HandleSet, used by its lease holder.
class SmallGraphCache {
 public:
  // Keys kept at most (graphs and keys seen once); a full cache is emptied
  // before the next key goes in.
  static constexpr size_t kMaxEntries = 64;

  SmallGraphCache() = default;
  SmallGraphCache(const SmallGraphCache&) = delete;
  SmallGraphCache& operator=(const SmallGraphCache&) = delete;
  ~SmallGraphCache();

  // What Run did with a job's work.
  enum class Ran {
    kDirect,    // enqueued as it is (the key's first job, or a key that cannot be captured)
    kCaptured,  // captured into the key's graph, which was then launched
    kReplayed,  // the key's graph launched
  };

  // Enqueues `enqueue`'s work on `stream`: directly the first time a key is
  // seen, captured into a graph (then launched) the second, that graph
  // launched from the third on. A capture that fails for any reason (a
  // call the capture does not take, `enqueue`'s own error) is dropped, the
  // work enqueued directly and the key not captured again; `enqueue`'s
  // error is then the direct run's. `stream` must be the one `enqueue`
  // enqueues on, and the same for every call with a key.
  absl::StatusOr<Ran> Run(cudaStream_t stream, const SmallGraphKey& key,
                          absl::FunctionRef<absl::Status()> enqueue);

  size_t size() const { return map_.size(); }
  int64_t graphs() const;  // keys with a graph

 private:
  struct Entry {
    cudaGraphExec_t exec = nullptr;
    bool refused = false;  // a capture failed: always direct
  };
  void Clear();
  // Captures enqueue's work on stream into entry (exec stays null on failure).
  void Capture(cudaStream_t stream, absl::FunctionRef<absl::Status()> enqueue, Entry& entry);

  absl::flat_hash_map<SmallGraphKey, Entry> map_;
};

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_SMALL_GRAPHS_H_
