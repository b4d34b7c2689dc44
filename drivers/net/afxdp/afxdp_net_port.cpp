// SPDX-License-Identifier: Apache-2.0
#include "afxdp_net_port.hpp"

#include <bpf/libbpf.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <xdp/libxdp.h>
#include <xdp/xsk.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <mutex>
#include <vector>

#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/hal/driver/frame_checksum.hpp"
#include "cxlpool/hal/driver/net_port_driver.hpp"

namespace cxlpool::drivers {
namespace {

constexpr uint32_t kFrames = 4096;  // half receive, half send
constexpr uint32_t kRingSize = 2048;

// libbpf and libxdp print their own diagnostics to stderr (a missing bpffs,
// the dispatcher fallback); what matters comes back as an error code, which
// this driver turns into a message, so their chatter is dropped.
int quiet_libbpf(enum libbpf_print_level, const char*, va_list) { return 0; }
int quiet_libxdp(enum libxdp_print_level, const char*, va_list) { return 0; }

void silence_libraries() {
  static std::once_flag once;
  std::call_once(once, [] {
    libbpf_set_print(quiet_libbpf);
    libxdp_set_print(quiet_libxdp);
  });
}

// Receive queues of the interface (ETHTOOL_GCHANNELS); 1 when the driver
// does not say.
uint32_t receive_queues(int fd, const std::string& interface) {
  ethtool_channels channels{};
  channels.cmd = ETHTOOL_GCHANNELS;
  ifreq req{};
  std::strncpy(req.ifr_name, interface.c_str(), IFNAMSIZ - 1);
  req.ifr_data = reinterpret_cast<char*>(&channels);
  if (::ioctl(fd, SIOCETHTOOL, &req) != 0) return 1;
  return std::max<uint32_t>(1, channels.rx_count + channels.combined_count);
}

class AfxdpNetPort final : public hal::NetPort {
 public:
  AfxdpNetPort(const std::string& interface, const hal::InterfaceFacts& facts, UniqueFd control, uint32_t frame_bytes)
      : NetPort(interface, facts.index, facts.mac, facts.mtu), control_(std::move(control)), frame_bytes_(frame_bytes) {}

  ~AfxdpNetPort() override {
    // The socket goes first: libxdp detaches its program with it.
    if (socket_ != nullptr) xsk_socket__delete(socket_);
    if (umem_ != nullptr) xsk_umem__delete(umem_);
    if (area_ != nullptr) ::munmap(area_, area_bytes());
  }

