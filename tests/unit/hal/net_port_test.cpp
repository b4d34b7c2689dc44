// SPDX-License-Identifier: Apache-2.0
// NetPort: the MAC helpers, and open_net_port with the packet driver on the
// loopback interface of a network namespace the test makes for itself (so
// nothing it sends reaches another test's interfaces).
#include "cxlpool/hal/net_port.hpp"

#include <gtest/gtest.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "cxlpool/hal/backend_registry.hpp"
#include "cxlpool/hal/driver/frame_checksum.hpp"

namespace cxlpool::hal {
namespace {

TEST(MacAddress, ParsesFormatsAndPacks) {
  auto mac = parse_mac("02:AB:cd:00:11:ff");
  ASSERT_TRUE(mac) << mac.error().message;
  EXPECT_EQ(format_mac(*mac), "02:ab:cd:00:11:ff");
  EXPECT_EQ(mac->to_u64(), 0x02abcd0011ffull);
  EXPECT_EQ(MacAddress::from_u64(mac->to_u64()), *mac);
  EXPECT_FALSE(mac->is_multicast());
  EXPECT_TRUE(parse_mac("ff-ff-ff-ff-ff-ff")->is_multicast());
  EXPECT_TRUE(parse_mac("33:33:00:00:00:01")->is_multicast());
  for (const char* bad : {"", "02:ab:cd:00:11", "02:ab:cd:00:11:fg", "02:ab:cd:00:11:ff:", "02ab:cd:00:11:ff0"}) {
    EXPECT_EQ(parse_mac(bad).error().code, EINVAL) << bad;
  }
}

TEST(MacAddress, ReadsFrameHeaders) {
  std::vector<std::byte> frame(64);
  for (std::size_t i = 0; i < 12; ++i) frame[i] = static_cast<std::byte>(i + 1);
  EXPECT_EQ(format_mac(frame_destination(frame)), "01:02:03:04:05:06");
  EXPECT_EQ(format_mac(frame_source(frame)), "07:08:09:0a:0b:0c");
}

// The one's-complement sum of `bytes` big-endian words plus `seed`, folded.
uint32_t ones_sum(const std::vector<std::byte>& f, std::size_t from, std::size_t n, uint32_t seed) {
  uint64_t sum = seed;
  for (std::size_t i = 0; i + 1 < n; i += 2)
    sum += (static_cast<unsigned>(f[from + i]) << 8) | static_cast<unsigned>(f[from + i + 1]);
  if (n % 2 == 1) sum += static_cast<unsigned>(f[from + n - 1]) << 8;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint32_t>(sum);
}

// An Ethernet frame with an IPv4 or IPv6 header and `l4_bytes` of TCP/UDP
// (patterned, checksum field garbage).
std::vector<std::byte> ip_frame(bool v6, uint8_t protocol, std::size_t l4_bytes) {
  const std::size_t ip_header = v6 ? 40 : 20;
  std::vector<std::byte> f(14 + ip_header + l4_bytes);
  for (std::size_t i = 0; i < f.size(); ++i) f[i] = static_cast<std::byte>(i * 31 + 7);
  f[12] = std::byte{static_cast<uint8_t>(v6 ? 0x86 : 0x08)};
  f[13] = std::byte{static_cast<uint8_t>(v6 ? 0xdd : 0x00)};
  std::byte* ip = f.data() + 14;
  if (v6) {
    ip[0] = std::byte{0x60};
    ip[4] = static_cast<std::byte>(l4_bytes >> 8);
    ip[5] = static_cast<std::byte>(l4_bytes & 0xff);
    ip[6] = static_cast<std::byte>(protocol);
  } else {
    ip[0] = std::byte{0x45};
    const std::size_t total = 20 + l4_bytes;
    ip[2] = static_cast<std::byte>(total >> 8);
    ip[3] = static_cast<std::byte>(total & 0xff);
    ip[6] = ip[7] = std::byte{0};  // not a fragment
    ip[9] = static_cast<std::byte>(protocol);
  }
  return f;
}

TEST(FrameChecksum, CompletesTcpAndUdpOverIpv4AndIpv6) {
  for (bool v6 : {false, true}) {
    for (uint8_t protocol : {uint8_t{6}, uint8_t{17}}) {
      for (std::size_t l4 : {20u, 21u, 1000u, 1480u}) {
        auto f = ip_frame(v6, protocol, l4);
        ASSERT_TRUE(hal::complete_transport_checksum(f.data(), f.size()))
            << v6 << " " << int(protocol) << " " << l4;
        // Pseudo header + segment (checksum included) sums to all ones.
        const std::size_t ip = 14, l4_at = ip + (v6 ? 40 : 20);
        uint32_t pseudo = v6 ? ones_sum(f, ip + 8, 32, 0) : ones_sum(f, ip + 12, 8, 0);
        pseudo += protocol + static_cast<uint32_t>(l4);
        EXPECT_EQ(ones_sum(f, l4_at, l4, pseudo), 0xffffu) << v6 << " " << int(protocol) << " " << l4;
      }
    }
  }
}

TEST(FrameChecksum, LeavesOtherFramesAlone) {
  auto fragment = ip_frame(false, 17, 100);
  fragment[14 + 6] = std::byte{0x20};  // more fragments
  auto icmp = ip_frame(false, 1, 100);
  auto short_ip = ip_frame(false, 17, 100);
  short_ip[14 + 2] = std::byte{0x10};  // total length beyond the frame
  auto arp = ip_frame(false, 17, 100);
  arp[12] = std::byte{0x08};
  arp[13] = std::byte{0x06};
  for (auto* f : {&fragment, &icmp, &short_ip, &arp}) {
    const auto before = *f;
    EXPECT_FALSE(hal::complete_transport_checksum(f->data(), f->size()));
    EXPECT_EQ(*f, before);
  }
  EXPECT_FALSE(hal::complete_transport_checksum(fragment.data(), 30));
}

// What a checksum-offloading sender hands over: the checksum field holds the
// folded pseudo-header sum. Only that is completed; a frame whose checksum
// verifies, or one corrupted on the way, is left as it came.
TEST(FrameChecksum, CompletesOnlyWhatOffloadLeftUndone) {
  for (bool v6 : {false, true}) {
    for (uint8_t protocol : {uint8_t{6}, uint8_t{17}}) {
      auto f = ip_frame(v6, protocol, 300);
      const std::size_t ip = 14, l4_at = ip + (v6 ? 40 : 20), field = l4_at + (protocol == 6 ? 16 : 6);
      uint32_t pseudo = v6 ? ones_sum(f, ip + 8, 32, 0) : ones_sum(f, ip + 12, 8, 0);
      pseudo += protocol + 300u;
      while (pseudo >> 16) pseudo = (pseudo & 0xffff) + (pseudo >> 16);
      f[field] = static_cast<std::byte>(pseudo >> 8);
      f[field + 1] = static_cast<std::byte>(pseudo & 0xff);
      ASSERT_TRUE(hal::complete_offloaded_transport_checksum(f.data(), f.size())) << v6 << " " << int(protocol);
      EXPECT_EQ(ones_sum(f, l4_at, 300, pseudo), 0xffffu);
      const auto good = f;
      EXPECT_FALSE(hal::complete_offloaded_transport_checksum(f.data(), f.size()));
      EXPECT_EQ(f, good);
      f[l4_at + 100] ^= std::byte{0x40};  // corrupted after the sender's checksum
      const auto corrupt = f;
      EXPECT_FALSE(hal::complete_offloaded_transport_checksum(f.data(), f.size()));
      EXPECT_EQ(f, corrupt);
    }
  }
}

// Moves this test program into a fresh network namespace with lo up.
bool enter_private_netns() {
  static int state = 0;  // 0 unknown, 1 entered, -1 impossible
  if (state != 0) return state > 0;
  state = -1;
  if (::unshare(CLONE_NEWNET) != 0) return false;
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  ifreq req{};
  std::strcpy(req.ifr_name, "lo");
  const bool up =
      ::ioctl(fd, SIOCGIFFLAGS, &req) == 0 && (req.ifr_flags |= IFF_UP, ::ioctl(fd, SIOCSIFFLAGS, &req) == 0);
  ::close(fd);
  if (up) state = 1;
  return up;
}

#define NEED_NETNS() \
  if (!enter_private_netns()) GTEST_SKIP() << "needs root (a network namespace and CAP_NET_RAW)"

std::vector<std::byte> test_frame(std::size_t length, std::uint8_t seed) {
  std::vector<std::byte> frame(length);
  for (std::size_t i = 0; i < length; ++i) frame[i] = static_cast<std::byte>(seed + i * 7);
  // Destination and source all zero (lo's address), local experimental
  // EtherType 0x88b5 so no protocol of the kernel takes it.
  std::memset(frame.data(), 0, 12);
  frame[12] = std::byte{0x88};
  frame[13] = std::byte{0xb5};
  return frame;
}

TEST(NetPort, PacketSendsAndReceivesOnLoopback) {
  NEED_NETNS();
  auto port = open_net_port("packet", "lo", {});
  ASSERT_TRUE(port) << port.error().message;
  EXPECT_STREQ((*port)->backend_name(), "packet");
  EXPECT_EQ((*port)->interface_name(), "lo");
  EXPECT_GT((*port)->interface_index(), 0);
  EXPECT_GE((*port)->mtu(), 1500u);
  EXPECT_TRUE((*port)->mac().is_zero());
  auto up = (*port)->link_up();
  ASSERT_TRUE(up) << up.error().message;
  EXPECT_TRUE(*up);

  std::vector<std::byte> buffers[4];
  RxFrame rx[4];
  for (int i = 0; i < 4; ++i) {
    buffers[i].resize(2048);
    rx[i] = {buffers[i].data(), 2048};
  }
  auto none = (*port)->receive(rx);
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_EQ(*none, 0u);

  const auto a = test_frame(60, 1), b = test_frame(1514, 2), c = test_frame(3000, 3);
  const TxFrame tx[] = {{a.data(), 60}, {b.data(), 1514}, {c.data(), 3000}};
  auto sent = (*port)->send(tx);
  ASSERT_TRUE(sent) << sent.error().message;
  EXPECT_EQ(*sent, 3u);

  pollfd pfd{(*port)->poll_fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&pfd, 1, 2000), 1);
  std::size_t got = 0;
  for (int tries = 0; got < 3 && tries < 100; ++tries) {
    auto n = (*port)->receive(std::span(rx).subspan(got));
    ASSERT_TRUE(n) << n.error().message;
    got += *n;
    if (got < 3) ::usleep(1000);
  }
  ASSERT_EQ(got, 3u);
  EXPECT_EQ(rx[0].length, 60u);
  EXPECT_EQ(std::memcmp(rx[0].data, a.data(), 60), 0);
  EXPECT_EQ(rx[1].length, 1514u);
  EXPECT_EQ(std::memcmp(rx[1].data, b.data(), 1514), 0);
  // The 3000-byte frame did not fit its 2048-byte buffer.
  EXPECT_TRUE(rx[2].truncated);
  EXPECT_EQ(rx[2].length, 2048u);
  EXPECT_EQ(std::memcmp(rx[2].data, c.data(), 2048), 0);
  const NetPortStats& s = (*port)->stats();
  EXPECT_EQ(s.tx_frames, 3u);
  EXPECT_EQ(s.tx_bytes, 60u + 1514 + 3000);
  EXPECT_EQ(s.rx_frames, 3u);
  EXPECT_EQ(s.rx_truncated, 1u);
  // Its own frames come back only once (received on lo), never as outgoing copies.
  auto more = (*port)->receive(rx);
  ASSERT_TRUE(more);
  EXPECT_EQ(*more, 0u);
}

TEST(NetPort, RejectsMalformedBatchesWhole) {
  NEED_NETNS();
  auto port = open_net_port("packet", "lo", {});
  ASSERT_TRUE(port) << port.error().message;
  const auto ok = test_frame(64, 1);
  std::vector<std::byte> huge((*port)->max_frame_bytes() + 1);
  const TxFrame short_one[] = {{ok.data(), 64}, {ok.data(), 13}};
  auto r = (*port)->send(short_one);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EINVAL);
  EXPECT_NE(r.error().message.find("frame 1 "), std::string::npos) << r.error().message;
  const TxFrame too_long[] = {{huge.data(), static_cast<std::uint32_t>(huge.size())}};
  EXPECT_EQ((*port)->send(too_long).error().code, EINVAL);
  EXPECT_EQ((*port)->stats().tx_frames, 0u);
  EXPECT_EQ((*port)->stats().rejected, 2u);
}

