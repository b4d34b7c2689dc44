// SPDX-License-Identifier: Apache-2.0
#include "write_data.hpp"

#include <algorithm>
#include <cstring>

namespace cxlpool::io {
namespace {

// dedupe_global's working set: one for the process, as fio's is for the
// jobs of a run that set it.
constexpr std::uint64_t kGlobalSetBase = 0x5851f42d4c957f2dull;
std::atomic<std::uint64_t> g_global_filled{0};

std::uint64_t entry_seed(std::uint64_t base, std::uint64_t index) {
  std::uint64_t state = base ^ (index * 0x9e3779b97f4a7c15ull);
  return splitmix64(state);
}

}  // namespace

bool WriteData::wanted(const JobSpec& job) {
  return job.dedupe_percentage != 0 || job.buffer_compress_percentage != 0;
}

WriteData::WriteData(const JobSpec& job, std::uint64_t region_blocks, std::uint64_t seed)
    : dedupe_percent_(job.dedupe_percentage),
      working_set_(job.dedupe_working_set),
      compress_percent_(job.buffer_compress_percentage),
      chunk_(job.buffer_compress_chunk),
      set_base_(job.dedupe_global ? kGlobalSetBase : seed ^ 0x2545f4914f6cdd1dull),
      filled_(job.dedupe_global ? &g_global_filled : &own_filled_) {
  if (working_set_)
    set_size_ = std::max<std::uint64_t>(1, region_blocks * job.dedupe_working_set_percentage / 100);
}

std::uint64_t WriteData::unique_seed(Rng& rng) {
  if (working_set_) {
    // The first unique writes are the working set's entries.
    std::uint64_t n = filled_->load(std::memory_order_relaxed);
    while (n < set_size_ && !filled_->compare_exchange_weak(n, n + 1, std::memory_order_relaxed)) {
    }
    if (n < set_size_) return entry_seed(set_base_, n);
  }
  return rng.next();
}

void WriteData::fill(std::byte* buf, std::uint32_t bytes, Rng& rng) {
  std::uint64_t seed = 0;
  bool dedupe = dedupe_percent_ != 0 && rng.below(100) < dedupe_percent_;
  if (dedupe && working_set_) {
    const std::uint64_t n = std::min(filled_->load(std::memory_order_relaxed), set_size_);
    dedupe = n != 0;
    if (dedupe) seed = entry_seed(set_base_, rng.below(n));
  } else if (dedupe) {
    dedupe = have_previous_;
    seed = previous_;
  }
  if (dedupe) {
    ++deduplicated_;
  } else {
    seed = unique_seed(rng);
    previous_ = seed;
    have_previous_ = true;
  }
  render(buf, bytes, seed);
}

void WriteData::render(std::byte* buf, std::uint32_t bytes, std::uint64_t seed) const {
  const std::uint32_t chunk = chunk_ == 0 ? bytes : std::min(chunk_, bytes);
  std::uint64_t state = seed;
  for (std::uint32_t at = 0; at < bytes; at += chunk) {
    const std::uint32_t len = std::min(chunk, bytes - at);
    // The random part, rounded up to whole words; zeros after it.
    const std::uint32_t random = std::min<std::uint32_t>(
        len, (static_cast<std::uint64_t>(len) * (100 - compress_percent_) / 100 + 7) / 8 * 8);
    for (std::uint32_t off = 0; off < random; off += 8) {
      const std::uint64_t v = splitmix64(state);
      std::memcpy(buf + at + off, &v, std::min<std::uint32_t>(8, random - off));
    }
    std::memset(buf + at + random, 0, len - random);
  }
}

}  // namespace cxlpool::io
