// SPDX-License-Identifier: Apache-2.0
// Where the decoder finds its weights: f32 tensors by role. A layer is
// acquired before use and released after, so that a streaming source can
// recycle its slot; the global tensors stay put.
#pragma once

#include <array>
#include <cstdint>

#include "cxlpool/common/result.hpp"
#include "model_config.hpp"

namespace cxlpool::infer {

struct LayerWeights {
  std::array<const float*, kLayerTensorCount> tensors{};
  const float* operator[](LayerTensor which) const { return tensors[static_cast<size_t>(which)]; }
};

struct GlobalWeights {
  std::array<const float*, kGlobalTensorCount> tensors{};
  const float* operator[](GlobalTensor which) const { return tensors[static_cast<size_t>(which)]; }
};

class WeightSource {
 public:
  virtual ~WeightSource() = default;
  virtual const GlobalWeights& globals() const = 0;
  virtual Result<LayerWeights> acquire(uint32_t layer) = 0;
  virtual Result<void> release(uint32_t layer) = 0;
};

}  // namespace cxlpool::infer
