#include "server/gpu/small_graphs.h"

#include "server/common/status_macros.h"
#include "server/gpu/cuda_check.h"

namespace linalgd::gpu {

SmallGraphCache::~SmallGraphCache() { Clear(); }

void SmallGraphCache::Clear() {
  for (auto& [key, entry] : map_) {
    if (entry.exec != nullptr) cudaGraphExecDestroy(entry.exec);
  }
  map_.clear();
}

int64_t SmallGraphCache::graphs() const {
  int64_t n = 0;
  for (const auto& [key, entry] : map_) n += entry.exec != nullptr;
  return n;
}

void SmallGraphCache::Capture(cudaStream_t stream, absl::FunctionRef<absl::Status()> enqueue,
                              Entry& entry) {
  // Thread-local: another thread's unsafe calls (a cudaMalloc) do not break
  // this capture, and this one's break only this one.
  if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    cudaGetLastError();
    entry.refused = true;
    return;
  }
  const absl::Status enqueued = enqueue();
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  if (enqueued.ok() && ended == cudaSuccess && graph != nullptr) {
    cudaGraphExec_t exec = nullptr;
    if (cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess) entry.exec = exec;
  }
  if (graph != nullptr) cudaGraphDestroy(graph);
  if (entry.exec == nullptr) {
    cudaGetLastError();  // a failed capture's error is not the device's
    entry.refused = true;
  }
}

absl::StatusOr<SmallGraphCache::Ran> SmallGraphCache::Run(
    cudaStream_t stream, const SmallGraphKey& key, absl::FunctionRef<absl::Status()> enqueue) {
  auto it = map_.find(key);
  if (it == map_.end()) {
    if (map_.size() >= kMaxEntries) Clear();
    map_.emplace(key, Entry{});
    LINALGD_RETURN_IF_ERROR(enqueue());
    return Ran::kDirect;
  }
  Entry& entry = it->second;
  Ran ran = Ran::kReplayed;
  if (entry.exec == nullptr && !entry.refused) {
    Capture(stream, enqueue, entry);
    ran = Ran::kCaptured;
  }
  if (entry.exec == nullptr) {
    LINALGD_RETURN_IF_ERROR(enqueue());
    return Ran::kDirect;
  }
  LINALGD_GPU_CHECK(cudaGraphLaunch(entry.exec, stream));
  return ran;
}

}  // namespace linalgd::gpu
