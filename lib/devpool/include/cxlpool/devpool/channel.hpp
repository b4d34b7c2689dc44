// SPDX-License-Identifier: Apache-2.0
// A single-producer single-consumer message channel in shared memory.
//
// Layout (all 64-byte lines, one writer per line):
//   line 0        header: magic, version, slot count, record size, coherence;
//                 written once by the creator, read-only afterwards
//   line 1        consumer line: records consumed so far (bytes 0..7) and
//                 slots consumed so far (bytes 56..63); the consumer's only
//                 line; the producer reads it for flow control
//   line 2..      slots: each slot is one line, written only by the producer:
//                 up to 56 bytes of records (batching: as many whole records
//                 as fit, `count` of them) and, in the same line (bytes
//                 56..63), sequence = position + 1 (mod 2^32) | count << 32 |
//                 record_bytes << 48. A slot is ready for
//                 the consumer when its sequence is the one it expects, so a
//                 stale line (an earlier lap) is never taken for a new one,
//                 and a message is never split across lines (no torn reads).
//
// Non-coherent protocol: the producer writes the slot, writes the line back
// and fences before it counts it as published; the consumer reads a slot,
// and if it is not ready yet invalidates it before looking again; once it has
// consumed every record of a slot it invalidates that line, so that a later
// lap is fetched from memory and not served from its cache. The consumer
// line is written back by the consumer and invalidated by the producer
// before each read.
//
// A side attaches to a freshly formatted channel only (positions start at 0);
// it invalidates every line of the channel at attach so that nothing a cache
// kept from an earlier user of the memory is read. docs/devpool.md explains
// the protocol and its limits.
//
// Everything read from the shared memory is hostile: the header is checked
// at attach, a slot's count and record size are checked on every read, and
// the records themselves are checked by the engine that decodes them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "cxlpool/common/result.hpp"
#include "cxlpool/devpool/line_access.hpp"

namespace cxlpool::devpool {

inline constexpr uint32_t kChannelMagic = 0x4c48'4358;  // "XCHL"
inline constexpr uint16_t kChannelVersion = 1;
inline constexpr size_t kSlotPayloadBytes = 56;
inline constexpr uint32_t kMaxChannelSlots = 1u << 20;

struct ChannelGeometry {
  uint32_t slots = 1024;     // power of two, 2..kMaxChannelSlots
  uint32_t record_bytes = 16;  // 8..56; ⌊56 / record_bytes⌋ records per slot
  Coherence coherence = Coherence::kCoherent;

  uint32_t records_per_slot() const { return static_cast<uint32_t>(kSlotPayloadBytes / record_bytes); }
};

// Bytes a channel of this geometry occupies (header + consumer line + slots).
size_t channel_bytes(const ChannelGeometry& g);

// Writes a fresh header and zeroed slots into `memory` (64-byte aligned,
// at least channel_bytes(g)). EINVAL for a bad geometry or a short/unaligned
// range. The creator then hands the memory to exactly one producer and one
// consumer.
Result<void> format_channel(std::span<std::byte> memory, const ChannelGeometry& g);

// Reads and validates the header of a channel someone else formatted.
// EPROTO for a bad magic/version/geometry, EINVAL for a short range.
Result<ChannelGeometry> read_channel_header(std::span<const std::byte> memory);

// The producer side. `Lines` is a line-access policy (line_access.hpp).
template <class Lines>
class ChannelProducer {
 public:
  // Attaches to a formatted channel; validates the header.
  static Result<ChannelProducer> attach(std::span<std::byte> memory, Lines lines = {});

  // Queues one record (record_bytes long) into the slot being filled. Returns
  // false when the ring is full (nothing queued): call flush() and retry
  // later. A filled slot is published automatically.
  bool push(const void* record);
  // Publishes the partly filled slot, if any. Returns the number of records
  // published by this call.
  uint32_t flush();
  // Slots the consumer has not yet consumed (re-reads the consumer line).
  uint32_t in_flight();
  // Slots published so far.
  uint64_t published() const { return position_; }
  // Records queued in the slot being filled (not yet published).
  uint32_t staged() const { return staged_records_; }
  const ChannelGeometry& geometry() const { return geometry_; }
  Lines& lines() { return lines_; }

 private:
  ChannelProducer() = default;
  bool slot_free();
  void refresh_consumed();
  void publish();
  std::byte* slot_line(uint64_t position) const;

  std::byte* base_ = nullptr;
  ChannelGeometry geometry_{};
  Lines lines_{};
  uint64_t position_ = 0;        // next slot to publish
  uint64_t consumed_seen_ = 0;   // last value read from the consumer line
  alignas(64) std::byte staging_[kLineBytes]{};
  uint32_t staged_records_ = 0;
};

// The consumer side.
template <class Lines>
class ChannelConsumer {
 public:
  static Result<ChannelConsumer> attach(std::span<std::byte> memory, Lines lines = {});

  // Copies up to `max_records` ready records into `out` (record_bytes each)
  // and returns how many. Returns EPROTO when the slot it reads carries a
  // count or record size the channel's geometry does not allow (a corrupt or
  // hostile producer); the channel is then unusable.
  Result<uint32_t> poll(void* out, uint32_t max_records);
  // Slots consumed so far.
  uint64_t consumed() const { return position_; }
  // Records consumed so far.
  uint64_t records_consumed() const { return records_consumed_; }
  bool broken() const { return broken_; }
  // For comparison only: fetch the slot's line from memory (invalidate and
  // reload) before every record instead of once per line, as a channel that
  // invalidates per message does. Same results, more memory traffic.
  void set_per_record_reload(bool on) { per_record_reload_ = on; }
  const ChannelGeometry& geometry() const { return geometry_; }
  Lines& lines() { return lines_; }

 private:
  ChannelConsumer() = default;
  std::byte* slot_line(uint64_t position) const;
  Result<bool> fetch_slot();
  Result<void> reload_slot();
  void finish_slot();
  void publish_consumed();

  std::byte* base_ = nullptr;
  ChannelGeometry geometry_{};
  Lines lines_{};
  uint64_t position_ = 0;            // next slot to read
  alignas(64) std::byte current_[kLineBytes]{};  // the slot being drained
  uint32_t current_count_ = 0;
  uint32_t current_next_ = 0;
  uint32_t since_publish_ = 0;
  uint32_t publish_every_ = 1;   // slots between consumer-line updates while busy
  uint64_t records_consumed_ = 0;
  bool broken_ = false;
  bool per_record_reload_ = false;
};

}  // namespace cxlpool::devpool
