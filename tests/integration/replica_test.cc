// Several real linalgd processes behind one ipv4: target and one Client:
// calls naming ids reach their owner, stateless calls the least loaded
// replica, and losing a replica fails only the calls naming its ids (or
// none, for factorizations made with recreate_on_loss).

#include <atomic>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "client/src/channel_credentials.h"
#include "client/src/replica_state.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "linalgd/client.h"
#include "linalgd/v1/linalgd.grpc.pb.h"
#include "tests/integration/replica_process.h"

namespace linalgd::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr int kN = 8;

std::string Owner(const std::string& id) { return id.substr(0, id.find('-')); }

// A diagonally dominant kN x kN matrix (well conditioned), distinct per seed.
client::Tensor Matrix(int seed) {
  std::vector<double> v(kN * kN);
  for (int i = 0; i < kN; ++i) {
    for (int j = 0; j < kN; ++j) v[i * kN + j] = i == j ? 2.0 * kN : std::sin(seed + i * 3 + j);
  }
  return client::Tensor::FromVector<double>({kN, kN}, absl::MakeConstSpan(v)).value();
}

client::Tensor Rhs(int seed) {
  std::vector<double> v(kN);
  for (int i = 0; i < kN; ++i) v[i] = std::cos(seed + i);
  return client::Tensor::FromVector<double>({kN, 1}, absl::MakeConstSpan(v)).value();
}

// max |a x - b|
double Residual(const client::Tensor& a, const client::Tensor& x, const client::Tensor& b) {
  const auto av = a.as<double>();
  const auto xv = x.as<double>();
  const auto bv = b.as<double>();
  double worst = 0;
  for (int i = 0; i < kN; ++i) {
    double s = 0;
    for (int j = 0; j < kN; ++j) s += av[i * kN + j] * xv[j];
    worst = std::max(worst, std::abs(s - bv[i]));
  }
  return worst;
}

class ReplicaTest : public ::testing::Test {
 protected:
  // Starts one server per id (with its flags), and a client over all of them.
  void Start(const std::vector<std::pair<std::string, std::vector<std::string>>>& replicas) {
    auto started = ReplicaProcess::StartAll(LINALGD_SERVER_BIN, replicas);
    ASSERT_TRUE(started.ok()) << started.status();
    processes_ = *std::move(started);
    std::vector<std::string> addresses;
    for (const auto& p : processes_) {
      addresses.push_back(p->address());
      by_id_[p->id()] = p.get();
    }
    Connect("ipv4:" + absl::StrJoin(addresses, ","));
  }

  void Connect(const std::string& target) {
    client::ClientOptions options;
    options.target = target;
    options.debug_log = [this](absl::string_view line) {
      absl::MutexLock lock(&mu_);
      log_.emplace_back(line);
    };
    auto c = Client::Create(options);
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = *std::move(c);
  }

  int LogLinesWith(absl::string_view text) {
    absl::MutexLock lock(&mu_);
    int n = 0;
    for (const std::string& line : log_) n += absl::StrContains(line, text);
    return n;
  }

  // PutTensor of Matrix(seed), then Factorize naming it: both on one replica.
  struct Stored {
    int seed;
    std::string tensor_id, factor_id;
  };
  Stored PutAndFactorize(int seed, bool recreate = false) {
    auto info = client_->PutTensor(Matrix(seed));
    EXPECT_TRUE(info.ok()) << info.status();
    if (!info.ok()) return {};
    client::FactorizeArgs f;
    f.a_resident_id = info->id;
    f.recreate_on_loss = recreate;
    auto factor = client_->Factorize(std::move(f));
    EXPECT_TRUE(factor.ok()) << factor.status();
    if (!factor.ok()) return {};
    return {seed, info->id, factor->factor_id};
  }

  absl::StatusOr<client::SolveResult> SolveWith(const std::string& factor_id, int seed) {
    client::SolveArgs args;
    args.factor_id = factor_id;
    args.b = Rhs(seed);
    return client_->Solve(std::move(args));
  }

  absl::StatusOr<client::MatmulResult> Stateless(int seed, bool keep = false) {
    client::MatmulArgs args;
    args.a = Matrix(seed);
    args.b = Rhs(seed);
    args.keep_result = keep;
    if (keep) args.result_ttl = absl::Minutes(1);
    return client_->Matmul(std::move(args));
  }

  std::vector<std::unique_ptr<ReplicaProcess>> processes_;
  std::map<std::string, ReplicaProcess*> by_id_;
  std::unique_ptr<Client> client_;
  absl::Mutex mu_;
  std::vector<std::string> log_ ABSL_GUARDED_BY(mu_);
};