TEST(NetPort, AddsAddressesAndPromiscuousMode) {
  NEED_NETNS();
  NetPortOptions options;
  options.promiscuous = true;
  options.addresses = {*parse_mac("02:00:00:00:00:07"), *parse_mac("33:33:00:00:00:07")};
  auto port = open_net_port("packet", "lo", options);
  ASSERT_TRUE(port) << port.error().message;
}

TEST(NetPort, BestAvailablePassesOverProbesAndStopsAtAMissingInterface) {
  NEED_NETNS();
  BackendSkips skipped;
  auto port = open_net_port("auto", "lo", {}, &skipped);
  ASSERT_TRUE(port) << port.error().message;
  EXPECT_STREQ((*port)->backend_name(), "packet");
  // dpdk and afxdp are chosen by name only: "auto" never starts EAL or an
  // XDP program.
  for (const auto& s : skipped) {
    if (s.name == "dpdk" || s.name == "afxdp") { EXPECT_NE(s.state, BackendState::kFailed) << s.name << ": " << s.reason; }
  }
  auto missing = open_net_port("auto", "nosuchif0", {});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ENODEV) << missing.error().message;
  EXPECT_NE(missing.error().message.find("NetPort packet: "), std::string::npos) << missing.error().message;
  auto bad_name = open_net_port("packet", std::string(IFNAMSIZ, 'x'), {});
  EXPECT_EQ(bad_name.error().code, EINVAL);
  auto unknown = open_net_port("nosuch", "lo", {});
  EXPECT_EQ(unknown.error().code, EINVAL);
  // A named backend's refusal is that backend's, not another's: dpdk
  // (built or not) for an interface that is not there.
  auto named = open_net_port("dpdk", "nosuchif0", {});
  ASSERT_FALSE(named);
  EXPECT_TRUE(named.error().code == ENODEV || named.error().code == ENOTSUP) << named.error().message;
  EXPECT_NE(named.error().message.find("dpdk"), std::string::npos) << named.error().message;
}

