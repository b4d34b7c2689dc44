// SPDX-License-Identifier: Apache-2.0
// The per-kind generators behind WorkloadStream and the small deterministic
// helpers they share. Generators fill address, size and is_write; the stream
// stamps the timestamps.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/tiering/mix.hpp"
#include "cxlpool/tiering/workloads.hpp"

namespace cxlpool::tiering::workload_detail {

inline constexpr std::uint64_t kPageShift = 12;
inline constexpr std::uint64_t kPageBytes = 1ull << kPageShift;
inline constexpr std::uint64_t kLineBytes = 64;

// splitmix64: tiny, fast, and the same stream everywhere (unlike the
// standard distributions, whose algorithms are unspecified).
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    return mix64(state_);
  }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform in [0, n), n >= 1 (multiply-shift; bias below 2^-32 for n < 2^32).
  std::uint64_t below(std::uint64_t n) {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }
  bool chance(double p) { return uniform() < p; }

 private:
  std::uint64_t state_;
};

// Seeds for independent streams derived from one user seed.
inline std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) {
  return mix64(seed ^ mix64(stream + 0x51ed2701ULL));
}

// A random permutation of [0, n) (Fisher-Yates).
std::vector<std::uint32_t> random_permutation(std::uint32_t n, Rng& rng);

using GeneratorPtr = std::unique_ptr<WorkloadStream::Generator>;

// zipf (phases = 1) and shifting.
Result<GeneratorPtr> make_zipf_pages(const WorkloadConfig& config, std::uint32_t phases);
Result<GeneratorPtr> make_sparse_kv(const WorkloadConfig& config);
Result<GeneratorPtr> make_graph(const WorkloadConfig& config);

}  // namespace cxlpool::tiering::workload_detail
