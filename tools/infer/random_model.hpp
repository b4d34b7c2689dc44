// SPDX-License-Identifier: Apache-2.0
// The model's random weights: a pure function of the config and a seed, so
// every run with the same flags has the same model (and the same KV-store keys
// mean the same KV).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model_config.hpp"

namespace cxlpool::infer {

struct HostTensor {
  TensorSpec spec;
  std::vector<float> data;
};

// Matrices uniform in +-1/sqrt(fan_in) (activations keep their scale through
// the layers), norm weights around 1, embeddings uniform in +-1.
std::vector<HostTensor> generate_model(const ModelConfig& config, uint64_t seed);

}  // namespace cxlpool::infer
