#include "client/src/shm_path.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "client/src/convert.h"
#include "client/src/parallel.h"
#include "common/final_answer.h"

namespace linalgd::client::internal {
namespace {

constexpr int64_t kAlign = 64;

int64_t AlignUp(int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Product of the broadcast batch dimensions (all but the last two) of a, b.
int64_t BroadcastBatch(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t na = a.size() - 2, nb = b.size() - 2, n = std::max(na, nb);
  int64_t batch = 1;
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - na ? 1 : a[i - (n - na)];
    const int64_t db = i < n - nb ? 1 : b[i - (n - nb)];
    batch *= std::max(da, db);
  }
  return batch;
}

// Bytes of out = op(a) op(b); 0 when the shapes are not matrices.
int64_t MatmulOutBytes(const MatmulArgs& args) {
  const std::vector<int64_t>& sa = args.a.shape();
  const std::vector<int64_t>& sb = args.b.shape();
  if (sa.size() < 2 || sb.size() < 2) return 0;
  const int64_t m = args.transpose_a ? sa.back() : sa[sa.size() - 2];
  const int64_t n = args.transpose_b ? sb[sb.size() - 2] : sb.back();
  const DType out = args.output_dtype.value_or(args.a.dtype());
  return BroadcastBatch(sa, sb) * m * n * static_cast<int64_t>(DTypeSize(out));
}

// Bytes of x in a x = b (b-shaped with a factor); 0 when not matrices.
int64_t SolveOutBytes(const SolveArgs& args) {
  const std::vector<int64_t>& sb = args.b.shape();
  if (sb.size() < 2) return 0;
  if (!args.factor_id.empty()) return static_cast<int64_t>(args.b.bytes().size());
  const std::vector<int64_t>& sa = args.a.shape();
  if (sa.size() < 2) return 0;
  return BroadcastBatch(sa, sb) * sa.back() * sb.back() *
         static_cast<int64_t>(DTypeSize(args.b.dtype()));
}

// Region bytes needed by `tensors` (aligned) plus `out_bytes`.
int64_t Needed(const std::vector<Tensor*>& tensors, int64_t out_bytes) {
  int64_t need = AlignUp(out_bytes);
  for (const Tensor* t : tensors) need += AlignUp(static_cast<int64_t>(t->bytes().size()));
  return need;
}

// Copies `t` into `region` at the next aligned offset (`cursor`) and points
// `out` at it; the bytes of `t` are released.
void Place(const ShmRegion& region, Tensor& t, int64_t& cursor, v1::Tensor* out) {
  const std::string& bytes = t.bytes();
  ParallelCopy(region.data() + cursor, bytes.data(), bytes.size());
  out->set_dtype(ToProto(t.dtype()));
  for (int64_t d : t.shape()) out->add_shape(d);
  region.Ref(cursor, static_cast<int64_t>(bytes.size()), out->mutable_shm());
  cursor += AlignUp(static_cast<int64_t>(bytes.size()));
  t = Tensor();
}

// Points `out` at the rest of `region` from `cursor`, for the result.
void PlaceOutput(const ShmRegion& region, int64_t cursor, v1::SharedMemoryRef* out) {
  region.Ref(cursor, region.size() - cursor, out);
}

// Reads `tensor`'s shm bytes (in `region`) back into an inline tensor.
absl::Status Fetch(const ShmRegion& region, v1::Tensor* tensor) {
  if (tensor->source_case() != v1::Tensor::kShm) return absl::OkStatus();  // came inline
  const v1::SharedMemoryRef& ref = tensor->shm();
  if (ref.region() != region.id() || ref.offset() < 0 || ref.bytes() < 0 ||
      ref.offset() + ref.bytes() > region.size()) {
    return absl::InternalError(absl::StrCat("the server answered with shm (", ref.region(), ", ",
                                            ref.offset(), ", ", ref.bytes(),
                                            ") outside this call's region ", region.id()));
  }
  // Read the reference before mutable_data() switches the oneof and frees it.
  const char* from = region.data() + ref.offset();
  const size_t bytes = static_cast<size_t>(ref.bytes());
  std::string* data = tensor->mutable_data();
  data->resize(bytes);
  ParallelCopy(data->data(), from, bytes);
  return absl::OkStatus();
}

}  // namespace

bool IsLocalTarget(absl::string_view target) {
  if (absl::StartsWith(target, "unix:") || absl::StartsWith(target, "unix-abstract:")) {
    return true;
  }
  for (absl::string_view prefix : {"dns:///", "dns:", "ipv4:", "ipv6:"}) {
    if (absl::ConsumePrefix(&target, prefix)) break;
  }
  absl::string_view host = target;
  if (absl::StartsWith(target, "[")) {
    host = target.substr(
        1, target.find(']') == absl::string_view::npos ? target.size() - 1 : target.find(']') - 1);
  } else if (const size_t colon = target.rfind(':'); colon != absl::string_view::npos) {
    host = target.substr(0, colon);
  }
  return host == "localhost" || absl::StartsWith(host, "127.") || host == "::1";
}

bool ServerMayStillWrite(const grpc::Status& status) {
  return !EndsTheCall(static_cast<absl::StatusCode>(status.error_code()));
}

class SharedMemoryPath::Lease {
 public:
  Lease(SharedMemoryPath& path, const CallOptions& call)
      : path_(path), region_(path.Acquire(call)) {}
  ~Lease() {
    if (region_ == nullptr) return;
    if (retire_) {
      path_.Retire(region_);
    } else {
      path_.Release(region_);
    }
  }
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ShmRegion* get() const { return region_; }
  // The call on the region ended with `status`.
  void Ended(const grpc::Status& status) { retire_ = ServerMayStillWrite(status); }

