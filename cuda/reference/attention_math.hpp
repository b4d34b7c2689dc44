// SPDX-License-Identifier: Apache-2.0
// Number formats shared by the decode-attention kernels and their CPU
// references: bfloat16 is the upper half of an IEEE binary32, so widening is
// a shift and both sides read the same bits the same way.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernel_math.hpp"

namespace cxlpool::cuda::math {

CXLPOOL_HOST_DEVICE float bf16_to_f32(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float f;
  memcpy(&f, &wide, sizeof(f));
  return f;
}

// Round to nearest, ties to even; NaN stays a (quiet) NaN.
CXLPOOL_HOST_DEVICE uint16_t f32_to_bf16(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof(bits));
  if ((bits & 0x7F800000u) == 0x7F800000u && (bits & 0x007FFFFFu) != 0) {
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  }
  const uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

}  // namespace cxlpool::cuda::math
