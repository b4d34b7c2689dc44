// SPDX-License-Identifier: Apache-2.0
// The decoder's weights from the daemon's shared region: global tensors read
// in place (read-only, mapped by every process that opens the model), layer
// tensors through a WeightStreamer's window.
#pragma once

#include <vector>

#include "client_handles.hpp"
#include "weight_source.hpp"

namespace cxlpool::infer {

class StreamedWeights final : public WeightSource {
 public:
  // Checks every tensor the config names (f32, shape) and where the layers'
  // tensors are; the handles must outlive this object.
  static Result<StreamedWeights> create(const ModelConfig& config, cxlpool_weights* weights,
                                        cxlpool_weight_streamer* streamer);

  const GlobalWeights& globals() const override { return globals_; }
  Result<LayerWeights> acquire(uint32_t layer) override;
  Result<void> release(uint32_t layer) override;

 private:
  cxlpool_weight_streamer* streamer_ = nullptr;
  GlobalWeights globals_;
  std::vector<LayerTensor> role_;  // by tensor index
};

}  // namespace cxlpool::infer
