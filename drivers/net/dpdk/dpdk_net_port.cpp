// SPDX-License-Identifier: Apache-2.0
#include "dpdk_net_port.hpp"

#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <vector>

#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/hal/driver/frame_checksum.hpp"
#include "cxlpool/hal/driver/net_port_driver.hpp"
#include "dpdk_eal.hpp"
#include "ipv4_fragments.hpp"

namespace cxlpool::drivers {
namespace {

// Frames per call into the module; a larger caller batch takes several.
constexpr std::size_t kBatch = 64;

struct PmdChoice {
  std::string driver;  // the vdev driver
  std::string extra;   // its arguments besides the interface
  uint32_t rx_mbufs, rx_room;
  uint32_t tx_mbufs, tx_room;  // tx_room bounds the MTU
};

// net_af_packet's mbufs must hold a whole ring frame, and its ring frames
// should hold the IPv4 datagrams the kernel reassembles for it
// (ipv4_fragments.hpp): 65280-byte ring frames (65214 bytes of Ethernet
// frame after the TPACKET header) are the largest an mbuf holds that also
// pack a block without a gap (the PMD assumes they do), 16 to a block.
// Received frames are copied out of their mbufs at once, so few mbufs are
// needed. net_af_xdp makes its UMEM of the receive mempool, whose chunks
// must fit a page.
Result<PmdChoice> choose_pmd() {
  const char* env = std::getenv("CXLPOOL_DPDK_PMD");
  const std::string pmd = env != nullptr && *env != '\0' ? env : "af_packet";
  if (pmd == "af_packet") {
    return PmdChoice{"net_af_packet", "qpairs=1,qdisc_bypass=1,blocksz=1044480,framesz=65280,framecnt=256",
                     255, 65407, 1023, 4096};
  }
  if (pmd == "af_xdp") return PmdChoice{"net_af_xdp", "start_queue=0,queue_count=1", 4095, 2048, 1023, 2048 - 256};
  return fail(EINVAL, "CXLPOOL_DPDK_PMD=" + pmd + ": must be af_packet or af_xdp");
}

// Every frame reaches the wake socket cut to one byte (the filter's return
// value is the bytes to keep): enough to make it readable.
Result<void> keep_one_byte(int fd, const std::string& interface) {
  sock_filter code[] = {{BPF_RET | BPF_K, 0, 0, 1}};
  sock_fprog program{1, code};
  if (::setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &program, sizeof(program)) != 0) {
    return fail_errno("dpdk: filter on the wake socket of " + interface);
  }
  return {};
}

// An ethdev started on the interface, with the EAL use that goes with it.
struct StartedPort {
  const CxlpoolDpdkModule* module = nullptr;
  void* port = nullptr;
  CxlpoolDpdkPortInfo info{};
};

Result<StartedPort> start_port(const PmdChoice& pmd, const std::string& interface) {
  auto module = acquire_dpdk_eal();
  if (!module) return tl::unexpected(module.error());
  static std::atomic<unsigned> next_device{0};
  const std::string devargs =
      pmd.driver + "_cx" + std::to_string(next_device++) + ",iface=" + interface + (pmd.extra.empty() ? "" : "," + pmd.extra);
  const std::size_t mark = dpdk_log_mark();
  StartedPort started{*module, nullptr, {}};
  if (int r = started.module->port_open(devargs.c_str(), pmd.rx_mbufs, pmd.rx_room, pmd.tx_mbufs, pmd.tx_room,
                                        &started.port, &started.info);
      r != 0) {
    release_dpdk_eal();
    std::string text = "dpdk: " + devargs + ": " + std::strerror(-r);
    if (std::string said = dpdk_log_since(mark); !said.empty()) text += " (DPDK: " + said + ")";
    return fail(-r, text);
  }
  return started;
}

// The MAC is the one DPDK reports for the port (the interface's, read by
// the PMD); index and MTU are the kernel's.
hal::InterfaceFacts with_dpdk_mac(hal::InterfaceFacts facts, const CxlpoolDpdkPortInfo& info) {
  std::memcpy(facts.mac.bytes.data(), info.mac, facts.mac.bytes.size());
  return facts;
}

class DpdkNetPort final : public hal::NetPort {
 public:
  DpdkNetPort(const std::string& interface, const hal::InterfaceFacts& facts, UniqueFd wake, const StartedPort& started)
      : NetPort(interface, facts.index, with_dpdk_mac(facts, started.info).mac, facts.mtu),
        wake_(std::move(wake)),
        module_(started.module),
        port_(started.port) {}

