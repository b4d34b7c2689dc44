// SPDX-License-Identifier: Apache-2.0
// The reference path: every request prefilled together in one batch, then
// decoded step by step, with the KV cache in plain process memory of the
// same [row][token][kv_head][dim] layout as an arena.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "kv_view.hpp"
#include "model_config.hpp"
#include "weight_source.hpp"
#include "workload.hpp"

namespace cxlpool::infer {

class PlainKvCache final : public KvCache {
 public:
  PlainKvCache(const ModelConfig& config, uint32_t rows, uint32_t max_context);
  KvLayerView layer(uint32_t layer) const override;

 private:
  uint64_t row_stride_;
  uint64_t token_stride_;
  mutable std::vector<std::vector<float>> k_, v_;  // per layer
};

// Points in a reference run a caller may act at: once the prompts are
// prefilled (the worker is warm: weights built, KV cache filled), and once
// the first token after that is decoded.
struct ReferenceHooks {
  std::function<void()> after_prefill;
  std::function<void()> after_first_token;
};

// Serves `requests` (prompts filled in) to the end; fills their outputs.
Result<void> run_reference(const ModelConfig& config, WeightSource& weights, std::vector<Sequence>& requests,
                           uint32_t decode_steps, const ReferenceHooks& hooks = {});

}  // namespace cxlpool::infer
