// SPDX-License-Identifier: Apache-2.0
#include "channel_format.hpp"

namespace cxlpool::devpool {

using detail::ChannelHeader;

size_t channel_bytes(const ChannelGeometry& g) { return (detail::kFirstSlotLine + size_t{g.slots}) * kLineBytes; }

namespace detail {

bool geometry_valid(const ChannelGeometry& g) {
  const bool power_of_two = g.slots >= 2 && g.slots <= kMaxChannelSlots && (g.slots & (g.slots - 1)) == 0;
  const bool record_ok = g.record_bytes >= 8 && g.record_bytes <= kSlotPayloadBytes;
  const bool coherence_ok = g.coherence == Coherence::kCoherent || g.coherence == Coherence::kNonCoherent;
  return power_of_two && record_ok && coherence_ok;
}

Result<ChannelGeometry> parse_channel_header(const std::byte* line, size_t memory_bytes) {
  ChannelHeader h;
  std::memcpy(&h, line, sizeof h);
  if (h.magic != kChannelMagic) return fail(EPROTO, "channel header: bad magic");
  if (h.version != kChannelVersion) {
    return fail(EPROTO, "channel header: version " + std::to_string(h.version) + " (this build reads " +
                            std::to_string(kChannelVersion) + ")");
  }
  ChannelGeometry g;
  g.slots = h.slots;
  g.record_bytes = h.record_bytes;
  g.coherence = static_cast<Coherence>(h.coherence);
  if (!geometry_valid(g) || h.records_per_slot != g.records_per_slot()) {
    return fail(EPROTO, "channel header: bad geometry (" + std::to_string(h.slots) + " slots of " +
                            std::to_string(h.record_bytes) + "-byte records, coherence " +
                            std::to_string(h.coherence) + ")");
  }
  if (memory_bytes < channel_bytes(g)) {
    return fail(EINVAL, "channel: range of " + std::to_string(memory_bytes) + " bytes is shorter than its " +
                            std::to_string(channel_bytes(g)) + "-byte channel");
  }
  return g;
}

void write_back_range(const std::byte* data, size_t bytes) {
  NonCoherentLines lines;
  for (size_t off = 0; off < bytes; off += kLineBytes) lines.write_back(data + off);
  lines.fence();
}

}  // namespace detail

Result<void> format_channel(std::span<std::byte> memory, const ChannelGeometry& g) {
  if (!detail::geometry_valid(g)) {
    return fail(EINVAL, "channel: bad geometry (" + std::to_string(g.slots) + " slots of " +
                            std::to_string(g.record_bytes) + "-byte records)");
  }
  if (reinterpret_cast<uintptr_t>(memory.data()) % kLineBytes != 0) {
    return fail(EINVAL, "channel: memory is not 64-byte aligned");
  }
  const size_t bytes = channel_bytes(g);
  if (memory.size() < bytes) {
    return fail(EINVAL, "channel: " + std::to_string(memory.size()) + " bytes, needs " + std::to_string(bytes));
  }
  std::memset(memory.data(), 0, bytes);
  ChannelHeader h{};
  h.magic = kChannelMagic;
  h.version = kChannelVersion;
  h.coherence = static_cast<uint8_t>(g.coherence);
  h.slots = g.slots;
  h.record_bytes = g.record_bytes;
  h.records_per_slot = g.records_per_slot();
  std::memcpy(memory.data(), &h, sizeof h);
  // The other host must find the fresh lines in memory, not in our cache.
  if (g.coherence == Coherence::kNonCoherent) detail::write_back_range(memory.data(), bytes);
  return {};
}

Result<ChannelGeometry> read_channel_header(std::span<const std::byte> memory) {
  if (memory.size() < kLineBytes) return fail(EINVAL, "channel: range shorter than its header line");
  return detail::parse_channel_header(memory.data(), memory.size());
}

}  // namespace cxlpool::devpool