  ~DpdkNetPort() override {
    module_->port_close(port_);
    release_dpdk_eal();
  }

  const char* backend_name() const override { return "dpdk"; }
  int poll_fd() const override { return wake_.get(); }
  Result<bool> link_up() const override { return hal::query_link_up(wake_.get(), interface_name()); }
  Result<void> add_address(const hal::MacAddress& mac) override {
    // The PMD's socket takes whatever the interface accepts; the interface
    // must be told to accept this address too.
    return hal::add_packet_membership(wake_.get(), interface_index(), mac, interface_name());
  }
  Result<void> promiscuous() { return hal::add_packet_promiscuous(wake_.get(), interface_index(), interface_name()); }

 protected:
  Result<std::size_t> receive_impl(std::span<hal::RxFrame> buffers) override {
    auto done = take(buffers);
    if (done && *done == 0) {
      // The ring looks empty: consume the wakeups, then look once more. A
      // frame the ring gets from now on wakes the socket again, and one
      // whose wakeup was just consumed is already in the ring (the PMD's
      // socket was bound later, so the kernel hands it frames first).
      drain_wakeups();
      done = take(buffers);
    }
    return done;
  }

  Result<std::size_t> send_impl(std::span<const hal::TxFrame> frames) override {
    std::size_t done = 0;
    while (done < frames.size()) {
      const std::size_t n = std::min(kBatch, frames.size() - done);
      for (std::size_t i = 0; i < n; ++i) {
        slots_[i] = {const_cast<std::byte*>(frames[done + i].data), frames[done + i].length, frames[done + i].length};
      }
      const int sent = module_->send(port_, slots_.data(), static_cast<uint32_t>(n));
      if (sent < 0) return fail(-sent, "dpdk: send on " + interface_name() + ": " + std::strerror(-sent));
      done += static_cast<std::size_t>(sent);
      if (static_cast<std::size_t>(sent) < n) {
        // A ring that stays full on a down interface would hold the caller's
        // frames back until it comes up: they are lost instead, as on a
        // wire (and as the packet backend loses them).
        if (auto up = link_up(); up && !*up) return frames.size();
        break;
      }
    }
    return done;
  }

 private:
  // A frame that did not fit the caller's buffers yet: a datagram to cut
  // into fragments (pieces > 0, `next` the first not handed out) or a frame
  // that arrived after one.
  struct Held {
    std::vector<std::byte> frame;
    std::size_t length = 0;  // the frame's real length (more than `frame` holds when chained)
    std::size_t pieces = 0;
    std::size_t next = 0;
  };

  // Held frames, then frames from the ring, into `buffers`.
  Result<std::size_t> take(std::span<hal::RxFrame> buffers) {
    std::size_t done = hand_out_held(buffers);
    if (done == buffers.size() || !held_.empty()) return done;
    const std::size_t n = std::min(kBatch, buffers.size() - done);
    const int got = module_->receive(port_, slots_.data(), static_cast<uint32_t>(n));
    if (got < 0) return fail(-got, "dpdk: receive on " + interface_name() + ": " + std::strerror(-got));
    for (int i = 0; i < got; ++i) {
      const CxlpoolDpdkFrame& in = slots_[static_cast<std::size_t>(i)];
      const std::span<const std::byte> shown(static_cast<const std::byte*>(in.data), in.capacity);
      const std::size_t pieces = in.capacity == in.length ? ipv4_fragment_count(shown, mtu()) : 0;
      if (held_.empty() && pieces == 0 && done < buffers.size()) {
        copy_out(shown, in.length, buffers[done++]);
        continue;
      }
      held_.push_back({{shown.begin(), shown.end()}, in.length, pieces, 0});
    }
    module_->release_received(port_);
    return done + hand_out_held(buffers.subspan(done));
  }

