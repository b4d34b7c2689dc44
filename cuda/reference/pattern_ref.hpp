// SPDX-License-Identifier: Apache-2.0
// CPU reference of the fill_pattern / checksum kernels (kernels/pattern.cu).
// Tests fill memory on one side (CPU, GPU, a mapped chunk) and verify it on
// another without shipping the expected bytes around.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace cxlpool::cuda::ref {

// Byte i of the pattern is byte (i % 8) of math::pattern_word(seed, i / 8),
// little-endian. The pattern of a range depends on offsets inside that range
// only, not on its address.
void fill_pattern(std::span<std::byte> dst, uint64_t seed);

// Order-independent, position-sensitive 64-bit checksum (see
// math::checksum_term). Not cryptographic; it detects misplaced and corrupted
// data.
uint64_t checksum(std::span<const std::byte> src);

}  // namespace cxlpool::cuda::ref
