// SPDX-License-Identifier: Apache-2.0
// The channel sides' code, a template over the line access policy. Included
// by the translation units that instantiate it: channel.cpp for the real
// policies, channel_model.cpp (tests only) for the cache model.
#pragma once

#include <algorithm>
#include <cstring>

#include "channel_format.hpp"
#include "cxlpool/devpool/channel.hpp"

namespace cxlpool::devpool::detail {

// Checks the range, reads the header through the policy (from memory, not
// from a stale cached copy) and drops every line of the channel from this
// side's cache.
template <class Lines>
Result<ChannelGeometry> attach_channel(std::span<std::byte> memory, Lines& lines) {
  if (reinterpret_cast<uintptr_t>(memory.data()) % kLineBytes != 0) {
    return fail(EINVAL, "channel: memory is not 64-byte aligned");
  }
  if (memory.size() < kLineBytes) return fail(EINVAL, "channel: range shorter than its header line");
  alignas(kLineBytes) std::byte header[kLineBytes];
  lines.invalidate(memory.data());
  lines.load(memory.data(), header);
  auto g = parse_channel_header(header, memory.size());
  if (!g) return g;
  for (size_t line = kConsumerLine; line < kFirstSlotLine + g->slots; ++line) {
    lines.invalidate(memory.data() + line * kLineBytes);
  }
  return g;
}

}  // namespace cxlpool::devpool::detail

