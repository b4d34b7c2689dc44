// SPDX-License-Identifier: Apache-2.0
// The pod region: one shared file that the daemon and every engine of the
// pod map. It holds
//
//   line 0            header: magic, version, coherence, table sizes, slot
//                     size, offsets (written once by the daemon)
//   device lines      one 64-byte line per device of the registry: id,
//                     kind, state
//   attachment lines  one 64-byte line per attachment: generation, which
//                     leg is active, each leg's device and link slot
//   link slots        4096-aligned, of one fixed size: each holds one link
//                     (link.hpp) a frontend shares with one backend
//
// Only the allocator (the daemon) writes the table. A line is written
// whole, then written back and fenced (the line-access policy of the pod's
// coherence); readers invalidate before they read. A line carries its
// generation and id twice, at its start and in its last word, so a reader
// that catches a line half written sees the two disagree and reads again.
// Engines treat everything they read here as untrusted: a line is checked
// against the header's geometry before it is used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "cxlpool/common/result.hpp"
#include "cxlpool/devpool/line_access.hpp"
#include "cxlpool/devpool/link.hpp"
#include "cxlpool/devpool/pod_state.hpp"

namespace cxlpool::devpool {

inline constexpr uint32_t kPodMagic = 0x444f'5058;  // "XPOD"
inline constexpr uint16_t kPodVersion = 1;
inline constexpr uint32_t kMaxPodDevices = 4096;
inline constexpr uint32_t kMaxPodAttachments = 4096;
inline constexpr uint64_t kPodSlotAlign = 4096;

struct PodGeometry {
  uint32_t max_devices = 64;
  uint32_t max_attachments = 32;  // each attachment owns two link slots
  uint64_t slot_bytes = 0;        // a multiple of 4096 that holds one link
  Coherence coherence = Coherence::kCoherent;
  uint32_t link_slots() const { return max_attachments * 2; }
  bool operator==(const PodGeometry&) const = default;
};

struct PodLayout {
  uint64_t devices_offset = 0;
  uint64_t attachments_offset = 0;
  uint64_t slots_offset = 0;
  uint64_t total_bytes = 0;
};

// EINVAL for a geometry outside the limits (no tables, a slot size that is
// not a positive multiple of 4096, more than kMaxPod* lines).
Result<PodLayout> pod_layout(const PodGeometry& g);

// Writes the header and empty tables into `memory` (64-byte aligned, at
// least pod_layout(g).total_bytes); the slots are left as they are.
Result<void> format_pod(std::span<std::byte> memory, const PodGeometry& g);

// Validates the header of a pod region: EPROTO for a bad magic, version or
// geometry, EINVAL for a range shorter than the header says.
Result<PodGeometry> read_pod_header(std::span<const std::byte> memory);

// Link slot `slot` of a validated region; ERANGE past the last slot.
Result<std::span<std::byte>> pod_slot(std::span<std::byte> memory, const PodGeometry& g, uint32_t slot);

// Every slot of a pod holds a link of one geometry: channels of
// kPodChannelSlots slots and `buffer_bytes` of buffers on each side; only
// the record sizes depend on the kind (net: 16-byte descriptors both ways;
// blk: 56-byte commands, 16-byte completions), and they do not change a
// link's size, so a slot can be formatted for either kind.
inline constexpr uint32_t kPodChannelSlots = 1024;
LinkGeometry pod_link_geometry(DeviceKind kind, uint64_t buffer_bytes, Coherence coherence);
// The slot size for links of `buffer_bytes` buffers: link_bytes() rounded up to 4096.
uint64_t pod_slot_bytes(uint64_t buffer_bytes);

enum class LineState : uint8_t { kFree = 0, kInUse = 1 };

struct AttachmentLine {
  uint32_t generation = 0;
  uint32_t attachment_id = 0;
  LineState state = LineState::kFree;
  uint8_t active = 0;  // 0 or 1: the leg that carries the traffic
  uint8_t kind = 0;    // DeviceKind
  uint32_t device[2] = {0, 0};  // 0: the leg has no device
  uint32_t slot[2] = {0, 0};
  uint32_t active_device() const { return device[active & 1]; }
  uint32_t active_slot() const { return slot[active & 1]; }
  bool operator==(const AttachmentLine&) const = default;
};

struct DeviceLine {
  uint32_t generation = 0;
  uint32_t device_id = 0;
  LineState state = LineState::kFree;
  uint8_t kind = 0;    // DeviceKind
  uint8_t health = 0;  // DeviceHealth
  bool operator==(const DeviceLine&) const = default;
};

// The 64-byte wire form of the lines.
void encode_line(const AttachmentLine& line, std::byte out[kLineBytes]);
void encode_line(const DeviceLine& line, std::byte out[kLineBytes]);
// EAGAIN for a line caught half written (its two copies of generation and
// id differ); EPROTO for values outside the geometry (an active leg above
// 1, a slot past the last, an unknown state or kind).
Result<AttachmentLine> decode_attachment_line(const std::byte in[kLineBytes], const PodGeometry& g);
Result<DeviceLine> decode_device_line(const std::byte in[kLineBytes]);

// The allocator's side: writes whole lines, then writes them back and fences.
template <class Lines>
class PodTableWriter {
 public:
  PodTableWriter(std::span<std::byte> memory, const PodGeometry& g, Lines lines = {})
      : memory_(memory), geometry_(g), layout_(*pod_layout(g)), lines_(lines) {}

