// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/kvcache/admission.hpp"

#include <algorithm>
#include <bit>
#include <limits>

namespace cxlpool::kvcache {

namespace {
std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Row r's counter for key: double hashing over two mixed halves, so keys that
// are not uniformly random (tests, other hash schemes) still spread.
struct RowHash {
  std::uint64_t h1, h2;
  explicit RowHash(const ChunkKey& k) : h1(mix64(k.lo ^ std::rotl(k.hi, 17))), h2(mix64(k.hi + k.lo) | 1) {}
  [[nodiscard]] std::uint64_t at(std::uint32_t r, std::uint64_t mask) const { return (h1 + r * h2) & mask; }
};
}  // namespace

AdmissionFilter::AdmissionFilter(const AdmissionConfig& config) : config_(config) {
  config_.depth = std::clamp<std::uint32_t>(config_.depth, 1, 8);
  config_.width = std::bit_ceil(std::max<std::uint32_t>(config_.width, 64));
  if (config_.halve_every == 0) config_.halve_every = 10ULL * config_.width;
  mask_ = config_.width - 1;
  counters_.assign(static_cast<std::size_t>(config_.depth) * config_.width, 0);
}

void AdmissionFilter::record(const ChunkKey& key) {
  const RowHash h(key);
  std::uint8_t* c[8];
  std::uint8_t lo = std::numeric_limits<std::uint8_t>::max();
  for (std::uint32_t r = 0; r < config_.depth; ++r) {
    c[r] = &counters_[static_cast<std::size_t>(r) * config_.width + h.at(r, mask_)];
    lo = std::min(lo, *c[r]);
  }
  // Conservative update: raise only the counters at the minimum, which keeps
  // the estimate tighter for keys that share counters.
  if (lo != std::numeric_limits<std::uint8_t>::max()) {
    for (std::uint32_t r = 0; r < config_.depth; ++r) {
      if (*c[r] == lo) ++*c[r];
    }
  }
  ++stats_.sightings;
  if (++since_halving_ >= config_.halve_every) halve();
}

std::uint32_t AdmissionFilter::estimate(const ChunkKey& key) const {
  const RowHash h(key);
  std::uint32_t lo = std::numeric_limits<std::uint32_t>::max();
  for (std::uint32_t r = 0; r < config_.depth; ++r) {
    lo = std::min<std::uint32_t>(lo, counters_[static_cast<std::size_t>(r) * config_.width + h.at(r, mask_)]);
  }
  return lo;
}

bool AdmissionFilter::admit(const ChunkKey& key) {
  const bool ok = config_.threshold <= 1 || estimate(key) >= config_.threshold;
  ++(ok ? stats_.admitted : stats_.rejected);
  return ok;
}

void AdmissionFilter::halve() {
  for (auto& c : counters_) c = static_cast<std::uint8_t>(c >> 1);
  since_halving_ = 0;
  ++stats_.halvings;
}

}  // namespace cxlpool::kvcache
