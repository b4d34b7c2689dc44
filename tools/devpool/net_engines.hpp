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
#include <utility>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/net_port.hpp"
#include "engine_support.hpp"
#include "link_file.hpp"
#include "tap_device.hpp"

namespace cxlpool::devpool_tool {

struct FrontendCounters {
  uint64_t tx_frames = 0, rx_frames = 0;
  uint64_t switches = 0;       // times TX moved to the other leg (failover)
  uint64_t rx_other_leg = 0;   // frames that came in on the leg not active, dropped
  uint64_t tx_no_buffer = 0;   // passes that found every frontend buffer out
  uint64_t rx_tap_errors = 0;  // frames the TAP refused (its queue full)
};

struct BackendCounters {
  uint64_t tx_frames = 0, rx_frames = 0;
  uint64_t tx_bytes = 0, rx_bytes = 0;
  uint64_t rx_copied = 0;     // frames copied from the link they landed in to another
  uint64_t rx_unknown = 0;    // unicast frames for a MAC no frontend announced
  uint64_t rx_no_buffer = 0;  // frames dropped: the target link's buffers all out
  uint64_t rx_truncated = 0;
};

// EPROTO unless both channels of a link carry 16-byte net descriptors and
// have `coherence`.
Result<void> check_net_geometry(const devpool::LinkGeometry& g, devpool::Coherence coherence);

// Links that come and go while a backend runs (the pod table's): the loop
// calls poll() between passes; it decides itself when to look (a clock, a
// version number), fills `change` and returns true when the set changed.
// Keys are the source's names for links; an added link is freshly formatted.
struct LinkChange {
  std::vector<std::pair<uint64_t, devpool::LinkView>> added;
  std::vector<uint64_t> removed;
};
class BackendLinkSource {
 public:
  virtual ~BackendLinkSource() = default;
  virtual Result<bool> poll(const BackendCounters& counters, LinkChange& change) = 0;
};

// A frontend's two legs (its attachment's primary and backup links) and
// which one carries its traffic. `fresh`: the leg's link was formatted
// anew (a new device took it), so the frontend attaches to it again.
struct FrontendLeg {
  bool present = false;
  bool fresh = false;
  devpool::LinkView view;
};
struct FrontendLegs {
  FrontendLeg leg[2];
  uint8_t active = 0;
};
class FrontendLinkSource {
 public:
  virtual ~FrontendLinkSource() = default;
  // The legs to use from now on; true when they changed. Called between passes.
  virtual Result<bool> poll(FrontendLegs& legs) = 0;
};

// Runs until stop_requested(). EBADMSG when the backend breaks the protocol
// (a corrupt descriptor, a credit for a buffer not on loan).
Result<FrontendCounters> run_net_frontend(MappedLink& link, TapDevice& tap, const hal::MacAddress& mac,
                                          const EngineTiming& timing);
// Over the legs `source` hands out: TX goes to the active leg's link, RX is
// taken from the active leg (frames from the other are credited and
// dropped). The frontend announces its MAC on every leg it attaches to, so
// the backup backend steers to it already; when the active leg changes it
// sends a gratuitous ARP through the new leg, so that the switch learns the
// MAC's new port.
Result<FrontendCounters> run_net_frontend(devpool::Coherence coherence, FrontendLinkSource& source, TapDevice& tap,
                                          const hal::MacAddress& mac, const EngineTiming& timing);

// Serves every link in `links` through `port` until stop_requested().
Result<BackendCounters> run_net_backend(std::vector<MappedLink>& links, hal::NetPort& port, const EngineTiming& timing);
// Serves the links `source` hands out, as they come and go.
Result<BackendCounters> run_net_backend(devpool::Coherence coherence, hal::NetPort& port, const EngineTiming& timing,
                                        BackendLinkSource& source);

}  // namespace cxlpool::devpool_tool
