// SPDX-License-Identifier: Apache-2.0
#include "rope.hpp"

#include <cmath>

namespace cxlpool::infer {

RopeTable::RopeTable(uint32_t head_dim, uint32_t max_positions, float theta)
    : head_dim_(head_dim), max_positions_(max_positions) {
  const uint32_t half = head_dim / 2;
  cos_.resize(size_t{max_positions} * half);
  sin_.resize(cos_.size());
  for (uint32_t p = 0; p < max_positions; ++p) {
    for (uint32_t i = 0; i < half; ++i) {
      const double freq = std::pow(static_cast<double>(theta), -2.0 * i / static_cast<double>(head_dim));
      const double angle = static_cast<double>(p) * freq;
      cos_[size_t{p} * half + i] = static_cast<float>(std::cos(angle));
      sin_[size_t{p} * half + i] = static_cast<float>(std::sin(angle));
    }
  }
}

void RopeTable::apply(float* x, uint32_t heads, uint32_t pos) const {
  const uint32_t half = head_dim_ / 2;
  const float* c = cos_.data() + size_t{pos} * half;
  const float* s = sin_.data() + size_t{pos} * half;
  for (uint32_t h = 0; h < heads; ++h) {
    float* v = x + size_t{h} * head_dim_;
    for (uint32_t i = 0; i < half; ++i) {
      const float a = v[i];
      const float b = v[i + half];
      v[i] = a * c[i] - b * s[i];
      v[i + half] = b * c[i] + a * s[i];
    }
  }
}

}  // namespace cxlpool::infer
