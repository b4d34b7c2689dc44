// SPDX-License-Identifier: Apache-2.0
// Page id -> PageKey for the pages currently in a tracker's top-K.
//
// The trackers only keep ids; a nomination must name the page. The table
// learns a page when it enters the top-K and forgets pages that left it when
// it grows past a bound, so it stays proportional to K, not to the number of
// pages touched in the epoch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "cxlpool/tiering/m5_manager.hpp"

namespace cxlpool::tiering::manager {

struct NamedPage {
  PageKey key;
  bool words_known = false;  // some access of the page carried a word mask
};

class PageNames {
 public:
  explicit PageNames(std::size_t bound) : bound_(bound < 64 ? 64 : bound) {}

  // Learns (or refreshes) `id`.
  void remember(std::uint64_t id, const PageKey& key, bool words_known) {
    auto [it, fresh] = names_.try_emplace(id, NamedPage{key, words_known});
    if (!fresh) it->second.words_known = it->second.words_known || words_known;
  }

  // True once the table has outgrown its bound; the owner then prunes.
  bool over_bound() const { return names_.size() > bound_; }

  // Drops every entry `still_hot` rejects.
  template <typename Pred>
  void prune(Pred still_hot) {
    std::erase_if(names_, [&](const auto& e) { return !still_hot(e.first); });
  }

  const NamedPage* find(std::uint64_t id) const {
    const auto it = names_.find(id);
    return it == names_.end() ? nullptr : &it->second;
  }
  std::size_t size() const { return names_.size(); }
  void clear() { names_.clear(); }

 private:
  std::size_t bound_;
  std::unordered_map<std::uint64_t, NamedPage> names_;
};

}  // namespace cxlpool::tiering::manager
