// SPDX-License-Identifier: Apache-2.0
// Which transformer layer a tensor belongs to, from its name: a ".layers.N."
// (Llama) or ".h.N." (GPT-2) component, also at the start of the name. Other
// tensors (embedding, final norm, head) are global.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace cxlpool::weights {

inline constexpr int32_t kGlobalLayer = -1;
inline constexpr int32_t kMaxLayer = 1'000'000;

// N, or kGlobalLayer when the name has no layer component (or N > kMaxLayer).
int32_t layer_of(std::string_view name);

struct LayerGroups {
  std::vector<size_t> global;               // tensor indices
  std::vector<std::vector<size_t>> layers;  // [layer] -> tensor indices, ascending
};

// Groups tensor indices by their layer (layer_of_tensor[i] is tensor i's).
// Layers no tensor names are present as empty groups.
LayerGroups group_by_layer(const std::vector<int32_t>& layer_of_tensor);

}  // namespace cxlpool::weights
