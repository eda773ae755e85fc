#include "client/src/health_check.h"

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "client/src/convert.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"

namespace linalgd::client::internal {
namespace {

constexpr char kCheckMethod[] = "/grpc.health.v1.Health/Check";

void AppendVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// Reads a varint at `pos`, advancing it; false when truncated or too long.
bool ReadVarint(absl::string_view bytes, size_t& pos, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && pos < bytes.size(); shift += 7) {
    const uint8_t b = static_cast<uint8_t>(bytes[pos++]);
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

// Skips the value of a field of wire type `wire`; false when malformed.
bool SkipField(absl::string_view bytes, size_t& pos, uint64_t wire) {
  uint64_t v;
  switch (wire) {
    case 0:
      return ReadVarint(bytes, pos, v);
    case 1:
      pos += 8;
      return pos <= bytes.size();
    case 2:
      if (!ReadVarint(bytes, pos, v) || v > bytes.size() - pos) return false;
      pos += v;
      return true;
    case 5:
      pos += 4;
      return pos <= bytes.size();
    default:
      return false;
  }
}

HealthStatus FromWire(uint64_t v) {
  switch (v) {
    case 1:
      return HealthStatus::kServing;
    case 2:
      return HealthStatus::kNotServing;
    case 3:
      return HealthStatus::kServiceUnknown;
    default:
      return HealthStatus::kUnknown;
  }
}

std::string Flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!buffer.Dump(&slices).ok()) return out;
  for (const grpc::Slice& s : slices) {
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return out;
}

}  // namespace

std::string EncodeHealthCheckRequest(absl::string_view service) {
  std::string out;
  if (service.empty()) return out;
  out.push_back(0x0a);  // field 1, length-delimited
  AppendVarint(out, service.size());
  out.append(service.data(), service.size());
  return out;
}

absl::StatusOr<HealthStatus> DecodeHealthCheckResponse(absl::string_view bytes) {
  const absl::Status malformed = absl::InvalidArgumentError(
      absl::StrCat("malformed grpc.health.v1.HealthCheckResponse (", bytes.size(), " bytes)"));
  HealthStatus status = HealthStatus::kUnknown;
  size_t pos = 0;
  while (pos < bytes.size()) {
    uint64_t key, value;
    if (!ReadVarint(bytes, pos, key)) return malformed;
    if (key == 0x08) {
      if (!ReadVarint(bytes, pos, value)) return malformed;
      status = FromWire(value);
    } else if (!SkipField(bytes, pos, key & 7)) {
      return malformed;
    }
  }
  return status;
}

absl::StatusOr<HealthStatus> CheckHealth(grpc::GenericStub& stub, grpc::ClientContext& context,
                                         absl::string_view service) {
  const std::string encoded = EncodeHealthCheckRequest(service);
  grpc::Slice slice(encoded);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  absl::Notification done;
  grpc::Status status;
  stub.UnaryCall(&context, kCheckMethod, grpc::StubOptions(), &request, &response,
                 [&](grpc::Status s) {
                   status = std::move(s);
                   done.Notify();
                 });
  done.WaitForNotification();
  if (!status.ok()) return FromGrpc(status);
  return DecodeHealthCheckResponse(Flatten(response));
}

}  // namespace linalgd::client::internal
