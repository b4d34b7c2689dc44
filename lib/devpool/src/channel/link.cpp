// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/devpool/link.hpp"

#include <cstring>

#include "channel_format.hpp"

namespace cxlpool::devpool {

namespace {

constexpr uint64_t kAreaAlign = 4096;
// A buffer area larger than this is a corrupt header, not a real link.
constexpr uint64_t kMaxBufferBytes = uint64_t{1} << 40;

// The header line, little-endian; read-only after format.
struct LinkHeader {
  uint32_t magic;
  uint16_t version;
  uint16_t reserved0;
  uint32_t request_slots;
  uint32_t request_record_bytes;
  uint32_t completion_slots;
  uint32_t completion_record_bytes;
  uint8_t request_coherence;
  uint8_t completion_coherence;
  uint8_t reserved1[6];
  uint64_t frontend_buffer_bytes;
  uint64_t backend_buffer_bytes;
  uint8_t reserved2[16];
};
static_assert(sizeof(LinkHeader) == kLineBytes);

uint64_t round_up(uint64_t n) { return (n + kAreaAlign - 1) / kAreaAlign * kAreaAlign; }

struct LinkAreas {
  uint64_t request = 0, completion = 0, frontend = 0, backend = 0, end = 0;
};

LinkAreas areas_of(const LinkGeometry& g) {
  LinkAreas a;
  a.request = kAreaAlign;
  a.completion = a.request + round_up(channel_bytes(g.requests));
  a.frontend = a.completion + round_up(channel_bytes(g.completions));
  a.backend = a.frontend + g.frontend_buffer_bytes;
  a.end = a.backend + g.backend_buffer_bytes;
  return a;
}

bool buffers_valid(uint64_t bytes) { return bytes % kAreaAlign == 0 && bytes <= kMaxBufferBytes; }

bool link_geometry_valid(const LinkGeometry& g) {
  return detail::geometry_valid(g.requests) && detail::geometry_valid(g.completions) &&
         buffers_valid(g.frontend_buffer_bytes) && buffers_valid(g.backend_buffer_bytes);
}

bool any_non_coherent(const LinkGeometry& g) {
  return g.requests.coherence == Coherence::kNonCoherent || g.completions.coherence == Coherence::kNonCoherent;
}

}  // namespace

size_t link_bytes(const LinkGeometry& g) { return areas_of(g).end; }

Result<void> format_link(std::span<std::byte> memory, const LinkGeometry& g) {
  if (!link_geometry_valid(g)) {
    return fail(EINVAL, "link: bad geometry (channels as format_channel takes them, buffer areas multiples of "
                        "4096 up to 1 TiB)");
  }
  if (reinterpret_cast<uintptr_t>(memory.data()) % kLineBytes != 0) {
    return fail(EINVAL, "link: memory is not 64-byte aligned");
  }
  const LinkAreas a = areas_of(g);
  if (memory.size() < a.end) {
    return fail(EINVAL, "link: " + std::to_string(memory.size()) + " bytes, needs " + std::to_string(a.end));
  }
  LinkHeader h{};
  h.magic = kLinkMagic;
  h.version = kLinkVersion;
  h.request_slots = g.requests.slots;
  h.request_record_bytes = g.requests.record_bytes;
  h.completion_slots = g.completions.slots;
  h.completion_record_bytes = g.completions.record_bytes;
  h.request_coherence = static_cast<uint8_t>(g.requests.coherence);
  h.completion_coherence = static_cast<uint8_t>(g.completions.coherence);
  h.frontend_buffer_bytes = g.frontend_buffer_bytes;
  h.backend_buffer_bytes = g.backend_buffer_bytes;
  std::memset(memory.data(), 0, kAreaAlign);
  std::memcpy(memory.data(), &h, sizeof h);
  if (any_non_coherent(g)) detail::write_back_range(memory.data(), kLineBytes);
  auto requests = format_channel(memory.subspan(a.request, a.completion - a.request), g.requests);
  if (!requests) return requests;
  return format_channel(memory.subspan(a.completion, a.frontend - a.completion), g.completions);
}

Result<LinkView> open_link(std::span<std::byte> memory) {
  if (reinterpret_cast<uintptr_t>(memory.data()) % kLineBytes != 0) {
    return fail(EINVAL, "link: memory is not 64-byte aligned");
  }
  if (memory.size() < kLineBytes) return fail(EINVAL, "link: range shorter than its header line");
  // The memory may be non-coherent and may have held another link before:
  // read the header from memory, not from a copy this host's cache kept.
  NonCoherentLines().invalidate(memory.data());
  LinkHeader h;
  std::memcpy(&h, memory.data(), sizeof h);
  if (h.magic != kLinkMagic) return fail(EPROTO, "link header: bad magic");
  if (h.version != kLinkVersion) return fail(EPROTO, "link header: version " + std::to_string(h.version));
  LinkGeometry g;
  g.requests = {h.request_slots, h.request_record_bytes, static_cast<Coherence>(h.request_coherence)};
  g.completions = {h.completion_slots, h.completion_record_bytes, static_cast<Coherence>(h.completion_coherence)};
  g.frontend_buffer_bytes = h.frontend_buffer_bytes;
  g.backend_buffer_bytes = h.backend_buffer_bytes;
  if (!link_geometry_valid(g)) return fail(EPROTO, "link header: bad geometry");
  const LinkAreas a = areas_of(g);
  if (memory.size() < a.end) {
    return fail(EINVAL, "link: range of " + std::to_string(memory.size()) + " bytes, its header says " +
                            std::to_string(a.end));
  }
  LinkView view;
  view.geometry = g;
  view.request_channel = memory.subspan(a.request, channel_bytes(g.requests));
  view.completion_channel = memory.subspan(a.completion, channel_bytes(g.completions));
  view.frontend_buffers = memory.subspan(a.frontend, g.frontend_buffer_bytes);
  view.backend_buffers = memory.subspan(a.backend, g.backend_buffer_bytes);
  return view;
}

Result<std::span<std::byte>> checked_buffer(std::span<std::byte> area, uint64_t offset, uint64_t length) {
  // offset <= size first, so size - offset cannot wrap.
  if (offset > area.size() || length > area.size() - offset) {
    return fail(EBADMSG, "buffer [" + std::to_string(offset) + ", +" + std::to_string(length) +
                             ") outside its " + std::to_string(area.size()) + "-byte area");
  }
  return area.subspan(offset, length);
}

}  // namespace cxlpool::devpool
