// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/tiering/controller_model.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "stamped_counter_map.hpp"

namespace cxlpool::tiering {
namespace {

constexpr std::size_t kMaxExpected = 1u << 30;
// How often the HWT admission threshold follows the HPT's top-K.
constexpr std::uint64_t kThresholdRefresh = 4096;

std::uint64_t word_range(std::uint64_t first, std::uint64_t last) {
  const std::uint64_t upto_last = last == 63 ? ~0ULL : (1ULL << (last + 1)) - 1;
  return upto_last & ~((1ULL << first) - 1);
}

struct PageCell {
  std::uint64_t count = 0;
  std::uint64_t words = 0;
};

}  // namespace

struct ControllerModel::State {
  State(HotPageTracker h, HotWordTracker w, const ControllerModelConfig& config)
      : hpt(std::move(h)), hwt(std::move(w)), pac(config.expected_pages), wac(config.expected_words),
        top_k(config.hpt.top_k) {}

  HotPageTracker hpt;
  HotWordTracker hwt;
  trace_detail::StampedCounterMap<PageCell> pac;
  trace_detail::StampedCounterMap<std::uint64_t> wac;
  std::size_t top_k;
  std::uint64_t epoch = 0;
  std::uint64_t records = 0;
  std::uint64_t page_accesses = 0;
  std::uint64_t word_accesses = 0;
  // The HWT follows the pages the HPT ranks hot (as M5's word tracker is fed
  // from the page tracker's candidates): a page is admitted once its
  // estimate reaches the top-K's entry count. Feeding every page would make
  // the bounded table evict on nearly every access.
  std::uint32_t hwt_admit = 1;

  void refresh_admission() {
    const auto hot = hpt.hot_pages();
    hwt_admit = hot.size() < top_k ? 1 : std::max<std::uint32_t>(1, hot.back().count);
  }
};

ControllerModel::ControllerModel(std::unique_ptr<State> state) : state_(std::move(state)) {}
ControllerModel::ControllerModel(ControllerModel&&) noexcept = default;
ControllerModel& ControllerModel::operator=(ControllerModel&&) noexcept = default;
ControllerModel::~ControllerModel() = default;

Result<ControllerModel> ControllerModel::create(const ControllerModelConfig& config) {
  if (config.expected_pages < 1 || config.expected_pages > kMaxExpected || config.expected_words < 1 ||
      config.expected_words > kMaxExpected) {
    return fail(EINVAL, "controller model: expected_pages/expected_words not in 1.." + std::to_string(kMaxExpected));
  }
  auto hpt = HotPageTracker::create(config.hpt);
  if (!hpt) return tl::unexpected(hpt.error());
  auto hwt = HotWordTracker::create(config.hwt);
  if (!hwt) return tl::unexpected(hwt.error());
  return ControllerModel(std::make_unique<State>(std::move(*hpt), std::move(*hwt), config));
}

void ControllerModel::access(const TraceRecord& record) {
  if (record.size == 0) return;
  State& s = *state_;
  const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  const std::uint64_t first = record.address;
  const std::uint64_t last = record.size - 1 > max - first ? max : first + (record.size - 1);  // inclusive
  ++s.records;
  if (s.records % kThresholdRefresh == 0) s.refresh_admission();
  const std::uint64_t first_page = first >> kModelPageShift;
  const std::uint64_t last_page = last >> kModelPageShift;
  for (std::uint64_t page = first_page;; ++page) {
    const std::uint64_t lo = page == first_page ? first : page << kModelPageShift;
    const std::uint64_t hi = page == last_page ? last : (page << kModelPageShift) | ((1ull << kModelPageShift) - 1);
    const std::uint64_t mask = word_range((lo >> kModelWordShift) & 63, (hi >> kModelWordShift) & 63);
    PageCell& cell = s.pac.upsert(page);
    ++cell.count;
    cell.words |= mask;
    ++s.page_accesses;
    for (std::uint64_t w = lo >> kModelWordShift;; ++w) {
      ++s.wac.upsert(w);
      ++s.word_accesses;
      if (w == hi >> kModelWordShift) break;
    }
    s.hpt.record(page);
    if (s.hwt.find(page) || s.hpt.estimate(page) >= s.hwt_admit) s.hwt.record(lo, hi - lo + 1);
    if (page == last_page) break;
  }
}

void ControllerModel::access(std::span<const TraceRecord> records) {
  constexpr std::size_t kAhead = 8;
  const State& s = *state_;
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (i + kAhead < records.size()) {
      const std::uint64_t a = records[i + kAhead].address;
      s.pac.prefetch(a >> kModelPageShift);
      s.wac.prefetch(a >> kModelWordShift);
    }
    access(records[i]);
  }
}

ControllerEpoch ControllerModel::end_epoch() {
  State& s = *state_;
  ControllerEpoch e;
  e.index = s.epoch;
  e.records = s.records;
  e.page_accesses = s.page_accesses;
  e.word_accesses = s.word_accesses;
  e.pages.reserve(s.pac.size());
  s.pac.for_each([&](std::uint64_t page, const PageCell& c) { e.pages.push_back({page, c.count, c.words}); });
  std::sort(e.pages.begin(), e.pages.end(), [](const PageCount& a, const PageCount& b) { return a.page < b.page; });
  e.hpt_hot_pages = s.hpt.end_epoch();
  e.hwt_pages = s.hwt.pages();
  s.hwt.reset();
  s.pac.clear();
  s.wac.clear();
  s.records = s.page_accesses = s.word_accesses = 0;
  s.hwt_admit = 1;
  ++s.epoch;
  return e;
}

std::uint64_t ControllerModel::pac(std::uint64_t page) const {
  const PageCell* c = state_->pac.find(page);
  return c ? c->count : 0;
}

std::uint64_t ControllerModel::wac(std::uint64_t word) const {
  const std::uint64_t* c = state_->wac.find(word);
  return c ? *c : 0;
}

std::uint64_t ControllerModel::word_mask(std::uint64_t page) const {
  const PageCell* c = state_->pac.find(page);
  return c ? c->words : 0;
}

std::vector<PageCount> ControllerModel::true_top_k(std::size_t k) const {
  std::vector<PageCount> all;
  all.reserve(state_->pac.size());
  state_->pac.for_each([&](std::uint64_t page, const PageCell& c) { all.push_back({page, c.count, c.words}); });
  const auto hotter = [](const PageCount& a, const PageCount& b) {
    return a.count != b.count ? a.count > b.count : a.page < b.page;
  };
  k = std::min(k, all.size());
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(k), all.end(), hotter);
  all.resize(k);
  return all;
}

std::size_t ControllerModel::pages_touched() const { return state_->pac.size(); }
std::size_t ControllerModel::words_touched() const { return state_->wac.size(); }
std::uint64_t ControllerModel::epoch_index() const { return state_->epoch; }
const HotPageTracker& ControllerModel::hpt() const { return state_->hpt; }
const HotWordTracker& ControllerModel::hwt() const { return state_->hwt; }

std::size_t ControllerModel::memory_bytes() const {
  const State& s = *state_;
  return s.pac.memory_bytes() + s.wac.memory_bytes() + s.hpt.memory_bytes() +
         s.hwt.capacity() * (sizeof(PageWords) + 2 * sizeof(std::uint32_t));
}

}  // namespace cxlpool::tiering
