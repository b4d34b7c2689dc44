// SPDX-License-Identifier: Apache-2.0
// The decoder against an independent, plainly written double-precision
// transformer (same model definition, none of the tool's code), and the
// invariances the end-to-end check relies on: a token's results do not
// depend on what else is in its batch, nor on where its row's KV lives.
#include <cmath>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "decoder.hpp"
#include "model_files.hpp"
#include "random_model.hpp"
#include "reference_run.hpp"
#include "tensor_ops.hpp"

namespace cxlpool::infer {
namespace {

ModelConfig tiny() {
  return {.layers = 2, .d_model = 8, .n_heads = 4, .n_kv_heads = 2, .head_dim = 4, .ffn_dim = 12, .vocab = 11};
}

PlainModel as_plain(const std::vector<HostTensor>& tensors) {
  PlainModel m;
  for (const HostTensor& t : tensors) m.tensors[t.spec.name] = t.data;
  return m;
}

// ---- the independent model, in double ----

using Vec = std::vector<double>;

Vec mat_vec(const std::vector<float>& w, const Vec& x, size_t out) {
  Vec y(out, 0.0);
  for (size_t o = 0; o < out; ++o)
    for (size_t i = 0; i < x.size(); ++i) y[o] += double{w[o * x.size() + i]} * x[i];
  return y;
}

Vec rms(const Vec& x, const std::vector<float>& w, double eps) {
  double ms = 0;
  for (double v : x) ms += v * v;
  ms /= static_cast<double>(x.size());
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] / std::sqrt(ms + eps) * w[i];
  return y;
}

void rotate(Vec& v, size_t heads, size_t dim, size_t pos, double theta) {
  for (size_t h = 0; h < heads; ++h)
    for (size_t i = 0; i < dim / 2; ++i) {
      const double angle = static_cast<double>(pos) * std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(dim));
      double& a = v[h * dim + i];
      double& b = v[h * dim + i + dim / 2];
      const double ra = a * std::cos(angle) - b * std::sin(angle);
      const double rb = b * std::cos(angle) + a * std::sin(angle);
      a = ra;
      b = rb;
    }
}

// One position's float logits agree with the double-precision model's
// (`expected`, vocab values): within 1e-4, relative to the value above 1.
void expect_logits_near(const float* got, const Vec& expected, const std::string& where) {
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(got[i], expected[i], 1e-4 * (1 + std::fabs(expected[i]))) << where << " index " << i;
  }
}

