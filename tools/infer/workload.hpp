// SPDX-License-Identifier: Apache-2.0
// The requests both paths serve and what they produce. Prompts share a
// common prefix (a system prompt) followed by text of their own; decoding is
// greedy, so identical logits imply identical generated tokens.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cxlpool::infer {

struct WorkloadConfig {
  uint32_t requests = 8;
  uint32_t prompt_len = 224;
  uint32_t shared_prefix = 192;  // leading prompt tokens every request has in common
  uint32_t decode_steps = 64;
  uint64_t seed = 1;
};

// One request's sequence as it is served: the prompt, the tokens generated
// so far, and the logits of every step (the prompt's last token, then each
// decode step), vocab floats each.
struct Sequence {
  std::vector<uint32_t> prompt;
  std::vector<uint32_t> generated;
  std::vector<float> logits;
  uint32_t logit_steps = 0;

  size_t length() const { return prompt.size() + generated.size(); }
  uint32_t token_at(size_t pos) const {
    return pos < prompt.size() ? prompt[pos] : generated[pos - prompt.size()];
  }
  std::vector<uint32_t> tokens(size_t n) const;
  // Records the logits of the sequence's newest token and, while steps are
  // left, appends the greedy next token. True when the request is finished.
  bool record(const float* logits, uint32_t vocab, uint32_t decode_steps);
  bool finished(uint32_t decode_steps) const { return logit_steps > decode_steps; }
};

std::vector<Sequence> make_requests(const WorkloadConfig& config, uint32_t vocab);

// "" when every request's logits are bitwise identical, else the first
// differences (request, step, vocab index, both values and their bits).
std::string compare_logits(const std::vector<Sequence>& expected, const std::vector<Sequence>& actual,
                           uint32_t vocab);

}  // namespace cxlpool::infer
