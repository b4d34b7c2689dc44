// SPDX-License-Identifier: Apache-2.0
// HWT-driven nominator: hot words first, pages built from them.
//
// A PageAccess carries one count for the page and the set of words it
// touched, not a count per word, so the count is spread evenly over the
// touched words (the remainder to the lowest ones). An access without a mask
// is spread over all 64 words: a page-granular source cannot show sparseness,
// and the page is then reported with class unknown.
#include <algorithm>
#include <bit>
#include <limits>
#include <unordered_map>
#include <utility>

#include "cxlpool/tiering/count_min_sketch.hpp"
#include "cxlpool/tiering/manager/nominator.hpp"
#include "cxlpool/tiering/manager/page_id.hpp"
#include "cxlpool/tiering/manager/page_names.hpp"
#include "cxlpool/tiering/top_k.hpp"

namespace cxlpool::tiering::manager {
namespace {

constexpr std::uint64_t kWordMask = kWordsPerPage - 1;

class HwtNominator final : public Nominator {
 public:
  HwtNominator(CountMinSketch sketch, std::size_t word_k, const M5Config& config)
      : sketch_(std::move(sketch)),
        top_(word_k),
        names_(4 * word_k),
        page_k_(config.top_k),
        min_accesses_(config.min_accesses),
        sparse_max_words_(config.sparse_max_words) {}

  void record(const PageKey& key, std::uint64_t id, std::uint64_t count, std::uint64_t words) override {
    if (count == 0) return;
    const bool known = words != 0;
    const std::uint64_t mask = known ? words : ~0ULL;
    const auto n = static_cast<std::uint64_t>(std::popcount(mask));
    const std::uint64_t each = count / n;
    std::uint64_t extra = count % n;
    for (std::uint64_t m = mask; m != 0; m &= m - 1) {
      const std::uint64_t w = static_cast<std::uint64_t>(std::countr_zero(m));
      std::uint64_t c = each;
      if (extra != 0) {
        ++c;
        --extra;
      }
      if (c == 0) break;  // count < words: the rest get nothing
      record_word(key, id, (id << 6) | w, c, known);
    }
  }

  std::vector<Nomination> end_epoch() override {
    struct Built {
      std::uint64_t score = 0;
      std::uint64_t words = 0;
    };
    std::unordered_map<std::uint64_t, Built> pages;
    const std::vector<KeyCount> hot = top_.sorted();
    pages.reserve(hot.size());
    for (const KeyCount& h : hot) {
      Built& b = pages[h.key >> 6];
      b.score += h.count;
      b.words |= 1ULL << (h.key & kWordMask);
    }
    std::vector<Nomination> out;
    out.reserve(pages.size());
    for (const auto& [id, b] : pages) {
      if (b.score < min_accesses_) continue;
      const NamedPage* named = names_.find(id);
      if (named == nullptr) continue;  // cannot happen: pages of member words are named
      Nomination n;
      n.page = named->key;
      n.count = b.score;
      n.words = named->words_known ? b.words : 0;
      n.page_class = classify(n.words, sparse_max_words_);
      out.push_back(n);
    }
    std::sort(out.begin(), out.end(), [](const Nomination& a, const Nomination& b) {
      return a.count != b.count ? a.count > b.count : page_id(a.page) < page_id(b.page);
    });
    if (out.size() > page_k_) out.resize(page_k_);
    sketch_.reset();
    top_.clear();
    names_.clear();
    return out;
  }

  NominatorMode mode() const override { return NominatorMode::kHwt; }
  std::size_t memory_bytes() const override {
    return sketch_.memory_bytes() + top_.capacity() * (sizeof(KeyCount) + 4 * sizeof(void*));
  }

 private:
  void record_word(const PageKey& key, std::uint64_t id, std::uint64_t word_key, std::uint64_t count, bool known) {
    const bool full = top_.size() == top_.capacity();
    const std::uint32_t threshold = top_.threshold();
    const std::uint32_t c = count > std::numeric_limits<std::uint32_t>::max()
                                ? std::numeric_limits<std::uint32_t>::max()
                                : static_cast<std::uint32_t>(count);
    const std::uint32_t estimate = sketch_.update_and_estimate(word_key, c);
    if (full && estimate <= threshold) return;
    top_.offer(word_key, estimate);
    if (!top_.contains(word_key)) return;
    names_.remember(id, key, known);
    if (names_.over_bound()) prune_names();
  }

  // Keeps the pages that still own a word in the top-K.
  void prune_names() {
    std::unordered_map<std::uint64_t, bool> live;
    for (const KeyCount& h : top_.sorted()) live.emplace(h.key >> 6, true);
    names_.prune([&](std::uint64_t id) { return live.count(id) != 0; });
  }

  CountMinSketch sketch_;
  TopK top_;
  PageNames names_;
  std::size_t page_k_;
  std::uint32_t min_accesses_;
  std::uint32_t sparse_max_words_;
};

}  // namespace

Result<std::unique_ptr<Nominator>> make_hwt_nominator(const M5Config& config) {
  if (config.top_k < 1) return fail(EINVAL, "tiering.top_k: must be at least 1");
  auto sketch = CountMinSketch::create({config.sketch_rows, config.sketch_width, false, 0x4d35485754ULL});
  if (!sketch) return tl::unexpected(sketch.error());
  const std::size_t word_k = std::min(kMaxWordTopK, kHwtWordsPerPage * config.top_k);
  return std::unique_ptr<Nominator>(std::make_unique<HwtNominator>(std::move(*sketch), word_k, config));
}

}  // namespace cxlpool::tiering::manager