// Sends `count` frames of growing size (60 bytes and up) from `from` to
// `to` and checks that they arrive in order, byte for byte.
void exchange_frames(NetPort& from, NetPort& to, std::size_t count, std::uint8_t seed) {
  std::vector<std::vector<std::byte>> frames;
  std::vector<TxFrame> tx;
  for (std::size_t i = 0; i < count; ++i) {
    frames.push_back(test_frame(60 + i * 97, static_cast<std::uint8_t>(seed + i)));
    std::memcpy(frames.back().data(), to.mac().bytes.data(), 6);  // to the receiver
    std::memcpy(frames.back().data() + 6, from.mac().bytes.data(), 6);
  }
  for (auto& f : frames) tx.push_back({f.data(), static_cast<std::uint32_t>(f.size())});
  std::size_t sent = 0;
  for (int tries = 0; sent < count && tries < 100; ++tries) {
    auto n = from.send(std::span(tx).subspan(sent));
    ASSERT_TRUE(n) << n.error().message;
    sent += *n;
  }
  ASSERT_EQ(sent, count);
  std::vector<std::vector<std::byte>> buffers(count, std::vector<std::byte>(2048));
  std::vector<RxFrame> rx;
  for (auto& b : buffers) rx.push_back({b.data(), 2048});
  std::size_t got = 0;
  for (int tries = 0; got < count && tries < 2000; ++tries) {
    auto n = to.receive(std::span(rx).subspan(got));
    ASSERT_TRUE(n) << n.error().message;
    got += *n;
    if (got < count) ::usleep(1000);
  }
  ASSERT_EQ(got, count);
  for (std::size_t i = 0; i < count; ++i) {
    ASSERT_EQ(rx[i].length, frames[i].size()) << i;
    EXPECT_EQ(std::memcmp(rx[i].data, frames[i].data(), frames[i].size()), 0) << i;
  }
}

