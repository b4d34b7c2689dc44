// SPDX-License-Identifier: Apache-2.0
// NetPort: raw Ethernet frames in and out of one network interface, in
// batches, to and from the caller's own buffers (so a device-pooling backend
// receives straight into the buffer area it shares with a frontend and sends
// straight from the frontend's). The public methods check batches and keep
// statistics; drivers implement the protected *_impl hooks. Nothing blocks:
// a caller that found nothing to receive waits on poll_fd(). Nothing throws.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cxlpool/common/result.hpp"

namespace cxlpool::hal {

inline constexpr std::size_t kEthernetHeaderBytes = 14;
// Frames shorter than this cannot even carry an Ethernet header.
inline constexpr std::size_t kMinFrameBytes = kEthernetHeaderBytes;

struct MacAddress {
  std::array<std::uint8_t, 6> bytes{};

  bool is_multicast() const { return (bytes[0] & 1) != 0; }  // broadcast included
  bool is_zero() const { return bytes == std::array<std::uint8_t, 6>{}; }
  // The 48 bits in a u64, first byte most significant (records carry it so).
  std::uint64_t to_u64() const;
  static MacAddress from_u64(std::uint64_t value);
  friend bool operator==(const MacAddress&, const MacAddress&) = default;
};

// "02:00:00:00:00:01" (either case, ':' or '-'); EINVAL otherwise.
Result<MacAddress> parse_mac(std::string_view text);
std::string format_mac(const MacAddress& mac);
// The destination and source of a frame of at least kEthernetHeaderBytes.
MacAddress frame_destination(std::span<const std::byte> frame);
MacAddress frame_source(std::span<const std::byte> frame);

struct NetPortOptions {
  // Receive every frame the interface sees (PACKET_MR_PROMISC), not only
  // those addressed to its own MAC, broadcast, and add_address() ones.
  bool promiscuous = false;
  // Addresses to receive besides the interface's own (add_address at open).
  std::vector<MacAddress> addresses;
  // Hand frames to the driver without the interface's queueing discipline
  // (lower latency; the driver's own queue still applies).
  bool bypass_qdisc = true;
};

// One frame to send: `data` holds the whole frame, Ethernet header first.
struct TxFrame {
  const std::byte* data = nullptr;
  std::uint32_t length = 0;
};

// One receive buffer: the driver fills up to `capacity` bytes and sets
// `length` to the frame's length; `truncated` when the frame was longer
// (the bytes beyond capacity are lost).
struct RxFrame {
  std::byte* data = nullptr;
  std::uint32_t capacity = 0;
  std::uint32_t length = 0;
  bool truncated = false;
};

struct NetPortStats {
  std::uint64_t rx_frames = 0, rx_bytes = 0;
  std::uint64_t tx_frames = 0, tx_bytes = 0;
  std::uint64_t rx_truncated = 0;  // frames longer than their buffer
  std::uint64_t tx_busy = 0;       // send batches cut short because the interface was busy
  std::uint64_t rejected = 0;      // send batches refused before reaching the driver
};

class NetPort {
 public:
  virtual ~NetPort() = default;
  NetPort(const NetPort&) = delete;
  NetPort& operator=(const NetPort&) = delete;

  const std::string& interface_name() const { return interface_; }
  int interface_index() const { return index_; }
  const MacAddress& mac() const { return mac_; }
  // The interface MTU at open (payload bytes; a frame adds its header).
  std::uint32_t mtu() const { return mtu_; }
  // Largest frame the interface sends or receives (mtu + header + a VLAN tag).
  std::uint32_t max_frame_bytes() const { return mtu_ + kEthernetHeaderBytes + 4; }
  const NetPortStats& stats() const { return stats_; }
  virtual const char* backend_name() const = 0;

  // Administratively up and with carrier, asked of the kernel now.
  virtual Result<bool> link_up() const = 0;

  // Fills buffers from the front with the frames waiting now, one frame per
  // buffer, and returns how many; 0 when none is waiting (never blocks).
  Result<std::size_t> receive(std::span<RxFrame> buffers);

  // Sends frames from the front; returns how many the interface took, fewer
  // than frames.size() when it is busy (send the rest later). EINVAL (nothing
  // sent) when a frame is shorter than an Ethernet header or longer than
  // max_frame_bytes(); the message names its index.
  Result<std::size_t> send(std::span<const TxFrame> frames);

  // Also receive frames addressed to `mac` (unicast or multicast). A driver
  // that cannot filter may receive more than asked; ENOTSUP when it cannot
  // add addresses at all.
  virtual Result<void> add_address(const MacAddress& mac) = 0;

  // A descriptor that polls readable (POLLIN) when frames are waiting.
  virtual int poll_fd() const = 0;

 protected:
  NetPort(std::string interface, int index, MacAddress mac, std::uint32_t mtu)
      : interface_(std::move(interface)), index_(index), mac_(mac), mtu_(mtu) {}

  virtual Result<std::size_t> receive_impl(std::span<RxFrame> buffers) = 0;
  virtual Result<std::size_t> send_impl(std::span<const TxFrame> frames) = 0;

 private:
  std::string interface_;
  int index_;
  MacAddress mac_;
  std::uint32_t mtu_;
  NetPortStats stats_;
};

}  // namespace cxlpool::hal