  void copy_out(std::span<const std::byte> in, std::size_t length, hal::RxFrame& out) {
    // A frame chained over mbufs shows only its first: the rest is lost too.
    out.truncated = length > out.capacity || length > in.size();
    out.length = static_cast<std::uint32_t>(std::min({length, std::size_t{out.capacity}, in.size()}));
    std::memcpy(out.data, in.data(), out.length);
    // Neither PMD says which frames a checksum-offloading sender left
    // undone, so only the pseudo-header seed is taken as that sign.
    if (!out.truncated) hal::complete_offloaded_transport_checksum(out.data, out.length);
  }

  std::size_t hand_out_held(std::span<hal::RxFrame> buffers) {
    std::size_t done = 0;
    while (done < buffers.size() && !held_.empty()) {
      Held& h = held_.front();
      hal::RxFrame& out = buffers[done++];
      if (h.pieces == 0) {
        copy_out(h.frame, h.length, out);
        held_.pop_front();
        continue;
      }
      const std::size_t length =
          write_ipv4_fragment(h.frame, mtu(), h.next, std::span(out.data, static_cast<std::size_t>(out.capacity)));
      out.truncated = length > out.capacity;
      out.length = static_cast<std::uint32_t>(std::min<std::size_t>(length, out.capacity));
      if (++h.next == h.pieces) held_.pop_front();
    }
    return done;
  }

  void drain_wakeups() {
    std::array<mmsghdr, kBatch> msgs{};
    std::array<std::byte, kBatch> bytes{};
    std::array<iovec, kBatch> iov{};
    for (std::size_t i = 0; i < kBatch; ++i) {
      iov[i] = {&bytes[i], 1};
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
    }
    while (::recvmmsg(wake_.get(), msgs.data(), kBatch, MSG_DONTWAIT, nullptr) == static_cast<int>(kBatch)) {
    }
  }

  UniqueFd wake_;  // bound AF_PACKET socket: wakeups, address filters, link state
  const CxlpoolDpdkModule* module_;
  void* port_;
  std::array<CxlpoolDpdkFrame, kBatch> slots_{};
  std::deque<Held> held_;
};

}  // namespace

Result<std::unique_ptr<hal::NetPort>> open_dpdk_net_port(const std::string& interface,
                                                         const hal::NetPortOptions& options) {
  auto pmd = choose_pmd();
  if (!pmd) return tl::unexpected(pmd.error());
  // Bound before the PMD's socket (the kernel hands a frame to the newest
  // packet socket first), so that a frame is in the PMD's ring before its
  // wakeup arrives here.
  UniqueFd wake(::socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!wake) return fail_errno("AF_PACKET socket");
  auto facts = hal::query_interface(wake.get(), interface);
  if (!facts) return tl::unexpected(facts.error());
  const uint32_t largest_frame = facts->mtu + hal::kEthernetHeaderBytes + 4;
  if (largest_frame > pmd->tx_room) {
    return fail(EINVAL, "dpdk: " + interface + " MTU " + std::to_string(facts->mtu) + ": its frames do not fit the " +
                            pmd->driver + " port's " + std::to_string(pmd->tx_room) + "-byte send mbufs");
  }
  if (auto ok = keep_one_byte(wake.get(), interface); !ok) return tl::unexpected(ok.error());
  const int one = 1;
  if (::setsockopt(wake.get(), SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) != 0) {
    return fail_errno("PACKET_IGNORE_OUTGOING on " + interface);
  }
  const int small = 64 << 10;  // wakeups only: what does not fit is not needed
  ::setsockopt(wake.get(), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  sockaddr_ll addr{};
  addr.sll_family = AF_PACKET;
  addr.sll_protocol = htons(ETH_P_ALL);
  addr.sll_ifindex = facts->index;
  if (::bind(wake.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return fail_errno("bind AF_PACKET socket to " + interface);
  }
  auto started = start_port(*pmd, interface);
  if (!started) return tl::unexpected(started.error());
  auto port = std::make_unique<DpdkNetPort>(interface, *facts, std::move(wake), *started);
  if (options.promiscuous) {
    if (auto ok = port->promiscuous(); !ok) return tl::unexpected(ok.error());
  }
  for (const hal::MacAddress& mac : options.addresses) {
    if (auto ok = port->add_address(mac); !ok) return tl::unexpected(ok.error());
  }
  return std::unique_ptr<hal::NetPort>(std::move(port));
}

}  // namespace cxlpool::drivers
