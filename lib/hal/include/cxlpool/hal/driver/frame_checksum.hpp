// SPDX-License-Identifier: Apache-2.0
// Transport checksums of Ethernet frames, for NetPort drivers whose
// interfaces hand over frames a local sender left to checksum offload.
#pragma once

#include <cstddef>

namespace cxlpool::hal {

// Fills in the TCP or UDP checksum of an Ethernet frame carrying IPv4
// (unfragmented) or IPv6 (no extension headers before the transport
// header); returns false and leaves the frame alone for anything else or a
// frame too short for its headers. For frames a packet socket hands over
// with their checksum still to be done (TP_STATUS_CSUMNOTREADY: sent by a
// local or virtual device that offloads checksums, such as veth), which
// any other host would otherwise drop as corrupt.
bool complete_transport_checksum(std::byte* frame, std::size_t length);

// For drivers that are not told which frames still need their checksum
// (AF_XDP): completes the TCP or UDP checksum only when the field holds
// exactly the pseudo-header seed a checksum-offloading sender leaves there
// and the frame does not already verify. Returns true when it filled one in.
// A frame corrupted on the way keeps its wrong checksum and is dropped by
// its receiver, as it should be.
bool complete_offloaded_transport_checksum(std::byte* frame, std::size_t length);

}  // namespace cxlpool::drivers