// Logits of every position of one sequence.
std::vector<Vec> naive_logits(const ModelConfig& c, const PlainModel& m, const std::vector<uint32_t>& tokens) {
  auto w = [&](const std::string& name) -> const std::vector<float>& { return m.tensors.at(name); };
  auto lw = [&](uint32_t l, LayerTensor t) -> const std::vector<float>& { return w(layer_tensor_spec(c, l, t).name); };
  const size_t n = tokens.size();
  std::vector<Vec> x(n, Vec(c.d_model));
  for (size_t p = 0; p < n; ++p)
    for (size_t i = 0; i < c.d_model; ++i) x[p][i] = w("model.embed_tokens.weight")[tokens[p] * c.d_model + i];
  for (uint32_t l = 0; l < c.layers; ++l) {
    std::vector<Vec> q(n), k(n), v(n);
    for (size_t p = 0; p < n; ++p) {
      const Vec xn = rms(x[p], lw(l, LayerTensor::kAttnNorm), c.norm_eps);
      q[p] = mat_vec(lw(l, LayerTensor::kWq), xn, c.q_dim());
      k[p] = mat_vec(lw(l, LayerTensor::kWk), xn, c.kv_dim());
      v[p] = mat_vec(lw(l, LayerTensor::kWv), xn, c.kv_dim());
      rotate(q[p], c.n_heads, c.head_dim, p, c.rope_theta);
      rotate(k[p], c.n_kv_heads, c.head_dim, p, c.rope_theta);
    }
    for (size_t p = 0; p < n; ++p) {
      Vec attn(c.q_dim(), 0.0);
      for (size_t h = 0; h < c.n_heads; ++h) {
        const size_t g = h / (c.n_heads / c.n_kv_heads);
        Vec s(p + 1);
        double max = -1e300, sum = 0;
        for (size_t t = 0; t <= p; ++t) {
          double d = 0;
          for (size_t i = 0; i < c.head_dim; ++i) d += q[p][h * c.head_dim + i] * k[t][g * c.head_dim + i];
          s[t] = d / std::sqrt(static_cast<double>(c.head_dim));
          max = std::max(max, s[t]);
        }
        for (double& e : s) sum += (e = std::exp(e - max));
        for (size_t t = 0; t <= p; ++t)
          for (size_t i = 0; i < c.head_dim; ++i) attn[h * c.head_dim + i] += s[t] / sum * v[t][g * c.head_dim + i];
      }
      const Vec o = mat_vec(lw(l, LayerTensor::kWo), attn, c.d_model);
      for (size_t i = 0; i < c.d_model; ++i) x[p][i] += o[i];
      const Vec xn = rms(x[p], lw(l, LayerTensor::kMlpNorm), c.norm_eps);
      Vec gate = mat_vec(lw(l, LayerTensor::kWGate), xn, c.ffn_dim);
      const Vec up = mat_vec(lw(l, LayerTensor::kWUp), xn, c.ffn_dim);
      for (size_t i = 0; i < c.ffn_dim; ++i) gate[i] = gate[i] / (1 + std::exp(-gate[i])) * up[i];
      const Vec down = mat_vec(lw(l, LayerTensor::kWDown), gate, c.d_model);
      for (size_t i = 0; i < c.d_model; ++i) x[p][i] += down[i];
    }
  }
  std::vector<Vec> out;
  for (size_t p = 0; p < n; ++p) out.push_back(mat_vec(w("lm_head.weight"), rms(x[p], w("model.norm.weight"), c.norm_eps), c.vocab));
  return out;
}

// A cache whose rows are padded apart (as an arena's page-aligned rows are).
class PaddedKvCache final : public KvCache {
 public:
  PaddedKvCache(const ModelConfig& c, uint32_t rows, uint32_t max_context, uint64_t pad)
      : stride_(max_context * c.kv_token_bytes() + pad), token_(c.kv_token_bytes()),
        k_(c.layers, std::vector<std::byte>(rows * stride_)), v_(c.layers, std::vector<std::byte>(rows * stride_)) {}
  KvLayerView layer(uint32_t l) const override { return {k_[l].data(), v_[l].data(), stride_, token_}; }

 private:
  uint64_t stride_, token_;
  mutable std::vector<std::vector<std::byte>> k_, v_;
};

TEST(InferDecoder, MatchesAnIndependentDoublePrecisionModel) {
  const ModelConfig c = tiny();
  const PlainModel model = as_plain(generate_model(c, 7));
  auto weights = PlainWeights::create(c, model);
  ASSERT_TRUE(weights) << weights.error().message;
  const std::vector<uint32_t> tokens = {3, 1, 4, 1, 5, 9, 2, 6};
  PlainKvCache kv(c, 1, 16);
  Decoder decoder(c, 16);
  std::vector<TokenWork> work;
  for (uint32_t p = 0; p < tokens.size(); ++p) work.push_back({0, p, tokens[p], true});
  std::vector<float> logits;
  ASSERT_TRUE(decoder.forward(*weights, kv, work, logits));
  const auto expected = naive_logits(c, model, tokens);
  ASSERT_EQ(logits.size(), tokens.size() * c.vocab);
  for (size_t p = 0; p < tokens.size(); ++p) {
    expect_logits_near(&logits[p * c.vocab], expected[p], "position " + std::to_string(p));
  }
}