 private:
  SharedMemoryPath& path_;
  ShmRegion* const region_;
  bool retire_ = false;
};

SharedMemoryPath::~SharedMemoryPath() = default;  // each region closes its connection

bool SharedMemoryPath::active() const {
  absl::MutexLock lock(&mu_);
  return !regions_.empty();
}

int SharedMemoryPath::regions() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(regions_.size());
}

void SharedMemoryPath::Debug(const std::string& line) const {
  if (options_.debug_log) {
    options_.debug_log(line);
  } else if (std::getenv("LINALGD_CLIENT_DEBUG") != nullptr) {
    std::cerr << "linalgd client: " << line << "\n";
  }
}

ShmRegion* SharedMemoryPath::Acquire(const CallOptions& call) {
  {
    absl::MutexLock lock(&mu_);
    // Calls that arrive while the first registration is out wait for its
    // verdict rather than all trying (and all reporting a refusal); it ends
    // by its RPC's deadline.
    mu_.Await(absl::Condition(
        +[](SharedMemoryPath* p)
             ABSL_NO_THREAD_SAFETY_ANALYSIS { return !p->regions_.empty() || p->pending_ == 0; },
        this));
    if (disabled_) return nullptr;
    if (!idle_.empty()) {
      ShmRegion* region = idle_.back();
      idle_.pop_back();
      return region;
    }
    const int cap = cap_ >= 0 ? cap_ : std::max(1, options_.shared_memory_regions);
    if (static_cast<int>(regions_.size()) + pending_ >= cap) return nullptr;
    ++pending_;
  }
  std::string why;
  std::unique_ptr<ShmRegion> region = Register(call, why);
  ShmRegion* taken = region.get();
  {
    absl::MutexLock lock(&mu_);
    --pending_;
    if (region != nullptr) {
      regions_.push_back(std::move(region));
    } else if (regions_.empty()) {
      disabled_ = true;  // never usable: said once, not tried again
      absl::StrAppend(&why, "; using the socket");
    } else {
      cap_ = static_cast<int>(regions_.size());  // the server takes no more
      absl::StrAppend(&why, "; staying at ", regions_.size(), " region(s)");
    }
  }
  Debug(why);
  return taken;
}

void SharedMemoryPath::Release(ShmRegion* region) {
  absl::MutexLock lock(&mu_);
  idle_.push_back(region);
}

void SharedMemoryPath::Retire(ShmRegion* region) {
  std::unique_ptr<ShmRegion> gone;
  {
    absl::MutexLock lock(&mu_);
    auto it = std::find_if(regions_.begin(), regions_.end(),
                           [&](const std::unique_ptr<ShmRegion>& r) { return r.get() == region; });
    if (it == regions_.end()) return;
    gone = std::move(*it);
    regions_.erase(it);
  }
  Debug(absl::StrCat("shared memory: region ", gone->id(),
                     " retired: a call on it ended without the server's answer, and the server "
                     "may still write its result there"));
}

std::unique_ptr<ShmRegion> SharedMemoryPath::Register(const CallOptions& call, std::string& why) {
  if (!IsLocalTarget(options_.target)) {
    why =
        absl::StrCat("shared memory not used: target '", options_.target, "' is not on this host");
    return nullptr;
  }
  grpc::ClientContext context;
  deadline_(call, context);
  absl::StatusOr<std::string> socket = FindShmSocket(stub_, context, options_.shared_memory_socket);
  absl::StatusOr<std::unique_ptr<ShmRegion>> region =
      socket.ok()
          ? ShmRegion::Create(options_.shared_memory_bytes, *socket, RegisterTimeout(context))
          : absl::StatusOr<std::unique_ptr<ShmRegion>>(socket.status());
  if (!region.ok()) {
    why = absl::StrCat("shared memory not used: ", absl::StatusCodeToString(region.status().code()),
                       ": ", region.status().message());
    return nullptr;
  }
  why = absl::StrCat("shared memory: region ", (*region)->id(), " of ", (*region)->size(),
                     " bytes registered", (*region)->pinned() ? " (pinned)" : "");
  return *std::move(region);
}

