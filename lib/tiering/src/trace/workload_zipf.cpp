// SPDX-License-Identifier: Apache-2.0
// zipf and shifting: Zipf page popularity over a random page order, Zipf
// word choice inside the page; shifting redraws the order every phase.
#include <algorithm>

#include "alias_sampler.hpp"
#include "workload_generators.hpp"

namespace cxlpool::tiering::workload_detail {
namespace {

class ZipfPages final : public WorkloadStream::Generator {
 public:
  ZipfPages(const WorkloadConfig& config, std::uint32_t phases)
      : config_(config),
        phases_(phases),
        page_count_(static_cast<std::uint32_t>(config.footprint_bytes >> kPageShift)),
        hot_count_(std::max<std::uint32_t>(1, static_cast<std::uint32_t>(config.hot_fraction * page_count_))),
        pages_(AliasSampler::zipf(page_count_, config.zipf_exponent)),
        words_(AliasSampler::zipf(64, config.word_exponent)),
        rng_(derive_seed(config.seed, 3)),
        word_salt_(derive_seed(config.seed, 4)) {
    order_ = random_permutation(page_count_, rng_);
  }

  void fill(std::span<TraceRecord> out, std::uint64_t first_index) override {
    for (std::size_t i = 0; i < out.size(); ++i) {
      const std::uint64_t index = first_index + i;
      const auto phase = static_cast<std::uint32_t>(static_cast<unsigned __int128>(index) * phases_ / config_.accesses);
      while (phase_ < phase) next_phase();
      const std::uint64_t page = order_[pages_.sample(rng_)];
      // XOR with a per-page 6-bit salt: a bijection on the 64 words, so each
      // page has its own hot word without changing the skew.
      const std::uint64_t word = words_.sample(rng_) ^ (mix64(page ^ word_salt_) & 63);
      TraceRecord& r = out[i];
      r.address = config_.base_address + (page << kPageShift) + word * kLineBytes;
      r.size = static_cast<std::uint32_t>(kLineBytes);
      r.is_write = rng_.chance(config_.write_fraction);
    }
  }

 private:
  // New rank -> page order whose hot ranks avoid the previous hot set.
  void next_phase() {
    ++phase_;
    std::vector<bool> was_hot(page_count_, false);
    for (std::uint32_t r = 0; r < hot_count_; ++r) was_hot[order_[r]] = true;
    std::vector<std::uint32_t> fresh;
    std::vector<std::uint32_t> rest;
    fresh.reserve(page_count_ - hot_count_);
    rest.reserve(page_count_);
    for (std::uint32_t p = 0; p < page_count_; ++p) (was_hot[p] ? rest : fresh).push_back(p);
    for (std::size_t i = fresh.size(); i > 1; --i) std::swap(fresh[i - 1], fresh[rng_.below(i)]);
    // hot_fraction <= 0.5 guarantees enough pages that were not hot.
    const std::uint32_t take = std::min<std::uint32_t>(hot_count_, static_cast<std::uint32_t>(fresh.size()));
    rest.insert(rest.end(), fresh.begin() + take, fresh.end());
    for (std::size_t i = rest.size(); i > 1; --i) std::swap(rest[i - 1], rest[rng_.below(i)]);
    std::copy(fresh.begin(), fresh.begin() + take, order_.begin());
    std::copy(rest.begin(), rest.end(), order_.begin() + take);
  }

  WorkloadConfig config_;
  std::uint32_t phases_;
  std::uint32_t page_count_;
  std::uint32_t hot_count_;
  AliasSampler pages_;  // Zipf ranks
  AliasSampler words_;
  Rng rng_;
  std::uint64_t word_salt_;
  std::uint32_t phase_ = 0;
  std::vector<std::uint32_t> order_;  // rank -> page
};

}  // namespace

Result<GeneratorPtr> make_zipf_pages(const WorkloadConfig& config, std::uint32_t phases) {
  return GeneratorPtr(std::make_unique<ZipfPages>(config, phases));
}

}  // namespace cxlpool::tiering::workload_detail
