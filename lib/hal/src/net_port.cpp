// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/hal/net_port.hpp"

#include <net/if.h>
#include <linux/if_packet.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cstdio>
#include <cstring>

#include "cxlpool/hal/driver/net_port_driver.hpp"

namespace cxlpool::hal {
namespace {

MacAddress mac_at(std::span<const std::byte> frame, std::size_t offset) {
  MacAddress mac;
  std::memcpy(mac.bytes.data(), frame.data() + offset, mac.bytes.size());
  return mac;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Result<ifreq> interface_request(const std::string& interface) {
  ifreq req{};
  if (interface.empty() || interface.size() >= sizeof(req.ifr_name)) {
    return fail(EINVAL, "interface name '" + interface + "' must be 1.." + std::to_string(IFNAMSIZ - 1) + " bytes");
  }
  std::memcpy(req.ifr_name, interface.data(), interface.size());
  return req;
}

}  // namespace

std::uint64_t MacAddress::to_u64() const {
  std::uint64_t v = 0;
  for (std::uint8_t b : bytes) v = (v << 8) | b;
  return v;
}

MacAddress MacAddress::from_u64(std::uint64_t value) {
  MacAddress mac;
  for (int i = 5; i >= 0; --i, value >>= 8) mac.bytes[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(value);
  return mac;
}

Result<MacAddress> parse_mac(std::string_view text) {
  MacAddress mac;
  if (text.size() != 17) return fail(EINVAL, "MAC address '" + std::string(text) + "': expected xx:xx:xx:xx:xx:xx");
  for (std::size_t i = 0; i < 6; ++i) {
    const int hi = hex_digit(text[i * 3]);
    const int lo = hex_digit(text[i * 3 + 1]);
    const bool separator_ok = i == 5 || text[i * 3 + 2] == ':' || text[i * 3 + 2] == '-';
    if (hi < 0 || lo < 0 || !separator_ok) {
      return fail(EINVAL, "MAC address '" + std::string(text) + "': expected xx:xx:xx:xx:xx:xx");
    }
    mac.bytes[i] = static_cast<std::uint8_t>(hi * 16 + lo);
  }
  return mac;
}

std::string format_mac(const MacAddress& mac) {
  char text[18];
  std::snprintf(text, sizeof(text), "%02x:%02x:%02x:%02x:%02x:%02x", mac.bytes[0], mac.bytes[1], mac.bytes[2],
                mac.bytes[3], mac.bytes[4], mac.bytes[5]);
  return text;
}

MacAddress frame_destination(std::span<const std::byte> frame) { return mac_at(frame, 0); }
MacAddress frame_source(std::span<const std::byte> frame) { return mac_at(frame, 6); }

Result<std::size_t> NetPort::receive(std::span<RxFrame> buffers) {
  if (buffers.empty()) return 0;
  auto got = receive_impl(buffers);
  if (!got) return got;
  for (std::size_t i = 0; i < *got; ++i) {
    ++stats_.rx_frames;
    stats_.rx_bytes += buffers[i].length;
    if (buffers[i].truncated) ++stats_.rx_truncated;
  }
  return got;
}

Result<std::size_t> NetPort::send(std::span<const TxFrame> frames) {
  for (std::size_t i = 0; i < frames.size(); ++i) {
    if (frames[i].data == nullptr || frames[i].length < kMinFrameBytes || frames[i].length > max_frame_bytes()) {
      ++stats_.rejected;
      return fail(EINVAL, "frame " + std::to_string(i) + " of " + std::to_string(frames[i].length) +
                              " bytes: must be " + std::to_string(kMinFrameBytes) + ".." +
                              std::to_string(max_frame_bytes()));
    }
  }
  if (frames.empty()) return 0;
  auto sent = send_impl(frames);
  if (!sent) return sent;
  if (*sent < frames.size()) ++stats_.tx_busy;
  for (std::size_t i = 0; i < *sent; ++i) {
    ++stats_.tx_frames;
    stats_.tx_bytes += frames[i].length;
  }
  return sent;
}

Result<InterfaceFacts> query_interface(int fd, const std::string& interface) {
  auto req = interface_request(interface);
  if (!req) return tl::unexpected(req.error());
  InterfaceFacts facts;
  if (::ioctl(fd, SIOCGIFINDEX, &*req) != 0) return fail_errno("interface " + interface);
  facts.index = req->ifr_ifindex;
  if (::ioctl(fd, SIOCGIFHWADDR, &*req) != 0) return fail_errno("SIOCGIFHWADDR " + interface);
  std::memcpy(facts.mac.bytes.data(), req->ifr_hwaddr.sa_data, facts.mac.bytes.size());
  if (::ioctl(fd, SIOCGIFMTU, &*req) != 0) return fail_errno("SIOCGIFMTU " + interface);
  facts.mtu = static_cast<std::uint32_t>(req->ifr_mtu);
  return facts;
}

Result<bool> query_link_up(int fd, const std::string& interface) {
  auto req = interface_request(interface);
  if (!req) return tl::unexpected(req.error());
  if (::ioctl(fd, SIOCGIFFLAGS, &*req) != 0) return fail_errno("SIOCGIFFLAGS " + interface);
  return (req->ifr_flags & IFF_UP) != 0 && (req->ifr_flags & IFF_RUNNING) != 0;
}

namespace {

Result<void> add_membership(int fd, const packet_mreq& req, const std::string& what) {
  if (::setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &req, sizeof(req)) != 0) return fail_errno(what);
  return {};
}

}  // namespace

Result<void> add_packet_membership(int fd, int ifindex, const MacAddress& mac, const std::string& interface) {
  packet_mreq req{};
  req.mr_ifindex = ifindex;
  req.mr_type = mac.is_multicast() ? PACKET_MR_MULTICAST : PACKET_MR_UNICAST;
  req.mr_alen = static_cast<unsigned short>(mac.bytes.size());
  std::memcpy(req.mr_address, mac.bytes.data(), mac.bytes.size());
  return add_membership(fd, req, "PACKET_ADD_MEMBERSHIP " + format_mac(mac) + " on " + interface);
}

Result<void> add_packet_promiscuous(int fd, int ifindex, const std::string& interface) {
  packet_mreq req{};
  req.mr_ifindex = ifindex;
  req.mr_type = PACKET_MR_PROMISC;
  return add_membership(fd, req, "promiscuous mode on " + interface);
}

}  // namespace cxlpool::hal
