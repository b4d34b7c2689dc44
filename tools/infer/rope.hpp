// SPDX-License-Identifier: Apache-2.0
// Rotary position embedding, Llama's "rotate half" form: dimension i pairs
// with i + head_dim/2. The angles are tabulated once per position.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cxlpool::infer {

class RopeTable {
 public:
  RopeTable(uint32_t head_dim, uint32_t max_positions, float theta);

  // Rotates `heads` consecutive head vectors of head_dim values for position pos.
  void apply(float* x, uint32_t heads, uint32_t pos) const;

  uint32_t max_positions() const { return max_positions_; }

 private:
  uint32_t head_dim_;
  uint32_t max_positions_;
  std::vector<float> cos_;  // [pos][head_dim / 2]
  std::vector<float> sin_;
};

}  // namespace cxlpool::infer
