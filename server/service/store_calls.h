#ifndef LINALGD_SERVER_SERVICE_STORE_CALLS_H_
#define LINALGD_SERVER_SERVICE_STORE_CALLS_H_

#include <grpcpp/grpcpp.h>

#include "linalgd/v1/linalgd.pb.h"
#include "server/service/calls.h"
#include "server/service/rpc.h"

namespace linalgd {

// The resident-tensor RPCs (shared memory: shm_calls.h). Store operations are short
// (index updates, bounded by a lock); the streaming reactors copy one chunk
// per callback, so no gRPC thread blocks on a whole tensor.

// Client streaming: header, then chunks appended as they arrive; the CRC32C
// is checked at the end (DATA_LOSS on a mismatch; INVALID_ARGUMENT when the
// byte count differs from total_bytes). Space is reserved at the header.
// A header with upload_id carries a part of a multi-part upload instead
// (upload_calls.h).
grpc::ServerReadReactor<v1::PutTensorRequest>* StartPutTensor(const CallEnv& env,
                                                              grpc::CallbackServerContext* context,
                                                              v1::PutTensorResponse* response);

// Server streaming, chunk by chunk, of the requested byte range (offset,
// length; INVALID_ARGUMENT outside the tensor); the tensor is leased (never
// evicted) until the stream ends.
grpc::ServerWriteReactor<v1::GetTensorResponse>* StartGetTensor(
    const CallEnv& env, grpc::CallbackServerContext* context, const v1::GetTensorRequest* request);

grpc::ServerUnaryReactor* DeleteTensor(const CallEnv& env, grpc::CallbackServerContext* context,
                                       const v1::DeleteTensorRequest* request);
// The caller's objects; with all_tenants (admin tenants only: else
// PERMISSION_DENIED) every tenant's, each naming its tenant.
grpc::ServerUnaryReactor* ListTensors(const CallEnv& env, grpc::CallbackServerContext* context,
                                      const v1::ListTensorsRequest* request,
                                      v1::ListTensorsResponse* response);
grpc::ServerUnaryReactor* ReleaseFactor(const CallEnv& env, grpc::CallbackServerContext* context,
                                        const v1::ReleaseFactorRequest* request);

// Shared with upload_calls.cc.
// UNIMPLEMENTED when the server has no tensor store.
absl::Status NeedStore(const CallEnv& env);
// PutTensor's header checks (dtype, shape, placement, ttl_seconds,
// total_bytes), also StartUpload's; the tensor's dtype and shape.
absl::StatusOr<TensorView> CheckPutHeader(const CallEnv& env, const v1::PutTensorHeader& header);
// How the store makes room for the tensor of `header`: a call's temporary
// (no_evict) evicts nothing, a plain put the least recently used.
Evict EvictionFor(const v1::PutTensorHeader& header);
// After a tensor is stored (PutTensor, FinishUpload): notes its bytes as
// received on `rpc` and describes it in `response`.
absl::Status DescribeStored(const CallEnv& env, Rpc& rpc, const std::string& id,
                            v1::PutTensorResponse* response);

// A ResidentMeta as the API reports it.
void MetaToProto(const ResidentMeta& meta, v1::TensorInfo* out);

}  // namespace linalgd

#endif  // LINALGD_SERVER_SERVICE_STORE_CALLS_H_
