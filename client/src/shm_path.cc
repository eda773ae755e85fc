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

// What the server's NOT_FOUND says of a region it does not know
// (server/store/shm_registry.cc NotRegistered): it restarted, or the region was
// unregistered. The call was refused before it ran, so it may go again.
constexpr absl::string_view kForgotten = "is not a registered shared-memory region";

bool Forgotten(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::NOT_FOUND &&
         absl::StrContains(status.error_message(), kForgotten);
}

int64_t AlignUp(int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

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

// Places each of `tensors` in turn from offset 0 (Place); returns their
// references and sets `cursor` past the last.
std::vector<v1::Tensor> PlaceAll(const ShmRegion& region, const std::vector<Tensor*>& tensors,
                                 int64_t& cursor) {
  cursor = 0;
  std::vector<v1::Tensor> placed(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) Place(region, *tensors[i], cursor, &placed[i]);
  return placed;
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

// The inverse of PlaceAll: each of `tensors` gets its bytes back from
// `region`, for another attempt of a call the server refused unread.
absl::Status UnplaceAll(const ShmRegion& region, std::vector<v1::Tensor>& placed,
                        const std::vector<Tensor*>& tensors) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (absl::Status s = Fetch(region, &placed[i]); !s.ok()) return s;
    absl::StatusOr<Tensor> back = FromProto(&placed[i]);
    if (!back.ok()) return back.status();
    *tensors[i] = *std::move(back);
  }
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
  Lease(SharedMemoryPath& path, const CallOptions& call, bool fresh)
      : path_(path), region_(path.Acquire(call, fresh)) {}
  ~Lease() {
    if (region_ == nullptr) return;
    if (forgotten_) {
      path_.Drop(region_, "dropped: the server does not know it (it restarted, or let it go)");
    } else if (retire_) {
      path_.Drop(region_,
                 "retired: a call on it ended without the server's answer, and the server may "
                 "still write its result there");
    } else {
      path_.Release(region_);
    }
  }
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ShmRegion* get() const { return region_; }
  // The call on the region ended with `status`; true when the server did not
  // know the region (the call did not run there).
  bool Ended(const grpc::Status& status) {
    forgotten_ = Forgotten(status);
    retire_ = ServerMayStillWrite(status);
    return forgotten_;
  }

 private:
  SharedMemoryPath& path_;
  ShmRegion* const region_;
  bool retire_ = false;
  bool forgotten_ = false;
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

ShmRegion* SharedMemoryPath::Acquire(const CallOptions& call, bool fresh) {
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
    if (!fresh && !idle_.empty()) {
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

void SharedMemoryPath::Drop(ShmRegion* region, absl::string_view why) {
  std::unique_ptr<ShmRegion> gone;
  {
    absl::MutexLock lock(&mu_);
    auto it = std::find_if(regions_.begin(), regions_.end(),
                           [&](const std::unique_ptr<ShmRegion>& r) { return r.get() == region; });
    if (it == regions_.end()) return;
    gone = std::move(*it);
    regions_.erase(it);
  }
  Debug(absl::StrCat("shared memory: region ", gone->id(), " ", why));
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
  // A region the server does not know is dropped and the call goes once more,
  // on a newly registered region: after a restart every idle one is as stale.
  // Forgotten again (or no region to be had): the socket.
  bool forgotten = false;
  absl::optional<absl::StatusOr<MatmulResult>> result =
      MatmulOn(args, call, /*fresh=*/false, forgotten);
  if (forgotten) result = MatmulOn(args, call, /*fresh=*/true, forgotten);
  return result;
}

absl::optional<absl::StatusOr<MatmulResult>> SharedMemoryPath::MatmulOn(MatmulArgs& args,
                                                                        const CallOptions& call,
                                                                        bool fresh,
                                                                        bool& forgotten) {
  Lease lease(*this, call, fresh);
  if (lease.get() == nullptr) return absl::nullopt;
  const ShmRegion& region = *lease.get();
  std::vector<Tensor*> inline_tensors = {&args.a, &args.b};
  const bool has_c = args.c && args.c_resident_id.empty();
  const bool has_bias = args.bias && args.bias_resident_id.empty();
  if (has_c) inline_tensors.push_back(&*args.c);
  if (has_bias) inline_tensors.push_back(&*args.bias);
  const int64_t out_bytes = args.keep_result ? 0 : MatmulOutBytes(args);
  if ((!args.keep_result && out_bytes == 0) || Needed(inline_tensors, out_bytes) > region.size()) {
    return absl::nullopt;
  }
  int64_t cursor = 0;
  std::vector<v1::Tensor> placed = PlaceAll(region, inline_tensors, cursor);
  // A copy, not a move: another attempt needs args' resident ids.
  v1::MatmulRequest request = ToProto(args);
  *request.mutable_a() = placed[0];
  *request.mutable_b() = placed[1];
  if (has_c) *request.mutable_c() = placed[2];
  if (has_bias) *request.mutable_bias() = placed[has_c ? 3 : 2];
  if (!request.keep_result()) PlaceOutput(region, cursor, request.mutable_out_shm());
  v1::MatmulResponse response;
  grpc::ClientContext context;
  deadline_(call, context);
  const grpc::Status status = stub_.Matmul(&context, request, &response);
  forgotten = lease.Ended(status);
  if (forgotten) {  // refused unread: args get their operands back for the next attempt
    absl::Status s = UnplaceAll(region, placed, inline_tensors);
    if (s.ok()) return absl::nullopt;
    forgotten = false;
    return absl::StatusOr<MatmulResult>(s);
  }
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
  // As Matmul: once more on a fresh region when the server forgot this one.
  bool forgotten = false;
  absl::optional<absl::StatusOr<SolveResult>> result =
      SolveOn(args, call, /*fresh=*/false, forgotten);
  if (forgotten) result = SolveOn(args, call, /*fresh=*/true, forgotten);
  return result;
}

absl::optional<absl::StatusOr<SolveResult>> SharedMemoryPath::SolveOn(SolveArgs& args,
                                                                      const CallOptions& call,
                                                                      bool fresh, bool& forgotten) {
  const bool use_a = args.factor_id.empty();
  Lease lease(*this, call, fresh);
  if (lease.get() == nullptr) return absl::nullopt;
  const ShmRegion& region = *lease.get();
  std::vector<Tensor*> inline_tensors = {&args.b};
  if (use_a) inline_tensors.push_back(&args.a);
  const int64_t out_bytes = args.keep_result ? 0 : SolveOutBytes(args);
  if ((!args.keep_result && out_bytes == 0) || Needed(inline_tensors, out_bytes) > region.size()) {
    return absl::nullopt;
  }
  int64_t cursor = 0;
  std::vector<v1::Tensor> placed = PlaceAll(region, inline_tensors, cursor);
  // A copy, not a move: another attempt needs args' factor id.
  v1::SolveRequest request = ToProto(args);
  *request.mutable_b() = placed[0];
  if (use_a) *request.mutable_a() = placed[1];
  if (!request.keep_result()) PlaceOutput(region, cursor, request.mutable_out_shm());
  v1::SolveResponse response;
  grpc::ClientContext context;
  deadline_(call, context);
  const grpc::Status status = stub_.Solve(&context, request, &response);
  forgotten = lease.Ended(status);
  if (forgotten) {  // refused unread: args get their operands back for the next attempt
    absl::Status s = UnplaceAll(region, placed, inline_tensors);
    if (s.ok()) return absl::nullopt;
    forgotten = false;
    return absl::StatusOr<SolveResult>(s);
  }
  if (!status.ok()) return absl::StatusOr<SolveResult>(FromGrpc(status));
  if (absl::Status s = Fetch(region, response.mutable_x()); !s.ok())
    return absl::StatusOr<SolveResult>(s);
  return FromProto(&response);
}

}  // namespace linalgd::client::internal
