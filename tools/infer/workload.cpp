// SPDX-License-Identifier: Apache-2.0
#include "workload.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "cxlpool/common/mix64.hpp"
#include "tensor_ops.hpp"

namespace cxlpool::infer {

namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

}  // namespace

std::vector<uint32_t> Sequence::tokens(size_t n) const {
  std::vector<uint32_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = token_at(i);
  return out;
}

bool Sequence::record(const float* step_logits, uint32_t vocab, uint32_t decode_steps) {
  logits.insert(logits.end(), step_logits, step_logits + vocab);
  ++logit_steps;
  if (logit_steps <= decode_steps) generated.push_back(argmax(step_logits, vocab));
  return finished(decode_steps);
}

std::vector<Sequence> make_requests(const WorkloadConfig& config, uint32_t vocab) {
  std::vector<Sequence> out(config.requests);
  const uint32_t shared = config.shared_prefix < config.prompt_len ? config.shared_prefix : config.prompt_len;
  for (uint32_t r = 0; r < config.requests; ++r) {
    out[r].prompt.resize(config.prompt_len);
    for (uint32_t i = 0; i < config.prompt_len; ++i) {
      // The shared part depends only on the position; the rest also on the request.
      const uint64_t key = i < shared ? mix64(config.seed * 0x9E3779B97F4A7C15ull + i)
                                      : mix64((config.seed + 1 + r) * 0xD1B54A32D192ED03ull + i);
      out[r].prompt[i] = static_cast<uint32_t>(key % vocab);
    }
  }
  return out;
}

std::string compare_logits(const std::vector<Sequence>& expected, const std::vector<Sequence>& actual,
                           uint32_t vocab) {
  std::string report;
  size_t shown = 0;
  if (expected.size() != actual.size()) return "request counts differ";
  for (size_t r = 0; r < expected.size(); ++r) {
    const auto& a = expected[r].logits;
    const auto& b = actual[r].logits;
    if (a.size() != b.size()) {
      report += "request " + std::to_string(r) + ": " + std::to_string(a.size() / vocab) + " reference steps vs " +
                std::to_string(b.size() / vocab) + " runtime steps\n";
      if (++shown >= 8) break;
      continue;
    }
    if (std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0) continue;
    size_t differing = 0;
    float max_diff = 0.0f;
    size_t first = a.size();
    for (size_t i = 0; i < a.size(); ++i) {
      if (bits_of(a[i]) == bits_of(b[i])) continue;
      ++differing;
      if (first == a.size()) first = i;
      const float d = std::fabs(a[i] - b[i]);
      max_diff = d > max_diff ? d : max_diff;
    }
    char line[256];
    std::snprintf(line, sizeof(line),
                  "request %zu: %zu of %zu logits differ (max |diff| %g); first at step %zu, index %zu: "
                  "reference %.9g (0x%08x) runtime %.9g (0x%08x)\n",
                  r, differing, a.size(), static_cast<double>(max_diff), first / vocab, first % vocab,
                  static_cast<double>(a[first]), bits_of(a[first]), static_cast<double>(b[first]), bits_of(b[first]));
    report += line;
    if (++shown >= 8) break;
  }
  return report;
}

}  // namespace cxlpool::infer
