// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/weights/dtype.hpp"

#include <array>

namespace cxlpool::weights {
namespace {

struct DtypeInfo {
  std::string_view name;
  size_t size;
};

// Indexed by the enum value.
constexpr std::array<DtypeInfo, kDtypeCount> kDtypes{{
    {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"F64", 8},
    {"I8", 1}, {"U8", 1}, {"I16", 2}, {"I32", 4},
    {"I64", 8}, {"F8_E4M3", 1}, {"F8_E5M2", 1},
    {"BOOL", 1},
}};

}  // namespace

std::optional<Dtype> dtype_from_name(std::string_view name) {
  for (uint32_t i = 0; i < kDtypeCount; ++i) {
    if (kDtypes[i].name == name) return static_cast<Dtype>(i);
  }
  return std::nullopt;
}

std::string_view dtype_name(Dtype dtype) {
  auto i = static_cast<uint32_t>(dtype);
  return i < kDtypeCount ? kDtypes[i].name : std::string_view("?");
}

size_t dtype_size(Dtype dtype) {
  auto i = static_cast<uint32_t>(dtype);
  return i < kDtypeCount ? kDtypes[i].size : 0;
}

}  // namespace cxlpool::weights
