// SPDX-License-Identifier: Apache-2.0
// The bytes of a channel's header, consumer and slot lines (channel.hpp has
// the picture), shared by the channel sides, format_channel and the link.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "cxlpool/common/result.hpp"
#include "cxlpool/devpool/channel.hpp"

namespace cxlpool::devpool::detail {

// Line 0. Little-endian, read-only after format.
struct ChannelHeader {
  uint32_t magic;
  uint16_t version;
  uint8_t coherence;
  uint8_t reserved0;
  uint32_t slots;
  uint32_t record_bytes;
  uint32_t records_per_slot;  // redundant with record_bytes: a cross-check
  uint8_t reserved1[kLineBytes - 20];
};
static_assert(sizeof(ChannelHeader) == kLineBytes);

inline constexpr size_t kHeaderLine = 0;
inline constexpr size_t kConsumerLine = 1;
inline constexpr size_t kFirstSlotLine = 2;

// The last 8 bytes of a slot line: sequence | count << 32 | record_bytes << 48.
inline constexpr size_t kTailOffset = kSlotPayloadBytes;
// The consumer line: records consumed at offset 0, slots consumed in the
// tail word (the word the line access policies order).
inline constexpr size_t kRecordsConsumedOffset = 0;

inline uint64_t read_tail(const std::byte* line) {
  uint64_t tail = 0;
  std::memcpy(&tail, line + kTailOffset, sizeof tail);
  return tail;
}
inline void write_tail(std::byte* line, uint64_t tail) { std::memcpy(line + kTailOffset, &tail, sizeof tail); }

inline uint64_t slot_tail(uint32_t sequence, uint32_t count, uint32_t record_bytes) {
  return uint64_t{sequence} | uint64_t{count & 0xffff} << 32 | uint64_t{record_bytes & 0xffff} << 48;
}
inline uint32_t tail_sequence(uint64_t tail) { return static_cast<uint32_t>(tail); }
inline uint32_t tail_count(uint64_t tail) { return static_cast<uint32_t>(tail >> 32) & 0xffff; }
inline uint32_t tail_record_bytes(uint64_t tail) { return static_cast<uint32_t>(tail >> 48); }

// Slots: power of two in 2..kMaxChannelSlots; records 8..56 bytes; a known
// coherence.
bool geometry_valid(const ChannelGeometry& g);

// Validates a header line copied out of shared memory against a range of
// `memory_bytes`. EPROTO for a bad header, EINVAL for a short range.
Result<ChannelGeometry> parse_channel_header(const std::byte* line, size_t memory_bytes);

// Pushes [data, data + bytes) to memory with the non-coherent instructions
// (the creator of shared memory formats it before handing it over).
void write_back_range(const std::byte* data, size_t bytes);

}  // namespace cxlpool::devpool::detail
