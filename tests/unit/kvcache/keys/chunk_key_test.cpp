// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/kvcache/chunk_key.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <numeric>
#include <xxhash.h>

namespace cxlpool::kvcache {
namespace {

Namespace test_ns(std::uint32_t chunk = 4, std::uint32_t rank = 0) {
  return Namespace(NamespaceSpec{"test-model", "nhd", "bf16", rank, 2, chunk});
}

std::vector<TokenId> iota_tokens(std::size_t n, TokenId first = 0) {
  std::vector<TokenId> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

TEST(KvChunkKey, FullChunksOnlyAndCoverage) {
  const auto ns = test_ns(4);
  std::vector<ChunkKey> keys;
  EXPECT_EQ(compute_chunk_keys(iota_tokens(11), ns, keys), 8u);
  EXPECT_EQ(keys.size(), 2u);
  keys.clear();
  EXPECT_EQ(compute_chunk_keys(iota_tokens(3), ns, keys), 0u);
  EXPECT_TRUE(keys.empty());
  EXPECT_EQ(compute_chunk_keys(iota_tokens(12), ns, keys), 12u);
  EXPECT_EQ(keys.size(), 3u);
  std::vector<ChunkKey> none;
  EXPECT_EQ(compute_chunk_keys(iota_tokens(12), 0, ns.fp, none), 0u);
  EXPECT_TRUE(none.empty());
}

TEST(KvChunkKey, PartialTrailingChunkDoesNotChangeFullKeys) {
  const auto ns = test_ns(4);
  std::vector<ChunkKey> a, b;
  compute_chunk_keys(iota_tokens(8), ns, a);
  compute_chunk_keys(iota_tokens(10), ns, b);
  EXPECT_EQ(a, b);
}

TEST(KvChunkKey, ChainedByParent) {
  const auto ns = test_ns(4);
  auto t = iota_tokens(8);
  std::vector<ChunkKey> keys;
  compute_chunk_keys(t, ns, keys);
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0], chunk_key(kRootParent, std::span(t).first(4), ns.fp));
  EXPECT_EQ(keys[1], chunk_key(keys[0], std::span(t).subspan(4, 4), ns.fp));
  // Same second chunk after a different first chunk: different key.
  auto u = t;
  u[0] = 999;
  std::vector<ChunkKey> other;
  compute_chunk_keys(u, ns, other);
  EXPECT_NE(other[0], keys[0]);
  EXPECT_NE(other[1], keys[1]);
  // The same chunk hashed standalone (root parent) differs from its chained key.
  EXPECT_NE(chunk_key(kRootParent, std::span(t).subspan(4, 4), ns.fp), keys[1]);
}

TEST(KvChunkKey, ContinuingFromAParentEqualsOneCall) {
  const auto ns = test_ns(4);
  const auto t = iota_tokens(16, 100);
  std::vector<ChunkKey> all, split;
  compute_chunk_keys(t, ns, all);
  compute_chunk_keys(std::span(t).first(8), ns, split);
  compute_chunk_keys(std::span(t).subspan(8), ns, split, split.back());
  EXPECT_EQ(all, split);
}

TEST(KvChunkKey, Deterministic) {
  const auto t = iota_tokens(1024, 7);
  std::vector<ChunkKey> a, b;
  compute_chunk_keys(t, test_ns(256), a);
  compute_chunk_keys(t, test_ns(256), b);
  EXPECT_EQ(a, b);
}

TEST(KvChunkKey, NamespaceSeparation) {
  const auto t = iota_tokens(8);
  std::vector<ChunkKey> r0, r1, c8;
  compute_chunk_keys(t, test_ns(4, 0), r0);
  compute_chunk_keys(t, test_ns(4, 1), r1);
  EXPECT_NE(r0[0], r1[0]);
  EXPECT_NE(r0[1], r1[1]);
  compute_chunk_keys(t, test_ns(8, 0), c8);
  ASSERT_EQ(c8.size(), 1u);
  EXPECT_NE(c8[0], r0[0]);
  EXPECT_NE(c8[0], r0[1]);
}

TEST(KvChunkKey, TokenOrderAndWidthMatter) {
  const auto ns = test_ns(2);
  const std::vector<TokenId> a{1, 2}, b{2, 1}, c{1, 2 + (1u << 16)};
  EXPECT_NE(chunk_key(kRootParent, a, ns.fp), chunk_key(kRootParent, b, ns.fp));
  EXPECT_NE(chunk_key(kRootParent, a, ns.fp), chunk_key(kRootParent, c, ns.fp));
}

void print_key(const char* what, const ChunkKey& k) {
  std::printf("%s = %016llx%016llx\n", what, static_cast<unsigned long long>(k.hi),
              static_cast<unsigned long long>(k.lo));
}

// Known answers: a change here breaks every stored chunk and every client
// built against an older library; bump the namespace format version instead.
TEST(KvChunkKey, KnownAnswerVectors) {
  const NamespaceFingerprint zero_ns{};
  const std::vector<TokenId> empty;
  const auto k0 = chunk_key(kRootParent, empty, zero_ns);
  print_key("chunk_key(root, [], ns=0)", k0);
  EXPECT_EQ(k0, (ChunkKey{0x9a026d96b3c0f0fcULL, 0xa057271c9071c99dULL}));

  const std::vector<TokenId> small{1, 2, 3, 0xDEADBEEF};
  const auto k1 = chunk_key(kRootParent, small, zero_ns);
  print_key("chunk_key(root, [1,2,3,0xdeadbeef], ns=0)", k1);
  EXPECT_EQ(k1, (ChunkKey{0xa60c0d92bbc3b9daULL, 0x95e8c94fa5300cc3ULL}));

  const Namespace ns(NamespaceSpec{"llama-3-8b", "vllm-paged-nhd", "bf16", 0, 2, 256});
  std::vector<ChunkKey> keys;
  EXPECT_EQ(compute_chunk_keys(iota_tokens(600), ns, keys), 512u);
  ASSERT_EQ(keys.size(), 2u);
  print_key("keys(iota 600, llama ns)[0]", keys[0]);
  print_key("keys(iota 600, llama ns)[1]", keys[1]);
  EXPECT_EQ(keys[0], (ChunkKey{0xc00d80bf7eabaff7ULL, 0x068efb7434614744ULL}));
  EXPECT_EQ(keys[1], (ChunkKey{0xe64bc55cc1a7e253ULL, 0xe1f86a37d5693607ULL}));
}

// The streamed hash equals a one-shot XXH3-128 over the documented bytes.
TEST(KvChunkKey, MatchesDocumentedByteLayout) {
  const NamespaceFingerprint ns{0x0102030405060708ULL, 0x1112131415161718ULL};
  const ChunkKey parent{0x2122232425262728ULL, 0x3132333435363738ULL};
  const std::vector<TokenId> t{0x41424344u, 5u};
  std::vector<std::uint8_t> bytes;
  auto le = [&](std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  };
  le(parent.hi, 8);
  le(parent.lo, 8);
  le(ns.hi, 8);
  le(ns.lo, 8);
  for (TokenId x : t) le(x, 4);
  const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  EXPECT_EQ(chunk_key(parent, t, ns), (ChunkKey{h.high64, h.low64}));
}

TEST(KvChunkKey, HexRoundTrip) {
  const ChunkKey k{0x9a026d96b3c0f0fcULL, 0x0057271c9071c99dULL};
  EXPECT_EQ(to_hex(k), "9a026d96b3c0f0fc0057271c9071c99d");
  EXPECT_EQ(*parse_chunk_key("9A026D96B3C0F0FC0057271C9071C99D"), k);
  EXPECT_FALSE(parse_chunk_key("9a026d96b3c0f0fc0057271c9071c99"));
  EXPECT_FALSE(parse_chunk_key("9a026d96b3c0f0fc0057271c9071c99g"));
}

TEST(KvChunkKey, Hash64UsesBothHalves) {
  EXPECT_NE(key_hash64({1, 0}), key_hash64({0, 0}));
  EXPECT_NE(key_hash64({0, 1}), key_hash64({0, 0}));
}

}  // namespace
}  // namespace cxlpool::kvcache
