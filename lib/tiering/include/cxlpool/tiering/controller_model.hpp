// SPDX-License-Identifier: Apache-2.0
// Software model of a CXL memory controller's access-tracking unit.
//
// Ground truth: exact per-page access counters (PAC, 4 KiB pages) and exact
// per-64-byte-word access counters (WAC). Next to them, the trackers a real
// controller can afford: the HPT (Count-Min sketch + top-K) and the HWT
// (bounded hot-word table). Every access goes to all four, so a caller can
// measure how far the sketches are from the truth on the same stream.
//
// An access of `size` bytes touches every word and page it spans: each page
// spanned counts one access (PAC, HPT, HWT), each word spanned one (WAC).
// end_epoch() hands out the epoch and resets all counters, as the hardware
// does when the host reads them.
//
// The HWT is fed, as in M5, from the page tracker: a page's accesses reach
// the HWT once its HPT estimate reaches the count at the bottom of the HPT's
// top-K (refreshed every 4096 accesses; every page while the top-K is not
// full). Its word masks are therefore a lower bound of the exact ones.
//
// The exact counters are open-addressing tables with an epoch stamp per slot:
// resetting them costs O(1) (plus O(touched) to hand out the epoch), not
// O(table); tables grow by doubling and keep their size across epochs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/tiering/hot_page_tracker.hpp"
#include "cxlpool/tiering/hot_word_tracker.hpp"
#include "cxlpool/tiering/trace_record.hpp"

namespace cxlpool::tiering {

inline constexpr std::uint64_t kModelPageShift = 12;
inline constexpr std::uint64_t kModelWordShift = 6;

struct ControllerModelConfig {
  // M5's controller: 32K sketch counters (4 x 8192), top 512 pages.
  HotPageTrackerConfig hpt{CountMinSketchConfig{4, 8192, false, 0}, 512};
  HotWordTrackerConfig hwt{4096, 16};
  // Initial slots of the exact tables (they grow as needed), 1..2^30.
  std::size_t expected_pages = 1u << 16;
  std::size_t expected_words = 1u << 18;
};

// Exact counts of one page this epoch.
struct PageCount {
  std::uint64_t page = 0;      // address >> 12
  std::uint64_t count = 0;     // PAC: accesses that touched the page
  std::uint64_t words = 0;     // bit w: word w of the page was touched (WAC > 0)
  bool operator==(const PageCount&) const = default;
};

struct ControllerEpoch {
  std::uint64_t index = 0;             // 0 for the first epoch
  std::uint64_t records = 0;           // access() calls
  std::uint64_t page_accesses = 0;     // sum of PAC
  std::uint64_t word_accesses = 0;     // sum of WAC
  std::vector<PageCount> pages;        // every page touched, ascending page
  std::vector<HotPage> hpt_hot_pages;  // HPT top-K, hottest first (estimates >= PAC)
  std::vector<PageWords> hwt_pages;    // HWT table, most accessed first
};

class ControllerModel {
 public:
  // EINVAL: bad tracker config or expected sizes out of range.
  static Result<ControllerModel> create(const ControllerModelConfig& config);
  ControllerModel(ControllerModel&&) noexcept;
  ControllerModel& operator=(ControllerModel&&) noexcept;
  ~ControllerModel();

  // size 0 touches nothing; a range past 2^64 is clipped there.
  void access(const TraceRecord& record);
  // Same as access() on each record in order; prefetches the counters of
  // records a little ahead, which pays off once the tables outgrow the cache.
  void access(std::span<const TraceRecord> records);

  // Hands out the epoch (pages sorted by page number) and resets PAC, WAC,
  // HPT and HWT.
  ControllerEpoch end_epoch();

  // Current epoch, exact.
  std::uint64_t pac(std::uint64_t page) const;
  std::uint64_t wac(std::uint64_t word) const;  // word = address >> 6
  std::uint64_t word_mask(std::uint64_t page) const;
  // The k pages with the highest PAC, highest first (ties by page number).
  std::vector<PageCount> true_top_k(std::size_t k) const;
  std::size_t pages_touched() const;
  std::size_t words_touched() const;
  std::uint64_t epoch_index() const;

  const HotPageTracker& hpt() const;
  const HotWordTracker& hwt() const;
  // Bytes held by the exact tables and the trackers.
  std::size_t memory_bytes() const;

 private:
  struct State;
  explicit ControllerModel(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace cxlpool::tiering