// afxdp on one end of a veth pair made inside the test's namespace, a
// packet port on the other: frames both ways, byte for byte.
TEST(NetPort, AfxdpExchangesFramesWithAPacketPortOverVeth) {
  NEED_NETNS();
  if (std::system("ip link add cxa0 type veth peer name cxb0 && ip link set cxa0 up && ip link set cxb0 up") != 0) {
    GTEST_SKIP() << "cannot create a veth pair (iproute2 and CAP_NET_ADMIN needed)";
  }
  auto xdp = open_net_port("afxdp", "cxa0", {});
  // Not built, a kernel without AF_XDP sockets or XDP, or a sandbox that
  // refuses BPF: the backend cannot run here, which is not its fault.
  if (!xdp && (xdp.error().code == ENOTSUP || xdp.error().code == EAFNOSUPPORT || xdp.error().code == EOPNOTSUPP ||
               xdp.error().code == EPERM)) {
    std::system("ip link del cxa0");
    GTEST_SKIP() << xdp.error().message;
  }
  ASSERT_TRUE(xdp) << xdp.error().message;
  EXPECT_STREQ((*xdp)->backend_name(), "afxdp");
  auto peer = open_net_port("packet", "cxb0", {});
  ASSERT_TRUE(peer) << peer.error().message;

  exchange_frames(**peer, **xdp, 8, 11);
  exchange_frames(**xdp, **peer, 8, 42);
  EXPECT_EQ((*xdp)->stats().rx_frames, 8u);
  EXPECT_EQ((*xdp)->stats().tx_frames, 8u);
  auto up = (*xdp)->link_up();
  ASSERT_TRUE(up) << up.error().message;
  EXPECT_TRUE(*up);
  xdp->reset();
  std::system("ip link del cxa0");
}