TEST_F(ReplicaTest, CallsNamingIdsReachTheirOwner) {
  Start({{"a", {}}, {"b", {}}, {"c", {}}});
  std::vector<Stored> stored;
  std::map<std::string, int> owners;
  for (int seed = 0; seed < 6; ++seed) {
    stored.push_back(PutAndFactorize(seed));
    ASSERT_FALSE(stored.back().factor_id.empty());
    // The factorization went where its matrix is.
    EXPECT_EQ(Owner(stored.back().factor_id), Owner(stored.back().tensor_id));
    ++owners[Owner(stored.back().tensor_id)];
  }
  // New objects go round the (equally idle) replicas.
  EXPECT_EQ(owners.size(), 3u);
  for (int i = 0; i < 100; ++i) {
    const Stored& s = stored[i % stored.size()];
    switch (i % 3) {
      case 0: {
        auto r = SolveWith(s.factor_id, s.seed);
        ASSERT_TRUE(r.ok()) << i << ": " << r.status();
        EXPECT_LT(Residual(Matrix(s.seed), r->x, Rhs(s.seed)), 1e-9);
        break;
      }
      case 1: {
        client::MatmulArgs args;
        args.a_resident_id = s.tensor_id;
        args.b = Rhs(i);
        auto r = client_->Matmul(std::move(args));
        ASSERT_TRUE(r.ok()) << i << ": " << r.status();
        EXPECT_EQ(r->out.shape(), (std::vector<int64_t>{kN, 1}));
        break;
      }
      default: {
        auto t = client_->GetTensor(s.tensor_id);
        ASSERT_TRUE(t.ok()) << i << ": " << t.status();
        EXPECT_TRUE(*t == Matrix(s.seed));
      }
    }
  }
  auto listing = client_->ListTensors();
  ASSERT_TRUE(listing.ok()) << listing.status();
  EXPECT_EQ(listing->objects.size(), 12u);  // every replica's
  client::MatmulArgs mixed;                 // ids of two replicas in one call
  const Stored* other = nullptr;
  for (const Stored& s : stored) {
    if (Owner(s.tensor_id) != Owner(stored[0].tensor_id)) other = &s;
  }
  ASSERT_NE(other, nullptr);
  mixed.a_resident_id = stored[0].tensor_id;
  mixed.b_resident_id = other->tensor_id;
  auto r = client_->Matmul(std::move(mixed));
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("one call's ids must be on one replica"));
}

TEST_F(ReplicaTest, LosingAReplicaFailsOnlyCallsNamingItsIds) {
  Start({{"a", {}}, {"b", {}}, {"c", {}}});
  std::map<std::string, Stored> on;  // by owner
  for (int seed = 0; seed < 3; ++seed) {
    Stored s = PutAndFactorize(seed);
    on[Owner(s.tensor_id)] = s;
  }
  ASSERT_EQ(on.size(), 3u);
  const std::string b_address = by_id_["b"]->address();

  std::atomic<int> done{0};
  std::atomic<int> failed{0};
  std::atomic<bool> killed{false};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        auto r = Stateless(t * 100 + i);
        if (!r.ok()) {
          ++failed;
          ADD_FAILURE() << "stateless call " << t << "/" << i << ": " << r.status();
        }
        if (++done == 60 && !killed.exchange(true)) by_id_["b"]->Kill();  // mid-run
      }
    });
  }
  for (std::thread& t : callers) t.join();
  ASSERT_TRUE(killed.load());
  EXPECT_EQ(failed.load(), 0);

  const Stored& lost = on["b"];
  auto solve = SolveWith(lost.factor_id, lost.seed);
  EXPECT_TRUE(absl::IsUnavailable(solve.status())) << solve.status();
  EXPECT_THAT(std::string(solve.status().message()),
              StartsWith("replica b (ipv4:" + b_address + ") that owns factor_id " +
                         lost.factor_id + " is gone"));
  auto get = client_->GetTensor(lost.tensor_id);
  EXPECT_TRUE(absl::IsUnavailable(get.status())) << get.status();
  EXPECT_THAT(get.status().message(), HasSubstr("that owns id " + lost.tensor_id + " is gone"));
  for (const char* alive : {"a", "c"}) {
    auto ok = SolveWith(on[alive].factor_id, on[alive].seed);
    EXPECT_TRUE(ok.ok()) << alive << ": " << ok.status();
  }
  for (int i = 0; i < 20; ++i) {  // and new work keeps going to a and c only
    auto r = Stateless(i, /*keep=*/true);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_NE(Owner(r->out_resident_id), "b");
  }
}

