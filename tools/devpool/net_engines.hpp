// SPDX-License-Identifier: Apache-2.0
// The network engine's two loops over directly attached links.
//
// Frontend (the instance's host): frames the host sends on its TAP are read
// straight into a buffer of the link's frontend area and described on the
// request channel; received frames arrive as descriptors of the backend
// area on the completion channel, are written to the TAP, and their
// buffers go back as credits.
//
// Backend (the NIC's host): request-channel frames are sent by the NetPort
// straight from the frontend area, and their buffers credited back; frames
// the NetPort receives land in a backend area and are steered by
// destination MAC to the frontend that announced it (group addresses to
// every frontend); a frame for another link than the one it landed in is
// copied there, the only copy the engine itself makes.
#pragma once

#include <cstdint>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/net_port.hpp"
#include "engine_support.hpp"
#include "link_file.hpp"
#include "tap_device.hpp"

namespace cxlpool::devpool_tool {

struct FrontendCounters {
  uint64_t tx_frames = 0, rx_frames = 0;
  uint64_t tx_no_buffer = 0;   // passes that found every frontend buffer out
  uint64_t rx_tap_errors = 0;  // frames the TAP refused (its queue full)
};

struct BackendCounters {
  uint64_t tx_frames = 0, rx_frames = 0;
  uint64_t rx_copied = 0;     // frames copied from the link they landed in to another
  uint64_t rx_unknown = 0;    // unicast frames for a MAC no frontend announced
  uint64_t rx_no_buffer = 0;  // frames dropped: the target link's buffers all out
  uint64_t rx_truncated = 0;
};

// Runs until stop_requested(). EBADMSG when the backend breaks the protocol
// (a corrupt descriptor, a credit for a buffer not on loan).
Result<FrontendCounters> run_net_frontend(MappedLink& link, TapDevice& tap, const hal::MacAddress& mac,
                                          const EngineTiming& timing);

// Serves every link in `links` through `port` until stop_requested().
Result<BackendCounters> run_net_backend(std::vector<MappedLink>& links, hal::NetPort& port, const EngineTiming& timing);

}  // namespace cxlpool::devpool_tool
