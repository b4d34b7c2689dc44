// SPDX-License-Identifier: Apache-2.0
// The decoder's forward pass over a batch of tokens from any rows: layer by
// layer (one acquire per layer for the whole batch, as a weight streamer
// wants), writing each token's K and V into the cache before attending.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "kv_view.hpp"
#include "model_config.hpp"
#include "rope.hpp"
#include "weight_source.hpp"

namespace cxlpool::infer {

struct TokenWork {
  uint32_t row = 0;       // the KV cache row (batch slot)
  uint32_t position = 0;  // the token's index in its sequence
  uint32_t token = 0;
  bool want_logits = false;
};

class Decoder {
 public:
  Decoder(const ModelConfig& config, uint32_t max_positions);

  // Tokens of one row must come in increasing position order, and every
  // position before an item's own must already be in the cache or earlier in
  // `work`. Appends config.vocab logits per item with want_logits, in order.
  // A token's results depend only on its sequence, never on what else is in
  // the batch: each is computed with the same operations in the same order.
  Result<void> forward(WeightSource& weights, const KvCache& kv, std::span<const TokenWork> work,
                       std::vector<float>& logits);

  const ModelConfig& config() const { return config_; }

 private:
  Result<void> run_layer(WeightSource& weights, const KvCache& kv, uint32_t layer,
                         std::span<const TokenWork> work);

  ModelConfig config_;
  RopeTable rope_;
  // Scratch, sized for the largest batch seen.
  std::vector<float> x_, xn_, q_, k_, v_, attn_, proj_, gate_, up_;
};

}  // namespace cxlpool::infer
