// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/devpool/pod_region.hpp"

#include <cstring>
#include <string>

namespace cxlpool::devpool {
namespace {

// Header line offsets.
constexpr size_t kMagicAt = 0;
constexpr size_t kVersionAt = 4;
constexpr size_t kCoherenceAt = 6;
constexpr size_t kMaxDevicesAt = 8;
constexpr size_t kMaxAttachmentsAt = 12;
constexpr size_t kSlotBytesAt = 16;
constexpr size_t kDevicesOffsetAt = 24;
constexpr size_t kAttachmentsOffsetAt = 32;
constexpr size_t kSlotsOffsetAt = 40;
constexpr size_t kTotalBytesAt = 48;

// Table line offsets (both kinds of line).
constexpr size_t kGenerationAt = 0;
constexpr size_t kIdAt = 4;
constexpr size_t kStateAt = 8;
constexpr size_t kActiveAt = 9;  // attachment: active leg; device: health
constexpr size_t kKindAt = 10;
constexpr size_t kDevice0At = 12;
constexpr size_t kSlot0At = 20;
constexpr size_t kSealAt = 56;  // generation | id << 32, written last

constexpr uint8_t kHighestKind = 1;    // DeviceKind::kBlk
constexpr uint8_t kHighestHealth = 2;  // DeviceHealth::kDead

template <typename T>
void put(std::byte* at, size_t offset, T value) {
  std::memcpy(at + offset, &value, sizeof value);
}

template <typename T>
T get(const std::byte* at, size_t offset) {
  T value;
  std::memcpy(&value, at + offset, sizeof value);
  return value;
}

uint64_t seal(uint32_t generation, uint32_t id) { return uint64_t{generation} | uint64_t{id} << 32; }

uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

Result<void> check_seal(const std::byte* in) {
  if (get<uint64_t>(in, kSealAt) != seal(get<uint32_t>(in, kGenerationAt), get<uint32_t>(in, kIdAt))) {
    return fail(EAGAIN, "pod table line caught half written");
  }
  return {};
}

}  // namespace

LinkGeometry pod_link_geometry(DeviceKind kind, uint64_t buffer_bytes, Coherence coherence) {
  LinkGeometry g;
  g.requests = {kPodChannelSlots, kind == DeviceKind::kBlk ? 56u : 16u, coherence};
  g.completions = {kPodChannelSlots, 16, coherence};
  g.frontend_buffer_bytes = buffer_bytes;
  g.backend_buffer_bytes = buffer_bytes;
  return g;
}

uint64_t pod_slot_bytes(uint64_t buffer_bytes) {
  return round_up(link_bytes(pod_link_geometry(DeviceKind::kNet, buffer_bytes, Coherence::kCoherent)), kPodSlotAlign);
}

Result<PodLayout> pod_layout(const PodGeometry& g) {
  if (g.max_devices == 0 || g.max_devices > kMaxPodDevices) {
    return fail(EINVAL, "pod: max_devices " + std::to_string(g.max_devices) + " outside 1.." +
                            std::to_string(kMaxPodDevices));
  }
  if (g.max_attachments == 0 || g.max_attachments > kMaxPodAttachments) {
    return fail(EINVAL, "pod: max_attachments " + std::to_string(g.max_attachments) + " outside 1.." +
                            std::to_string(kMaxPodAttachments));
  }
  // Bounded so that the region's size cannot overflow: 8192 slots of 1 TiB at most.
  if (g.slot_bytes == 0 || g.slot_bytes % kPodSlotAlign != 0 || g.slot_bytes > (1ull << 40)) {
    return fail(EINVAL, "pod: slot_bytes " + std::to_string(g.slot_bytes) + " is not a multiple of 4096 in (0, 1 TiB]");
  }
  if (g.coherence != Coherence::kCoherent && g.coherence != Coherence::kNonCoherent) {
    return fail(EINVAL, "pod: unknown coherence");
  }
  PodLayout l;
  l.devices_offset = kLineBytes;
  l.attachments_offset = l.devices_offset + uint64_t{g.max_devices} * kLineBytes;
  l.slots_offset = round_up(l.attachments_offset + uint64_t{g.max_attachments} * kLineBytes, kPodSlotAlign);
  l.total_bytes = l.slots_offset + uint64_t{g.link_slots()} * g.slot_bytes;
  return l;
}

Result<void> format_pod(std::span<std::byte> memory, const PodGeometry& g) {
  auto layout = pod_layout(g);
  if (!layout) return tl::unexpected(layout.error());
  if (memory.size() < layout->total_bytes || reinterpret_cast<uintptr_t>(memory.data()) % kLineBytes != 0) {
    return fail(EINVAL, "pod: region of " + std::to_string(memory.size()) + " bytes (or unaligned) for a layout of " +
                            std::to_string(layout->total_bytes));
  }
  std::memset(memory.data(), 0, layout->slots_offset);
  std::byte* h = memory.data();
  put(h, kMagicAt, kPodMagic);
  put(h, kVersionAt, kPodVersion);
  put(h, kCoherenceAt, static_cast<uint8_t>(g.coherence));
  put(h, kMaxDevicesAt, g.max_devices);
  put(h, kMaxAttachmentsAt, g.max_attachments);
  put(h, kSlotBytesAt, g.slot_bytes);
  put(h, kDevicesOffsetAt, layout->devices_offset);
  put(h, kAttachmentsOffsetAt, layout->attachments_offset);
  put(h, kSlotsOffsetAt, layout->slots_offset);
  put(h, kTotalBytesAt, layout->total_bytes);
  return {};
}

Result<PodGeometry> read_pod_header(std::span<const std::byte> memory) {
  if (memory.size() < kLineBytes) return fail(EINVAL, "pod: region shorter than its header");
  const std::byte* h = memory.data();
  if (get<uint32_t>(h, kMagicAt) != kPodMagic) return fail(EPROTO, "pod: bad magic");
  if (get<uint16_t>(h, kVersionAt) != kPodVersion) {
    return fail(EPROTO, "pod: version " + std::to_string(get<uint16_t>(h, kVersionAt)) + ", expected " +
                            std::to_string(kPodVersion));
  }
  PodGeometry g;
  g.coherence = static_cast<Coherence>(get<uint8_t>(h, kCoherenceAt));
  g.max_devices = get<uint32_t>(h, kMaxDevicesAt);
  g.max_attachments = get<uint32_t>(h, kMaxAttachmentsAt);
  g.slot_bytes = get<uint64_t>(h, kSlotBytesAt);
  auto layout = pod_layout(g);
  if (!layout) return fail(EPROTO, layout.error().message);
  // The offsets are derived, not trusted: a header that disagrees is corrupt.
  if (get<uint64_t>(h, kDevicesOffsetAt) != layout->devices_offset ||
      get<uint64_t>(h, kAttachmentsOffsetAt) != layout->attachments_offset ||
      get<uint64_t>(h, kSlotsOffsetAt) != layout->slots_offset || get<uint64_t>(h, kTotalBytesAt) != layout->total_bytes) {
    return fail(EPROTO, "pod: header offsets disagree with its geometry");
  }
  if (memory.size() < layout->total_bytes) {
    return fail(EINVAL, "pod: region of " + std::to_string(memory.size()) + " bytes, the header says " +
                            std::to_string(layout->total_bytes));
  }
  return g;
}

Result<std::span<std::byte>> pod_slot(std::span<std::byte> memory, const PodGeometry& g, uint32_t slot) {
  auto layout = pod_layout(g);
  if (!layout) return tl::unexpected(layout.error());
  if (slot >= g.link_slots()) return fail(ERANGE, "pod: slot " + std::to_string(slot) + " past the last");
  if (memory.size() < layout->total_bytes) return fail(EINVAL, "pod: region shorter than its layout");
  return memory.subspan(layout->slots_offset + uint64_t{slot} * g.slot_bytes, g.slot_bytes);
}

void encode_line(const AttachmentLine& line, std::byte out[kLineBytes]) {
  std::memset(out, 0, kLineBytes);
  put(out, kGenerationAt, line.generation);
  put(out, kIdAt, line.attachment_id);
  put(out, kStateAt, static_cast<uint8_t>(line.state));
  put(out, kActiveAt, line.active);
  put(out, kKindAt, line.kind);
  for (int i = 0; i < 2; ++i) {
    put(out, kDevice0At + 4 * i, line.device[i]);
    put(out, kSlot0At + 4 * i, line.slot[i]);
  }
  put(out, kSealAt, seal(line.generation, line.attachment_id));
}

void encode_line(const DeviceLine& line, std::byte out[kLineBytes]) {
  std::memset(out, 0, kLineBytes);
  put(out, kGenerationAt, line.generation);
  put(out, kIdAt, line.device_id);
  put(out, kStateAt, static_cast<uint8_t>(line.state));
  put(out, kActiveAt, line.health);
  put(out, kKindAt, line.kind);
  put(out, kSealAt, seal(line.generation, line.device_id));
}

Result<AttachmentLine> decode_attachment_line(const std::byte in[kLineBytes], const PodGeometry& g) {
  if (auto ok = check_seal(in); !ok) return tl::unexpected(ok.error());
  AttachmentLine line;
  line.generation = get<uint32_t>(in, kGenerationAt);
  line.attachment_id = get<uint32_t>(in, kIdAt);
  const uint8_t state = get<uint8_t>(in, kStateAt);
  line.active = get<uint8_t>(in, kActiveAt);
  line.kind = get<uint8_t>(in, kKindAt);
  if (state > static_cast<uint8_t>(LineState::kInUse)) return fail(EPROTO, "attachment line: unknown state");
  line.state = static_cast<LineState>(state);
  if (line.active > 1) return fail(EPROTO, "attachment line: active leg " + std::to_string(line.active));
  if (line.kind > kHighestKind) return fail(EPROTO, "attachment line: unknown kind");
  for (int i = 0; i < 2; ++i) {
    line.device[i] = get<uint32_t>(in, kDevice0At + 4 * i);
    line.slot[i] = get<uint32_t>(in, kSlot0At + 4 * i);
    if (line.state == LineState::kInUse && line.slot[i] >= g.link_slots()) {
      return fail(EPROTO, "attachment line: slot " + std::to_string(line.slot[i]) + " past the last");
    }
  }
  return line;
}

Result<DeviceLine> decode_device_line(const std::byte in[kLineBytes]) {
  if (auto ok = check_seal(in); !ok) return tl::unexpected(ok.error());
  DeviceLine line;
  line.generation = get<uint32_t>(in, kGenerationAt);
  line.device_id = get<uint32_t>(in, kIdAt);
  const uint8_t state = get<uint8_t>(in, kStateAt);
  line.health = get<uint8_t>(in, kActiveAt);
  line.kind = get<uint8_t>(in, kKindAt);
  if (state > static_cast<uint8_t>(LineState::kInUse)) return fail(EPROTO, "device line: unknown state");
  line.state = static_cast<LineState>(state);
  if (line.health > kHighestHealth) return fail(EPROTO, "device line: unknown health");
  if (line.kind > kHighestKind) return fail(EPROTO, "device line: unknown kind");
  return line;
}

}  // namespace cxlpool::devpool
