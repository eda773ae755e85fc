// ClientOptions::transfer_progress on the real server: every upload and
// download reports done values that grow to the tensor's total, from the
// parallel (several parts) and the one-stream paths.
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "tests/integration/test_server.h"

namespace linalgd::testing {
namespace {

using ::linalgd::client::Tensor;

// The (done, total) pairs one client reported.
class Calls {
 public:
  void Add(int64_t done, int64_t total) {
    absl::MutexLock lock(&mu_);
    calls_.emplace_back(done, total);
  }
  std::vector<std::pair<int64_t, int64_t>> Take() {
    absl::MutexLock lock(&mu_);
    return std::exchange(calls_, {});
  }

 private:
  absl::Mutex mu_;
  std::vector<std::pair<int64_t, int64_t>> calls_;
};

// Expects done values that grow strictly, each of `total`, the last `total`.
void ExpectGrowsTo(const std::vector<std::pair<int64_t, int64_t>>& calls, int64_t total) {
  ASSERT_FALSE(calls.empty());
  int64_t previous = 0;
  for (const auto& [done, of] : calls) {
    EXPECT_EQ(of, total);
    EXPECT_GT(done, previous);
    previous = done;
  }
  EXPECT_EQ(calls.back().first, total);
}

class TransferProgressTest : public ServerTest {
 protected:
  // A client that streams tensors of at least `threshold` bytes (0: never)
  // in parts of at least 16 KiB over 4 connections.
  std::unique_ptr<Client> ProgressClient(int64_t threshold) {
    client::ClientOptions co;
    co.target = target();
    co.stream_threshold_bytes = threshold;
    co.chunk_bytes = 4 << 10;
    co.transfer_connections = 4;
    co.transfer_part_min_bytes = 16 << 10;
    co.transfer_progress = [this](int64_t done, int64_t total) { calls_.Add(done, total); };
    return Client::Create(co).value();
  }

  Calls calls_;
};

TEST_F(TransferProgressTest, PartsOfAnUploadAndADownloadGrowToTheTotal) {
  std::unique_ptr<Client> c = ProgressClient(/*threshold=*/1);
  const Tensor t = RandomTensor<double>({128, 256}, 1);  // 256 KiB: 4 parts
  const int64_t total = static_cast<int64_t>(t.bytes().size());
  absl::StatusOr<client::TensorInfo> info = c->PutTensor(t, {}, {});
  ASSERT_TRUE(info.ok()) << info.status();
  const auto put = calls_.Take();
  EXPECT_EQ(put.size(), 64u);  // one per 4 KiB chunk of the 4 parts
  ExpectGrowsTo(put, total);

  absl::StatusOr<Tensor> back = c->GetTensor(info->id, {});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->bytes(), t.bytes());
  const auto get = calls_.Take();
  EXPECT_EQ(get.size(), 64u);
  ExpectGrowsTo(get, total);
}

TEST_F(TransferProgressTest, OneStreamReportsEachChunk) {
  std::unique_ptr<Client> c = ProgressClient(/*threshold=*/0);
  const Tensor t = RandomTensor<float>({64, 64}, 2);  // 16 KiB: one part, 4 chunks
  const int64_t total = static_cast<int64_t>(t.bytes().size());
  const std::vector<std::pair<int64_t, int64_t>> chunks = {
      {4096, total}, {8192, total}, {12288, total}, {16384, total}};
  absl::StatusOr<client::TensorInfo> info = c->PutTensor(t, {}, {});
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(calls_.Take(), chunks);
  ASSERT_TRUE(c->GetTensor(info->id, {}).ok());
  EXPECT_EQ(calls_.Take(), chunks);
}

TEST_F(TransferProgressTest, MatmulReportsItsStreamedOperandsAndResult) {
  std::unique_ptr<Client> c = ProgressClient(/*threshold=*/64 << 10);
  client::MatmulArgs args;
  args.a = RandomTensor<double>({128, 128}, 3);  // 128 KiB each: streamed
  args.b = RandomTensor<double>({128, 128}, 4);
  const int64_t total = 128 * 128 * 8;
  absl::StatusOr<client::MatmulResult> r = c->Matmul(std::move(args), {});
  ASSERT_TRUE(r.ok()) << r.status();
  const auto calls = calls_.Take();
  int64_t completed = 0;  // a, b and the result
  for (const auto& [done, of] : calls) {
    EXPECT_EQ(of, total);
    EXPECT_LE(done, of);
    completed += done == of ? 1 : 0;
  }
  EXPECT_EQ(completed, 3);
}

}  // namespace
}  // namespace linalgd::testing
