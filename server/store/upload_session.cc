#include "server/store/upload_session.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/crc32c.h"

namespace linalgd {

UploadSession::UploadSession(std::string id, UploadSpec spec, StoreReservation reservation,
                             std::function<absl::Time()> now, const HostAllocator& alloc)
    : id_(std::move(id)),
      spec_(std::move(spec)),
      total_(NumElements(spec_.shape) * static_cast<int64_t>(DTypeSize(spec_.dtype))),
      now_(std::move(now)),
      alloc_(alloc),
      reservation_(std::move(reservation)),
      last_activity_(now_()) {}

absl::Status UploadSession::CheckOpen() const {
  if (closed_.empty()) return absl::OkStatus();
  return absl::NotFoundError(absl::StrCat("upload ", id_, " was ", closed_));
}

absl::Status UploadSession::CheckRange(int64_t offset, int64_t bytes) const {
  if (bytes <= 0 || offset < 0 || offset > total_ - bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("upload ", id_, ": part offset ", offset, " + total_bytes ", bytes,
                     " is not a non-empty range inside the tensor's ", total_, " bytes"));
  }
  auto next = parts_.lower_bound(offset);
  if (next != parts_.end() && next->first < offset + bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "upload ", id_, ": part [", offset, ", ", offset + bytes, ") overlaps the part [",
        next->first, ", ", next->first + next->second.bytes, ")"));
  }
  if (next != parts_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.bytes > offset) {
      return absl::InvalidArgumentError(absl::StrCat(
          "upload ", id_, ": part [", offset, ", ", offset + bytes, ") overlaps the part [",
          prev->first, ", ", prev->first + prev->second.bytes, ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<char*> UploadSession::Claim(int64_t offset, int64_t bytes) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = CheckOpen(); !s.ok()) return s;
  if (absl::Status s = CheckRange(offset, bytes); !s.ok()) return s;
  if (tensor_.num_bytes() == 0) {
    tensor_ = NewHostTensor(alloc_, spec_.dtype, spec_.shape);
  }
  parts_[offset] = Part{bytes, 0, false};
  ++in_flight_;
  last_activity_ = now_();
  return reinterpret_cast<char*>(tensor_.mutable_data()) + offset;
}

absl::Status UploadSession::Commit(int64_t offset, uint32_t crc32c) {
  absl::MutexLock lock(&mu_);
  Part& part = parts_.at(offset);
  part.crc32c = crc32c;
  part.done = true;
  --in_flight_;
  last_activity_ = now_();
  return CheckOpen();
}

void UploadSession::Unclaim(int64_t offset) {
  absl::MutexLock lock(&mu_);
  parts_.erase(offset);
  --in_flight_;
  last_activity_ = now_();
}

absl::StatusOr<uint32_t> UploadSession::CoveredCrc() const {
  uint32_t crc = 0;
  int64_t covered = 0;  // [0, covered) is finished
  for (const auto& [offset, part] : parts_) {
    if (offset > covered) break;
    if (!part.done) {
      return absl::FailedPreconditionError(absl::StrCat("upload ", id_, ": the part [", offset,
                                                        ", ", offset + part.bytes,
                                                        ") is still being written"));
    }
    crc = Crc32cCombine(crc, part.crc32c, static_cast<size_t>(part.bytes));
    covered = offset + part.bytes;
  }
  if (covered < total_) {
    auto next = parts_.upper_bound(covered);
    const int64_t end = next == parts_.end() ? total_ : next->first;
    return absl::FailedPreconditionError(
        absl::StrCat("upload ", id_, ": bytes [", covered, ", ", end, ") of ", total_,
                     " have not been uploaded (no finished part covers them)"));
  }
  return crc;
}

absl::StatusOr<UploadSession::Finished> UploadSession::Finish() {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = CheckOpen(); !s.ok()) return s;
  last_activity_ = now_();
  absl::StatusOr<uint32_t> crc = CoveredCrc();
  if (!crc.ok()) return crc.status();
  if (*crc != spec_.crc32c) {
    closed_ = "dropped: its bytes failed the CRC32C check";
    StoreReservation released = std::move(reservation_);  // no part is in flight
    return absl::DataLossError(absl::StrCat("upload ", id_, ": CRC32C of the parts is ", *crc,
                                            ", StartUpload's header.crc32c is ", spec_.crc32c));
  }
  closed_ = "finished";
  Finished out;
  out.spec = spec_;
  // An empty tensor has no part, so nothing allocated its buffer.
  out.tensor = total_ == 0 ? Tensor(spec_.dtype, spec_.shape) : std::move(tensor_);
  out.crc32c = *crc;
  out.reservation = std::move(reservation_);
  return out;
}

void UploadSession::Close(absl::string_view why) {
  absl::MutexLock lock(&mu_);
  if (closed_.empty()) closed_ = std::string(why);
}

bool UploadSession::Expired(absl::Time now) const {
  absl::MutexLock lock(&mu_);
  return in_flight_ == 0 && last_activity_ + std::min(spec_.ttl, spec_.idle_timeout) <= now;
}

absl::Time UploadSession::ExpiresNoSoonerThan(absl::Time now) const {
  absl::MutexLock lock(&mu_);
  return (in_flight_ == 0 ? last_activity_ : now) + std::min(spec_.ttl, spec_.idle_timeout);
}

}  // namespace linalgd
