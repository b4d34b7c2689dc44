// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/devpool/blk_records.hpp"

#include <bit>
#include <cstring>
#include <string>

#include "cxlpool/devpool/link.hpp"

namespace cxlpool::devpool::blk {
namespace {

static_assert(std::endian::native == std::endian::little, "the records are little-endian on the wire");

constexpr std::int32_t kMaxErrno = 4095;

template <typename T>
void put(std::byte* out, std::size_t at, T value) {
  std::memcpy(out + at, &value, sizeof(T));
}

template <typename T>
T get(const std::byte* in, std::size_t at) {
  T value;
  std::memcpy(&value, in + at, sizeof(T));
  return value;
}

bool all_zero(const std::byte* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] != std::byte{0}) return false;
  }
  return true;
}

bool known_opcode(std::uint8_t op) {
  switch (static_cast<Opcode>(op)) {
    case Opcode::kFlush:
    case Opcode::kWrite:
    case Opcode::kRead:
    case Opcode::kIdentify:
      return true;
  }
  return false;
}

bool aligned(std::uint64_t value, std::uint32_t alignment) { return value % alignment == 0; }

}  // namespace

const char* opcode_name(Opcode op) {
  switch (op) {
    case Opcode::kFlush: return "flush";
    case Opcode::kWrite: return "write";
    case Opcode::kRead: return "read";
    case Opcode::kIdentify: return "identify";
  }
  return "unknown";
}

CommandBytes encode_command(const Command& c) {
  CommandBytes out{};
  put<std::uint8_t>(out.data(), 0, static_cast<std::uint8_t>(c.opcode));
  put<std::uint8_t>(out.data(), 1, c.flags);
  put<std::uint16_t>(out.data(), 2, c.namespace_id);
  put<std::uint32_t>(out.data(), 4, c.command_id);
  put<std::uint64_t>(out.data(), 8, c.offset);
  put<std::uint32_t>(out.data(), 16, c.length);
  put<std::uint64_t>(out.data(), 24, c.buffer_offset);
  return out;
}

std::uint32_t command_id_of(std::span<const std::byte, kCommandBytes> bytes) {
  return get<std::uint32_t>(bytes.data(), 4);
}

Result<Command> decode_command(std::span<const std::byte> bytes) {
  if (bytes.size() != kCommandBytes) return fail(EBADMSG, "blk command of " + std::to_string(bytes.size()) + " bytes");
  // One copy first: the producer may rewrite the shared line while we read it.
  CommandBytes raw;
  std::memcpy(raw.data(), bytes.data(), kCommandBytes);
  const std::byte* p = raw.data();
  Command c;
  const auto op = get<std::uint8_t>(p, 0);
  c.flags = get<std::uint8_t>(p, 1);
  c.namespace_id = get<std::uint16_t>(p, 2);
  c.command_id = get<std::uint32_t>(p, 4);
  c.offset = get<std::uint64_t>(p, 8);
  c.length = get<std::uint32_t>(p, 16);
  c.buffer_offset = get<std::uint64_t>(p, 24);
  if (!all_zero(p + 20, 4) || !all_zero(p + 32, kCommandBytes - 32)) return fail(EBADMSG, "blk command: reserved bytes set");
  if ((c.flags & ~kFlagFua) != 0) return fail(EBADMSG, "blk command: unknown flags " + std::to_string(c.flags));
  if (c.namespace_id != kNamespaceId) return fail(EBADMSG, "blk command: namespace " + std::to_string(c.namespace_id));
  if (!known_opcode(op)) return fail(EOPNOTSUPP, "blk command: opcode " + std::to_string(op));
  c.opcode = static_cast<Opcode>(op);
  return c;
}

CompletionBytes encode_completion(const Completion& c) {
  CompletionBytes out{};
  put<std::uint32_t>(out.data(), 0, c.command_id);
  put<std::int32_t>(out.data(), 4, c.status);
  put<std::uint32_t>(out.data(), 8, c.bytes);
  return out;
}

Result<Completion> decode_completion(std::span<const std::byte> bytes) {
  if (bytes.size() != kCompletionBytes) return fail(EBADMSG, "blk completion of " + std::to_string(bytes.size()) + " bytes");
  CompletionBytes raw;
  std::memcpy(raw.data(), bytes.data(), kCompletionBytes);
  Completion c;
  c.command_id = get<std::uint32_t>(raw.data(), 0);
  c.status = get<std::int32_t>(raw.data(), 4);
  c.bytes = get<std::uint32_t>(raw.data(), 8);
  if (!all_zero(raw.data() + 12, 4)) return fail(EBADMSG, "blk completion: reserved bytes set");
  if (c.status > 0 || c.status < -kMaxErrno) return fail(EBADMSG, "blk completion: status " + std::to_string(c.status));
  if (c.status < 0 && c.bytes != 0) return fail(EBADMSG, "blk completion: bytes with an error status");
  return c;
}

IdentifyBytes encode_identify(const DeviceInfo& info) {
  IdentifyBytes out{};
  put<std::uint32_t>(out.data(), 0, kIdentifyMagic);
  put<std::uint16_t>(out.data(), 4, kIdentifyVersion);
  put<std::uint64_t>(out.data(), 8, info.capacity);
  put<std::uint32_t>(out.data(), 16, info.block_size);
  put<std::uint32_t>(out.data(), 20, info.mem_alignment);
  put<std::uint32_t>(out.data(), 24, info.max_transfer);
  put<std::uint32_t>(out.data(), 28, info.queue_depth);
  put<std::uint32_t>(out.data(), 32, info.flags);
  return out;
}

