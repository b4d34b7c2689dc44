// SPDX-License-Identifier: Apache-2.0
#include "decoder.hpp"

#include <cstring>
#include <string>

#include "attention.hpp"
#include "tensor_ops.hpp"

namespace cxlpool::infer {

Decoder::Decoder(const ModelConfig& config, uint32_t max_positions)
    : config_(config), rope_(config.head_dim, max_positions, config.rope_theta) {}

Result<void> Decoder::forward(WeightSource& weights, const KvCache& kv, std::span<const TokenWork> work,
                              std::vector<float>& logits) {
  const ModelConfig& c = config_;
  const size_t n = work.size();
  if (n == 0) return {};
  for (const TokenWork& w : work) {
    if (w.token >= c.vocab) return fail(EINVAL, "decoder: token " + std::to_string(w.token) + " outside the vocabulary");
    if (w.position >= rope_.max_positions())
      return fail(ERANGE, "decoder: position " + std::to_string(w.position) + " past the context");
  }
  x_.resize(n * c.d_model);
  const GlobalWeights& g = weights.globals();
  for (size_t i = 0; i < n; ++i)
    std::memcpy(&x_[i * c.d_model], g[GlobalTensor::kEmbed] + size_t{work[i].token} * c.d_model,
                c.d_model * sizeof(float));

  for (uint32_t layer = 0; layer < c.layers; ++layer) {
    if (auto r = run_layer(weights, kv, layer, work); !r) return r;
  }

  size_t wanted = 0;
  for (const TokenWork& w : work) wanted += w.want_logits;
  if (wanted == 0) return {};
  xn_.resize(wanted * c.d_model);
  size_t j = 0;
  for (size_t i = 0; i < n; ++i)
    if (work[i].want_logits)
      rms_norm(&x_[i * c.d_model], g[GlobalTensor::kFinalNorm], &xn_[j++ * c.d_model], c.d_model, c.norm_eps);
  const size_t base = logits.size();
  logits.resize(base + wanted * c.vocab);
  matmul(g[GlobalTensor::kLmHead], xn_.data(), logits.data() + base, wanted, c.d_model, c.vocab);
  return {};
}

Result<void> Decoder::run_layer(WeightSource& weights, const KvCache& kv, uint32_t layer,
                                std::span<const TokenWork> work) {
  const ModelConfig& c = config_;
  const size_t n = work.size();
  auto acquired = weights.acquire(layer);
  if (!acquired) return tl::unexpected(acquired.error());
  const LayerWeights& w = *acquired;
  const KvLayerView view = kv.layer(layer);

  xn_.resize(n * c.d_model);
  q_.resize(n * c.q_dim());
  k_.resize(n * c.kv_dim());
  v_.resize(n * c.kv_dim());
  attn_.resize(n * c.q_dim());
  proj_.resize(n * c.d_model);
  gate_.resize(n * c.ffn_dim);
  up_.resize(n * c.ffn_dim);

  // Attention block.
  for (size_t i = 0; i < n; ++i)
    rms_norm(&x_[i * c.d_model], w[LayerTensor::kAttnNorm], &xn_[i * c.d_model], c.d_model, c.norm_eps);
  matmul(w[LayerTensor::kWq], xn_.data(), q_.data(), n, c.d_model, c.q_dim());
  matmul(w[LayerTensor::kWk], xn_.data(), k_.data(), n, c.d_model, c.kv_dim());
  matmul(w[LayerTensor::kWv], xn_.data(), v_.data(), n, c.d_model, c.kv_dim());
  for (size_t i = 0; i < n; ++i) {
    rope_.apply(&q_[i * c.q_dim()], c.n_heads, work[i].position);
    rope_.apply(&k_[i * c.kv_dim()], c.n_kv_heads, work[i].position);
    std::memcpy(view.k_at(work[i].row, work[i].position), &k_[i * c.kv_dim()], c.kv_token_bytes());
    std::memcpy(view.v_at(work[i].row, work[i].position), &v_[i * c.kv_dim()], c.kv_token_bytes());
  }
  for (size_t i = 0; i < n; ++i) {
    auto r = decode_attention(c, &q_[i * c.q_dim()], view, work[i].row, work[i].position + 1, &attn_[i * c.q_dim()]);
    if (!r) return r;
  }
  matmul(w[LayerTensor::kWo], attn_.data(), proj_.data(), n, c.q_dim(), c.d_model);
  for (size_t i = 0; i < n; ++i) add_in_place(&x_[i * c.d_model], &proj_[i * c.d_model], c.d_model);

  // SwiGLU MLP block.
  for (size_t i = 0; i < n; ++i)
    rms_norm(&x_[i * c.d_model], w[LayerTensor::kMlpNorm], &xn_[i * c.d_model], c.d_model, c.norm_eps);
  matmul(w[LayerTensor::kWGate], xn_.data(), gate_.data(), n, c.d_model, c.ffn_dim);
  matmul(w[LayerTensor::kWUp], xn_.data(), up_.data(), n, c.d_model, c.ffn_dim);
  for (size_t i = 0; i < n; ++i) swiglu(&gate_[i * c.ffn_dim], &up_[i * c.ffn_dim], c.ffn_dim);
  matmul(w[LayerTensor::kWDown], gate_.data(), proj_.data(), n, c.ffn_dim, c.d_model);
  for (size_t i = 0; i < n; ++i) add_in_place(&x_[i * c.d_model], &proj_[i * c.d_model], c.d_model);

  return weights.release(layer);
}

}  // namespace cxlpool::infer
