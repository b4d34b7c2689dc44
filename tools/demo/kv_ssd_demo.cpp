// SPDX-License-Identifier: Apache-2.0
#include "kv_ssd_demo.hpp"

#include <cstdio>
#include <cstring>
#include <map>
#include <vector>

#include "cxlpool/kv.hpp"

namespace {

constexpr uint32_t kChunkTokens = 256;
constexpr uint64_t kChunkBytes = 64 << 10;
constexpr size_t kEarly = 16;  // the chunks that should end up on SSD
constexpr size_t kBatch = 16;  // keys per put: well inside the put window and quota

std::map<std::string, uint64_t> counters(cxlpool::Client& client) {
  std::vector<cxlpool_stat> stats(4096);
  const int n = cxlpool_stats(client.get(), stats.data(), stats.size());
  std::map<std::string, uint64_t> out;
  for (int i = 0; i < n && i < static_cast<int>(stats.size()); ++i) out[stats[i].name] = stats[i].value;
  return out;
}

void fill_chunk(std::vector<std::byte>& buffer, size_t index) {
  for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<std::byte>((i * 29 + index * 101) & 0xff);
}

size_t put_range(cxlpool::KvStore& kv, const cxlpool::KvNamespace& ns, const std::vector<cxlpool::KvKey>& keys,
                 size_t first, size_t end) {
  std::vector<std::vector<std::byte>> chunks(kBatch, std::vector<std::byte>(kChunkBytes));
  size_t stored = 0;
  for (size_t at = first; at < end; at += kBatch) {
    const size_t n = std::min(kBatch, end - at);
    std::vector<const void*> data;
    for (size_t i = 0; i < n; ++i) {
      fill_chunk(chunks[i], at + i);
      data.push_back(chunks[i].data());
    }
    stored += kv.put(ns, std::span(keys).subspan(at, n), data, kChunkBytes);
  }
  return stored;
}

}  // namespace

int run_kv_ssd_demo(const std::string& socket) {
  std::printf("\nKV-cache store: DRAM -> CXL -> SSD and back\n");
  try {
    cxlpool::Client client(socket, "cxlpool-demo-kv-ssd");
    cxlpool::KvStore kv(client);
    const cxlpool_kv_info info = kv.info();
    if (info.tier_bandwidth_bps[2] == 0) {
      std::printf("  skipped: the daemon has no SSD tier ([kvstore] ssd_path)\n");
      return 0;
    }
    const size_t in_memory = (info.arena_bytes[0] + info.arena_bytes[1]) / info.slot_bytes;
    const cxlpool::KvNamespace ns =
        kv.open_namespace("cxlpool-demo-ssd", "demo-contiguous", "bf16", 0, 1, kChunkTokens);
    std::vector<uint32_t> tokens((kEarly + in_memory) * kChunkTokens);
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint32_t>(i * 13 + 7);
    const auto keys = ns.compute_keys(tokens);
    const std::vector<cxlpool::KvKey> early(keys.begin(), keys.begin() + kEarly);

    put_range(kv, ns, keys, 0, kEarly);
    // Read once (a get is the SSD admission filter's second sighting after
    // the commit): these are worth keeping when memory runs out; the newer
    // chunks, seen once, are not.
    kv.get(ns, early).release();
    const auto before = counters(client);
    const size_t fillers = put_range(kv, ns, keys, kEarly, keys.size());
    const auto after_fill = counters(client);
    const uint64_t demoted = after_fill.at("kv.tier.ssd.demotions") - before.at("kv.tier.ssd.demotions");
    std::printf("  %zu chunks of %llu KiB stored, then %zu newer ones: DRAM and CXL hold %zu slots,\n"
                "  so the oldest moved down; %llu chunk(s) demoted to SSD, %llu on SSD now\n",
                kEarly, static_cast<unsigned long long>(kChunkBytes >> 10), fillers, in_memory,
                static_cast<unsigned long long>(demoted),
                static_cast<unsigned long long>(after_fill.at("kv.tier.ssd.chunks")));

    cxlpool::KvLease lease = kv.get(ns, early);
    std::vector<std::byte> expected(kChunkBytes);
    size_t good = 0;
    for (size_t i = 0; i < lease.size(); ++i) {
      fill_chunk(expected, i);
      good += lease.bytes(i).size() == kChunkBytes && std::memcmp(lease.data(i), expected.data(), kChunkBytes) == 0;
    }
    const size_t leased = lease.size();
    lease.release();
    const auto after_get = counters(client);
    const uint64_t ssd_hits = after_get.at("kv.tier.ssd.hits") - after_fill.at("kv.tier.ssd.hits");
    std::printf("  get of the %zu oldest: %zu leased, %zu verified, %llu read back from SSD\n", kEarly,
                leased, good, static_cast<unsigned long long>(ssd_hits));
    kv.erase(ns, keys);
    const bool ok = demoted > 0 && ssd_hits > 0 && good == kEarly;
    std::printf("  %s\n", ok ? "SSD tier OK" : "SSD tier FAILED");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "  KV SSD demo: %s\n", e.what());
    return 1;
  }
}
