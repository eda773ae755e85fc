#ifndef LINALGD_TESTS_INTEGRATION_TEST_SERVER_H_
#define LINALGD_TESTS_INTEGRATION_TEST_SERVER_H_

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "linalgd/client.h"
#include "server/service/server.h"
#include "tests/testing/real_server.h"

namespace linalgd::testing {

// Starts the real server on 127.0.0.1 port 0 (metrics off) and a real client
// connected to it.
class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override { StartServer(ServerOptions{}); }
  void TearDown() override {
    client_.reset();
    if (server_) server_->Shutdown(absl::Seconds(5));
  }

  // REQUIRES: no server running. Listens on a free loopback port; metrics
  // are off unless `options` names a metrics address other than the default.
  void StartServer(ServerOptions options) {
    options.cpu_workers = 2;
    options.blas_threads = 2;
    auto server = StartRealServer(std::move(options));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    auto c = ConnectClient(*server_);
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = std::move(*c);
  }

  std::string target() const { return LoopbackTarget(*server_); }

  std::unique_ptr<Server> server_;
  std::unique_ptr<Client> client_;
};

// Random values in [-1, 1), deterministic per seed.
inline std::vector<double> RandomValues(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> v(n);
  for (double& x : v) x = dist(gen);
  return v;
}

template <typename T>
client::Tensor RandomTensor(std::vector<int64_t> shape, unsigned seed) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  const std::vector<double> v = RandomValues(n, seed);
  std::vector<T> typed(v.begin(), v.end());
  return client::Tensor::FromVector<T>(std::move(shape), absl::MakeConstSpan(typed)).value();
}

}  // namespace linalgd::testing

#endif  // LINALGD_TESTS_INTEGRATION_TEST_SERVER_H_
