// SPDX-License-Identifier: Apache-2.0
#include "reference_run.hpp"

#include "decoder.hpp"

namespace cxlpool::infer {

PlainKvCache::PlainKvCache(const ModelConfig& config, uint32_t rows, uint32_t max_context)
    : row_stride_(uint64_t{max_context} * config.kv_token_bytes()),
      token_stride_(config.kv_token_bytes()),
      k_(config.layers, std::vector<float>(size_t{rows} * max_context * config.kv_dim())),
      v_(config.layers, std::vector<float>(size_t{rows} * max_context * config.kv_dim())) {}

KvLayerView PlainKvCache::layer(uint32_t layer) const {
  KvLayerView view;
  view.k = reinterpret_cast<std::byte*>(k_[layer].data());
  view.v = reinterpret_cast<std::byte*>(v_[layer].data());
  view.row_stride = row_stride_;
  view.token_stride = token_stride_;
  return view;
}

Result<void> run_reference(const ModelConfig& config, WeightSource& weights, std::vector<Sequence>& requests,
                           uint32_t decode_steps, const ReferenceHooks& hooks) {
  const auto rows = static_cast<uint32_t>(requests.size());
  uint32_t max_context = 0;
  for (const Sequence& s : requests)
    max_context = std::max<uint32_t>(max_context, static_cast<uint32_t>(s.prompt.size()) + decode_steps);
  PlainKvCache kv(config, rows, max_context);
  Decoder decoder(config, max_context);

  std::vector<TokenWork> work;
  for (uint32_t r = 0; r < rows; ++r) {
    const auto& prompt = requests[r].prompt;
    if (prompt.empty()) return fail(EINVAL, "reference: empty prompt");
    for (uint32_t p = 0; p < prompt.size(); ++p) work.push_back({r, p, prompt[p], p + 1 == prompt.size()});
  }
  std::vector<float> logits;
  if (auto f = decoder.forward(weights, kv, work, logits); !f) return f;
  for (uint32_t r = 0; r < rows; ++r) requests[r].record(&logits[size_t{r} * config.vocab], config.vocab, decode_steps);
  if (hooks.after_prefill) hooks.after_prefill();

  for (uint32_t step = 0; step < decode_steps; ++step) {
    work.clear();
    logits.clear();
    for (uint32_t r = 0; r < rows; ++r) {
      const Sequence& s = requests[r];
      const auto pos = static_cast<uint32_t>(s.length() - 1);
      work.push_back({r, pos, s.token_at(pos), true});
    }
    if (auto f = decoder.forward(weights, kv, work, logits); !f) return f;
    for (uint32_t r = 0; r < rows; ++r) requests[r].record(&logits[size_t{r} * config.vocab], config.vocab, decode_steps);
    if (step == 0 && hooks.after_first_token) hooks.after_first_token();
  }
  return {};
}

}  // namespace cxlpool::infer
