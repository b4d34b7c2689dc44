// SPDX-License-Identifier: Apache-2.0
// The generated model through safetensors files and back, and the workload's
// bookkeeping (prompts, greedy recording, the logits comparison).
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "cxlpool/weights/safetensors.hpp"
#include "model_files.hpp"
#include "random_model.hpp"
#include "size_arg.hpp"
#include "support/temp_dir.hpp"
#include "workload.hpp"

namespace cxlpool::infer {
namespace {

ModelConfig small() {
  return {.layers = 3, .d_model = 16, .n_heads = 4, .n_kv_heads = 2, .head_dim = 4, .ffn_dim = 24, .vocab = 32};
}

TEST(InferModelFiles, RoundTripThroughSafetensorsIsByteExact) {
  test::TempDir dir("infer");
  const ModelConfig c = small();
  const auto tensors = generate_model(c, 42);
  auto paths = write_model_files(c, tensors, dir.path().string(), 2);
  ASSERT_TRUE(paths) << paths.error().message;
  ASSERT_EQ(paths->size(), 2u);
  EXPECT_NE((*paths)[0].find("model-00001-of-00002.safetensors"), std::string::npos);

  // Globals and layer 0 in the first file, layers 1 and 2 in the second;
  // every header validates.
  auto first = weights::read_header_file((*paths)[0]);
  auto second = weights::read_header_file((*paths)[1]);
  ASSERT_TRUE(first) << first.error().message;
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_NE(first->find("model.embed_tokens.weight"), nullptr);
  EXPECT_NE(first->find("model.layers.0.mlp.down_proj.weight"), nullptr);
  EXPECT_EQ(first->find("model.layers.2.mlp.down_proj.weight"), nullptr);
  EXPECT_NE(second->find("model.layers.2.mlp.down_proj.weight"), nullptr);
  EXPECT_EQ(first->tensors.size() + second->tensors.size(), tensors.size());
  const auto* q = first->find("model.layers.0.self_attn.q_proj.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->shape, (std::vector<uint64_t>{16, 16}));
  EXPECT_EQ(q->dtype, weights::Dtype::kF32);

  auto back = read_model_files(c, *paths);
  ASSERT_TRUE(back) << back.error().message;
  for (const HostTensor& t : tensors) {
    const auto it = back->tensors.find(t.spec.name);
    ASSERT_NE(it, back->tensors.end()) << t.spec.name;
    ASSERT_EQ(it->second.size(), t.data.size());
    EXPECT_EQ(std::memcmp(it->second.data(), t.data.data(), t.data.size() * sizeof(float)), 0) << t.spec.name;
  }
  EXPECT_TRUE(PlainWeights::create(c, *back));
}

TEST(InferModelFiles, AMissingOrMisshapenTensorIsRejected) {
  test::TempDir dir("infer");
  const ModelConfig c = small();
  auto tensors = generate_model(c, 1);
  auto paths = write_model_files(c, tensors, dir.path().string(), 1);
  ASSERT_TRUE(paths);
  ModelConfig wider = c;
  wider.ffn_dim = 32;  // the files' MLP tensors no longer fit
  auto r = read_model_files(wider, *paths);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("mlp"), std::string::npos) << r.error().message;
  ModelConfig deeper = c;
  deeper.layers = 4;
  auto missing = read_model_files(deeper, *paths);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ENOENT);
}

TEST(InferModelFiles, GenerationIsAPureFunctionOfTheSeed) {
  const ModelConfig c = small();
  const auto a = generate_model(c, 5), b = generate_model(c, 5), other = generate_model(c, 6);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].data, b[i].data) << a[i].spec.name;
  EXPECT_NE(a[3].data, other[3].data);
  // Matrices stay within +-1/sqrt(fan_in); norms around 1.
  for (const HostTensor& t : a) {
    for (float v : t.data) {
      if (t.spec.shape.size() == 1) {
        EXPECT_GE(v, 0.9f);
        EXPECT_LE(v, 1.1f);
      } else if (t.spec.name != "model.embed_tokens.weight") {
        EXPECT_LE(std::abs(v), 1.0f / std::sqrt(static_cast<float>(t.spec.shape.back())));
      }
    }
  }
}

TEST(InferWorkload, PromptsShareExactlyThePrefix) {
  WorkloadConfig w;
  w.requests = 4;
  w.prompt_len = 40;
  w.shared_prefix = 24;
  const auto reqs = make_requests(w, 512);
  for (const Sequence& s : reqs) {
    ASSERT_EQ(s.prompt.size(), 40u);
    for (uint32_t i = 0; i < 24; ++i) EXPECT_EQ(s.prompt[i], reqs[0].prompt[i]);
    for (uint32_t t : s.prompt) EXPECT_LT(t, 512u);
  }
  size_t same_tail = 0;
  for (uint32_t i = 24; i < 40; ++i) same_tail += reqs[1].prompt[i] == reqs[2].prompt[i];
  EXPECT_LT(same_tail, 4u);
}

TEST(InferWorkload, ComparisonFindsASingleFlippedBit) {
  std::vector<Sequence> a(2), b;
  const uint32_t vocab = 4;
  const float step0[4] = {0.5f, 2.0f, -1.0f, 0.0f};
  const float step1[4] = {1.0f, 0.0f, 3.0f, 0.25f};
  for (Sequence& s : a) {
    s.prompt = {1, 2};
    EXPECT_FALSE(s.record(step0, vocab, 1));
    EXPECT_EQ(s.generated, std::vector<uint32_t>{1});
    EXPECT_TRUE(s.record(step1, vocab, 1));
    EXPECT_EQ(s.generated.size(), 1u);  // the last step's token is not generated
  }
  b = a;
  EXPECT_EQ(compare_logits(a, b, vocab), "");
  uint32_t bits;
  std::memcpy(&bits, &b[1].logits[6], sizeof(bits));
  bits ^= 1;
  std::memcpy(&b[1].logits[6], &bits, sizeof(bits));
  const std::string diff = compare_logits(a, b, vocab);
  EXPECT_NE(diff.find("request 1: 1 of 8 logits differ"), std::string::npos) << diff;
  EXPECT_NE(diff.find("step 1, index 2"), std::string::npos) << diff;
  b[0].logits.resize(4);
  EXPECT_NE(compare_logits(a, b, vocab).find("request 0: 2 reference steps vs 1 runtime steps"), std::string::npos);
}

TEST(InferSizeArg, ParsesSuffixesAndRejectsJunk) {
  EXPECT_EQ(parse_size("0"), 0u);
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("64K"), 65536u);
  EXPECT_EQ(parse_size("6M"), 6u << 20);
  EXPECT_EQ(parse_size("2GiB"), 2ull << 30);
  EXPECT_FALSE(parse_size(""));
  EXPECT_FALSE(parse_size("M"));
  EXPECT_FALSE(parse_size("5X"));
  EXPECT_FALSE(parse_size("99999999999999999999"));
  EXPECT_FALSE(parse_size("99999999999999G"));
}

}  // namespace
}  // namespace cxlpool::infer
