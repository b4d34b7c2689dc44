// SPDX-License-Identifier: Apache-2.0
// The decode-attention references: hand-checked cases, grouped-query head
// mapping, the contiguous and paged layouts agreeing bit for bit, bf16
// inputs, and agreement with a plain double-precision formula.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <span>
#include <vector>

#include "attention_math.hpp"
#include "decode_attention_ref.hpp"
#include "random_data.hpp"

namespace cxlpool::cuda {
namespace {

using ref::AttentionShape;
using ref::ContiguousKv;
using ref::KvDtype;
using ref::PagedKv;

AttentionShape shape(uint32_t batch, uint32_t q_heads, uint32_t kv_heads, uint32_t dim,
                     KvDtype dtype = KvDtype::kF32) {
  return AttentionShape{batch, q_heads, kv_heads, dim, 1.0f / std::sqrt(float(dim)), dtype};
}

using test::random_floats;

std::vector<uint16_t> to_bf16(const std::vector<float>& f) {
  std::vector<uint16_t> out(f.size());
  for (size_t i = 0; i < f.size(); ++i) out[i] = math::f32_to_bf16(f[i]);
  return out;
}

std::vector<float> widen(const std::vector<uint16_t>& b) {
  std::vector<float> out(b.size());
  for (size_t i = 0; i < b.size(); ++i) out[i] = math::bf16_to_f32(b[i]);
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The formula with nothing clever: doubles, softmax then weighted sum.
std::vector<double> naive(const AttentionShape& s, const std::vector<float>& q,
                          const std::vector<float>& k, const std::vector<float>& v,
                          uint64_t stride, const std::vector<uint32_t>& lens) {
  const size_t dim = s.head_dim;
  std::vector<double> out(size_t{s.batch} * s.q_heads * dim, 0.0);
  for (uint32_t r = 0; r < s.batch; ++r) {
    for (uint32_t h = 0; h < s.q_heads; ++h) {
      const uint32_t g = h / (s.q_heads / s.kv_heads);
      const float* qh = &q[(size_t{r} * s.q_heads + h) * dim];
      std::vector<double> score(lens[r]);
      for (uint32_t t = 0; t < lens[r]; ++t) {
        const float* kt = &k[((r * stride + t) * s.kv_heads + g) * dim];
        double acc = 0;
        for (size_t d = 0; d < dim; ++d) acc += double(qh[d]) * kt[d];
        score[t] = acc * s.scale;
      }
      if (lens[r] == 0) continue;
      const double max = *std::max_element(score.begin(), score.end());
      double sum = 0;
      for (auto& x : score) sum += (x = std::exp(x - max));
      for (uint32_t t = 0; t < lens[r]; ++t) {
        const float* vt = &v[((r * stride + t) * s.kv_heads + g) * dim];
        for (size_t d = 0; d < dim; ++d) {
          out[(size_t{r} * s.q_heads + h) * dim + d] += score[t] / sum * vt[d];
        }
      }
    }
  }
  return out;
}

TEST(Bf16, ConversionsRoundToNearestEven) {
  EXPECT_EQ(math::f32_to_bf16(1.0f), 0x3F80u);
  EXPECT_EQ(math::f32_to_bf16(-2.0f), 0xC000u);
  EXPECT_EQ(math::bf16_to_f32(0x3F80), 1.0f);
  // 1 + 2^-8 lies halfway between bf16 1.0 and 1.0078125: ties go to even (1.0).
  EXPECT_EQ(math::f32_to_bf16(1.0f + 1.0f / 256), 0x3F80u);
  // 1 + 3 * 2^-8 is halfway between 0x3F81 and 0x3F82: even is 0x3F82.
  EXPECT_EQ(math::f32_to_bf16(1.0f + 3.0f / 256), 0x3F82u);
  EXPECT_EQ(math::f32_to_bf16(1.0f + 1.0f / 128 + 1.0f / 1024), 0x3F81u);
  EXPECT_TRUE(std::isnan(math::bf16_to_f32(math::f32_to_bf16(std::nanf("")))));
  EXPECT_TRUE(std::isinf(math::bf16_to_f32(math::f32_to_bf16(INFINITY))));
}

TEST(DecodeAttention, SingleTokenReturnsItsValue) {
  const auto s = shape(1, 1, 1, 3);
  const std::vector<float> q{0.5f, -1.0f, 2.0f}, k{1.0f, 2.0f, 3.0f}, v{7.0f, -8.0f, 9.5f};
  const uint32_t len = 1;
  std::vector<float> out(3);
  ASSERT_EQ(ref::decode_attention(s, q.data(), ContiguousKv{k.data(), v.data(), 1}, &len,
                                  out.data()),
            0);
  EXPECT_EQ(out, v);
}

TEST(DecodeAttention, TwoTokensHandComputed) {
  // scale 1, q = (1, 0): scores 0 and ln 3, weights 1/4 and 3/4.
  AttentionShape s = shape(1, 1, 1, 2);
  s.scale = 1.0f;
  const float ln3 = std::log(3.0f);
  const std::vector<float> q{1.0f, 0.0f}, k{0.0f, 5.0f, ln3, -5.0f}, v{4.0f, 0.0f, 0.0f, 8.0f};
  const uint32_t len = 2;
  std::vector<float> out(2);
  ASSERT_EQ(ref::decode_attention(s, q.data(), ContiguousKv{k.data(), v.data(), 2}, &len,
                                  out.data()),
            0);
  EXPECT_NEAR(out[0], 1.0f, 1e-6);
  EXPECT_NEAR(out[1], 6.0f, 1e-6);
}

TEST(DecodeAttention, GroupedQueryHeadsReadTheirKvHead) {
  // 4 query heads over 2 KV heads: heads 0,1 -> KV head 0; heads 2,3 -> KV head 1.
  const auto s = shape(1, 4, 2, 2);
  const std::vector<float> q = random_floats(8, 1);
  const std::vector<float> k{1, 1, 2, 2};
  const std::vector<float> v{10, 11, 20, 21};
  const uint32_t len = 1;
  std::vector<float> out(8);
  ASSERT_EQ(ref::decode_attention(s, q.data(), ContiguousKv{k.data(), v.data(), 1}, &len,
                                  out.data()),
            0);
  EXPECT_EQ(out, (std::vector<float>{10, 11, 10, 11, 20, 21, 20, 21}));
}

TEST(DecodeAttention, EmptyRowIsZeroAndTokensPastSeqLenAreIgnored) {
  const auto s = shape(2, 2, 1, 4);
  const uint64_t stride = 8;
  auto k = random_floats(2 * stride * 4, 2), v = random_floats(2 * stride * 4, 3);
  const auto q = random_floats(2 * 2 * 4, 4);
  const std::vector<uint32_t> lens{0, 5};
  std::vector<float> clean(16, -1.0f), poisoned(16, -1.0f);
  ASSERT_EQ(ref::decode_attention(s, q.data(), ContiguousKv{k.data(), v.data(), stride},
                                  lens.data(), clean.data()),
            0);
  for (uint64_t t = 5; t < stride; ++t) {
    for (int d = 0; d < 4; ++d) {
      k[(stride + t) * 4 + d] = std::numeric_limits<float>::quiet_NaN();
      v[(stride + t) * 4 + d] = std::numeric_limits<float>::quiet_NaN();
    }
  }
  for (auto& x : std::span(k).first(stride * 4)) x = std::numeric_limits<float>::quiet_NaN();
  ASSERT_EQ(ref::decode_attention(s, q.data(), ContiguousKv{k.data(), v.data(), stride},
                                  lens.data(), poisoned.data()),
            0);
  EXPECT_TRUE(std::all_of(clean.begin(), clean.begin() + 8, [](float x) { return x == 0.0f; }));
  EXPECT_TRUE(same_bits(clean, poisoned));
}

TEST(DecodeAttention, MatchesDoublePrecisionFormula) {
  const auto s = shape(3, 8, 2, 32);
  const uint64_t stride = 40;
  const auto k = random_floats(3 * stride * 2 * 32, 5), v = random_floats(3 * stride * 2 * 32, 6);
  const auto q = random_floats(3 * 8 * 32, 7);
  const std::vector<uint32_t> lens{1, 17, 40};
  std::vector<float> out(3 * 8 * 32);
  ASSERT_EQ(ref::decode_attention(s, q.data(), ContiguousKv{k.data(), v.data(), stride},
                                  lens.data(), out.data()),
            0);
  const auto want = naive(s, q, k, v, stride, lens);
  for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], want[i], 1e-5) << "element " << i;
}

struct PagedCase {
  AttentionShape shape;
  uint64_t stride;
  uint32_t page_tokens;
  std::vector<uint32_t> lens;
};

// Builds a shuffled block table with spare pages, copies both tensors into
// pools and checks the paged result against the contiguous one bit for bit.
template <typename T>
void expect_paged_matches(const PagedCase& c, const std::vector<T>& k, const std::vector<T>& v,
                          const std::vector<float>& q) {
  const auto& s = c.shape;
  const uint32_t blocks_per_row = uint32_t((c.stride + c.page_tokens - 1) / c.page_tokens);
  const uint64_t pool_pages = uint64_t{s.batch} * blocks_per_row + 3;
  std::vector<uint32_t> order(pool_pages);
  std::iota(order.begin(), order.end(), 0u);
  std::shuffle(order.begin(), order.end(), std::mt19937(11));
  std::vector<uint32_t> table(order.begin(), order.begin() + s.batch * blocks_per_row);
  const size_t page_elems = ref::token_bytes(s) / sizeof(T) * c.page_tokens;
  std::vector<T> k_pages(pool_pages * page_elems), v_pages(pool_pages * page_elems);
  ASSERT_EQ(ref::copy_to_pages(s, k.data(), c.stride, c.lens.data(), k_pages.data(), pool_pages,
                               c.page_tokens, table.data(), blocks_per_row),
            0);
  ASSERT_EQ(ref::copy_to_pages(s, v.data(), c.stride, c.lens.data(), v_pages.data(), pool_pages,
                               c.page_tokens, table.data(), blocks_per_row),
            0);
  const size_t out_elems = size_t{s.batch} * s.q_heads * s.head_dim;
  std::vector<float> contiguous(out_elems), paged(out_elems);
  ASSERT_EQ(ref::decode_attention(s, q.data(), ContiguousKv{k.data(), v.data(), c.stride},
                                  c.lens.data(), contiguous.data()),
            0);
  const PagedKv kv{k_pages.data(), v_pages.data(), pool_pages, c.page_tokens, table.data(),
                   blocks_per_row};
  ASSERT_EQ(ref::decode_attention_paged(s, q.data(), kv, c.lens.data(), paged.data()), 0);
  EXPECT_TRUE(same_bits(contiguous, paged));
}

TEST(DecodeAttention, PagedEqualsContiguousBitForBitF32) {
  for (const uint32_t page_tokens : {1u, 7u, 16u, 64u}) {
    const PagedCase c{shape(4, 8, 2, 32), 64, page_tokens, {64, 1, 0, 33}};
    const size_t n = size_t{4} * 64 * 2 * 32;
    SCOPED_TRACE(page_tokens);
    expect_paged_matches(c, random_floats(n, 21), random_floats(n, 22),
                         random_floats(4 * 8 * 32, 23));
  }
}

TEST(DecodeAttention, PagedEqualsContiguousBitForBitBf16) {
  const PagedCase c{shape(3, 4, 4, 64, KvDtype::kBf16), 50, 16, {50, 17, 3}};
  const size_t n = size_t{3} * 50 * 4 * 64;
  expect_paged_matches(c, to_bf16(random_floats(n, 31)), to_bf16(random_floats(n, 32)),
                       random_floats(3 * 4 * 64, 33));
}

TEST(DecodeAttention, Bf16InputsComputeLikeTheirF32Values) {
  const auto s16 = shape(2, 4, 1, 48, KvDtype::kBf16);
  auto s32 = s16;
  s32.dtype = KvDtype::kF32;
  const size_t n = size_t{2} * 20 * 48;
  const auto k16 = to_bf16(random_floats(n, 41)), v16 = to_bf16(random_floats(n, 42));
  const auto k32 = widen(k16), v32 = widen(v16);
  const auto q = random_floats(2 * 4 * 48, 43);
  const std::vector<uint32_t> lens{20, 9};
  std::vector<float> a(2 * 4 * 48), b(2 * 4 * 48);
  ASSERT_EQ(ref::decode_attention(s16, q.data(), ContiguousKv{k16.data(), v16.data(), 20},
                                  lens.data(), a.data()),
            0);
  ASSERT_EQ(ref::decode_attention(s32, q.data(), ContiguousKv{k32.data(), v32.data(), 20},
                                  lens.data(), b.data()),
            0);
  EXPECT_TRUE(same_bits(a, b));
}

TEST(DecodeAttention, RejectsBadShapesAndTables) {
  const std::vector<float> buf(1024, 0.5f);
  const std::vector<uint32_t> lens{4};
  std::vector<float> out(64);
  const ContiguousKv kv{buf.data(), buf.data(), 4};
  EXPECT_EQ(ref::decode_attention(shape(1, 3, 2, 8), buf.data(), kv, lens.data(), out.data()),
            -EINVAL);
  EXPECT_EQ(ref::decode_attention(shape(1, 2, 2, ref::kMaxHeadDim + 1), buf.data(), kv,
                                  lens.data(), out.data()),
            -EINVAL);
  EXPECT_EQ(ref::decode_attention(shape(0, 2, 2, 8), buf.data(), kv, lens.data(), out.data()),
            -EINVAL);
  const std::vector<uint32_t> too_long{5};
  EXPECT_EQ(ref::decode_attention(shape(1, 2, 2, 8), buf.data(), kv, too_long.data(), out.data()),
            -EINVAL);
  const std::vector<uint32_t> table{0, 9};
  const PagedKv paged{buf.data(), buf.data(), 4, 2, table.data(), 2};
  EXPECT_EQ(ref::decode_attention_paged(shape(1, 2, 2, 8), buf.data(), paged, lens.data(),
                                        out.data()),
            -ERANGE);
  const std::vector<uint32_t> three_pages{5};
  EXPECT_EQ(ref::decode_attention_paged(shape(1, 2, 2, 8), buf.data(), paged, three_pages.data(),
                                        out.data()),
            -EINVAL);
  const std::vector<uint32_t> two{2};
  EXPECT_EQ(ref::decode_attention_paged(shape(1, 2, 2, 8), buf.data(), paged, two.data(),
                                        out.data()),
            0);
}

}  // namespace
}  // namespace cxlpool::cuda