  void write(uint32_t index, const AttachmentLine& line) {
    if (index >= geometry_.max_attachments) return;
    put(layout_.attachments_offset + uint64_t{index} * kLineBytes, line);
  }
  void write(uint32_t index, const DeviceLine& line) {
    if (index >= geometry_.max_devices) return;
    put(layout_.devices_offset + uint64_t{index} * kLineBytes, line);
  }
  Lines& lines() { return lines_; }

 private:
  template <class Line>
  void put(uint64_t offset, const Line& line) {
    alignas(kLineBytes) std::byte buffer[kLineBytes];
    encode_line(line, buffer);
    std::byte* at = memory_.data() + offset;
    lines_.store(at, buffer);
    lines_.write_back(at);
    lines_.fence();
  }

  std::span<std::byte> memory_;
  PodGeometry geometry_;
  PodLayout layout_;
  Lines lines_;
};

// An engine's side: reads the line of its attachment (which link is active,
// in which slots) and the state of devices.
template <class Lines>
class PodTableReader {
 public:
  static constexpr int kReadTries = 8;

  // Validates the header (read_pod_header).
  static Result<PodTableReader> open(std::span<std::byte> memory, Lines lines = {}) {
    auto g = read_pod_header(memory);
    if (!g) return tl::unexpected(g.error());
    return PodTableReader(memory, *g, lines);
  }

  const PodGeometry& geometry() const { return geometry_; }

  // ERANGE for an index past the table; EAGAIN when every try caught the
  // line half written; EPROTO for a line the geometry does not allow.
  Result<AttachmentLine> attachment(uint32_t index) {
    if (index >= geometry_.max_attachments) return fail(ERANGE, "attachment line " + std::to_string(index) + " past the table");
    return read_line(layout_.attachments_offset + uint64_t{index} * kLineBytes,
                     [&](const std::byte* in) { return decode_attachment_line(in, geometry_); });
  }
  Result<DeviceLine> device(uint32_t index) {
    if (index >= geometry_.max_devices) return fail(ERANGE, "device line " + std::to_string(index) + " past the table");
    return read_line(layout_.devices_offset + uint64_t{index} * kLineBytes,
                     [](const std::byte* in) { return decode_device_line(in); });
  }
  // The link slot an attachment line names.
  Result<std::span<std::byte>> slot(uint32_t slot) { return pod_slot(memory_, geometry_, slot); }

 private:
  PodTableReader(std::span<std::byte> memory, const PodGeometry& g, Lines lines)
      : memory_(memory), geometry_(g), layout_(*pod_layout(g)), lines_(lines) {}

  template <class Decode>
  auto read_line(uint64_t offset, Decode decode) -> decltype(decode(nullptr)) {
    const std::byte* at = memory_.data() + offset;
    alignas(kLineBytes) std::byte buffer[kLineBytes];
    for (int i = 0; i < kReadTries; ++i) {
      lines_.invalidate(at);
      lines_.load(at, buffer);
      auto line = decode(buffer);
      if (line || line.error().code != EAGAIN) return line;
    }
    return fail(EAGAIN, "pod table line at offset " + std::to_string(offset) + " is being rewritten");
  }

  std::span<std::byte> memory_;
  PodGeometry geometry_;
  PodLayout layout_;
  Lines lines_;
};

}  // namespace cxlpool::devpool
