// SPDX-License-Identifier: Apache-2.0
// Nominator: which pages were hot this epoch, and whether they are dense or
// sparse.
//
//   HPT-driven  pages go through a Count-Min sketch + top-K (the hot-page
//               tracker); the word masks of pages in the top-K go to a
//               hot-word tracker, which classifies each nominated page as
//               dense or sparse (unknown when the source gave no masks).
//   HWT-driven  64-byte words go through a Count-Min sketch + top-K; pages are
//               built from the hot words: a page's score is the sum of its
//               hot words' counts and its class follows from how many of its
//               words are hot. When hot pages are sparse this finds the pages
//               that hold the hottest words, which page counts dilute.
//
// Both are queried and reset once per epoch, as M5's controller trackers are
// on every host query.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/tiering/m5_manager.hpp"

namespace cxlpool::tiering::manager {

class Nominator {
 public:
  virtual ~Nominator() = default;

  // `count` accesses of `key` (id = page_id(key)) this epoch; `words` is the
  // touched-word mask, 0 when the source cannot tell.
  virtual void record(const PageKey& key, std::uint64_t id, std::uint64_t count, std::uint64_t words) = 0;

  // This epoch's nominations, hottest first (ties by page id), each with
  // count >= min_accesses; location is left kUnknown. Starts a new epoch.
  virtual std::vector<Nomination> end_epoch() = 0;

  virtual NominatorMode mode() const = 0;
  virtual std::size_t memory_bytes() const = 0;
};

// Pages a HWT-driven nominator can build from its word top-K: the word list
// holds kHwtWordsPerPage * top_k words, so it can name top_k pages when each
// has a handful of hot words (sparse), and fewer dense ones.
inline constexpr std::size_t kHwtWordsPerPage = 16;
inline constexpr std::size_t kMaxWordTopK = std::size_t{1} << 20;

// Builds the nominator `config.nominator` names, with the config's tracker
// geometry. EINVAL when the geometry is invalid (see M5Config::validate).
Result<std::unique_ptr<Nominator>> make_nominator(const M5Config& config);
Result<std::unique_ptr<Nominator>> make_hpt_nominator(const M5Config& config);
Result<std::unique_ptr<Nominator>> make_hwt_nominator(const M5Config& config);

// Dense or sparse from a touched-word mask (unknown for 0).
PageClass classify(std::uint64_t words, std::uint32_t sparse_max_words);

}  // namespace cxlpool::tiering::manager