// DPDK's EAL starts once per process and cannot start again after its
// cleanup, so every test that starts it runs its body in a child process of
// its own. The child prints its failures as they happen; here they fail the
// test, and a GTEST_SKIP in the child skips it with the child's reason.
void in_child_process(const std::function<void()>& body) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(pipe_fds[0]);
    body();
    const ::testing::TestResult* result = ::testing::UnitTest::GetInstance()->current_test_info()->result();
    int code = ::testing::Test::HasFailure() ? 1 : 0;
    for (int i = 0; code == 0 && i < result->total_part_count(); ++i) {
      const ::testing::TestPartResult& part = result->GetTestPartResult(i);
      if (part.skipped()) {
        const std::string why = part.message();
        [[maybe_unused]] auto n = ::write(pipe_fds[1], why.data(), why.size());
        code = 77;
      }
    }
    std::fflush(stdout);
    std::fflush(stderr);
    ::_exit(code);
  }
  ::close(pipe_fds[1]);
  std::string why;
  char buf[512];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof(buf))) > 0;) why.append(buf, static_cast<std::size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the test's child process died (signal " << WTERMSIG(status) << ")";
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << why;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child process failed: its failures are printed above";
}

// A veth pair in the test's namespace, removed again when it goes. IPv6
// is off on both ends, so that nothing but the test's frames crosses it.
class VethPair {
 public:
  VethPair(std::string a, std::string b, unsigned mtu) : a_(std::move(a)) {
    const std::string m = std::to_string(mtu);
    const std::string no_ipv6 = "sysctl -qw net.ipv6.conf." + a_ + ".disable_ipv6=1 net.ipv6.conf." + b +
                                ".disable_ipv6=1 2>/dev/null; ";
    ok_ = std::system(("ip link add " + a_ + " mtu " + m + " type veth peer name " + b + " mtu " + m + " && { " +
                       no_ipv6 + "ip link set " + a_ + " up && ip link set " + b + " up; }")
                          .c_str()) == 0;
  }
  ~VethPair() { std::system(("ip link del " + a_ + " 2>/dev/null").c_str()); }
  bool ok() const { return ok_; }

 private:
  std::string a_;
  bool ok_ = false;
};

