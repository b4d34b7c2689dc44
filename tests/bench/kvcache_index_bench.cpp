// SPDX-License-Identifier: Apache-2.0
// Lookups per second of the KV chunk index against std::unordered_map holding
// the same entries, in the same run: random hits, random misses, and 16-key
// prefix lookups. Usage: kvcache_index_bench [entries] [lookups]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <unordered_map>
#include <vector>

#include "cxlpool/kvcache/chunk_key.hpp"
#include "cxlpool/kvcache/index.hpp"

using namespace cxlpool::kvcache;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <typename Fn>
double rate(std::size_t ops, Fn&& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return static_cast<double>(ops) / seconds_since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t entries = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1'000'000;
  const std::size_t lookups = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 5'000'000;

  // Real keys: chained XXH3-128 chunk keys of a synthetic token stream.
  const Namespace ns(NamespaceSpec{"bench-model", "nhd", "bf16", 0, 1, 16});
  std::vector<TokenId> tokens(entries * 16);
  std::mt19937_64 rng(7);
  for (auto& t : tokens) t = static_cast<TokenId>(rng() % 128000);
  std::vector<ChunkKey> keys;
  compute_chunk_keys(tokens, ns, keys);
  std::vector<ChunkKey> missing;
  compute_chunk_keys(tokens, Namespace(NamespaceSpec{"other", "nhd", "bf16", 0, 1, 16}), missing);

  ChunkIndex index(entries);
  std::unordered_map<ChunkKey, ChunkEntry, ChunkKeyHash> map;
  map.reserve(entries);
  for (std::size_t i = 0; i < entries; ++i) {
    ChunkInfo info;
    info.offset = i * 4096;
    info.length = 4096;
    if (index.insert(keys[i], info) != KvStatus::kOk) return 1;
    map.emplace(keys[i], ChunkEntry{keys[i], info, 0});
  }

  std::vector<std::uint32_t> order(lookups);
  for (auto& o : order) o = static_cast<std::uint32_t>(rng() % entries);

  std::uint64_t sink = 0;
  const double idx_hit = rate(lookups, [&] {
    for (auto o : order) sink += index.find(keys[o])->info.offset;
  });
  const double map_hit = rate(lookups, [&] {
    for (auto o : order) sink += map.find(keys[o])->second.info.offset;
  });
  const double idx_miss = rate(lookups, [&] {
    for (auto o : order) sink += index.find(missing[o]) == nullptr;
  });
  const double map_miss = rate(lookups, [&] {
    for (auto o : order) sink += map.find(missing[o]) == map.end();
  });

  // Prefix lookups of 16 chained keys starting at random chunks.
  constexpr std::size_t kBatch = 16;
  const std::size_t batches = lookups / kBatch;
  std::vector<ChunkEntry> out;
  out.reserve(kBatch);
  const double idx_prefix = rate(batches * kBatch, [&] {
    for (std::size_t b = 0; b < batches; ++b) {
      const std::size_t start = order[b] % (entries - kBatch);
      out.clear();
      sink += index.lookup_prefix(std::span(keys).subspan(start, kBatch), &out);
    }
  });
  const double map_prefix = rate(batches * kBatch, [&] {
    for (std::size_t b = 0; b < batches; ++b) {
      const std::size_t start = order[b] % (entries - kBatch);
      out.clear();
      std::size_t n = 0;
      for (; n < kBatch; ++n) {
        auto it = map.find(keys[start + n]);
        if (it == map.end()) break;
        out.push_back(it->second);
      }
      sink += n;
    }
  });

  std::printf("kvcache index bench: %zu entries, %zu lookups (sink %llu)\n", entries, lookups,
              static_cast<unsigned long long>(sink & 1));
  std::printf("%-22s %14s %14s %8s\n", "case", "ChunkIndex/s", "unordered_map/s", "ratio");
  auto row = [](const char* name, double a, double b) {
    std::printf("%-22s %14.3e %14.3e %8.2f\n", name, a, b, a / b);
  };
  row("find hit", idx_hit, map_hit);
  row("find miss", idx_miss, map_miss);
  row("prefix x16 (per key)", idx_prefix, map_prefix);
  std::printf("index max probe %zu, table bytes %zu\n", index.stats().max_probe, index.memory_bytes());
  return 0;
}
