// SPDX-License-Identifier: Apache-2.0
// The manifest's bytes in an image: little-endian sections (type u32,
// length u32, payload), so that a later version adds sections instead of
// changing old ones (docs/ckpt.md "Manifest sections").
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "cxlpool/ckpt/manifest.hpp"
#include "cxlpool/common/result.hpp"

namespace cxlpool::ckpt {

enum class SectionType : uint32_t {
  kInfo = 1,
  kProcess = 2,
  kCredentials = 3,
  kMm = 4,
  kSharedPending = 5,
  kThread = 6,  // one per thread, the leader first
  kVmas = 7,
  kRuns = 8,
  kFiles = 9,
  kFds = 10,
  kRegions = 11,
  kHotPages = 12,
  kClient = 13,  // the cxlpool socket and, per region of kRegions, how to get it again
  kFdObjects = 14,  // optional: absent in images that hold no eventfd, pipe, socketpair or listener
  kLeases = 15,     // optional: absent in images of processes that held no leased region
};
// A section type with this bit set must be understood by a reader; an unknown
// one without it is skipped.
inline constexpr uint32_t kSectionMustUnderstand = 0x80000000u;
inline constexpr uint32_t kMaxStringBytes = 4096;
inline constexpr uint32_t kRegsBytes = 27 * 8;        // struct user_regs_struct (x86-64)
inline constexpr uint32_t kMinXsaveBytes = 512 + 64;  // legacy area + xsave header
inline constexpr uint32_t kMaxXsaveBytes = 64 * 1024;
inline constexpr uint32_t kMaxPipeContentsBytes = 16u << 20;  // per pipe, in FdObject::contents

[[nodiscard]] std::vector<std::byte> encode_manifest(const Manifest& manifest);

// Decodes and validates (validate_manifest) a manifest taken from a hostile
// file. Errors: EBADMSG (truncated, a count or length past the end, a
// duplicate or missing section, a value out of range, a rule of
// validate_manifest broken), ENOTSUP (another format version, an unknown
// section marked must-understand).
[[nodiscard]] Result<Manifest> decode_manifest(std::span<const std::byte> bytes);

}  // namespace cxlpool::ckpt
