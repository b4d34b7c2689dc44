// SPDX-License-Identifier: Apache-2.0
// verify=crc32c: what a written block holds so that a later read can tell
// it is the block written at that offset. A header (magic, offset, length,
// seed, crc) then data derived from the seed and offset; the crc covers the
// whole block with the crc field taken as zero.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace cxlpool::io {

inline constexpr std::size_t kVerifyHeaderBytes = 32;

// Fills `block` (bytes >= kVerifyHeaderBytes) for `offset`.
void stamp_verify_block(std::byte* block, std::uint32_t bytes, std::uint64_t offset, std::uint64_t seed);

enum class VerifyOutcome { kOk, kNoHeader, kWrongOffset, kWrongLength, kBadCrc };
const char* verify_outcome_name(VerifyOutcome outcome);

VerifyOutcome check_verify_block(const std::byte* block, std::uint32_t bytes, std::uint64_t offset);

}  // namespace cxlpool::io