// A replica's channel asks for the load with every call (linalgd-load: 1),
// which the server sends only on request.
TEST_F(ReplicaTest, AReplicasChannelLearnsItsLoad) {
  Start({{"a", {}}});
  const std::string address = processes_[0]->address();
  auto state = std::make_shared<client::internal::ReplicaState>(address);
  client::ClientOptions options;
  options.target = address;
  auto channel = client::internal::CreateClientChannel(options, grpc::InsecureChannelCredentials(),
                                                       grpc::ChannelArguments(),
                                                       client::internal::ObserveResponses(state));
  auto stub = v1::Linalg::NewStub(channel);
  grpc::ClientContext context;
  v1::GetServerInfoRequest request;
  v1::GetServerInfoResponse response;
  ASSERT_TRUE(stub->GetServerInfo(&context, request, &response).ok());
  const client::internal::ReplicaLoad load = state->Load(absl::Now());
  EXPECT_EQ(state->id(), "a");
  EXPECT_EQ(load.queue_depth, 0);
  EXPECT_GE(load.predicted_wait_us, 0);
}

TEST_F(ReplicaTest, ASlowReplicaGetsFewerNewCalls) {
#ifndef LINALGD_FAULT_INJECTION
  GTEST_SKIP() << "the server is built without --inject-faults (-DLINALGD_FAULT_INJECTION=OFF)";
#endif
  Start({{"a", {}}, {"b", {}}, {"c", {"--inject-faults", "cpu:matmul:stall=200ms"}}});
  absl::Mutex mu;
  std::map<std::string, int> ran_on;
  std::vector<std::thread> callers;
  for (int t = 0; t < 6; ++t) {
    callers.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        auto r = Stateless(t * 100 + i, /*keep=*/true);  // the result's id names the replica
        ASSERT_TRUE(r.ok()) << r.status();
        absl::MutexLock lock(&mu);
        ++ran_on[Owner(r->out_resident_id)];
      }
    });
  }
  for (std::thread& t : callers) t.join();
  absl::MutexLock lock(&mu);
  const int total = ran_on["a"] + ran_on["b"] + ran_on["c"];
  ASSERT_EQ(total, 120);
  for (const char* id : {"a", "b", "c"}) RecordProperty(std::string("calls_on_") + id, ran_on[id]);
  // Round robin would give c a third (40); the least loaded pick far fewer.
  EXPECT_LT(ran_on["c"] * 4, total)
      << "a " << ran_on["a"] << ", b " << ran_on["b"] << ", c " << ran_on["c"];
}