  Result<void> start() {
    silence_libraries();
    void* area = ::mmap(nullptr, area_bytes(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (area == MAP_FAILED) return fail_errno("afxdp: UMEM of " + std::to_string(area_bytes()) + " bytes");
    area_ = area;
    xsk_umem_config umem_config{};
    umem_config.fill_size = kRingSize;
    umem_config.comp_size = kRingSize;
    umem_config.frame_size = frame_bytes_;
    umem_config.frame_headroom = 0;
    if (int r = xsk_umem__create(&umem_, area_, area_bytes(), &fill_, &completion_, &umem_config); r != 0) {
      umem_ = nullptr;
      return fail(-r, "afxdp: UMEM for " + interface_name() + ": " + std::strerror(-r));
    }
    xsk_socket_config config{};
    config.rx_size = kRingSize;
    config.tx_size = kRingSize;
    config.xdp_flags = XDP_FLAGS_SKB_MODE;
    config.bind_flags = XDP_COPY;
    if (int r = xsk_socket__create(&socket_, interface_name().c_str(), 0, umem_, &rx_, &tx_, &config); r != 0) {
      socket_ = nullptr;
      return fail(-r, "afxdp: AF_XDP socket on " + interface_name() + " queue 0: " + std::strerror(-r) +
                          (r == -EBUSY ? " (another XDP program or socket holds it)" : ""));
    }
    // The first half of the frames wait in the fill ring for the kernel to
    // receive into; the second half are the send buffers.
    uint32_t index = 0;
    const uint32_t receive_frames = kFrames / 2;
    if (xsk_ring_prod__reserve(&fill_, receive_frames, &index) != receive_frames) {
      return fail(ENOMEM, "afxdp: fill ring of " + interface_name() + " took fewer frames than it holds");
    }
    for (uint32_t i = 0; i < receive_frames; ++i) *xsk_ring_prod__fill_addr(&fill_, index + i) = frame_address(i);
    xsk_ring_prod__submit(&fill_, receive_frames);
    for (uint32_t i = receive_frames; i < kFrames; ++i) free_tx_.push_back(frame_address(i));
    return {};
  }

  const char* backend_name() const override { return "afxdp"; }
  int poll_fd() const override { return xsk_socket__fd(socket_); }
  Result<bool> link_up() const override { return hal::query_link_up(control_.get(), interface_name()); }

  Result<void> add_address(const hal::MacAddress& mac) override {
    // The XDP program takes every frame the interface accepts; a NIC that
    // filters by address must be told to accept this one too.
    return hal::add_packet_membership(control_.get(), interface_index(), mac, interface_name());
  }

  // Dropped by the kernel when the control socket closes.
  Result<void> promiscuous() { return hal::add_packet_promiscuous(control_.get(), interface_index(), interface_name()); }

 protected:
  Result<std::size_t> receive_impl(std::span<hal::RxFrame> buffers) override {
    uint32_t index = 0;
    const uint32_t got = xsk_ring_cons__peek(&rx_, static_cast<uint32_t>(std::min<std::size_t>(buffers.size(), kRingSize)), &index);
    if (got == 0) return std::size_t{0};
    uint32_t fill_index = 0;
    // Every frame received goes back to the fill ring: it has room, because
    // the frames in flight are never more than it holds.
    const uint32_t reserved = xsk_ring_prod__reserve(&fill_, got, &fill_index);
    for (uint32_t i = 0; i < got; ++i) {
      const xdp_desc* desc = xsk_ring_cons__rx_desc(&rx_, index + i);
      hal::RxFrame& out = buffers[i];
      const auto* data = static_cast<const std::byte*>(xsk_umem__get_data(area_, desc->addr));
      out.truncated = desc->len > out.capacity;
      out.length = out.truncated ? out.capacity : desc->len;
      std::memcpy(out.data, data, out.length);
      if (!out.truncated) hal::complete_offloaded_transport_checksum(out.data, out.length);
      if (i < reserved) *xsk_ring_prod__fill_addr(&fill_, fill_index + i) = xsk_umem__extract_addr(desc->addr);
    }
    xsk_ring_prod__submit(&fill_, reserved);
    xsk_ring_cons__release(&rx_, got);
    return std::size_t{got};
  }

  Result<std::size_t> send_impl(std::span<const hal::TxFrame> frames) override {
    reclaim_sent();
    const uint32_t want = static_cast<uint32_t>(std::min<std::size_t>(frames.size(), free_tx_.size()));
    uint32_t index = 0;
    const uint32_t n = want == 0 ? 0 : xsk_ring_prod__reserve(&tx_, want, &index);
    for (uint32_t i = 0; i < n; ++i) {
      const uint64_t address = free_tx_.back();
      free_tx_.pop_back();
      std::memcpy(xsk_umem__get_data(area_, address), frames[i].data, frames[i].length);
      xdp_desc* desc = xsk_ring_prod__tx_desc(&tx_, index + i);
      desc->addr = address;
      desc->len = frames[i].length;
    }
    if (n == 0) return std::size_t{0};
    xsk_ring_prod__submit(&tx_, n);
    // Copy mode sends only when asked to.
    if (::sendto(xsk_socket__fd(socket_), nullptr, 0, MSG_DONTWAIT, nullptr, 0) < 0) {
      // Busy: the kernel sends the rest at the next kick. Down: lost, as on a wire.
      if (errno != EAGAIN && errno != EBUSY && errno != ENOBUFS && errno != EINTR && errno != ENETDOWN &&
          errno != ENXIO) {
        return fail_errno("afxdp: send on " + interface_name());
      }
    }
    return std::size_t{n};
  }

 private:
  std::size_t area_bytes() const { return std::size_t{kFrames} * frame_bytes_; }
  uint64_t frame_address(uint32_t frame) const { return uint64_t{frame} * frame_bytes_; }

  // Frames the kernel has sent are send buffers again.
  void reclaim_sent() {
    uint32_t index = 0;
    const uint32_t done = xsk_ring_cons__peek(&completion_, kRingSize, &index);
    for (uint32_t i = 0; i < done; ++i) free_tx_.push_back(*xsk_ring_cons__comp_addr(&completion_, index + i));
    if (done != 0) xsk_ring_cons__release(&completion_, done);
  }

  UniqueFd control_;  // an unbound AF_PACKET socket: address filters, link state
  uint32_t frame_bytes_;
  void* area_ = nullptr;
  xsk_umem* umem_ = nullptr;
  xsk_socket* socket_ = nullptr;
  xsk_ring_prod fill_{};
  xsk_ring_cons completion_{};
  xsk_ring_cons rx_{};
  xsk_ring_prod tx_{};
  std::vector<uint64_t> free_tx_;
};

}  // namespace

Result<std::unique_ptr<hal::NetPort>> open_afxdp_net_port(const std::string& interface,
                                                          const hal::NetPortOptions& options) {
  // Protocol 0: this socket receives nothing, it only carries address
  // memberships and interface queries.
  UniqueFd control(::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0));
  if (!control) return fail_errno("AF_PACKET socket");
  auto facts = hal::query_interface(control.get(), interface);
  if (!facts) return tl::unexpected(facts.error());
  // One socket serves queue 0; frames a NIC spreads over other queues would
  // never reach it.
  if (const uint32_t queues = receive_queues(control.get(), interface); queues > 1) {
    return fail(EINVAL, "afxdp serves receive queue 0 only and " + interface + " has " + std::to_string(queues) +
                            " (ethtool -L " + interface + " combined 1)");
  }
  const uint32_t largest_frame = facts->mtu + hal::kEthernetHeaderBytes + 4;
  if (largest_frame > 4096) {
    return fail(EINVAL, "afxdp: " + interface + " MTU " + std::to_string(facts->mtu) +
                            " does not fit a 4096-byte UMEM frame (copy mode has no multi-buffer frames here)");
  }
  auto port = std::make_unique<AfxdpNetPort>(interface, *facts, std::move(control), largest_frame > 2048 ? 4096u : 2048u);
  if (auto ok = port->start(); !ok) return tl::unexpected(ok.error());
  if (options.promiscuous) {
    if (auto ok = port->promiscuous(); !ok) return tl::unexpected(ok.error());
  }
  for (const hal::MacAddress& mac : options.addresses) {
    if (auto ok = port->add_address(mac); !ok) return tl::unexpected(ok.error());
  }
  return std::unique_ptr<hal::NetPort>(std::move(port));
}

}  // namespace cxlpool::drivers
