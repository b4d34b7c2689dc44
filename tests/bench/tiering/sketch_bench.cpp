// SPDX-License-Identifier: Apache-2.0
// Single-thread Count-Min sketch update throughput for H = 2, 4, 8 and
// W = 4K..1M counters per row, with an exact std::unordered_map counter over
// the same Zipf page stream as the baseline. Best of several passes.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>
#include <vector>

#include "cxlpool/tiering/count_min_sketch.hpp"
#include "cxlpool/tiering/zipf.hpp"

namespace {

using cxlpool::tiering::CountMinSketch;
using Clock = std::chrono::steady_clock;

constexpr int kPasses = 5;

template <typename F>
double best_rate(std::size_t n, F&& pass) {
  double best = 0;
  for (int i = 0; i < kPasses; ++i) {
    const auto t0 = Clock::now();
    pass();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, static_cast<double>(n) / s);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (1u << 22);
  constexpr std::size_t kItems = 1u << 20;  // distinct pages (4 GiB of 4 KiB pages)
  auto zipf = cxlpool::tiering::ZipfGenerator::create(kItems, 0.99, 42);
  if (!zipf || n == 0) {
    std::fprintf(stderr, "sketch_bench: bad arguments\n");
    return 2;
  }
  std::vector<std::uint64_t> keys(n);
  for (auto& k : keys) k = zipf->next_key();

  std::uint64_t sink = 0;
  std::unordered_map<std::uint64_t, std::uint32_t> exact;
  const double map_rate = best_rate(n, [&] {
    exact.clear();
    for (auto k : keys) ++exact[k];
  });
  sink += exact.size();
  // Rough node-based footprint: key + value + next pointer + cached hash, plus buckets.
  const double map_mib = (exact.size() * (8 + 4 + 4 + 8 + 8) + exact.bucket_count() * 8) / 1048576.0;
  std::printf("stream: %zu keys, zipf s=0.99 over %zu pages (%zu distinct seen)\n", n, kItems, exact.size());
  std::printf("baseline unordered_map: %.1f M updates/s, ~%.1f MiB\n\n", map_rate / 1e6, map_mib);
  std::printf("%3s %8s %10s %14s %14s %10s\n", "H", "W", "MiB", "single M/s", "batch M/s", "batch/map");

  for (std::uint32_t rows : {2u, 4u, 8u}) {
    for (std::uint32_t width : {1u << 12, 1u << 14, 1u << 16, 1u << 18, 1u << 20}) {
      auto s = CountMinSketch::create({rows, width, false, 1});
      if (!s) return 1;
      const double single = best_rate(n, [&] {
        s->reset();
        for (auto k : keys) s->update(k);
      });
      sink += s->estimate(keys[0]);
      const double batch = best_rate(n, [&] {
        s->reset();
        s->update_batch(keys);
      });
      sink += s->estimate(keys[0]);
      std::printf("%3u %8u %10.2f %14.1f %14.1f %9.1fx\n", rows, width, s->memory_bytes() / 1048576.0,
                  single / 1e6, batch / 1e6, batch / map_rate);
    }
  }
  std::printf("\n(checksum %llu)\n", static_cast<unsigned long long>(sink));
  return 0;
}