absl::optional<absl::StatusOr<MatmulResult>> SharedMemoryPath::Matmul(MatmulArgs& args,
                                                                      const CallOptions& call) {
  if (!options_.use_shared_memory || !args.a_resident_id.empty() || !args.b_resident_id.empty()) {
    return absl::nullopt;
  }
  Lease lease(*this, call);
  if (lease.get() == nullptr) return absl::nullopt;
  const ShmRegion& region = *lease.get();
  std::vector<Tensor*> inline_tensors = {&args.a, &args.b};
  if (args.c && args.c_resident_id.empty()) inline_tensors.push_back(&*args.c);
  if (args.bias && args.bias_resident_id.empty()) inline_tensors.push_back(&*args.bias);
  const int64_t out_bytes = args.keep_result ? 0 : MatmulOutBytes(args);
  if ((!args.keep_result && out_bytes == 0) || Needed(inline_tensors, out_bytes) > region.size()) {
    return absl::nullopt;
  }
  int64_t cursor = 0;
  std::vector<v1::Tensor> placed(inline_tensors.size());
  for (size_t i = 0; i < inline_tensors.size(); ++i)
    Place(region, *inline_tensors[i], cursor, &placed[i]);
  const bool has_c = args.c && args.c_resident_id.empty();
  const bool has_bias = args.bias && args.bias_resident_id.empty();
  v1::MatmulRequest request = ToProto(std::move(args));
  *request.mutable_a() = std::move(placed[0]);
  *request.mutable_b() = std::move(placed[1]);
  if (has_c) *request.mutable_c() = std::move(placed[2]);
  if (has_bias) *request.mutable_bias() = std::move(placed[has_c ? 3 : 2]);
  if (!request.keep_result()) PlaceOutput(region, cursor, request.mutable_out_shm());
  v1::MatmulResponse response;
  grpc::ClientContext context;
  deadline_(call, context);
  const grpc::Status status = stub_.Matmul(&context, request, &response);
  lease.Ended(status);
  if (!status.ok()) return absl::StatusOr<MatmulResult>(FromGrpc(status));
  if (absl::Status s = Fetch(region, response.mutable_out()); !s.ok())
    return absl::StatusOr<MatmulResult>(s);
  return FromProto(&response);
}

absl::optional<absl::StatusOr<SolveResult>> SharedMemoryPath::Solve(SolveArgs& args,
                                                                    const CallOptions& call) {
  const bool use_a = args.factor_id.empty();
  if (!options_.use_shared_memory || (use_a && !args.a_resident_id.empty()) ||
      !args.b_resident_id.empty()) {
    return absl::nullopt;
  }
  Lease lease(*this, call);
  if (lease.get() == nullptr) return absl::nullopt;
  const ShmRegion& region = *lease.get();
  std::vector<Tensor*> inline_tensors = {&args.b};
  if (use_a) inline_tensors.push_back(&args.a);
  const int64_t out_bytes = args.keep_result ? 0 : SolveOutBytes(args);
  if ((!args.keep_result && out_bytes == 0) || Needed(inline_tensors, out_bytes) > region.size()) {
    return absl::nullopt;
  }
  int64_t cursor = 0;
  std::vector<v1::Tensor> placed(inline_tensors.size());
  for (size_t i = 0; i < inline_tensors.size(); ++i)
    Place(region, *inline_tensors[i], cursor, &placed[i]);
  v1::SolveRequest request = ToProto(std::move(args));
  *request.mutable_b() = std::move(placed[0]);
  if (use_a) *request.mutable_a() = std::move(placed[1]);
  if (!request.keep_result()) PlaceOutput(region, cursor, request.mutable_out_shm());
  v1::SolveResponse response;
  grpc::ClientContext context;
  deadline_(call, context);
  const grpc::Status status = stub_.Solve(&context, request, &response);
  lease.Ended(status);
  if (!status.ok()) return absl::StatusOr<SolveResult>(FromGrpc(status));
  if (absl::Status s = Fetch(region, response.mutable_x()); !s.ok())
    return absl::StatusOr<SolveResult>(s);
  return FromProto(&response);
}

}  // namespace linalgd::client::internal
