// SPDX-License-Identifier: Apache-2.0
#include "random_model.hpp"

#include <cmath>

#include "cxlpool/common/mix64.hpp"

namespace cxlpool::infer {

namespace {

uint64_t name_hash(const std::string& name) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char ch : name) h = (h ^ ch) * 0x100000001b3ull;
  return h;
}

// Uniform in [-1, 1) from the top 24 bits, exactly representable in f32.
float unit(uint64_t bits) {
  return static_cast<float>(static_cast<int64_t>(bits >> 40) - (int64_t{1} << 23)) / static_cast<float>(1 << 23);
}

}  // namespace

std::vector<HostTensor> generate_model(const ModelConfig& config, uint64_t seed) {
  std::vector<HostTensor> out;
  for (TensorSpec& spec : all_tensor_specs(config)) {
    HostTensor t{std::move(spec), {}};
    t.data.resize(t.spec.elements());
    const uint64_t stream = mix64(seed ^ name_hash(t.spec.name));
    const bool is_norm = t.spec.shape.size() == 1;
    const bool is_embed = t.spec.name == global_tensor_spec(config, GlobalTensor::kEmbed).name;
    const float scale = is_norm ? 0.1f
                        : is_embed ? 1.0f
                                   : 1.0f / std::sqrt(static_cast<float>(t.spec.shape.back()));
    for (size_t i = 0; i < t.data.size(); ++i) {
      const float u = unit(mix64(stream + (i + 1) * 0x9E3779B97F4A7C15ull));
      t.data[i] = is_norm ? 1.0f + scale * u : scale * u;
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace cxlpool::infer
