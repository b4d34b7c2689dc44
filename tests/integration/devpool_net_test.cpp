// SPDX-License-Identifier: Apache-2.0
// The network engine end to end: a host without a NIC (its own network
// namespace) reaches the outside world through the NIC of another host.
//
//   peer  ── veth ──  hostA (NIC) : cxlpool-devpool backend --nic veth
//                         │ link file in /dev/shm (the channel)
//                     hostB       : cxlpool-devpool frontend --tap (10.88.0.2)
//
// UDP and TCP between hostB and peer are checked byte for byte; with two
// frontends behind one backend each must receive only its own traffic.
// Every test runs with the backend on each NetPort that needs no more than
// a veth: packet, and dpdk (net_af_packet), which skips with the engine's
// reason where DPDK is not built or EAL cannot start. Needs root; skips
// otherwise.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "net_lab.hpp"

namespace cxlpool::integration {
namespace {

constexpr const char* kPeerIp = "10.88.0.1";

// Why the backend could not start, when that is DPDK being unavailable
// here rather than the engine failing; "" otherwise.
std::string dpdk_unavailable(const std::string& engine_log) {
  for (const char* sign : {"backend 'dpdk' is not compiled in", "this CPU lacks", "cannot load the DPDK port module",
                           "cannot initialise DPDK's EAL"}) {
    if (engine_log.find(sign) != std::string::npos) return engine_log;
  }
  return "";
}

// The parameter: the backend's NetPort.
class NetEngine : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (std::string why = net_lab_unavailable(); !why.empty()) GTEST_SKIP() << why;
    const char* engine = std::getenv("CXLPOOL_DEVPOOL");
    ASSERT_NE(engine, nullptr) << "CXLPOOL_DEVPOOL must name the cxlpool-devpool program";
    lab_ = std::make_unique<NetLab>(engine);
    nic_host_ = lab_->add_host("A");
    peer_ = lab_->add_host("P");
    ASSERT_FALSE(nic_host_.empty() || peer_.empty()) << "cannot create network namespaces";
    nic_ = lab_->add_veth(nic_host_, peer_, std::string(kPeerIp) + "/24");
    ASSERT_FALSE(nic_.empty()) << "cannot create the veth pair";
  }

  void start_backend(const std::vector<std::string>& links) {
    std::vector<std::string> args{"backend", "--netns", nic_host_, "--nic", nic_, "--netport", GetParam()};
    for (const auto& l : links) {
      args.push_back("--link-file");
      args.push_back(l);
    }
    std::string error;
    if (lab_->start_engine(args, &error)) return;
    if (std::string why = dpdk_unavailable(error); !why.empty()) GTEST_SKIP() << why;
    FAIL() << error;
  }

  // A host whose only interface is the TAP a frontend on `link` makes.
  std::string start_frontend(const std::string& role, const std::string& link, const std::string& mac,
                             const std::string& ip) {
    const std::string host = lab_->add_host(role);
    EXPECT_FALSE(host.empty());
    const std::string tap = "tp" + role;
    std::string error;
    EXPECT_TRUE(
        lab_->start_engine({"frontend", "--netns", host, "--link-file", link, "--tap", tap, "--mac", mac}, &error))
        << error;
    EXPECT_TRUE(lab_->ip({"-n", host, "addr", "add", ip + "/24", "dev", tap}, &error)) << error;
    return host;
  }

  // One link, the backend on it, and hostB's frontend (10.88.0.2): hostB.
  std::string start_one_frontend() {
    const std::string link = lab_->add_link();
    EXPECT_FALSE(link.empty());
    start_backend({link});
    if (IsSkipped() || HasFailure()) return "";
    return start_frontend("B", link, "02:00:00:88:00:02", "10.88.0.2");
  }

  std::unique_ptr<NetLab> lab_;
  std::string nic_host_, peer_, nic_;
};