namespace cxlpool::devpool {

template <class Lines>
Result<ChannelProducer<Lines>> ChannelProducer<Lines>::attach(std::span<std::byte> memory, Lines lines) {
  auto g = detail::attach_channel(memory, lines);
  if (!g) return tl::unexpected(g.error());
  ChannelProducer p;
  p.base_ = memory.data();
  p.geometry_ = *g;
  p.lines_ = lines;
  return p;
}

template <class Lines>
std::byte* ChannelProducer<Lines>::slot_line(uint64_t position) const {
  return base_ + (detail::kFirstSlotLine + (position & (geometry_.slots - 1))) * kLineBytes;
}

template <class Lines>
void ChannelProducer<Lines>::refresh_consumed() {
  std::byte* line = base_ + detail::kConsumerLine * kLineBytes;
  alignas(kLineBytes) std::byte copy[kLineBytes];
  lines_.invalidate(line);
  lines_.load(line, copy);
  const uint64_t consumed = detail::read_tail(copy);
  // A consumer can only move forward and never past what was published; any
  // other value is ignored (a hostile consumer can stall its own channel, no
  // more).
  if (consumed >= consumed_seen_ && consumed <= position_) consumed_seen_ = consumed;
}

template <class Lines>
bool ChannelProducer<Lines>::slot_free() {
  if (position_ - consumed_seen_ < geometry_.slots) return true;
  refresh_consumed();
  return position_ - consumed_seen_ < geometry_.slots;
}

template <class Lines>
uint32_t ChannelProducer<Lines>::in_flight() {
  refresh_consumed();
  return static_cast<uint32_t>(position_ - consumed_seen_);
}

template <class Lines>
bool ChannelProducer<Lines>::push(const void* record) {
  if (staged_records_ == 0 && !slot_free()) return false;
  std::memcpy(staging_ + size_t{staged_records_} * geometry_.record_bytes, record, geometry_.record_bytes);
  if (++staged_records_ == geometry_.records_per_slot()) publish();
  return true;
}

template <class Lines>
uint32_t ChannelProducer<Lines>::flush() {
  const uint32_t records = staged_records_;
  if (records != 0) publish();
  return records;
}

template <class Lines>
void ChannelProducer<Lines>::publish() {
  detail::write_tail(staging_, detail::slot_tail(static_cast<uint32_t>(position_ + 1), staged_records_,
                                                 geometry_.record_bytes));
  std::byte* line = slot_line(position_);
  lines_.store(line, staging_);
  // The line must be in memory before anyone can count on it: the consumer
  // of a non-coherent channel only ever sees memory.
  lines_.write_back(line);
  lines_.fence();
  ++position_;
  staged_records_ = 0;
  std::memset(staging_, 0, sizeof staging_);
}

template <class Lines>
Result<ChannelConsumer<Lines>> ChannelConsumer<Lines>::attach(std::span<std::byte> memory, Lines lines) {
  auto g = detail::attach_channel(memory, lines);
  if (!g) return tl::unexpected(g.error());
  ChannelConsumer c;
  c.base_ = memory.data();
  c.geometry_ = *g;
  c.lines_ = lines;
  // While the ring stays busy the consumer line is rewritten every quarter
  // ring: often enough that a producer never waits on a stale count for
  // long, rarely enough that it costs little; when the consumer catches up
  // it publishes at once.
  c.publish_every_ = std::max<uint32_t>(1, g->slots / 4);
  return c;
}

template <class Lines>
std::byte* ChannelConsumer<Lines>::slot_line(uint64_t position) const {
  return base_ + (detail::kFirstSlotLine + (position & (geometry_.slots - 1))) * kLineBytes;
}

template <class Lines>
Result<bool> ChannelConsumer<Lines>::fetch_slot() {
  std::byte* line = slot_line(position_);
  const uint32_t expected = static_cast<uint32_t>(position_ + 1);
  if (per_record_reload_) lines_.invalidate(line);
  lines_.load(line, current_);
  uint64_t tail = detail::read_tail(current_);
  if (detail::tail_sequence(tail) != expected) {
    // Not ready, or a copy of an earlier lap this side's cache kept (a
    // prefetch): look at memory once more.
    lines_.invalidate(line);
    lines_.load(line, current_);
    tail = detail::read_tail(current_);
    if (detail::tail_sequence(tail) != expected) return false;
  }
  const uint32_t count = detail::tail_count(tail);
  if (count == 0 || count > geometry_.records_per_slot() || detail::tail_record_bytes(tail) != geometry_.record_bytes) {
    broken_ = true;
    return fail(EPROTO, "channel slot " + std::to_string(position_) + ": " + std::to_string(count) + " records of " +
                            std::to_string(detail::tail_record_bytes(tail)) + " bytes (channel: at most " +
                            std::to_string(geometry_.records_per_slot()) + " of " +
                            std::to_string(geometry_.record_bytes) + ")");
  }
  current_count_ = count;
  current_next_ = 0;
  return true;
}

template <class Lines>
Result<void> ChannelConsumer<Lines>::reload_slot() {
  std::byte* line = slot_line(position_);
  const uint64_t tail = detail::read_tail(current_);
  lines_.invalidate(line);
  lines_.load(line, current_);
  // A published slot never changes until it is consumed.
  if (detail::read_tail(current_) != tail) {
    broken_ = true;
    return fail(EPROTO, "channel slot " + std::to_string(position_) + " changed while it was being read");
  }
  return {};
}

template <class Lines>
void ChannelConsumer<Lines>::finish_slot() {
  // Every record of the line is consumed: drop it, so that the next lap is
  // read from memory and not from this copy.
  lines_.invalidate(slot_line(position_));
  records_consumed_ += current_count_;
  ++position_;
  ++since_publish_;
  current_count_ = 0;
  current_next_ = 0;
  if (since_publish_ >= publish_every_) publish_consumed();
}

template <class Lines>
void ChannelConsumer<Lines>::publish_consumed() {
  alignas(kLineBytes) std::byte line[kLineBytes]{};
  std::memcpy(line + detail::kRecordsConsumedOffset, &records_consumed_, sizeof records_consumed_);
  detail::write_tail(line, position_);
  std::byte* target = base_ + detail::kConsumerLine * kLineBytes;
  lines_.store(target, line);
  lines_.write_back(target);
  lines_.fence();
  since_publish_ = 0;
}

template <class Lines>
Result<uint32_t> ChannelConsumer<Lines>::poll(void* out, uint32_t max_records) {
  if (broken_) return fail(EPROTO, "channel: broken by an earlier malformed slot");
  auto* dst = static_cast<std::byte*>(out);
  const uint32_t record_bytes = geometry_.record_bytes;
  uint32_t taken = 0;
  bool caught_up = false;
  while (taken < max_records) {
    if (current_next_ == current_count_) {
      auto ready = fetch_slot();
      if (!ready) return tl::unexpected(ready.error());
      if (!*ready) {
        caught_up = true;
        break;
      }
    } else if (per_record_reload_) {
      auto reloaded = reload_slot();
      if (!reloaded) return tl::unexpected(reloaded.error());
    }
    std::memcpy(dst + size_t{taken} * record_bytes, current_ + size_t{current_next_} * record_bytes, record_bytes);
    ++taken;
    if (++current_next_ == current_count_) finish_slot();
  }
  if (caught_up && since_publish_ != 0) publish_consumed();
  return taken;
}

}  // namespace cxlpool::devpool
