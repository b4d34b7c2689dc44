// SPDX-License-Identifier: Apache-2.0
// What a job writes when it asks for deduplicable or compressible data
// (fio's dedupe_percentage, dedupe_mode, dedupe_working_set_percentage,
// dedupe_global, buffer_compress_percentage, buffer_compress_chunk): every
// write buffer is refilled (fio's refill_buffers) from a seed. A unique
// write takes a new seed; a deduplicated one (dedupe_percentage of the
// writes) repeats the previous unique write's seed (mode repeat) or one of
// the working set's (mode working_set: the first unique writes, as many as
// dedupe_working_set_percentage of the region holds blocks). Within each
// buffer_compress_chunk the first (100 - compress)% of the bytes are
// pseudo-random and the rest zeros, so the data compresses to about that
// level. With dedupe_global the working set is shared by every job that
// sets it, its entries spread over the jobs' first unique writes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "../job/job_spec.hpp"
#include "rng.hpp"

namespace cxlpool::io {

class WriteData {
 public:
  // `region_blocks`: blocks of the job's region (the working set is a
  // share of them); `seed` the job's.
  WriteData(const JobSpec& job, std::uint64_t region_blocks, std::uint64_t seed);

  // Whether the job's options ask for refilled buffers at all.
  static bool wanted(const JobSpec& job);

  // Fills `bytes` of `buf` for the next write, drawing from `rng`.
  void fill(std::byte* buf, std::uint32_t bytes, Rng& rng);

  // Writes so far that repeated an earlier buffer.
  std::uint64_t deduplicated() const { return deduplicated_; }

 private:
  std::uint64_t unique_seed(Rng& rng);
  void render(std::byte* buf, std::uint32_t bytes, std::uint64_t seed) const;

  std::uint32_t dedupe_percent_;
  bool working_set_;
  std::uint32_t compress_percent_;
  std::uint32_t chunk_;
  std::uint64_t set_size_ = 0;          // working_set: entries
  std::uint64_t set_base_;              // working-set entry i's seed derives from this
  std::atomic<std::uint64_t>* filled_;  // working-set entries written so far (shared with dedupe_global)
  std::atomic<std::uint64_t> own_filled_{0};
  std::uint64_t previous_ = 0;          // repeat: the last unique write's seed
  bool have_previous_ = false;
  std::uint64_t deduplicated_ = 0;
};

}  // namespace cxlpool::io
