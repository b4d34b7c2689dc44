// SPDX-License-Identifier: Apache-2.0
#include "verify_block.hpp"

#include <cstring>
#include <span>

#include "cxlpool/common/crc32c.hpp"
#include "cxlpool/common/enum_names.hpp"
#include "rng.hpp"

namespace cxlpool::io {
namespace {

constexpr std::uint32_t kMagic = 0x7663696fu;  // "oicv"

struct Header {
  std::uint32_t magic;
  std::uint32_t crc;
  std::uint64_t offset;
  std::uint64_t seed;
  std::uint32_t length;
  std::uint32_t reserved;
};
static_assert(sizeof(Header) == kVerifyHeaderBytes);

std::uint32_t block_crc(const std::byte* block, std::uint32_t bytes) {
  Header h;
  std::memcpy(&h, block, sizeof h);
  h.crc = 0;
  const std::uint32_t c = crc32c(std::as_bytes(std::span(&h, 1)));
  return crc32c({block + sizeof h, bytes - sizeof h}, c);
}

constexpr EnumName<VerifyOutcome> kVerifyOutcomeNames[] = {
    {VerifyOutcome::kOk, "ok"},
    {VerifyOutcome::kNoHeader, "no verify header"},
    {VerifyOutcome::kWrongOffset, "header of another offset"},
    {VerifyOutcome::kWrongLength, "header of another length"},
    {VerifyOutcome::kBadCrc, "crc32c mismatch"},
};

}  // namespace

void stamp_verify_block(std::byte* block, std::uint32_t bytes, std::uint64_t offset, std::uint64_t seed) {
  Header h{kMagic, 0, offset, seed, bytes, 0};
  std::memcpy(block, &h, sizeof h);
  std::uint64_t state = seed ^ (offset * 0x9e3779b97f4a7c15ull);
  std::uint32_t i = sizeof h;
  for (; i + 8 <= bytes; i += 8) {
    const std::uint64_t v = splitmix64(state);
    std::memcpy(block + i, &v, 8);
  }
  for (; i < bytes; ++i) block[i] = static_cast<std::byte>(splitmix64(state));
  h.crc = block_crc(block, bytes);
  std::memcpy(block, &h, sizeof h);
}

VerifyOutcome check_verify_block(const std::byte* block, std::uint32_t bytes, std::uint64_t offset) {
  if (bytes < kVerifyHeaderBytes) return VerifyOutcome::kNoHeader;
  Header h;
  std::memcpy(&h, block, sizeof h);
  if (h.magic != kMagic) return VerifyOutcome::kNoHeader;
  if (h.offset != offset) return VerifyOutcome::kWrongOffset;
  if (h.length != bytes) return VerifyOutcome::kWrongLength;
  if (block_crc(block, bytes) != h.crc) return VerifyOutcome::kBadCrc;
  return VerifyOutcome::kOk;
}

const char* verify_outcome_name(VerifyOutcome outcome) { return enum_name(kVerifyOutcomeNames, outcome, "?"); }

}  // namespace cxlpool::io
