// SPDX-License-Identifier: Apache-2.0
// Element types of weight tensors. The numbering is the C ABI's
// (enum cxlpool_weight_dtype in cxlpool/weights.h) so values cross unchanged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace cxlpool::weights {

enum class Dtype : uint32_t {
  kF32 = 0, kF16 = 1, kBF16 = 2, kF64 = 3,
  kI8 = 4, kU8 = 5, kI16 = 6, kI32 = 7,
  kI64 = 8, kF8E4M3 = 9, kF8E5M2 = 10,
  kBool = 11,
};
inline constexpr uint32_t kDtypeCount = 12;

// The safetensors spelling ("F32", "BF16", "F8_E4M3", ...); nullopt when unknown.
std::optional<Dtype> dtype_from_name(std::string_view name);
std::string_view dtype_name(Dtype dtype);
size_t dtype_size(Dtype dtype);

}  // namespace cxlpool::weights
