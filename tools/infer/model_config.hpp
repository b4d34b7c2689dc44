// SPDX-License-Identifier: Apache-2.0
// Shape of the small Llama-like decoder cxlpool-infer runs, and the names its
// tensors have in the safetensors files (Llama/Hugging Face naming, so that
// the weights module's ".layers.N." grouping applies).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cxlpool/common/result.hpp"

namespace cxlpool::infer {

struct ModelConfig {
  uint32_t layers = 4;
  uint32_t d_model = 256;
  uint32_t n_heads = 8;
  uint32_t n_kv_heads = 2;
  uint32_t head_dim = 32;
  uint32_t ffn_dim = 704;
  uint32_t vocab = 512;
  float rope_theta = 10000.0f;
  float norm_eps = 1e-5f;

  uint32_t q_dim() const { return n_heads * head_dim; }
  uint32_t kv_dim() const { return n_kv_heads * head_dim; }
  // Bytes of one token's K (or V) in one layer.
  uint64_t kv_token_bytes() const { return uint64_t{kv_dim()} * sizeof(float); }
};

// Heads must divide evenly (GQA), RoPE needs an even head dimension.
Result<void> validate(const ModelConfig& config);

// The tensors of one decoder layer, in the order LayerWeights lists them.
enum class LayerTensor : uint32_t {
  kAttnNorm, kWq, kWk, kWv, kWo, kMlpNorm, kWGate, kWUp, kWDown, kCount
};
inline constexpr size_t kLayerTensorCount = static_cast<size_t>(LayerTensor::kCount);

enum class GlobalTensor : uint32_t { kEmbed, kFinalNorm, kLmHead, kCount };
inline constexpr size_t kGlobalTensorCount = static_cast<size_t>(GlobalTensor::kCount);

struct TensorSpec {
  std::string name;
  std::vector<uint64_t> shape;  // row-major; matrices are [out][in]
  uint64_t elements() const;
};

TensorSpec layer_tensor_spec(const ModelConfig& config, uint32_t layer, LayerTensor which);
TensorSpec global_tensor_spec(const ModelConfig& config, GlobalTensor which);
// Every tensor of the model: globals first, then layer by layer.
std::vector<TensorSpec> all_tensor_specs(const ModelConfig& config);
// The LayerTensor a name ending (".self_attn.q_proj.weight"...) stands for;
// kCount when it is none of them.
LayerTensor layer_tensor_from_name(const std::string& name);

}  // namespace cxlpool::infer
