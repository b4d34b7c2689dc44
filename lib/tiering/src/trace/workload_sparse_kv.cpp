// SPDX-License-Identifier: Apache-2.0
// sparse-kv: a Redis-like store (see workloads.hpp). Layout, in order:
// the bucket array (8 bytes per key), then slab pages, each holding objects
// of a single size class as a slab allocator places them.
#include <algorithm>
#include <array>

#include "cxlpool/common/units.hpp"
#include "alias_sampler.hpp"
#include "workload_generators.hpp"

namespace cxlpool::tiering::workload_detail {
namespace {

constexpr std::array<std::uint32_t, 4> kClassBytes = {64, 128, 256, 512};
// Small objects dominate key-value stores; cumulative shares 40/30/20/10 %.
constexpr std::array<double, 4> kClassCdf = {0.4, 0.7, 0.9, 1.0};
constexpr double kMeanObjectBytes = 0.4 * 64 + 0.3 * 128 + 0.2 * 256 + 0.1 * 512;
constexpr std::uint64_t kBucketBytes = 8;
// At most 2^26 keys of <= 512 bytes: first lines stay below 2^30, so a line
// index and a 2-bit size class share one 32-bit word.
constexpr std::uint64_t kMaxKeys = 1ull << 26;

class SparseKv final : public WorkloadStream::Generator {
 public:
  // objects[k]: the first heap line of the k-th allocated object << 2 | its
  // size class.
  SparseKv(const WorkloadConfig& config, std::uint64_t bucket_count, const std::vector<std::uint32_t>& objects)
      : config_(config),
        bucket_count_(bucket_count),
        heap_base_(config.base_address + round_up(bucket_count * kBucketBytes, kPageBytes)),
        keys_(AliasSampler::zipf(objects.size(), config.zipf_exponent)),
        rng_(derive_seed(config.seed, 12)),
        bucket_salt_(derive_seed(config.seed, 13)) {
    // Popularity rank -> object: a random order, so hot keys are scattered
    // over the slabs instead of sitting in the first pages. Stored by rank:
    // one lookup per request.
    Rng shuffle(derive_seed(config.seed, 14));
    const auto order = random_permutation(static_cast<std::uint32_t>(objects.size()), shuffle);
    object_of_rank_.resize(objects.size());
    for (std::size_t r = 0; r < order.size(); ++r) object_of_rank_[r] = objects[order[r]];
  }

  void fill(std::span<TraceRecord> out, std::uint64_t) override {
    for (TraceRecord& r : out) {
      if (pending_ == pending_count_) plan_operation();
      r = pending_records_[pending_++];
    }
  }

 private:
  // One request's records: they are emitted across fill() calls as needed.
  void plan_operation() {
    pending_ = pending_count_ = 0;
    ++operations_;
    if (config_.scan_interval != 0 && operations_ % config_.scan_interval == 0) {
      // Incremental sweep (SCAN, active expiry): the next bucket line.
      const std::uint64_t lines = std::max<std::uint64_t>(1, bucket_count_ * kBucketBytes / kLineBytes);
      emit(config_.base_address + (scan_cursor_++ % lines) * kLineBytes, kLineBytes, false);
      return;
    }
    const std::uint32_t key = keys_.sample(rng_);  // keys are named by popularity rank
    const std::uint32_t object_info = object_of_rank_[key];
    const bool is_set = rng_.chance(config_.write_fraction);
    const std::uint64_t bucket = mix64(key ^ bucket_salt_) % bucket_count_;
    emit(config_.base_address + bucket * kBucketBytes, kBucketBytes, false);
    const std::uint64_t object = heap_base_ + static_cast<std::uint64_t>(object_info >> 2) * kLineBytes;
    const std::uint32_t lines = kClassBytes[object_info & 3] / kLineBytes;
    if (lines == 1) {
      emit(object, kLineBytes, is_set);
    } else if (lines == 2) {
      // A small string: read (or overwrite) whole.
      emit(object, kLineBytes, false);
      emit(object + kLineBytes, kLineBytes, is_set);
    } else {
      // A small hash: the header line, then one field's line.
      emit(object, kLineBytes, false);
      emit(object + (1 + rng_.below(lines - 1)) * kLineBytes, kLineBytes, is_set);
    }
  }

  void emit(std::uint64_t address, std::uint64_t size, bool is_write) {
    pending_records_[pending_count_++] = {0, address, static_cast<std::uint32_t>(size), is_write};
  }

  WorkloadConfig config_;
  std::uint64_t bucket_count_;
  std::uint64_t heap_base_;
  std::vector<std::uint32_t> object_of_rank_;  // first line from heap_base_ << 2 | size class
  AliasSampler keys_;  // Zipf ranks
  Rng rng_;
  std::uint64_t bucket_salt_;
  std::uint64_t operations_ = 0;
  std::uint64_t scan_cursor_ = 0;
  std::array<TraceRecord, 4> pending_records_{};
  std::size_t pending_ = 0;
  std::size_t pending_count_ = 0;
};

}  // namespace

Result<GeneratorPtr> make_sparse_kv(const WorkloadConfig& config) {
  const std::uint64_t footprint = config.footprint_bytes;
  const std::uint64_t planned = std::min<std::uint64_t>(
      kMaxKeys, static_cast<std::uint64_t>(footprint / (kMeanObjectBytes + kBucketBytes)));
  const std::uint64_t bucket_bytes = round_up(planned * kBucketBytes, kPageBytes);
  const std::uint64_t heap_pages = (footprint - bucket_bytes) >> kPageShift;
  // Slab allocation in key order: each size class fills its own current
  // page and takes the next free page when it is full; stop when a class
  // needs a page and none is left.
  Rng rng(derive_seed(config.seed, 11));
  std::vector<std::uint32_t> objects;
  objects.reserve(planned);
  std::array<std::uint64_t, 4> cursor{};  // next free line per class, in the class's current page
  std::array<std::uint64_t, 4> limit{};   // end line of that page
  std::uint64_t next_page = 0;
  while (objects.size() < planned) {
    const double u = rng.uniform();
    const std::uint8_t c = static_cast<std::uint8_t>(std::upper_bound(kClassCdf.begin(), kClassCdf.end() - 1, u) -
                                                     kClassCdf.begin());
    const std::uint64_t lines = kClassBytes[c] / kLineBytes;
    if (cursor[c] + lines > limit[c]) {
      if (next_page == heap_pages) break;
      cursor[c] = next_page * (kPageBytes / kLineBytes);
      limit[c] = cursor[c] + kPageBytes / kLineBytes;
      ++next_page;
    }
    objects.push_back(static_cast<std::uint32_t>(cursor[c] << 2 | c));
    cursor[c] += lines;
  }
  if (objects.empty()) return fail(EINVAL, "workload sparse-kv: footprint too small for any object");
  return GeneratorPtr(std::make_unique<SparseKv>(config, planned, objects));
}

}  // namespace cxlpool::tiering::workload_detail
