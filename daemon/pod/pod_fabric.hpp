// SPDX-License-Identifier: Apache-2.0
// The daemon's transfer engine in a pod: the hal::Transport opened from
// [pod] (provider, rails, shm), the memory registered with it (the KV
// store's arena views), the peers it reads from (added from the cards in
// their member records) and what it moved with each. Opening may fail
// (no provider, a rail address this host lacks): the daemon then serves
// local work and says why in `cxlpoolctl pod status` and its log.
//
// Thread-safe: the event loop registers memory and reads counters, the
// KV fetch and serve threads add peers and count what they moved.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../config.hpp"
#include "cxlpool/common/counter_list.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/transport.hpp"
#include "cxlpool/proto/messages.hpp"

namespace cxlpool::daemon {

// Member, and its metric's name after "pod.peer.<host>.".
// clang-format off
#define CXLPOOL_POD_PEER_COUNTERS(X)                                                        \
  X(fetched_chunks, "fetched_chunks") /* KV chunks read from the peer */                    \
  X(fetched_bytes,  "fetched_bytes")                                                        \
  X(fetch_errors,   "fetch_errors")   /* reads or control exchanges with it that failed */  \
  X(retries,        "retries")        /* chunk attempts beyond the first */                 \
  X(pins_served,    "pins_served")    /* chunks pinned here for its reads */
// clang-format on

struct PodPeerCounters {
  CXLPOOL_POD_PEER_COUNTERS(CXLPOOL_COUNTER_MEMBER)
  CXLPOOL_COUNTER_VISIT(CXLPOOL_POD_PEER_COUNTERS)
};

class PodFabric {
 public:
  // Opens the transport `config` asks for; never fails: error() says why
  // there is none.
  explicit PodFabric(const PodSection& config);
  ~PodFabric();
  PodFabric(const PodFabric&) = delete;
  PodFabric& operator=(const PodFabric&) = delete;

  [[nodiscard]] bool open() const { return transport_ != nullptr; }
  [[nodiscard]] const std::string& error() const { return error_; }
  // "ofi tcp;ofi_rxm" (backend, provider), or "" when not open.
  [[nodiscard]] std::string description() const;
  hal::Transport* transport() { return transport_.get(); }

  // This transport's card, "" when not open.
  [[nodiscard]] std::string card() const;
  // Memory peers may read and write, and local memory of reads. A failure
  // is logged and counted, never fatal (that memory is just not served).
  void register_region(uint64_t key, void* base, uint64_t length);

  // The transport's peer for `host` with `card`: added on first use and
  // refreshed when the card changed. EINVAL for a bad card, ENOTCONN when
  // not open.
  Result<hal::PeerId> peer(const std::string& host, const std::string& card);

  // What moved with `host`.
  void count(const std::string& host, const std::function<void(PodPeerCounters&)>& change);

  void fill_status(proto::PodStatusReply& reply) const;
  // pod.fabric.*, pod.rail.<i>.*, pod.peer.<host>.*
  void add_counters(const std::function<void(std::string, uint64_t)>& add) const;
  // The pod.fabric.* totals of a daemon without a transfer engine (zeros).
  static void add_closed_counters(const std::function<void(std::string, uint64_t)>& add);

 private:
  struct Peer {
    std::string card;
    hal::PeerId id = 0;
  };
  std::string provider_;
  std::unique_ptr<hal::Transport> transport_;
  std::string error_;
  mutable std::mutex mutex_;
  std::map<std::string, Peer> peers_;
  std::map<std::string, PodPeerCounters> counters_;
  uint64_t register_failures_ = 0;
};

// The name a peer goes by in metric names: a label value is one segment of
// the dotted name, so dots become underscores.
std::string pod_metric_label(std::string_view host);

}  // namespace cxlpool::daemon
