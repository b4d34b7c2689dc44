// SPDX-License-Identifier: Apache-2.0
// The traffic of the vm_devpool_channel test: two channels in one shared
// region (host -> guest and guest -> host), each carrying `count`
// sequence-numbered, checksummed records, both directions at once.
//
// Region layout (64-byte lines):
//   0        rendezvous line: magic, record count, channel offsets; its last
//            word is written last, so a reader that sees the magic there sees
//            the rest
//   4096     channel host -> guest
//   4096+K   channel guest -> host (K = channel size rounded to 4096)
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "cxlpool/common/result.hpp"
#include "cxlpool/devpool/channel.hpp"

namespace cxlpool::vmtest {

enum class ChannelRole { kHost, kGuest };

struct ExchangeOptions {
  uint32_t timeout_ms = 240000;
  // Sends record `corrupt_at` with a wrong checksum, so a self-test can see
  // the receiving end catch it. UINT64_MAX: none.
  uint64_t corrupt_at = UINT64_MAX;
};

struct ExchangeStats {
  uint64_t sent = 0;
  uint64_t received = 0;
  uint64_t elapsed_ns = 0;
};

// The channel geometry the test uses: a small ring (many laps) of 24-byte
// records, two per slot, in the given coherence mode.
devpool::ChannelGeometry exchange_geometry(devpool::Coherence coherence);

// Bytes the layout needs for that geometry.
size_t exchange_region_bytes(const devpool::ChannelGeometry& g);

// Host side, before the guest starts: formats both channels, writes every
// line back, then publishes the rendezvous line. EINVAL for a short region.
Result<void> format_exchange(std::span<std::byte> region, const devpool::ChannelGeometry& g, uint32_t count);

// Either side: waits (up to options.timeout_ms) for the rendezvous line, attaches
// the producer of its outgoing and the consumer of its incoming channel,
// and sends and receives `count` records each way, checking every received
// record's sequence number and checksum. ETIMEDOUT with progress counts
// when the peer stalls, EBADMSG naming the first bad record, EPROTO for a
// channel that fails its checks.
Result<ExchangeStats> run_exchange(std::span<std::byte> region, ChannelRole role, const ExchangeOptions& options);

}  // namespace cxlpool::vmtest
