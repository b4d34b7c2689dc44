// SPDX-License-Identifier: Apache-2.0
// The storage engine's doorbell, for a link whose two sides share one
// host's memory (a coherent link): the side waiting for the next slot of a
// channel sleeps on a futex on that slot's sequence word, and the producer
// wakes it after it published the slot. No descriptor travels and the link
// format does not change; a side that never rings (another host, a backend
// without the doorbell) only costs the waiter its bounded wait, so waits
// are short and the channel's polling stays the protocol.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>

#include "cxlpool/devpool/channel.hpp"

namespace cxlpool::devpool::blk {

// The sequence word (offset 56) of the slot holding `position`.
std::uint32_t* slot_sequence_word(std::span<std::byte> channel, const ChannelGeometry& g, std::uint64_t position);

// Wakes whoever sleeps on `word` (one syscall; nothing when no one does).
void ring_doorbell(std::uint32_t* word);

// Sleeps until `word` no longer holds `seen`, a ring, or `timeout`; true
// when the wait ran out its time (no ring came).
bool wait_doorbell(std::uint32_t* word, std::uint32_t seen, std::chrono::nanoseconds timeout);

}  // namespace cxlpool::devpool::blk