Result<void> validate_device_info(const DeviceInfo& d) {
  auto pow2_in = [](std::uint64_t v, std::uint64_t lo, std::uint64_t hi) { return v >= lo && v <= hi && std::has_single_bit(v); };
  if (!pow2_in(d.block_size, 512, 64 * 1024)) return fail(EBADMSG, "blk identify: block size " + std::to_string(d.block_size));
  if (!pow2_in(d.mem_alignment, 1, 4096)) return fail(EBADMSG, "blk identify: buffer alignment " + std::to_string(d.mem_alignment));
  if (d.capacity % d.block_size != 0) return fail(EBADMSG, "blk identify: capacity not a multiple of the block size");
  if (d.max_transfer == 0 || d.max_transfer > kMaxTransferBytes || d.max_transfer % d.block_size != 0) {
    return fail(EBADMSG, "blk identify: max transfer " + std::to_string(d.max_transfer));
  }
  if (d.queue_depth == 0 || d.queue_depth > 65536) return fail(EBADMSG, "blk identify: queue depth " + std::to_string(d.queue_depth));
  if ((d.flags & ~kIdentifyReadOnly) != 0) return fail(EBADMSG, "blk identify: unknown flags");
  return {};
}

Result<DeviceInfo> decode_identify(std::span<const std::byte> bytes) {
  if (bytes.size() < kIdentifyBytes) return fail(EBADMSG, "blk identify of " + std::to_string(bytes.size()) + " bytes");
  IdentifyBytes raw;
  std::memcpy(raw.data(), bytes.data(), kIdentifyBytes);
  const std::byte* p = raw.data();
  if (get<std::uint32_t>(p, 0) != kIdentifyMagic) return fail(EBADMSG, "blk identify: bad magic");
  if (get<std::uint16_t>(p, 4) != kIdentifyVersion) return fail(EBADMSG, "blk identify: version " + std::to_string(get<std::uint16_t>(p, 4)));
  if (!all_zero(p + 6, 2) || !all_zero(p + 36, kIdentifyBytes - 36)) return fail(EBADMSG, "blk identify: reserved bytes set");
  DeviceInfo d;
  d.capacity = get<std::uint64_t>(p, 8);
  d.block_size = get<std::uint32_t>(p, 16);
  d.mem_alignment = get<std::uint32_t>(p, 20);
  d.max_transfer = get<std::uint32_t>(p, 24);
  d.queue_depth = get<std::uint32_t>(p, 28);
  d.flags = get<std::uint32_t>(p, 32);
  if (auto ok = validate_device_info(d); !ok) return tl::unexpected(ok.error());
  return d;
}

Result<std::span<std::byte>> validate_command(const Command& c, const DeviceInfo& device,
                                              std::span<std::byte> frontend_area) {
  // Built only on a refusal: this runs for every command on both sides.
  const auto refuse = [&c](int code, const std::string& why) {
    return fail(code, std::string("blk ") + opcode_name(c.opcode) + ": " + why);
  };
  if (c.opcode == Opcode::kFlush) {
    if (c.flags != 0 || c.offset != 0 || c.length != 0 || c.buffer_offset != 0) {
      return refuse(EINVAL, "carries an offset, length, buffer or flags");
    }
    return std::span<std::byte>{};
  }
  if (c.flags != 0 && c.opcode != Opcode::kWrite) return refuse(EINVAL, "FUA on a non-write");
  if (c.opcode == Opcode::kIdentify) {
    if (c.offset != 0 || c.length != kIdentifyBytes) return refuse(EINVAL, "needs offset 0 and 64 bytes");
  } else {
    if (c.length == 0 || c.length > device.max_transfer) return refuse(EINVAL, "length " + std::to_string(c.length));
    if (!aligned(c.offset, device.block_size) || !aligned(c.length, device.block_size)) {
      return refuse(EINVAL, "offset or length not a multiple of " + std::to_string(device.block_size));
    }
    // offset <= capacity first, so capacity - offset cannot wrap.
    if (c.offset > device.capacity || c.length > device.capacity - c.offset) {
      return refuse(ERANGE, "past the device's " + std::to_string(device.capacity) + " bytes");
    }
    if (c.opcode == Opcode::kWrite && device.read_only()) return refuse(EROFS, "device is read-only");
  }
  if (!aligned(c.buffer_offset, device.mem_alignment)) return refuse(EINVAL, "buffer not aligned to " + std::to_string(device.mem_alignment));
  auto buffer = checked_buffer(frontend_area, c.buffer_offset, c.length);
  if (!buffer) return refuse(EFAULT, "buffer outside the frontend area");
  return *buffer;
}

}  // namespace cxlpool::devpool::blk

namespace cxlpool::devpool::blk {

LinkGeometry blk_link_geometry(std::uint32_t slots, std::uint64_t buffer_bytes, Coherence coherence) {
  LinkGeometry g;
  g.requests = ChannelGeometry{slots, static_cast<std::uint32_t>(kCommandBytes), coherence};
  // Three completions share a line, so a third of the slots answer every
  // command the request ring can hold; rounded up to a power of two.
  std::uint32_t completion_slots = 2;
  while (completion_slots * (kSlotPayloadBytes / kCompletionBytes) < slots) completion_slots *= 2;
  g.completions = ChannelGeometry{completion_slots, static_cast<std::uint32_t>(kCompletionBytes), coherence};
  g.frontend_buffer_bytes = (buffer_bytes + 4095) / 4096 * 4096;
  g.backend_buffer_bytes = 0;
  return g;
}

Result<void> check_blk_link(const LinkGeometry& g) {
  if (g.requests.record_bytes != kCommandBytes || g.completions.record_bytes != kCompletionBytes) {
    return fail(EPROTO, "link is not a blk link: records of " + std::to_string(g.requests.record_bytes) + " and " +
                            std::to_string(g.completions.record_bytes) + " bytes");
  }
  return {};
}

}  // namespace cxlpool::devpool::blk
