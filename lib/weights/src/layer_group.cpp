// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/weights/layer_group.hpp"

#include <algorithm>
#include <array>

namespace cxlpool::weights {
namespace {

// The digits at `pos` when a '.' ends them, else kGlobalLayer.
int32_t number_at(std::string_view name, size_t pos) {
  int64_t n = 0;
  size_t i = pos;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9') {
    n = n * 10 + (name[i] - '0');
    if (n > kMaxLayer) return kGlobalLayer;
    ++i;
  }
  if (i == pos || i >= name.size() || name[i] != '.') return kGlobalLayer;
  return static_cast<int32_t>(n);
}

}  // namespace

int32_t layer_of(std::string_view name) {
  constexpr std::array<std::string_view, 2> kMarkers{"layers.", "h."};
  for (size_t pos = 0; pos < name.size(); ++pos) {
    // A component starts the name or follows a dot.
    if (pos != 0 && name[pos - 1] != '.') continue;
    for (auto marker : kMarkers) {
      if (name.substr(pos, marker.size()) == marker) {
        int32_t n = number_at(name, pos + marker.size());
        if (n != kGlobalLayer) return n;
      }
    }
  }
  return kGlobalLayer;
}

LayerGroups group_by_layer(const std::vector<int32_t>& layer_of_tensor) {
  LayerGroups g;
  int32_t top = kGlobalLayer;
  for (int32_t l : layer_of_tensor) top = std::max(top, l);
  g.layers.resize(static_cast<size_t>(top + 1));
  for (size_t i = 0; i < layer_of_tensor.size(); ++i) {
    int32_t l = layer_of_tensor[i];
    if (l < 0) {
      g.global.push_back(i);
    } else {
      g.layers[static_cast<size_t>(l)].push_back(i);
    }
  }
  return g;
}

}  // namespace cxlpool::weights
