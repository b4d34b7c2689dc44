// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>

namespace cxlpool::drivers {

// Fills in the TCP or UDP checksum of an Ethernet frame carrying IPv4
// (unfragmented) or IPv6 (no extension headers before the transport
// header); returns false and leaves the frame alone for anything else or a
// frame too short for its headers. For frames a packet socket hands over
// with their checksum still to be done (TP_STATUS_CSUMNOTREADY: sent by a
// local or virtual device that offloads checksums, such as veth), which
// any other host would otherwise drop as corrupt.
bool complete_transport_checksum(std::byte* frame, std::size_t length);

}  // namespace cxlpool::drivers
