// SPDX-License-Identifier: Apache-2.0
#include "model_config.hpp"

#include <array>
#include <string_view>

namespace cxlpool::infer {

namespace {

struct LayerTensorName {
  LayerTensor which;
  std::string_view suffix;
};

constexpr std::array<LayerTensorName, kLayerTensorCount> kLayerNames = {{
    {LayerTensor::kAttnNorm, "input_layernorm.weight"},
    {LayerTensor::kWq, "self_attn.q_proj.weight"},
    {LayerTensor::kWk, "self_attn.k_proj.weight"},
    {LayerTensor::kWv, "self_attn.v_proj.weight"},
    {LayerTensor::kWo, "self_attn.o_proj.weight"},
    {LayerTensor::kMlpNorm, "post_attention_layernorm.weight"},
    {LayerTensor::kWGate, "mlp.gate_proj.weight"},
    {LayerTensor::kWUp, "mlp.up_proj.weight"},
    {LayerTensor::kWDown, "mlp.down_proj.weight"},
}};

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

Result<void> validate(const ModelConfig& c) {
  if (c.layers == 0 || c.d_model == 0 || c.n_heads == 0 || c.n_kv_heads == 0 || c.head_dim == 0 ||
      c.ffn_dim == 0 || c.vocab == 0)
    return fail(EINVAL, "model: every dimension must be positive");
  if (c.n_heads % c.n_kv_heads != 0)
    return fail(EINVAL, "model: query heads (" + std::to_string(c.n_heads) +
                            ") must be a multiple of KV heads (" + std::to_string(c.n_kv_heads) + ")");
  if (c.head_dim % 2 != 0) return fail(EINVAL, "model: RoPE needs an even head dimension");
  if (c.layers > 1024 || c.d_model > 65536 || c.ffn_dim > 262144 || c.vocab > (1u << 20))
    return fail(EINVAL, "model: dimensions too large for this tool");
  return {};
}

uint64_t TensorSpec::elements() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

TensorSpec layer_tensor_spec(const ModelConfig& c, uint32_t layer, LayerTensor which) {
  const auto i = static_cast<size_t>(which);
  TensorSpec spec;
  spec.name = "model.layers." + std::to_string(layer) + "." + std::string(kLayerNames[i].suffix);
  switch (which) {
    case LayerTensor::kAttnNorm:
    case LayerTensor::kMlpNorm: spec.shape = {c.d_model}; break;
    case LayerTensor::kWq: spec.shape = {c.q_dim(), c.d_model}; break;
    case LayerTensor::kWk:
    case LayerTensor::kWv: spec.shape = {c.kv_dim(), c.d_model}; break;
    case LayerTensor::kWo: spec.shape = {c.d_model, c.q_dim()}; break;
    case LayerTensor::kWGate:
    case LayerTensor::kWUp: spec.shape = {c.ffn_dim, c.d_model}; break;
    case LayerTensor::kWDown: spec.shape = {c.d_model, c.ffn_dim}; break;
    case LayerTensor::kCount: break;
  }
  return spec;
}

TensorSpec global_tensor_spec(const ModelConfig& c, GlobalTensor which) {
  switch (which) {
    case GlobalTensor::kEmbed: return {"model.embed_tokens.weight", {c.vocab, c.d_model}};
    case GlobalTensor::kFinalNorm: return {"model.norm.weight", {c.d_model}};
    case GlobalTensor::kLmHead: return {"lm_head.weight", {c.vocab, c.d_model}};
    case GlobalTensor::kCount: break;
  }
  return {};
}

std::vector<TensorSpec> all_tensor_specs(const ModelConfig& c) {
  std::vector<TensorSpec> out;
  for (size_t g = 0; g < kGlobalTensorCount; ++g) out.push_back(global_tensor_spec(c, static_cast<GlobalTensor>(g)));
  for (uint32_t l = 0; l < c.layers; ++l)
    for (size_t t = 0; t < kLayerTensorCount; ++t) out.push_back(layer_tensor_spec(c, l, static_cast<LayerTensor>(t)));
  return out;
}

LayerTensor layer_tensor_from_name(const std::string& name) {
  for (const auto& entry : kLayerNames)
    if (ends_with(name, std::string(".") + std::string(entry.suffix))) return entry.which;
  return LayerTensor::kCount;
}

}  // namespace cxlpool::infer