// A UDP datagram of `payload` bytes from 10.0.0.2 to 10.0.0.1 as the IPv4
// fragments a sender with `mtu` puts on the wire, from `from` to `to`.
std::vector<std::vector<std::byte>> ipv4_fragments(const MacAddress& to, const MacAddress& from, std::size_t payload,
                                                   std::size_t mtu) {
  std::vector<std::byte> datagram(8 + payload);
  for (std::size_t i = 0; i < datagram.size(); ++i) datagram[i] = static_cast<std::byte>(i * 13 + 1);
  datagram[4] = static_cast<std::byte>(datagram.size() >> 8);
  datagram[5] = static_cast<std::byte>(datagram.size() & 0xff);
  datagram[6] = datagram[7] = std::byte{0};  // no UDP checksum
  const std::size_t piece = (mtu - 20) / 8 * 8;
  std::vector<std::vector<std::byte>> frames;
  for (std::size_t offset = 0; offset < datagram.size(); offset += piece) {
    const std::size_t n = std::min(piece, datagram.size() - offset);
    std::vector<std::byte> f(14 + 20 + n);
    std::memcpy(f.data(), to.bytes.data(), 6);
    std::memcpy(f.data() + 6, from.bytes.data(), 6);
    const std::uint8_t ip[20] = {0x45, 0, static_cast<std::uint8_t>((20 + n) >> 8), static_cast<std::uint8_t>(20 + n),
                                 0x12, 0x34,
                                 static_cast<std::uint8_t>((offset + n < datagram.size() ? 0x20 : 0) | (offset / 8) >> 8),
                                 static_cast<std::uint8_t>(offset / 8), 64, 17, 0, 0, 10, 0, 0, 2, 10, 0, 0, 1};
    f[12] = std::byte{0x08};
    std::memcpy(f.data() + 14, ip, 20);
    std::vector<std::byte> header(f.begin() + 14, f.begin() + 34);
    const std::uint32_t sum = ones_sum(header, 0, 20, 0);
    f[24] = static_cast<std::byte>(~sum >> 8 & 0xff);
    f[25] = static_cast<std::byte>(~sum & 0xff);
    std::memcpy(f.data() + 34, datagram.data() + offset, n);
    frames.push_back(std::move(f));
  }
  return frames;
}

#define NEED_VETH(var, a, b, mtu) \
  VethPair var(a, b, mtu);        \
  if (!var.ok()) GTEST_SKIP() << "cannot create a veth pair (iproute2 and CAP_NET_ADMIN needed)"

// Opens dpdk on `interface`; a build without DPDK, a CPU it was not built
// for, or an EAL that cannot start in this sandbox skip the test with
// DPDK's reason (set in *skip).
Result<std::unique_ptr<NetPort>> open_dpdk_or_skip(const std::string& interface, std::string* skip) {
  auto port = open_net_port("dpdk", interface, {});
  if (!port && (port.error().code == ENOTSUP || port.error().message.find("cannot initialise DPDK's EAL") !=
                                                   std::string::npos)) {
    *skip = port.error().message;
  }
  return port;
}

