// SPDX-License-Identifier: Apache-2.0
// SharedMemory/memfd: sealed memfds, and checking one received from a peer
// over a socket with SCM_RIGHTS.
#include "sealed_memfd.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include <gtest/gtest.h>

#include "support/temp_dir.hpp"

namespace cxlpool::drivers {
namespace {

hal::SharedMemorySpec new_memfd(uint64_t size) {
  hal::SharedMemorySpec spec;
  spec.size = size;
  return spec;
}

hal::SharedMemorySpec received(int fd, uint64_t size = 0) {
  hal::SharedMemorySpec spec;
  spec.fd = fd;
  spec.size = size;
  return spec;
}

// Sends `fd` across a socketpair as a peer process would and returns the
// descriptor that arrives.
UniqueFd pass_over_socket(int fd) {
  int pair[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
  UniqueFd a(pair[0]), b(pair[1]);
  char byte = 'x';
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  EXPECT_EQ(sendmsg(a.get(), &msg, 0), 1);
  std::memset(control, 0, sizeof control);
  msg.msg_controllen = sizeof control;
  EXPECT_EQ(recvmsg(b.get(), &msg, MSG_CMSG_CLOEXEC), 1);
  c = CMSG_FIRSTHDR(&msg);
  if (c == nullptr || c->cmsg_type != SCM_RIGHTS) return UniqueFd();
  int out = -1;
  std::memcpy(&out, CMSG_DATA(c), sizeof(int));
  return UniqueFd(out);
}

TEST(SealedMemfd, CreatesASizeSealedMemfd) {
  auto shm = open_sealed_memfd(new_memfd(5000));
  ASSERT_TRUE(shm.has_value()) << shm.error().message;
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  EXPECT_EQ(shm->size(), 2 * page);
  EXPECT_EQ(shm->info().backend, "memfd");
  EXPECT_TRUE(shm->info().created);
  EXPECT_TRUE(shm->info().coherent);
  const int seals = fcntl(shm->fd(), F_GET_SEALS);
  EXPECT_EQ(seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  EXPECT_EQ(seals & F_SEAL_WRITE, 0) << "both sides of a link write";
  EXPECT_NE(ftruncate(shm->fd(), 0), 0) << "nobody may shrink it under a mapping";
  EXPECT_NE(fcntl(shm->fd(), F_GETFD) & FD_CLOEXEC, 0);
}

TEST(SealedMemfd, APeerMapsTheSameBytesThroughSCMRights) {
  auto mine = open_sealed_memfd(new_memfd(1 << 16));
  ASSERT_TRUE(mine.has_value()) << mine.error().message;
  UniqueFd arrived = pass_over_socket(mine->fd());
  ASSERT_TRUE(arrived.valid());
  auto theirs = open_sealed_memfd(received(arrived.get(), 4096));
  ASSERT_TRUE(theirs.has_value()) << theirs.error().message;
  arrived.reset();  // the mapping keeps its own duplicate
  EXPECT_FALSE(theirs->info().created);
  EXPECT_EQ(theirs->size(), 4096u);
  std::memcpy(mine->bytes().data() + 64, "link", 4);
  EXPECT_EQ(std::memcmp(theirs->bytes().data() + 64, "link", 4), 0);
  theirs->bytes()[0] = std::byte{7};
  EXPECT_EQ(mine->bytes()[0], std::byte{7});
}

TEST(SealedMemfd, RefusesAReceivedDescriptorItCannotTrust) {
  // Not sealed: the sender could shrink it and fault the receiver.
  UniqueFd unsealed(memfd_create("unsealed", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  ASSERT_EQ(ftruncate(unsealed.get(), 4096), 0);
  auto shm = open_sealed_memfd(received(unsealed.get()));
  ASSERT_FALSE(shm.has_value());
  EXPECT_EQ(shm.error().code, EINVAL);
  EXPECT_NE(shm.error().message.find("not sealed"), std::string::npos) << shm.error().message;

  // Not a memfd at all.
  test::TempDir dir("shm-memfd");
  dir.write("plain", std::string(4096, '\0'));
  UniqueFd plain(open(dir.resolve("plain").c_str(), O_RDWR | O_CLOEXEC));
  shm = open_sealed_memfd(received(plain.get()));
  ASSERT_FALSE(shm.has_value());
  EXPECT_EQ(shm.error().code, EINVAL);
  EXPECT_NE(shm.error().message.find("not a memfd"), std::string::npos) << shm.error().message;

  // Smaller than the link it is supposed to hold.
  auto small = open_sealed_memfd(new_memfd(4096));
  ASSERT_TRUE(small.has_value());
  shm = open_sealed_memfd(received(small->fd(), 1 << 20));
  ASSERT_FALSE(shm.has_value());
  EXPECT_EQ(shm.error().code, EINVAL);

  // Sealed against writes: the channel could not run on it.
  UniqueFd frozen(memfd_create("frozen", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  ASSERT_EQ(ftruncate(frozen.get(), 4096), 0);
  ASSERT_EQ(fcntl(frozen.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE), 0);
  shm = open_sealed_memfd(received(frozen.get()));
  ASSERT_FALSE(shm.has_value());
  EXPECT_EQ(shm.error().code, EINVAL);
}

TEST(SealedMemfd, WantsASizeAndNoPath) {
  auto no_size = open_sealed_memfd(new_memfd(0));
  ASSERT_FALSE(no_size.has_value());
  EXPECT_EQ(no_size.error().code, EINVAL);
  auto spec = new_memfd(4096);
  spec.path = "/dev/shm/pod";
  auto with_path = open_sealed_memfd(spec);
  ASSERT_FALSE(with_path.has_value());
  EXPECT_EQ(with_path.error().code, ENODEV) << "not a spec for this backend";
}

}  // namespace
}  // namespace cxlpool::drivers
