// SPDX-License-Identifier: Apache-2.0
// send_message / recv_message over a real AF_UNIX SOCK_SEQPACKET socketpair.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/proto/socket_io.hpp"
#include "sample_messages.hpp"
#include "support/raw_socket.hpp"
#include "wire_builder.hpp"

namespace cxlpool::proto {
namespace {

struct Pair {
  UniqueFd a;
  UniqueFd b;
};

Pair make_pair() {
  int sv[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0) << std::strerror(errno);
  return Pair{UniqueFd(sv[0]), UniqueFd(sv[1])};
}

size_t open_fd_count() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

UniqueFd memfd_with(const std::string& text) {
  UniqueFd fd(::memfd_create("proto-test", MFD_CLOEXEC));
  EXPECT_TRUE(fd.valid()) << std::strerror(errno);
  EXPECT_EQ(::write(fd.get(), text.data(), text.size()), static_cast<ssize_t>(text.size()));
  return fd;
}

std::string read_all(int fd) {
  char buf[256];
  const ssize_t n = ::pread(fd, buf, sizeof(buf), 0);
  return n < 0 ? std::string() : std::string(buf, static_cast<size_t>(n));
}

// Sends raw bytes with raw descriptors, bypassing the encoder's checks.
void send_raw(int sock, const std::vector<std::byte>& bytes, std::span<const int> fds) {
  ASSERT_TRUE(integration::send_datagram(sock, bytes, fds)) << std::strerror(errno);
}

// `n` memfds, the i-th holding text(i), and their raw descriptors.
struct Memfds {
  std::vector<UniqueFd> owned;
  std::vector<int> raw;
};
Memfds memfds(size_t n, const std::function<std::string(size_t)>& text) {
  Memfds m;
  for (size_t i = 0; i < n; ++i) {
    m.owned.push_back(memfd_with(text(i)));
    m.raw.push_back(m.owned.back().get());
  }
  return m;
}

// The next receive on `fd` fails with `code`.
void expect_recv_error(int fd, int code) {
  auto got = recv_message(fd);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, code) << got.error().message;
}

// A datagram the receiver refuses with `code`: the descriptors that came
// with it are closed, not leaked into the receiving process.
void expect_refused_and_fds_closed(const Pair& p, const std::vector<std::byte>& bytes, std::span<const int> fds,
                                   int code) {
  const size_t before = open_fd_count();
  send_raw(p.a.get(), bytes, fds);
  expect_recv_error(p.b.get(), code);
  EXPECT_EQ(open_fd_count(), before);
}

TEST(ProtoSocket, EveryMessageTypeRoundTrips) {
  Pair p = make_pair();
  for (const Message& m : testing::sample_messages()) {
    SCOPED_TRACE(message_type_name(message_type(m)));
    ASSERT_TRUE(send_message(p.a.get(), 41, m));
    auto got = recv_message(p.b.get());
    ASSERT_TRUE(got) << got.error().message;
    EXPECT_EQ(got->envelope.header.request_id, 41u);
    EXPECT_EQ(got->envelope.message, m);
    EXPECT_TRUE(got->fds.empty());
  }
}

TEST(ProtoSocket, OneMemfdArrivesUsableAndCloexec) {
  Pair p = make_pair();
  UniqueFd region = memfd_with("region bytes");
  const int fds[] = {region.get()};
  RegionReply reply{.region_id = 5, .tier_id = 0, .size = 4096, .page_size = 4096, .flags = kRegionWritable};
  ASSERT_TRUE(send_message(p.b.get(), 9, reply, fds));
  region.reset();  // the receiver's copy must stand on its own

  auto got = recv_message(p.a.get());
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(std::get<RegionReply>(got->envelope.message), reply);
  ASSERT_EQ(got->fds.size(), 1u);
  const int fd = got->fds[0].get();
  EXPECT_EQ(read_all(fd), "region bytes");
  EXPECT_TRUE(::fcntl(fd, F_GETFD) & FD_CLOEXEC);

  // Shared memory, not a copy: a write through one mapping shows in the file.
  ASSERT_EQ(::ftruncate(fd, 4096), 0);
  void* map = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(map, MAP_FAILED);
  std::memcpy(map, "mapped", 6);
  EXPECT_EQ(read_all(fd).substr(0, 6), "mapped");
  ::munmap(map, 4096);
}

TEST(ProtoSocket, TwoMemfdsArriveInOrder) {
  Pair p = make_pair();
  UniqueFd first = memfd_with("first");
  UniqueFd second = memfd_with("second");
  const int fds[] = {first.get(), second.get()};
  ASSERT_TRUE(send_message(p.a.get(), 1, Ok{}, fds));
  auto got = recv_message(p.b.get());
  ASSERT_TRUE(got) << got.error().message;
  ASSERT_EQ(got->fds.size(), 2u);
  EXPECT_EQ(read_all(got->fds[0].get()), "first");
  EXPECT_EQ(read_all(got->fds[1].get()), "second");
  EXPECT_NE(got->fds[0].get(), first.get());
}

TEST(ProtoSocket, UpToTheFdLimitArrives) {
  Pair p = make_pair();
  const Memfds fds = memfds(kMaxFdsPerMessage, [](size_t i) { return "fd" + std::to_string(i); });
  ASSERT_TRUE(send_message(p.a.get(), 1, Ok{}, fds.raw));
  auto got = recv_message(p.b.get());
  ASSERT_TRUE(got) << got.error().message;
  ASSERT_EQ(got->fds.size(), kMaxFdsPerMessage);
  for (size_t i = 0; i < kMaxFdsPerMessage; ++i) EXPECT_EQ(read_all(got->fds[i].get()), "fd" + std::to_string(i));
}

TEST(ProtoSocket, OversizedDatagramIsEmsgsizeAndConsumed) {
  Pair p = make_pair();
  std::vector<std::byte> big(kMaxMessageSize + 100, std::byte{0x5a});
  send_raw(p.a.get(), big, {});
  ASSERT_TRUE(send_message(p.a.get(), 2, Ok{}));

  expect_recv_error(p.b.get(), EMSGSIZE);
  // The next datagram is intact: the oversized one was consumed whole.
  auto next = recv_message(p.b.get());
  ASSERT_TRUE(next) << next.error().message;
  EXPECT_EQ(next->envelope.header.request_id, 2u);
}

TEST(ProtoSocket, DatagramOneByteOverTheLimitIsEmsgsize) {
  Pair p = make_pair();
  std::vector<std::byte> big(kMaxMessageSize + 1, std::byte{0});
  send_raw(p.a.get(), big, {});
  expect_recv_error(p.b.get(), EMSGSIZE);
}

TEST(ProtoSocket, LargestMessageRoundTrips) {
  Pair p = make_pair();
  StatsReply reply;
  size_t size = kHeaderSize + 4;
  while (size + 8 + 2 + 100 <= kMaxMessageSize) {
    reply.counters.push_back(Counter{.name = std::string(100, 'k'), .value = size});
    size += 110;
  }
  reply.counters.push_back(Counter{.name = std::string(kMaxMessageSize - size - 10, 'z'), .value = 1});
  ASSERT_EQ(encode(3, reply)->size(), kMaxMessageSize);
  ASSERT_TRUE(send_message(p.a.get(), 3, reply));
  auto got = recv_message(p.b.get());
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(std::get<StatsReply>(got->envelope.message), reply);
}

TEST(ProtoSocket, PeerCloseIsEconnreset) {
  Pair p = make_pair();
  p.a.reset();
  expect_recv_error(p.b.get(), ECONNRESET);
}

TEST(ProtoSocket, SendToClosedPeerIsEpipeNotSigpipe) {
  Pair p = make_pair();
  p.b.reset();
  auto sent = send_message(p.a.get(), 1, StatusRequest{});
  ASSERT_FALSE(sent);
  EXPECT_EQ(sent.error().code, EPIPE) << sent.error().message;
}

TEST(ProtoSocket, EmptyNonBlockingSocketIsEagain) {
  Pair p = make_pair();
  ASSERT_EQ(::fcntl(p.b.get(), F_SETFL, O_NONBLOCK), 0);
  expect_recv_error(p.b.get(), EAGAIN);
}

TEST(ProtoSocket, FdsWithAnUndecodableDatagramAreClosed) {
  Pair p = make_pair();
  UniqueFd one = memfd_with("1");
  UniqueFd two = memfd_with("2");
  auto garbage = testing::datagram(MsgType::kRegionAlloc, testing::Bytes().u32(0).u64(0).u32(0));
  const int fds[] = {one.get(), two.get()};
  expect_refused_and_fds_closed(p, garbage, fds, EPROTO);
}

TEST(ProtoSocket, FdsWithAnOversizedDatagramAreClosed) {
  Pair p = make_pair();
  UniqueFd one = memfd_with("1");
  const int fds[] = {one.get()};
  expect_refused_and_fds_closed(p, std::vector<std::byte>(kMaxMessageSize + 7, std::byte{1}), fds, EMSGSIZE);
}

TEST(ProtoSocket, TooManyFdsIsEmsgsizeAndAllAreClosed) {
  Pair p = make_pair();
  const Memfds fds = memfds(kMaxFdsPerMessage + 1, [](size_t i) { return std::to_string(i); });
  expect_refused_and_fds_closed(p, *encode(1, Ok{}), fds.raw, EMSGSIZE);
}

TEST(ProtoSocket, ManyFdsWithPasscredStillRejectedAndClosed) {
  // SO_PASSCRED reserves room for credentials in the receive buffer; the
  // spare room must not let more than kMaxFdsPerMessage descriptors through.
  Pair p = make_pair();
  const int on = 1;
  ASSERT_EQ(::setsockopt(p.b.get(), SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)), 0);
  const Memfds fds = memfds(kMaxFdsPerMessage + 2, [](size_t) { return "x"; });
  expect_refused_and_fds_closed(p, *encode(1, Ok{}), fds.raw, EMSGSIZE);

