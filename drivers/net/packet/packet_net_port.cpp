// SPDX-License-Identifier: Apache-2.0
#include "packet_net_port.hpp"

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/hal/driver/net_port_driver.hpp"
#include "cxlpool/hal/driver/frame_checksum.hpp"

namespace cxlpool::drivers {
namespace {

// Frames per recvmmsg/sendmmsg call; a larger caller batch takes several.
constexpr std::size_t kBatch = 64;
constexpr std::size_t kControlBytes = CMSG_SPACE(sizeof(tpacket_auxdata));

// Whether the kernel says the frame's transport checksum is still to be
// computed (PACKET_AUXDATA).
bool checksum_not_ready(const msghdr& hdr) {
  for (const cmsghdr* c = CMSG_FIRSTHDR(&hdr); c != nullptr;
       c = CMSG_NXTHDR(const_cast<msghdr*>(&hdr), const_cast<cmsghdr*>(c))) {
    if (c->cmsg_level != SOL_PACKET || c->cmsg_type != PACKET_AUXDATA) continue;
    tpacket_auxdata aux;
    std::memcpy(&aux, CMSG_DATA(c), sizeof(aux));
    return (aux.tp_status & TP_STATUS_CSUMNOTREADY) != 0;
  }
  return false;
}

class PacketNetPort final : public hal::NetPort {
 public:
  PacketNetPort(const std::string& interface, const hal::InterfaceFacts& facts, UniqueFd fd)
      : NetPort(interface, facts.index, facts.mac, facts.mtu), fd_(std::move(fd)) {}

  const char* backend_name() const override { return "packet"; }
  int poll_fd() const override { return fd_.get(); }
  Result<bool> link_up() const override { return hal::query_link_up(fd_.get(), interface_name()); }

  Result<void> add_address(const hal::MacAddress& mac) override {
    return hal::add_packet_membership(fd_.get(), interface_index(), mac, interface_name());
  }

 protected:
  Result<std::size_t> receive_impl(std::span<hal::RxFrame> buffers) override {
    std::size_t done = 0;
    while (done < buffers.size()) {
      const std::size_t n = std::min(kBatch, buffers.size() - done);
      for (std::size_t i = 0; i < n; ++i) {
        iov_[i] = {buffers[done + i].data, buffers[done + i].capacity};
        msgs_[i] = {};
        msgs_[i].msg_hdr.msg_iov = &iov_[i];
        msgs_[i].msg_hdr.msg_iovlen = 1;
        msgs_[i].msg_hdr.msg_control = control_[i].bytes;
        msgs_[i].msg_hdr.msg_controllen = kControlBytes;
      }
      // MSG_TRUNC: msg_len is the frame's real length, so truncation shows.
      const int got = ::recvmmsg(fd_.get(), msgs_.data(), static_cast<unsigned>(n), MSG_DONTWAIT | MSG_TRUNC, nullptr);
      if (got < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
        // The interface went down (reported once on the socket): no frames,
        // as on a wire without carrier; link_up() says so.
        if (errno == ENETDOWN) break;
        return fail_errno("recvmmsg on " + interface_name());
      }
      for (int i = 0; i < got; ++i) {
        hal::RxFrame& out = buffers[done + static_cast<std::size_t>(i)];
        const std::uint32_t length = msgs_[i].msg_len;
        out.truncated = length > out.capacity;
        out.length = out.truncated ? out.capacity : length;
        if (!out.truncated && checksum_not_ready(msgs_[i].msg_hdr)) hal::complete_transport_checksum(out.data, out.length);
      }
      done += static_cast<std::size_t>(got);
      if (static_cast<std::size_t>(got) < n) break;
    }
    return done;
  }

  Result<std::size_t> send_impl(std::span<const hal::TxFrame> frames) override {
    std::size_t done = 0;
    while (done < frames.size()) {
      const std::size_t n = std::min(kBatch, frames.size() - done);
      for (std::size_t i = 0; i < n; ++i) {
        iov_[i] = {const_cast<std::byte*>(frames[done + i].data), frames[done + i].length};
        msgs_[i] = {};
        msgs_[i].msg_hdr.msg_iov = &iov_[i];
        msgs_[i].msg_hdr.msg_iovlen = 1;
      }
      const int sent = ::sendmmsg(fd_.get(), msgs_.data(), static_cast<unsigned>(n), MSG_DONTWAIT);
      if (sent < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS || errno == EINTR) break;
        // The interface went down under us: the frames are lost, as on a wire.
        if (errno == ENETDOWN || errno == ENXIO) return frames.size();
        return fail_errno("sendmmsg on " + interface_name());
      }
      done += static_cast<std::size_t>(sent);
      if (static_cast<std::size_t>(sent) < n) break;
    }
    return done;
  }

 private:
  UniqueFd fd_;
  std::array<mmsghdr, kBatch> msgs_{};
  std::array<iovec, kBatch> iov_{};
  struct alignas(cmsghdr) Control {
    std::byte bytes[kControlBytes];
  };
  std::array<Control, kBatch> control_{};
};

}  // namespace

Result<std::unique_ptr<hal::NetPort>> open_packet_net_port(const std::string& interface,
                                                           const hal::NetPortOptions& options) {
  // Protocol 0 until bound: a socket for ETH_P_ALL would queue every
  // interface's frames in the moment before bind().
  UniqueFd fd(::socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) return fail_errno("AF_PACKET socket");
  auto facts = hal::query_interface(fd.get(), interface);
  if (!facts) return tl::unexpected(facts.error());
  const int one = 1;
  // Without it the socket would receive every frame it sends (Linux 4.20+).
  if (::setsockopt(fd.get(), SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) != 0) {
    return fail_errno("PACKET_IGNORE_OUTGOING on " + interface);
  }
  // Frames from checksum-offloading local devices (veth) arrive with the
  // checksum still to do; auxdata says which.
  if (::setsockopt(fd.get(), SOL_PACKET, PACKET_AUXDATA, &one, sizeof(one)) != 0) {
    return fail_errno("PACKET_AUXDATA on " + interface);
  }
  // Best effort: the socket works through the qdisc too.
  if (options.bypass_qdisc) ::setsockopt(fd.get(), SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one));
  // Room for bursts while the engine sleeps between polls: past
  // net.core.rmem_max where CAP_NET_ADMIN allows (the *FORCE options).
  const int buffer_bytes = 8 << 20;
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUFFORCE, &buffer_bytes, sizeof(buffer_bytes)) != 0)
    ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &buffer_bytes, sizeof(buffer_bytes));
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_SNDBUFFORCE, &buffer_bytes, sizeof(buffer_bytes)) != 0)
    ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDBUF, &buffer_bytes, sizeof(buffer_bytes));
  sockaddr_ll addr{};
  addr.sll_family = AF_PACKET;
  addr.sll_protocol = htons(ETH_P_ALL);
  addr.sll_ifindex = facts->index;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return fail_errno("bind AF_PACKET socket to " + interface);
  }
  // Dropped by the kernel when the socket closes.
  if (options.promiscuous) {
    if (auto ok = hal::add_packet_promiscuous(fd.get(), facts->index, interface); !ok) return tl::unexpected(ok.error());
  }
  auto port = std::make_unique<PacketNetPort>(interface, *facts, std::move(fd));
  for (const hal::MacAddress& mac : options.addresses) {
    auto added = port->add_address(mac);
    if (!added) return tl::unexpected(added.error());
  }
  return std::unique_ptr<hal::NetPort>(std::move(port));
}

}  // namespace cxlpool::drivers