// Sends `payload` from `client` to the echo server and compares the echo;
// resends on silence (the first datagram may wait for ARP).
void expect_echo(int client, const std::vector<uint8_t>& payload) {
  const sockaddr_in to = address(kPeerIp, 9000);
  std::vector<uint8_t> back(65536);
  for (int attempt = 0; attempt < 5; ++attempt) {
    ASSERT_EQ(::sendto(client, payload.data(), payload.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof(to)),
              static_cast<ssize_t>(payload.size()));
    pollfd p{client, POLLIN, 0};
    if (::poll(&p, 1, 2000) != 1) continue;
    const ssize_t n = ::recv(client, back.data(), back.size(), 0);
    ASSERT_EQ(n, static_cast<ssize_t>(payload.size()));
    EXPECT_EQ(std::memcmp(back.data(), payload.data(), payload.size()), 0) << payload.size() << " bytes differ";
    return;
  }
  FAIL() << "no echo of a " << payload.size() << "-byte datagram";
}

TEST_P(NetEngine, UdpDatagramsOfManySizesRoundTripThroughTheRemoteNic) {
  const std::string host = start_one_frontend();
  if (IsSkipped()) return;
  ASSERT_FALSE(HasFailure());

  UniqueFd server = lab_->socket_in(peer_, AF_INET, SOCK_DGRAM);
  ASSERT_TRUE(server.valid());
  ASSERT_TRUE(bind_to(server.get(), kPeerIp, 9000));
  set_timeout(server.get(), 1);
  std::atomic<bool> done{false};
  std::thread echo([&] {
    std::vector<uint8_t> buf(65536);
    while (!done) {
      sockaddr_in from{};
      socklen_t len = sizeof(from);
      const ssize_t n = ::recvfrom(server.get(), buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &len);
      if (n >= 0)
        ::sendto(server.get(), buf.data(), static_cast<size_t>(n), 0, reinterpret_cast<sockaddr*>(&from), len);
    }
  });
  UniqueFd client = lab_->socket_in(host, AF_INET, SOCK_DGRAM);
  ASSERT_TRUE(client.valid());
  ASSERT_TRUE(bind_to(client.get(), "10.88.0.2", 0));
  set_timeout(client.get(), 3);
  // Single frames of every size class, then IP fragments (several frames
  // per datagram, reassembled at the far end).
  // net_af_packet's socket is handed IPv4 datagrams reassembled (its
  // fanout group defragments) and the dpdk port cuts them up again, so a
  // datagram must fit one of its ring frames (65214 bytes of frame).
  const size_t largest = std::string(GetParam()) == "dpdk" ? 65172 : 65507;
  for (size_t size : {size_t{1}, size_t{2}, size_t{17}, size_t{18}, size_t{64}, size_t{100}, size_t{511}, size_t{512},
                      size_t{1000}, size_t{1024}, size_t{1400}, size_t{1471}, size_t{1472}, size_t{1473}, size_t{2000},
                      size_t{2961}, size_t{4000}, size_t{8192}, size_t{16000}, size_t{32768}, largest}) {
    expect_echo(client.get(), pattern(size, size));
  }
  // A burst: many datagrams in flight at once.
  const sockaddr_in to = address(kPeerIp, 9000);
  constexpr int kBurst = 200;
  for (int i = 0; i < kBurst; ++i) {
    auto p = pattern(64 + i * 7, 1000 + i);
    ::sendto(client.get(), p.data(), p.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof(to));
  }
  set_timeout(client.get(), 3);
  int matched = 0;
  std::vector<uint8_t> back(65536);
  for (int i = 0; i < kBurst; ++i) {
    const ssize_t n = ::recv(client.get(), back.data(), back.size(), 0);
    if (n < 0) break;
    const int index = (static_cast<int>(n) - 64) / 7;
    auto p = pattern(static_cast<size_t>(n), 1000 + index);
    if (std::memcmp(back.data(), p.data(), p.size()) == 0) ++matched;
  }
  // UDP may drop under load; what arrives must be intact, and most arrives.
  EXPECT_GE(matched, kBurst * 9 / 10);
  done = true;
  echo.join();
}

