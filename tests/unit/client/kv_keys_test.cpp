// SPDX-License-Identifier: Apache-2.0
// cxlpool_kv_compute_keys must produce lib/kvcache's keys bit for bit: the
// daemon indexes chunks by them and another process computes them too.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cxlpool/kv.h"
#include "cxlpool/kvcache/chunk_key.hpp"
#include "cxlpool/kvcache/namespace.hpp"
#include "kv_pure.hpp"

namespace {

using cxlpool::kvcache::ChunkKey;
using cxlpool::kvcache::NamespaceSpec;

cxlpool_kv_namespace c_namespace(const NamespaceSpec& spec, uint64_t id = 7) {
  const auto fp = cxlpool::kvcache::fingerprint(spec);
  return cxlpool_kv_namespace{id, fp.hi, fp.lo, spec.chunk_tokens};
}

std::vector<uint32_t> random_tokens(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> t(n);
  for (auto& v : t) v = rng();
  return t;
}

std::vector<uint32_t> iota_tokens(size_t n) {
  std::vector<uint32_t> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = static_cast<uint32_t>(i);
  return t;
}

// Keys through the C ABI; -errno on failure.
int c_keys(const cxlpool_kv_namespace& ns, const std::vector<uint32_t>& tokens, const cxlpool_kv_key* parent,
           std::vector<cxlpool_kv_key>& out) {
  out.assign(tokens.size() / (ns.chunk_tokens ? ns.chunk_tokens : 1) + 1, cxlpool_kv_key{0, 0});
  const int n = cxlpool_kv_compute_keys(&ns, tokens.data(), tokens.size(), parent, out.data(), out.size());
  if (n >= 0) out.resize(static_cast<size_t>(n));
  return n;
}

void expect_same(const std::vector<cxlpool_kv_key>& c, const std::vector<ChunkKey>& ref) {
  ASSERT_EQ(c.size(), ref.size());
  for (size_t i = 0; i < c.size(); ++i) {
    EXPECT_EQ(c[i].lo, ref[i].lo) << "key " << i;
    EXPECT_EQ(c[i].hi, ref[i].hi) << "key " << i;
  }
}

TEST(ClientKvKeys, EqualsComputeChunkKeys) {
  const uint32_t chunk_sizes[] = {1, 3, 16, 256, 1000};
  const size_t lengths[] = {0, 1, 255, 256, 257, 511, 512, 4096, 5000};
  uint32_t seed = 1;
  for (uint32_t chunk : chunk_sizes) {
    const NamespaceSpec spec{"model-" + std::to_string(chunk), "vllm-paged-nhd", "bf16", 1, 4, chunk};
    const cxlpool_kv_namespace ns = c_namespace(spec);
    for (size_t len : lengths) {
      const auto tokens = random_tokens(len, seed++);
      std::vector<ChunkKey> ref;
      const size_t covered = cxlpool::kvcache::compute_chunk_keys(tokens, cxlpool::kvcache::Namespace(spec), ref);
      std::vector<cxlpool_kv_key> keys;
      ASSERT_EQ(c_keys(ns, tokens, nullptr, keys), static_cast<int>(len / chunk)) << cxlpool_last_error();
      EXPECT_EQ(covered, keys.size() * chunk);
      expect_same(keys, ref);
    }
  }
}

TEST(ClientKvKeys, ParentChainsLikeTheLibrary) {
  const NamespaceSpec spec{"m", "l", "fp16", 0, 1, 64};
  const cxlpool_kv_namespace ns = c_namespace(spec);
  const auto tokens = random_tokens(640, 99);
  const ChunkKey parent{0x0123456789abcdefULL, 0xfedcba9876543210ULL};
  const cxlpool_kv_key c_parent{parent.lo, parent.hi};
  std::vector<ChunkKey> ref;
  cxlpool::kvcache::compute_chunk_keys(tokens, 64, cxlpool::kvcache::fingerprint(spec), ref, parent);
  std::vector<cxlpool_kv_key> keys;
  ASSERT_EQ(c_keys(ns, tokens, &c_parent, keys), 10);
  expect_same(keys, ref);

  // A sequence keyed in two calls, the second chained from the first's last
  // key, has the keys of the whole sequence.
  std::vector<cxlpool_kv_key> whole, head, tail;
  ASSERT_EQ(c_keys(ns, tokens, nullptr, whole), 10);
  const std::vector<uint32_t> first(tokens.begin(), tokens.begin() + 384), rest(tokens.begin() + 384, tokens.end());
  ASSERT_EQ(c_keys(ns, first, nullptr, head), 6);
  ASSERT_EQ(c_keys(ns, rest, &head.back(), tail), 4);
  head.insert(head.end(), tail.begin(), tail.end());
  ASSERT_EQ(head.size(), whole.size());
  for (size_t i = 0; i < whole.size(); ++i) {
    EXPECT_EQ(head[i].lo, whole[i].lo);
    EXPECT_EQ(head[i].hi, whole[i].hi);
  }
}

// The same known answers as lib/kvcache's own tests, through the C ABI.
TEST(ClientKvKeys, KnownAnswer) {
  const NamespaceSpec spec{"llama-3-8b", "vllm-paged-nhd", "bf16", 0, 2, 256};
  const cxlpool_kv_namespace ns = c_namespace(spec);
  std::vector<cxlpool_kv_key> keys;
  ASSERT_EQ(c_keys(ns, iota_tokens(600), nullptr, keys), 2);
  EXPECT_EQ(keys[0].hi, 0xc00d80bf7eabaff7ULL);
  EXPECT_EQ(keys[0].lo, 0x068efb7434614744ULL);
  EXPECT_EQ(keys[1].hi, 0xe64bc55cc1a7e253ULL);
  EXPECT_EQ(keys[1].lo, 0xe1f86a37d5693607ULL);
}

TEST(ClientKvKeys, DifferentNamespacesNeverMatch) {
  const auto tokens = random_tokens(512, 5);
  std::vector<cxlpool_kv_key> a, b;
  ASSERT_EQ(c_keys(c_namespace({"m", "l", "bf16", 0, 2, 256}), tokens, nullptr, a), 2);
  ASSERT_EQ(c_keys(c_namespace({"m", "l", "bf16", 1, 2, 256}), tokens, nullptr, b), 2);
  EXPECT_FALSE(a[0].lo == b[0].lo && a[0].hi == b[0].hi);
}

TEST(ClientKvKeys, PartialTrailingChunkGetsNoKey) {
  const cxlpool_kv_namespace ns = c_namespace({"m", "l", "bf16", 0, 1, 256});
  const auto tokens = random_tokens(255, 3);
  // No key to write: NULL output with room 0 is fine.
  EXPECT_EQ(cxlpool_kv_compute_keys(&ns, tokens.data(), tokens.size(), nullptr, nullptr, 0), 0);
  EXPECT_EQ(cxlpool_kv_compute_keys(&ns, nullptr, 0, nullptr, nullptr, 0), 0);
}

TEST(ClientKvKeys, Errors) {
  cxlpool_kv_namespace ns = c_namespace({"m", "l", "bf16", 0, 1, 16});
  const auto tokens = random_tokens(64, 4);
  cxlpool_kv_key keys[4];
  EXPECT_EQ(cxlpool_kv_compute_keys(&ns, tokens.data(), tokens.size(), nullptr, keys, 3), -ENOSPC);
  EXPECT_NE(std::string(cxlpool_last_error()), "");
  EXPECT_EQ(cxlpool_kv_compute_keys(&ns, tokens.data(), tokens.size(), nullptr, keys, 4), 4);
  EXPECT_STREQ(cxlpool_last_error(), "");
  EXPECT_EQ(cxlpool_kv_compute_keys(nullptr, tokens.data(), tokens.size(), nullptr, keys, 4), -EINVAL);
  EXPECT_EQ(cxlpool_kv_compute_keys(&ns, nullptr, 16, nullptr, keys, 4), -EINVAL);
  EXPECT_EQ(cxlpool_kv_compute_keys(&ns, tokens.data(), tokens.size(), nullptr, nullptr, 4), -EINVAL);
  ns.chunk_tokens = 0;
  EXPECT_EQ(cxlpool_kv_compute_keys(&ns, tokens.data(), tokens.size(), nullptr, keys, 4), -EINVAL);
}

TEST(ClientKvKeys, NamespaceSpecChecks) {
  cxlpool_kv_namespace_spec spec{"llama", "vllm-paged-nhd", "bf16", 1, 2, 0};
  auto ok = cxlpool::client::kv_namespace_spec(spec);
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->chunk_tokens, 256u);  // 0: the default
  EXPECT_EQ(ok->model_id, "llama");
  EXPECT_EQ(ok->tp_rank, 1u);
  EXPECT_EQ(ok->tp_size, 2u);

  auto code = [](cxlpool_kv_namespace_spec s) {
    auto r = cxlpool::client::kv_namespace_spec(s);
    return r ? 0 : r.error().code;
  };
  EXPECT_EQ(code({"", "l", "d", 0, 1, 0}), EINVAL);
  EXPECT_EQ(code({nullptr, "l", "d", 0, 1, 0}), EINVAL);
  EXPECT_EQ(code({"m", nullptr, "d", 0, 1, 0}), EINVAL);
  EXPECT_EQ(code({"m", "l", "", 0, 1, 0}), EINVAL);
  EXPECT_EQ(code({"m", "l", "d", 2, 2, 0}), EINVAL);
  EXPECT_EQ(code({"m", "l", "d", 0, 0, 0}), EINVAL);
  const std::string long_id(257, 'x');
  EXPECT_EQ(code({long_id.c_str(), "l", "d", 0, 1, 0}), EINVAL);
  const std::string max_id(256, 'x');
  EXPECT_EQ(code({max_id.c_str(), "l", "d", 0, 1, 64}), 0);
}

}  // namespace
