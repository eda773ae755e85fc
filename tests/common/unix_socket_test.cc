// UnixSocketInUse: what counts as a live server at a socket path (the
// --listen unix: and --shm-socket checks), and what is stale or no socket.
#include "server/common/unix_socket.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace linalgd {
namespace {

class UnixSocketTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (int fd : fds_) close(fd);
    std::filesystem::remove(path_);
  }

  // A socket of `type` bound at path_ (listening when `listen` and the type
  // takes connections).
  void Bind(int type, bool listen) {
    const int fd = socket(AF_UNIX, type, 0);
    ASSERT_GE(fd, 0);
    fds_.push_back(fd);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path_.data(), path_.size());
    ASSERT_EQ(bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0) << path_;
    if (listen) {
      ASSERT_EQ(::listen(fd, 1), 0);
    }
  }

  void CloseAll() {
    for (int fd : fds_) close(fd);
    fds_.clear();
  }

  const std::string path_ =
      ::testing::TempDir() + "unix-socket-test-" + std::to_string(getpid()) + ".sock";
  std::vector<int> fds_;
};

TEST_F(UnixSocketTest, LiveListenersOfEveryTypeAreInUse) {
  Bind(SOCK_STREAM, true);
  EXPECT_TRUE(UnixSocketInUse(path_));
  CloseAll();
  std::filesystem::remove(path_);
  Bind(SOCK_SEQPACKET, true);  // the shared-memory socket's type
  EXPECT_TRUE(UnixSocketInUse(path_));
  CloseAll();
  std::filesystem::remove(path_);
  Bind(SOCK_DGRAM, false);
  EXPECT_TRUE(UnixSocketInUse(path_));
}

TEST_F(UnixSocketTest, AFullBacklogIsStillInUse) {
  Bind(SOCK_STREAM, true);
  for (int i = 0; i < 8; ++i) {  // backlog 1: later connects would wait
    const int c = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    fds_.push_back(c);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path_.data(), path_.size());
    connect(c, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  }
  EXPECT_TRUE(UnixSocketInUse(path_));
}

TEST_F(UnixSocketTest, StaleMissingNotASocketAndOverlongAreNot) {
  EXPECT_FALSE(UnixSocketInUse(path_));  // no file
  Bind(SOCK_STREAM, true);
  CloseAll();  // the file stays, no one listens: a killed server's leftover
  ASSERT_TRUE(std::filesystem::exists(path_));
  EXPECT_FALSE(UnixSocketInUse(path_));
  std::filesystem::remove(path_);
  std::ofstream(path_) << "not a socket";
  EXPECT_FALSE(UnixSocketInUse(path_));
  EXPECT_FALSE(UnixSocketInUse(""));
  EXPECT_FALSE(UnixSocketInUse(std::string(4096, 'a')));
}

}  // namespace
}  // namespace linalgd