TEST_F(ReplicaTest, ADrainingReplicaGetsNoNewWorkButServesItsIds) {
  Start({{"a", {}}, {"b", {"--drain-grace", "60s"}}, {"c", {}}});
  std::map<std::string, Stored> on;
  for (int seed = 0; seed < 3; ++seed) {
    Stored s = PutAndFactorize(seed);
    on[Owner(s.tensor_id)] = s;
  }
  ASSERT_EQ(on.size(), 3u);
  by_id_["b"]->Signal(SIGTERM);  // drains while its store holds something
  client::ClientOptions direct;
  direct.target = by_id_["b"]->address();
  auto b = Client::Create(direct);
  ASSERT_TRUE(b.ok());
  absl::StatusOr<client::HealthStatus> health;
  for (int i = 0; i < 200; ++i) {
    health = (*b)->Health();
    if (health.ok() && *health == client::HealthStatus::kNotServing) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_TRUE(health.ok() && *health == client::HealthStatus::kNotServing) << health.status();

  std::map<std::string, int> ran_on;
  for (int i = 0; i < 30; ++i) {
    auto r = Stateless(i, /*keep=*/true);
    ASSERT_TRUE(r.ok()) << i << ": " << r.status();
    ++ran_on[Owner(r->out_resident_id)];
  }
  EXPECT_EQ(ran_on["b"], 0);
  EXPECT_EQ(ran_on["a"] + ran_on["c"], 30);
  // Only a call sent before the client knew could meet b's refusal.
  EXPECT_LE(LogLinesWith("; trying "), 1);
  // What callers stored on b is still theirs to read.
  auto get = client_->GetTensor(on["b"].tensor_id);
  ASSERT_TRUE(get.ok()) << get.status();
  EXPECT_TRUE(*get == Matrix(on["b"].seed));
  auto solve = SolveWith(on["b"].factor_id, 1);
  EXPECT_TRUE(solve.ok()) << solve.status();
  // Its refusal of new work naming its ids is its own answer, not "gone".
  client::MatmulArgs keep;
  keep.a_resident_id = on["b"].tensor_id;
  keep.b = Rhs(1);
  keep.keep_result = true;
  auto refused = client_->Matmul(std::move(keep));
  EXPECT_TRUE(absl::IsUnavailable(refused.status())) << refused.status();
  EXPECT_THAT(refused.status().message(), HasSubstr("is draining"));
  EXPECT_THAT(refused.status().message(), Not(HasSubstr("is gone")));
}

TEST_F(ReplicaTest, AnAnswerNamingTheOwnerSendsTheCallThere) {
  Start({{"x", {}}, {"y", {}}});
  auto on_x = client_->PutTensor(Matrix(1));
  auto on_y = client_->PutTensor(Matrix(2));
  ASSERT_TRUE(on_x.ok() && on_y.ok());
  ASSERT_NE(Owner(on_x->id), Owner(on_y->id));
  const std::string x_id = Owner(on_x->id) == "x" ? on_x->id : on_y->id;
  ASSERT_TRUE(client_->GetTensor(x_id).ok());  // the client knows which address is x
  // x and y come back on each other's port (their stores empty).
  const int x_port = by_id_["x"]->port();
  const int y_port = by_id_["y"]->port();
  processes_.clear();
  auto y = ReplicaProcess::StartAt(LINALGD_SERVER_BIN, "y", x_port);
  ASSERT_TRUE(y.ok()) << y.status();
  auto x = ReplicaProcess::StartAt(LINALGD_SERVER_BIN, "x", y_port);
  ASSERT_TRUE(x.ok()) << x.status();
  // Sent where x was, y answers FAILED_PRECONDITION naming x; the client
  // learns again and asks x, which no longer has the tensor.
  auto get = client_->GetTensor(x_id);
  EXPECT_TRUE(absl::IsNotFound(get.status())) << get.status();
  EXPECT_EQ(LogLinesWith("not the owner of " + x_id), 1);
  // With x gone too, the answer says so.
  (*x)->Kill();
  get = client_->GetTensor(x_id);
  EXPECT_TRUE(absl::IsUnavailable(get.status())) << get.status();
  EXPECT_THAT(get.status().message(), HasSubstr("replica x ("));
}

TEST_F(ReplicaTest, ADnsTargetUsesEveryAddressOfTheName) {
  Start({{"a", {}}});
  // localhost: 127.0.0.1, where the server listens, and maybe ::1, where
  // nothing does (calls sent there are tried again on 127.0.0.1).
  Connect(absl::StrCat("dns:///localhost:", by_id_["a"]->port()));
  for (int i = 0; i < 10; ++i) {
    auto r = Stateless(i);
    ASSERT_TRUE(r.ok()) << i << ": " << r.status();
  }
  auto put = client_->PutTensor(Matrix(3));
  ASSERT_TRUE(put.ok()) << put.status();
  EXPECT_EQ(Owner(put->id), "a");
  auto get = client_->GetTensor(put->id);
  ASSERT_TRUE(get.ok()) << get.status();
  EXPECT_TRUE(*get == Matrix(3));
}

TEST_F(ReplicaTest, RecreateOnLossSurvivesTheFactorsReplica) {
  Start({{"a", {}}, {"b", {}}});
  const Stored kept = PutAndFactorize(7, /*recreate=*/true);
  ASSERT_FALSE(kept.factor_id.empty());
  client::FactorizeArgs plain;  // same replica, without recreate_on_loss
  plain.a_resident_id = kept.tensor_id;
  auto plain_factor = client_->Factorize(std::move(plain));
  ASSERT_TRUE(plain_factor.ok()) << plain_factor.status();
  const std::string owner = Owner(kept.factor_id);
  ASSERT_EQ(Owner(plain_factor->factor_id), owner);

  by_id_[owner]->Kill();
  auto health = client_->Health();  // the other replica serves
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(*health, client::HealthStatus::kServing);
  auto lost = SolveWith(plain_factor->factor_id, 1);
  EXPECT_TRUE(absl::IsUnavailable(lost.status())) << lost.status();
  EXPECT_THAT(lost.status().message(), HasSubstr("is gone"));
  for (int i = 0; i < 3; ++i) {
    auto r = SolveWith(kept.factor_id, i);
    ASSERT_TRUE(r.ok()) << i << ": " << r.status();
    EXPECT_LT(Residual(Matrix(7), r->x, Rhs(i)), 1e-9);
  }
  EXPECT_EQ(LogLinesWith("was lost with its replica; made again"), 1);
  EXPECT_TRUE(client_->ReleaseFactor(kept.factor_id).ok());
}

}  // namespace
}  // namespace linalgd::testing
