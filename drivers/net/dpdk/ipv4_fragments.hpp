// SPDX-License-Identifier: Apache-2.0
// Cutting an IPv4 datagram into fragments again. net_af_packet (DPDK 22.11)
// joins its socket to a packet fanout group with PACKET_FANOUT_FLAG_DEFRAG,
// so the kernel hands it IPv4 datagrams reassembled from their fragments:
// frames larger than the wire carries. The dpdk port cuts them back into
// fragments that fit the interface's MTU, so that its frames are what the
// wire carried (as with every other NetPort).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace cxlpool::drivers {

// How many fragments an Ethernet frame carrying an unfragmented IPv4
// datagram (no VLAN tag, no IP options, the whole datagram in the frame)
// becomes when its IP packets may be at most `mtu` bytes; 0 for any other
// frame, or one whose datagram fits already.
std::size_t ipv4_fragment_count(std::span<const std::byte> frame, std::uint32_t mtu);

// Writes fragment `index` (< ipv4_fragment_count) of `frame` as a whole
// Ethernet frame into `out` (its header, an IP header with the fragment's
// offset, length, more-fragments flag and checksum, its part of the
// payload), as many bytes as fit; returns the fragment frame's length.
std::size_t write_ipv4_fragment(std::span<const std::byte> frame, std::uint32_t mtu, std::size_t index,
                                std::span<std::byte> out);

}  // namespace cxlpool::drivers
