// SPDX-License-Identifier: Apache-2.0
#pragma once
// CRC-32C (Castagnoli, the iSCSI polynomial 0x1EDC6F41, reflected, initial
// value and final xor 0xFFFFFFFF): the checksum of the KV store's SSD format
// and of cxlpool-io's verify=crc32c (the same values as fio's crc32c).
// Computed with ISA-L, which uses the SSE4.2 crc32 instruction (and wider
// folding where the CPU has it). In common_crc32c_dep, apart from the rest of
// lib/common, so that only its users link ISA-L.
#include <cstddef>
#include <cstdint>
#include <span>

namespace cxlpool {

// The standard CRC-32C of data: crc32c("123456789") == 0xE3069283.
// seed is a previous result to continue from, so
// crc32c(b, crc32c(a)) == crc32c(a followed by b); 0 starts a new checksum.
[[nodiscard]] std::uint32_t crc32c(std::span<const std::byte> data, std::uint32_t seed = 0);

// The CRC-32C of a followed by b from crc32c(a), crc32c(b) and b's length,
// without the bytes: pieces of one buffer checksummed on several threads
// give the whole buffer's CRC. O(log b_bytes) carry-less multiplications.
[[nodiscard]] std::uint32_t crc32c_combine(std::uint32_t crc_a, std::uint32_t crc_b, std::uint64_t b_bytes);

}  // namespace cxlpool