TEST_P(NetEngine, TcpStreamsBothWaysArriveIntact) {
  const std::string host = start_one_frontend();
  if (IsSkipped()) return;
  ASSERT_FALSE(HasFailure());

  constexpr size_t kUp = 4u << 20, kDown = 2u << 20;
  UniqueFd listener = lab_->socket_in(peer_, AF_INET, SOCK_STREAM);
  ASSERT_TRUE(listener.valid());
  const int one = 1;
  ::setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  ASSERT_TRUE(bind_to(listener.get(), kPeerIp, 5001));
  ASSERT_EQ(::listen(listener.get(), 1), 0);
  bool up_ok = false;
  std::thread peer([&] {
    pollfd p{listener.get(), POLLIN, 0};
    if (::poll(&p, 1, 20000) != 1) return;
    UniqueFd conn(::accept(listener.get(), nullptr, nullptr));
    set_timeout(conn.get(), 20);
    std::vector<uint8_t> got(kUp);
    size_t have = 0;
    while (have < kUp) {
      const ssize_t n = ::recv(conn.get(), got.data() + have, kUp - have, 0);
      if (n <= 0) break;
      have += static_cast<size_t>(n);
    }
    up_ok = have == kUp && got == pattern(kUp, 7);
    const auto down = pattern(kDown, 8);
    size_t sent = 0;
    while (sent < kDown) {
      const ssize_t n = ::send(conn.get(), down.data() + sent, kDown - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
  });
  UniqueFd client = lab_->socket_in(host, AF_INET, SOCK_STREAM);
  ASSERT_TRUE(client.valid());
  set_timeout(client.get(), 20);
  const sockaddr_in to = address(kPeerIp, 5001);
  ASSERT_EQ(::connect(client.get(), reinterpret_cast<const sockaddr*>(&to), sizeof(to)), 0) << std::strerror(errno);
  const auto up = pattern(kUp, 7);
  size_t sent = 0;
  while (sent < kUp) {
    const ssize_t n = ::send(client.get(), up.data() + sent, kUp - sent, MSG_NOSIGNAL);
    ASSERT_GT(n, 0) << std::strerror(errno);
    sent += static_cast<size_t>(n);
  }
  std::vector<uint8_t> down(kDown);
  size_t have = 0;
  while (have < kDown) {
    const ssize_t n = ::recv(client.get(), down.data() + have, kDown - have, 0);
    ASSERT_GT(n, 0) << "after " << have << " bytes: " << std::strerror(errno);
    have += static_cast<size_t>(n);
  }
  peer.join();
  EXPECT_TRUE(up_ok) << "the peer did not receive the 4 MiB it was sent, intact";
  EXPECT_TRUE(down == pattern(kDown, 8)) << "the 2 MiB the peer sent arrived changed";
}

// Frames this host's TAP receives addressed to `mac`, counted by a packet
// socket on the TAP inside `host`.
class TapWatch {
 public:
  TapWatch(NetLab& lab, const std::string& host, const std::string& tap) {
    fd_ = lab.socket_in(host, AF_PACKET, SOCK_RAW);
    ifreq req{};
    std::strncpy(req.ifr_name, tap.c_str(), IFNAMSIZ - 1);
    if (!fd_.valid() || ::ioctl(fd_.get(), SIOCGIFINDEX, &req) != 0) return;
    sockaddr_ll a{};
    a.sll_family = AF_PACKET;
    a.sll_protocol = htons(0x0003);  // ETH_P_ALL
    a.sll_ifindex = req.ifr_ifindex;
    ok_ = ::bind(fd_.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  }
  bool ok() const { return ok_; }
  // Incoming frames so far whose destination is `mac` (6 bytes), and
  // those addressed to `other`.
  std::pair<int, int> count_to(const uint8_t* mac, const uint8_t* other) {
    std::vector<uint8_t> buf(65536);
    std::pair<int, int> count{0, 0};
    for (;;) {
      sockaddr_ll from{};
      socklen_t len = sizeof(from);
      const ssize_t n =
          ::recvfrom(fd_.get(), buf.data(), buf.size(), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), &len);
      if (n < 0) break;
      if (from.sll_pkttype == PACKET_OUTGOING || n < 6) continue;
      if (std::memcmp(buf.data(), mac, 6) == 0) ++count.first;
      if (std::memcmp(buf.data(), other, 6) == 0) ++count.second;
    }
    return count;
  }

 private:
  UniqueFd fd_;
  bool ok_ = false;
};

TEST_P(NetEngine, TwoFrontendsBehindOneBackendEachReceiveOnlyTheirTraffic) {
  const std::string link_b = lab_->add_link(), link_c = lab_->add_link();
  ASSERT_FALSE(link_b.empty() || link_c.empty());
  start_backend({link_b, link_c});
  if (IsSkipped()) return;
  ASSERT_FALSE(HasFailure());
  const std::string host_b = start_frontend("B", link_b, "02:00:00:88:00:02", "10.88.0.2");
  const std::string host_c = start_frontend("C", link_c, "02:00:00:88:00:03", "10.88.0.3");
  ASSERT_FALSE(HasFailure());
  TapWatch watch_b(*lab_, host_b, "tpB"), watch_c(*lab_, host_c, "tpC");
  ASSERT_TRUE(watch_b.ok() && watch_c.ok());

  UniqueFd sock_b = lab_->socket_in(host_b, AF_INET, SOCK_DGRAM), sock_c = lab_->socket_in(host_c, AF_INET, SOCK_DGRAM);
  UniqueFd peer = lab_->socket_in(peer_, AF_INET, SOCK_DGRAM);
  ASSERT_TRUE(sock_b.valid() && sock_c.valid() && peer.valid());
  ASSERT_TRUE(bind_to(sock_b.get(), "10.88.0.2", 7000));
  ASSERT_TRUE(bind_to(sock_c.get(), "10.88.0.3", 7000));
  set_timeout(sock_b.get(), 2);
  set_timeout(sock_c.get(), 2);
  // Each instance says hello first (so the peer learns its MAC by ARP).
  const sockaddr_in peer_addr = address(kPeerIp, 7001);
  ASSERT_TRUE(bind_to(peer.get(), kPeerIp, 7001));
  for (int fd : {sock_b.get(), sock_c.get()}) {
    ::sendto(fd, "hello", 5, 0, reinterpret_cast<const sockaddr*>(&peer_addr), sizeof(peer_addr));
  }
  set_timeout(peer.get(), 5);
  char hello[16];
  for (int i = 0; i < 2; ++i) ASSERT_EQ(::recv(peer.get(), hello, sizeof(hello), 0), 5);

  constexpr int kEach = 50;
  for (int i = 0; i < kEach; ++i) {
    for (const char* ip : {"10.88.0.2", "10.88.0.3"}) {
      const std::string text = std::string("for ") + ip + " #" + std::to_string(i);
      const sockaddr_in to = address(ip, 7000);
      ::sendto(peer.get(), text.data(), text.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof(to));
    }
  }
  auto receive_all = [](int fd, const std::string& ip) {
    int got = 0;
    char buf[128];
    for (;;) {
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n < 0) break;
      const std::string text(buf, static_cast<size_t>(n));
      EXPECT_EQ(text.rfind("for " + ip + " #", 0), 0u) << "received someone else's datagram: " << text;
      ++got;
    }
    return got;
  };
  EXPECT_GE(receive_all(sock_b.get(), "10.88.0.2"), kEach * 9 / 10);
  EXPECT_GE(receive_all(sock_c.get(), "10.88.0.3"), kEach * 9 / 10);
  // Not even the frames: B's TAP saw nothing addressed to C, and C's nothing to B.
  const uint8_t mac_b[6] = {2, 0, 0, 0x88, 0, 2}, mac_c[6] = {2, 0, 0, 0x88, 0, 3};
  const auto [b_own, b_other] = watch_b.count_to(mac_b, mac_c);
  const auto [c_own, c_other] = watch_c.count_to(mac_c, mac_b);
  EXPECT_EQ(b_other, 0);
  EXPECT_EQ(c_other, 0);
  EXPECT_GE(b_own, kEach * 9 / 10);
  EXPECT_GE(c_own, kEach * 9 / 10);
}

INSTANTIATE_TEST_SUITE_P(NetPorts, NetEngine, ::testing::Values("packet", "dpdk"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace cxlpool::integration
