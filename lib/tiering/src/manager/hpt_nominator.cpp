// SPDX-License-Identifier: Apache-2.0
// HPT-driven nominator.
//
// The sketch and the top-K are used directly rather than through
// HotPageTracker because the hot path needs top-K membership: only pages in
// the top-K feed the hot-word tracker and the name table. Words touched
// before a page entered the top-K are not seen; a hot page enters early in
// the epoch, so its mask loses little, and the tracker's bounded table is
// not churned by the long tail of cold pages.
#include <algorithm>
#include <bit>
#include <limits>
#include <utility>

#include "cxlpool/tiering/count_min_sketch.hpp"
#include "cxlpool/tiering/hot_word_tracker.hpp"
#include "cxlpool/tiering/manager/nominator.hpp"
#include "cxlpool/tiering/manager/page_id.hpp"
#include "cxlpool/tiering/manager/page_names.hpp"
#include "cxlpool/tiering/top_k.hpp"

namespace cxlpool::tiering::manager {
namespace {

std::uint32_t clamp32(std::uint64_t v) {
  return v > std::numeric_limits<std::uint32_t>::max() ? std::numeric_limits<std::uint32_t>::max()
                                                       : static_cast<std::uint32_t>(v);
}

class HptNominator final : public Nominator {
 public:
  HptNominator(CountMinSketch sketch, HotWordTracker words, const M5Config& config)
      : sketch_(std::move(sketch)),
        top_(config.top_k),
        words_(std::move(words)),
        names_(4 * std::size_t{config.top_k}),
        min_accesses_(config.min_accesses),
        sparse_max_words_(config.sparse_max_words) {}

  void record(const PageKey& key, std::uint64_t id, std::uint64_t count, std::uint64_t words) override {
    if (count == 0) return;
    const bool full = top_.size() == top_.capacity();
    const std::uint32_t threshold = top_.threshold();
    const std::uint32_t estimate = sketch_.update_and_estimate(id, clamp32(count));
    // A full top-K ignores counts at or below its minimum: skip the lookups.
    if (full && estimate <= threshold) return;
    top_.offer(id, estimate);
    if (!top_.contains(id)) return;
    names_.remember(id, key, words != 0);
    if (names_.over_bound()) names_.prune([this](std::uint64_t k) { return top_.contains(k); });
    record_words(id, words);
  }

  std::vector<Nomination> end_epoch() override {
    std::vector<Nomination> out;
    const std::vector<KeyCount> hot = top_.sorted();
    out.reserve(hot.size());
    for (const KeyCount& h : hot) {
      if (h.count < min_accesses_) break;  // sorted: the rest are colder
      const NamedPage* named = names_.find(h.key);
      if (named == nullptr) continue;  // cannot happen: members are always named
      Nomination n;
      n.page = named->key;
      n.count = h.count;
      if (const auto w = words_.find(h.key)) n.words = w->words;
      n.page_class = classify(n.words, sparse_max_words_);
      out.push_back(n);
    }
    sketch_.reset();
    top_.clear();
    words_.reset();
    names_.clear();
    return out;
  }

  NominatorMode mode() const override { return NominatorMode::kHpt; }
  std::size_t memory_bytes() const override {
    return sketch_.memory_bytes() + top_.capacity() * (sizeof(KeyCount) + 4 * sizeof(void*)) +
           words_.capacity() * (sizeof(PageWords) + 2 * sizeof(std::uint32_t));
  }

 private:
  // One tracker record per run of consecutive touched words.
  void record_words(std::uint64_t id, std::uint64_t mask) {
    const std::uint64_t base = id << HotWordTracker::kPageShift;
    while (mask != 0) {
      const int first = std::countr_zero(mask);
      const std::uint64_t shifted = mask >> first;
      const int len = shifted == ~0ULL ? 64 : std::countr_one(shifted);
      words_.record(base + (static_cast<std::uint64_t>(first) << HotWordTracker::kWordShift),
                    static_cast<std::uint64_t>(len) << HotWordTracker::kWordShift);
      mask = first + len >= 64 ? 0 : mask & ~((1ULL << (first + len)) - 1);
    }
  }

  CountMinSketch sketch_;
  TopK top_;
  HotWordTracker words_;
  PageNames names_;
  std::uint32_t min_accesses_;
  std::uint32_t sparse_max_words_;
};

}  // namespace

Result<std::unique_ptr<Nominator>> make_hpt_nominator(const M5Config& config) {
  auto sketch = CountMinSketch::create({config.sketch_rows, config.sketch_width, false, 0x4d35485054ULL});
  if (!sketch) return tl::unexpected(sketch.error());
  auto words = HotWordTracker::create({config.hwt_capacity, config.sparse_max_words});
  if (!words) return tl::unexpected(words.error());
  if (config.top_k < 1) return fail(EINVAL, "tiering.top_k: must be at least 1");
  return std::unique_ptr<Nominator>(std::make_unique<HptNominator>(std::move(*sketch), std::move(*words), config));
}

}  // namespace cxlpool::tiering::manager
