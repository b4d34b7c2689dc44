// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the storage engine's records, as a backend and a
// frontend read them from shared memory a hostile peer writes. The input is
// a command (56 bytes), a completion (16 bytes) and an identify record (64
// bytes), each taken from the front of the input when it is long enough.
// Properties: rejections carry documented errno values; whatever decodes
// re-encodes to the same bytes; a command that passes validation names a
// buffer inside the frontend area, aligned, and a range inside the device.
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "cxlpool/devpool/blk_records.hpp"
#include "fuzz_violation.hpp"

const char cxlpool::fuzz::kFuzzTarget[] = "fuzz_blk_decode";

namespace {

using cxlpool::fuzz::accepted;
using cxlpool::fuzz::violated;
using namespace cxlpool::devpool::blk;

constexpr std::size_t kAreaBytes = 1 << 20;

void check_command(std::span<const std::byte> bytes) {
  auto c = decode_command(bytes);
  if (!accepted(c, {EBADMSG, EOPNOTSUPP})) return;
  const CommandBytes again = encode_command(*c);
  if (std::memcmp(again.data(), bytes.data(), kCommandBytes) != 0) violated("command re-encodes differently", "");
  static std::vector<std::byte> area(kAreaBytes);
  DeviceInfo device;
  device.capacity = 1ull << 30;
  device.block_size = 4096;
  device.mem_alignment = 512;
  device.max_transfer = 1 << 20;
  for (const bool read_only : {false, true}) {
    device.flags = read_only ? kIdentifyReadOnly : 0;
    auto buffer = validate_command(*c, device, area);
    if (!accepted(buffer, {EINVAL, ERANGE, EFAULT, EROFS})) continue;
    if (c->opcode == Opcode::kFlush) {
      if (!buffer->empty()) violated("flush with a buffer", "");
      continue;
    }
    if (buffer->data() < area.data() || buffer->data() + buffer->size() > area.data() + area.size()) {
      violated("buffer outside the frontend area", "");
    }
    if (buffer->size() != c->length) violated("buffer of another length", "");
    if ((buffer->data() - area.data()) % device.mem_alignment != 0) violated("unaligned buffer", "");
    if (c->opcode == Opcode::kIdentify) continue;
    if (c->offset % device.block_size != 0 || c->length % device.block_size != 0) violated("unaligned range", "");
    if (c->offset + c->length > device.capacity || c->offset + c->length < c->offset) violated("range past capacity", "");
    if (read_only && c->opcode == Opcode::kWrite) violated("write accepted on a read-only device", "");
  }
}

void check_completion(std::span<const std::byte> bytes) {
  auto c = decode_completion(bytes);
  if (!accepted(c, {EBADMSG})) return;
  if (c->status > 0 || c->status < -4095 || (c->status < 0 && c->bytes != 0)) violated("completion out of bounds", "");
  const CompletionBytes again = encode_completion(*c);
  if (std::memcmp(again.data(), bytes.data(), kCompletionBytes) != 0) violated("completion re-encodes differently", "");
}

void check_identify(std::span<const std::byte> bytes) {
  auto d = decode_identify(bytes);
  if (!accepted(d, {EBADMSG})) return;
  if (!validate_device_info(*d)) violated("identify decodes to a device that does not validate", "");
  const IdentifyBytes again = encode_identify(*d);
  if (std::memcmp(again.data(), bytes.data(), kIdentifyBytes) != 0) violated("identify re-encodes differently", "");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  if (size >= kCommandBytes) check_command(bytes.first(kCommandBytes));
  if (size >= kCompletionBytes) check_completion(bytes.first(kCompletionBytes));
  if (size >= kIdentifyBytes) check_identify(bytes.first(kIdentifyBytes));
  // Wrong sizes are refused, never read past.
  if (size != kCommandBytes) accepted(decode_command(bytes), {EBADMSG});
  if (size != kCompletionBytes) accepted(decode_completion(bytes), {EBADMSG});
  return 0;
}
