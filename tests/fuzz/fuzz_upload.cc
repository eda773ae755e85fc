// libFuzzer target: multi-part upload assembly (server/store/upload_table.h,
// upload_session.h) driven as the PutTensor part streams drive it, parts at
// any offsets and sizes. Input: u8 dtype, u16 elements (tensor [elements],
// at most 128 KiB), u32 crc (even: the harness sets StartUpload's crc32c to
// the true one, odd: this value); then up to 64 operations, u8 op and args:
//   0 claim: i64 offset, i64 bytes; the part's bytes are written at once
//   1 commit the oldest open claim (with its true CRC32C, as
//     UploadPartWriter::Close does)      2 unclaim the oldest open claim
//   3 Finish through the table           4 Abort (ends the run)
// Byte p of the tensor is always written as Pattern(p). The harness commits
// or unclaims each successful claim exactly once (Commit/Unclaim's
// contract). Checked: claims are disjoint and inside the tensor; Finish
// succeeds exactly when committed parts cover the tensor, no claim is open
// and the CRC is right, and then returns the written bytes.
#include <cstdlib>
#include <deque>
#include <memory>
#include <string>

#include "common/crc32c.h"
#include "server/store/upload_table.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

struct Claimed {
  int64_t offset, bytes;
};

char Pattern(int64_t p) { return static_cast<char>(p * 7 + 1); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace linalgd;
  fuzz::Reader in(data, size);
  UploadSpec spec;
  spec.dtype = static_cast<DType>(in.Get<uint8_t>() % 4);
  spec.shape = {1 + in.Get<uint16_t>() % 16384};
  const uint32_t crc_word = in.Get<uint32_t>();
  const int64_t total = NumElements(spec.shape) * static_cast<int64_t>(DTypeSize(spec.dtype));
  std::string expected(total, '\0');
  for (int64_t p = 0; p < total; ++p) expected[p] = Pattern(p);
  const uint32_t true_crc = Crc32c(expected.data(), expected.size());
  spec.crc32c = crc_word % 2 == 0 ? true_crc : crc_word;
  spec.ttl = absl::Hours(1);  // the clock moves 1 s per operation: never expires
  absl::Time clock = absl::UnixEpoch();
  UploadTable table([&clock] { return clock; });
  absl::StatusOr<std::shared_ptr<UploadSession>> s = table.Start(spec, StoreReservation());
  FUZZ_REQUIRE(s.ok());
  std::shared_ptr<UploadSession> session = *s;
  FUZZ_REQUIRE(session->total_bytes() == total);
  std::string covered(total, '\0');  // 1: inside a committed part
  std::deque<Claimed> open;
  for (int steps = 0; in.left() > 0 && steps < 64; ++steps) {
    clock += absl::Seconds(1);
    switch (in.Get<uint8_t>() % 5) {
      case 0: {
        const int64_t offset = in.Get<int64_t>(), bytes = in.Get<int64_t>();
        absl::StatusOr<char*> dest = session->Claim(offset, bytes);
        if (!dest.ok()) break;
        FUZZ_REQUIRE(offset >= 0 && bytes > 0 && offset <= total - bytes);
        for (int64_t p = offset; p < offset + bytes; ++p) FUZZ_REQUIRE(!covered[p]);
        for (const Claimed& c : open) {
          FUZZ_REQUIRE(offset + bytes <= c.offset || c.offset + c.bytes <= offset);
        }
        for (int64_t i = 0; i < bytes; ++i) (*dest)[i] = Pattern(offset + i);
        open.push_back({offset, bytes});
        break;
      }
      case 1: {
        if (open.empty()) break;
        const Claimed c = open.front();
        open.pop_front();
        const uint32_t crc = Crc32c(expected.data() + c.offset, c.bytes);
        if (session->Commit(c.offset, crc).ok()) covered.replace(c.offset, c.bytes, c.bytes, 1);
        break;
      }
      case 2:
        if (open.empty()) break;
        session->Unclaim(open.front().offset);
        open.pop_front();
        break;
      case 3: {
        const bool complete = open.empty() && covered.find('\0') == std::string::npos;
        absl::StatusOr<UploadSession::Finished> f = table.Finish(session->id());
        FUZZ_REQUIRE(f.ok() == (complete && spec.crc32c == true_crc));
        if (!f.ok()) {
          if (complete) return 0;  // DATA_LOSS closed the upload
          break;
        }
        const std::string got(reinterpret_cast<const char*>(f->tensor.data()),
                              f->tensor.num_bytes());
        FUZZ_REQUIRE(got == expected && f->crc32c == true_crc);
        return 0;
      }
      case 4:
        FUZZ_REQUIRE(table.Abort(session->id()).ok());
        return 0;
    }
  }
  // Streams still open end as UploadPartWriter's destructor ends them.
  for (const Claimed& c : open) session->Unclaim(c.offset);
  return 0;
}