TEST(InferDecoder, ResultsDoNotDependOnBatchingOrRowPlacement) {
  const ModelConfig c = tiny();
  const PlainModel model = as_plain(generate_model(c, 11));
  auto weights = PlainWeights::create(c, model);
  ASSERT_TRUE(weights);
  const std::vector<std::vector<uint32_t>> seqs = {{1, 2, 3, 4, 5, 6}, {7, 8, 9, 10, 0, 1}};

  // All of both rows in one batch.
  PlainKvCache batched_kv(c, 2, 8);
  Decoder batched(c, 8);
  std::vector<TokenWork> work;
  for (uint32_t r = 0; r < 2; ++r)
    for (uint32_t p = 0; p < 6; ++p) work.push_back({r, p, seqs[r][p], true});
  std::vector<float> all;
  ASSERT_TRUE(batched.forward(*weights, batched_kv, work, all));

  // Token by token, rows swapped, in a padded cache.
  PaddedKvCache padded_kv(c, 3, 8, 4096);
  Decoder single(c, 8);
  for (uint32_t r = 0; r < 2; ++r) {
    for (uint32_t p = 0; p < 6; ++p) {
      std::vector<float> one;
      const TokenWork item{2 - r, p, seqs[r][p], true};
      ASSERT_TRUE(single.forward(*weights, padded_kv, std::span<const TokenWork>(&item, 1), one));
      ASSERT_EQ(one.size(), c.vocab);
      EXPECT_EQ(std::memcmp(one.data(), &all[(r * 6 + p) * c.vocab], c.vocab * sizeof(float)), 0)
          << "row " << r << " position " << p;
    }
  }
}

TEST(InferDecoder, RejectsTokensOutsideTheVocabularyAndContext) {
  const ModelConfig c = tiny();
  const PlainModel model = as_plain(generate_model(c, 1));
  auto weights = PlainWeights::create(c, model);
  ASSERT_TRUE(weights);
  PlainKvCache kv(c, 1, 4);
  Decoder decoder(c, 4);
  std::vector<float> logits;
  const TokenWork bad_token{0, 0, c.vocab, true};
  EXPECT_FALSE(decoder.forward(*weights, kv, std::span<const TokenWork>(&bad_token, 1), logits));
  const TokenWork bad_pos{0, 4, 1, true};
  EXPECT_FALSE(decoder.forward(*weights, kv, std::span<const TokenWork>(&bad_pos, 1), logits));
}

TEST(InferReference, DecodesGreedilyAndRecordsEveryStep) {
  const ModelConfig c = tiny();
  const PlainModel model = as_plain(generate_model(c, 3));
  auto weights = PlainWeights::create(c, model);
  ASSERT_TRUE(weights);
  WorkloadConfig w;
  w.requests = 3;
  w.prompt_len = 5;
  w.shared_prefix = 3;
  w.decode_steps = 4;
  auto requests = make_requests(w, c.vocab);
  ASSERT_TRUE(run_reference(c, *weights, requests, w.decode_steps));
  for (const Sequence& s : requests) {
    EXPECT_EQ(s.logit_steps, w.decode_steps + 1);
    EXPECT_EQ(s.generated.size(), w.decode_steps);
    ASSERT_EQ(s.logits.size(), (w.decode_steps + 1) * c.vocab);
    // Greedy: each generated token is the argmax of the step before it.
    for (uint32_t k = 0; k < w.decode_steps; ++k) EXPECT_EQ(s.generated[k], argmax(&s.logits[k * c.vocab], c.vocab));
  }
  // The naive model agrees on a whole decoded sequence.
  const Sequence& s0 = requests[0];
  const auto expected = naive_logits(c, model, s0.tokens(s0.length()));
  for (uint32_t k = 0; k <= w.decode_steps; ++k) {
    expect_logits_near(&s0.logits[k * c.vocab], expected[w.prompt_len - 1 + k], "step " + std::to_string(k));
  }
}

}  // namespace
}  // namespace cxlpool::infer
