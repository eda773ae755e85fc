#ifndef LINALGD_PROTO_DTYPE_PROTO_H_
#define LINALGD_PROTO_DTYPE_PROTO_H_

// The one mapping between the API's v1::DType and linalgd::DType
// (common/dtype.h), for the server, the client and the tools.

#include <optional>

#include "common/dtype.h"
#include "linalgd/v1/linalgd.pb.h"

namespace linalgd {

// The API's enum for `dtype`.
v1::DType DTypeToProto(DType dtype);

// The dtype a v1::DType value names; nullopt for DTYPE_UNSPECIFIED and for a
// value the API does not define (an int, as proto3 keeps unknown values).
std::optional<DType> DTypeFromProtoValue(int value);

}  // namespace linalgd

#endif  // LINALGD_PROTO_DTYPE_PROTO_H_