#define OPEN_DPDK(var, interface)                \
  std::string var##_skip;                        \
  auto var = open_dpdk_or_skip(interface, &var##_skip); \
  if (!var##_skip.empty()) GTEST_SKIP() << var##_skip; \
  ASSERT_TRUE(var) << var.error().message

// dpdk (net_af_packet) on one end of a veth pair, a packet port on the
// other: frames both ways byte for byte, a frame longer than its buffer
// reported truncated, the wakeup descriptor, link and MAC.
TEST(NetPort, DpdkExchangesFramesWithAPacketPortOverVeth) {
  NEED_NETNS();
  in_child_process([] {
    NEED_VETH(veth, "cxd0", "cxe0", 3500);
    OPEN_DPDK(dpdk, "cxd0");
    EXPECT_STREQ((*dpdk)->backend_name(), "dpdk");
    EXPECT_EQ((*dpdk)->mtu(), 3500u);
    EXPECT_FALSE((*dpdk)->mac().is_zero());
    auto peer = open_net_port("packet", "cxe0", {});
    ASSERT_TRUE(peer) << peer.error().message;
    auto up = (*dpdk)->link_up();
    ASSERT_TRUE(up) << up.error().message;
    EXPECT_TRUE(*up);

    // Nothing waiting: nothing received, and the wakeup descriptor is quiet.
    std::vector<std::byte> big(2048);
    RxFrame one[] = {{big.data(), 2048}};
    auto none = (*dpdk)->receive(one);
    ASSERT_TRUE(none) << none.error().message;
    EXPECT_EQ(*none, 0u);
    pollfd quiet{(*dpdk)->poll_fd(), POLLIN, 0};
    EXPECT_EQ(::poll(&quiet, 1, 0), 0) << "the wakeup descriptor is readable with nothing to receive";

    exchange_frames(**peer, **dpdk, 8, 11);
    exchange_frames(**dpdk, **peer, 8, 42);
    EXPECT_EQ((*dpdk)->stats().rx_frames, 8u);
    EXPECT_EQ((*dpdk)->stats().tx_frames, 8u);

    // A frame arriving wakes the descriptor; a 3000-byte frame does not fit
    // a 2048-byte buffer.
    auto frame = test_frame(3000, 5);
    std::memcpy(frame.data(), (*dpdk)->mac().bytes.data(), 6);
    const TxFrame tx[] = {{frame.data(), 3000}};
    ASSERT_EQ(*(*peer)->send(tx), 1u);
    pollfd pfd{(*dpdk)->poll_fd(), POLLIN, 0};
    EXPECT_EQ(::poll(&pfd, 1, 2000), 1);
    std::size_t got = 0;
    for (int tries = 0; got == 0 && tries < 2000; ++tries) {
      auto n = (*dpdk)->receive(one);
      ASSERT_TRUE(n) << n.error().message;
      got = *n;
      if (got == 0) ::usleep(1000);
    }
    ASSERT_EQ(got, 1u);
    EXPECT_TRUE(one[0].truncated);
    EXPECT_EQ(one[0].length, 2048u);
    EXPECT_EQ(std::memcmp(one[0].data, frame.data(), 2048), 0);
    EXPECT_GE((*dpdk)->stats().rx_truncated, 1u);

    // IPv4 fragments come out as the fragments that were sent (at the
    // link's MTU), although the PMD's socket is handed the reassembled
    // datagram.
    const auto fragments = ipv4_fragments((*dpdk)->mac(), (*peer)->mac(), 8000, 3500);
    ASSERT_EQ(fragments.size(), 3u);
    std::vector<TxFrame> pieces;
    for (const auto& f : fragments) pieces.push_back({f.data(), static_cast<std::uint32_t>(f.size())});
    ASSERT_EQ(*(*peer)->send(pieces), 3u);
    std::vector<std::vector<std::byte>> room(4, std::vector<std::byte>(4096));
    RxFrame rx[4];
    for (int i = 0; i < 4; ++i) rx[i] = {room[i].data(), 4096};
    got = 0;
    for (int tries = 0; got < 3 && tries < 2000; ++tries) {
      auto n = (*dpdk)->receive(std::span(rx).subspan(got, 1));  // one at a time: the rest wait in the port
      ASSERT_TRUE(n) << n.error().message;
      got += *n;
      if (*n == 0) ::usleep(1000);
    }
    ASSERT_EQ(got, 3u);
    for (std::size_t i = 0; i < 3; ++i) {
      ASSERT_EQ(rx[i].length, fragments[i].size()) << i;
      EXPECT_EQ(std::memcmp(rx[i].data, fragments[i].data(), fragments[i].size()), 0) << i;
    }
  });
}

// Two ports share one EAL; when the last closes, EAL is cleaned up and its
// runtime directory is gone; a port after that is refused with the reason.
TEST(NetPort, DpdkSharesOneEalPerProcessAndCleansUp) {
  NEED_NETNS();
  in_child_process([] {
    VethPair first("cxd1", "cxe1", 1500), second("cxd2", "cxe2", 1500);
    if (!first.ok() || !second.ok()) GTEST_SKIP() << "cannot create veth pairs (iproute2 and CAP_NET_ADMIN needed)";
    const std::string runtime = "/var/run/dpdk/cxlpool-" + std::to_string(::getpid());
    {
      OPEN_DPDK(a, "cxd1");
      auto b = open_net_port("dpdk", "cxd2", {});
      ASSERT_TRUE(b) << b.error().message;
      auto peer = open_net_port("packet", "cxe2", {});
      ASSERT_TRUE(peer) << peer.error().message;
      a->reset();  // the other port keeps EAL
      exchange_frames(**peer, **b, 4, 7);
      exchange_frames(**b, **peer, 4, 9);
    }
    EXPECT_FALSE(std::filesystem::exists(runtime)) << runtime << " left behind";
    auto again = open_net_port("dpdk", "cxd1", {});
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error().code, EALREADY) << again.error().message;
    EXPECT_NE(again.error().message.find("once per process"), std::string::npos) << again.error().message;
  });
}

// A link that goes down loses frames as a wire would: sending into it
// never blocks (more frames than the PMD's ring holds), and receiving
// finds nothing.
TEST(NetPort, DpdkLinkDownLosesFramesWithoutBlocking) {
  NEED_NETNS();
  in_child_process([] {
    NEED_VETH(veth, "cxd5", "cxe5", 1500);
    OPEN_DPDK(port, "cxd5");
    ASSERT_EQ(std::system("ip link set cxd5 down"), 0);
    auto up = (*port)->link_up();
    ASSERT_TRUE(up) << up.error().message;
    EXPECT_FALSE(*up);
    ::alarm(20);  // a send that blocks kills the child: the test fails
    auto frame = test_frame(1000, 3);
    std::vector<TxFrame> tx(64, TxFrame{frame.data(), 1000});
    std::size_t taken = 0;
    for (int round = 0; round < 20; ++round) {
      auto n = (*port)->send(tx);
      ASSERT_TRUE(n) << n.error().message;
      taken += *n;
    }
    EXPECT_EQ(taken, 20u * 64) << "frames for a down link are lost, not left waiting";
    std::vector<std::byte> room(2048);
    RxFrame rx[] = {{room.data(), 2048}};
    auto none = (*port)->receive(rx);
    ASSERT_TRUE(none) << none.error().message;
    EXPECT_EQ(*none, 0u);
    ::alarm(0);
  });
}

// Refusals that come before EAL starts: an unknown interface, an MTU whose
// frames do not fit the mbufs, an unknown PMD.
TEST(NetPort, DpdkRefusesBeforeStartingEal) {
  NEED_NETNS();
  in_child_process([] {
    NEED_VETH(jumbo, "cxd3", "cxe3", 9000);
    auto missing = open_net_port("dpdk", "nosuchif0", {});
    ASSERT_FALSE(missing);
    if (missing.error().code == ENOTSUP) GTEST_SKIP() << missing.error().message;
    EXPECT_EQ(missing.error().code, ENODEV) << missing.error().message;
    auto too_big = open_net_port("dpdk", "cxd3", {});
    ASSERT_FALSE(too_big);
    EXPECT_EQ(too_big.error().code, EINVAL) << too_big.error().message;
    EXPECT_NE(too_big.error().message.find("MTU 9000"), std::string::npos) << too_big.error().message;
    ::setenv("CXLPOOL_DPDK_PMD", "tap", 1);
    auto unknown = open_net_port("dpdk", "lo", {});
    ASSERT_FALSE(unknown);
    EXPECT_EQ(unknown.error().code, EINVAL) << unknown.error().message;
    // None of these started EAL: a real port still opens.
    ::unsetenv("CXLPOOL_DPDK_PMD");
    ASSERT_EQ(std::system("ip link set cxd3 mtu 1500"), 0);
    OPEN_DPDK(port, "cxd3");
  });
}

// net_af_xdp where the kernel and the PMD allow it (an XDP program on the
// veth): frames both ways with a packet port.
TEST(NetPort, DpdkAfXdpExchangesFramesWithAPacketPortOverVeth) {
  NEED_NETNS();
  in_child_process([] {
    NEED_VETH(veth, "cxd4", "cxe4", 1500);
    ::setenv("CXLPOOL_DPDK_PMD", "af_xdp", 1);
    std::string skip;
    auto xdp = open_dpdk_or_skip("cxd4", &skip);
    // The PMD's own refusals (no AF_XDP sockets, no XDP, BPF refused).
    if (!xdp && (xdp.error().code == EOPNOTSUPP || xdp.error().code == EPERM || xdp.error().code == EAFNOSUPPORT ||
                 xdp.error().code == EINVAL)) {
      skip = xdp.error().message;
    }
    if (!skip.empty()) GTEST_SKIP() << skip;
    ASSERT_TRUE(xdp) << xdp.error().message;
    auto peer = open_net_port("packet", "cxe4", {});
    ASSERT_TRUE(peer) << peer.error().message;
    exchange_frames(**peer, **xdp, 8, 21);
    exchange_frames(**xdp, **peer, 8, 52);
  });
}

}  // namespace
}  // namespace cxlpool::hal