  // With credentials on, a normal message and its descriptors still arrive.
  const int fd[] = {fds.owned[0].get()};
  ASSERT_TRUE(send_message(p.a.get(), 2, Ok{}, fd));
  auto ok = recv_message(p.b.get());
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->fds.size(), 1u);
}

TEST(ProtoSocket, SenderRefusesTooManyOrInvalidFds) {
  Pair p = make_pair();
  const std::vector<int> one_too_many(kMaxFdsPerMessage + 1, 0);
  auto too_many = send_message(p.a.get(), 1, Ok{}, one_too_many);
  ASSERT_FALSE(too_many);
  EXPECT_EQ(too_many.error().code, EINVAL);
  const int bad[] = {-1};
  auto invalid = send_message(p.a.get(), 1, Ok{}, bad);
  ASSERT_FALSE(invalid);
  EXPECT_EQ(invalid.error().code, EBADF);
}

TEST(ProtoSocket, SenderPassesEncoderErrorsThrough) {
  Pair p = make_pair();
  auto sent = send_message(p.a.get(), 1, RegionAlloc{.size = 0});
  ASSERT_FALSE(sent);
  EXPECT_EQ(sent.error().code, EINVAL);
  // Nothing reached the peer.
  ASSERT_EQ(::fcntl(p.b.get(), F_SETFL, O_NONBLOCK), 0);
  EXPECT_EQ(recv_message(p.b.get()).error().code, EAGAIN);
}

}  // namespace
}  // namespace cxlpool::proto
