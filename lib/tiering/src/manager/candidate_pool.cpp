// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/tiering/manager/candidate_pool.hpp"

#include <algorithm>
#include <cmath>

#include "cxlpool/tiering/manager/nominator.hpp"
#include "cxlpool/tiering/manager/page_id.hpp"

namespace cxlpool::tiering::manager {

void CandidatePool::add(std::span<const Nomination> nominations, std::uint32_t epoch) {
  for (const Nomination& n : nominations) {
    if (n.location != TierLocation::kSlow) continue;
    const auto [it, fresh] = entries_.try_emplace(page_id(n.page));
    Entry& e = it->second;
    if (fresh) e.first_epoch = epoch;
    e.page = n.page;
    e.words |= n.words;
    e.last_epoch = epoch;
  }
}

const std::vector<Nomination>& CandidatePool::refresh(const PlacementView& placement, const HotnessTable& hotness,
                                                      std::uint32_t epoch, std::uint32_t min_accesses,
                                                      std::uint32_t sparse_max_words) {
  const double keep_floor = 0.5 * static_cast<double>(min_accesses);
  scratch_.clear();
  for (auto it = entries_.begin(); it != entries_.end();) {
    const double score = hotness.score(it->first, epoch);
    if (score < keep_floor || placement.locate(it->second.page) != TierLocation::kSlow) {
      it = entries_.erase(it);
      continue;
    }
    scratch_.emplace_back(score, it->first);
    ++it;
  }
  // Hottest first; ties by page id so the order does not depend on hashing.
  std::sort(scratch_.begin(), scratch_.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  if (scratch_.size() > max_entries_) {
    for (std::size_t i = max_entries_; i < scratch_.size(); ++i) entries_.erase(scratch_[i].second);
    scratch_.resize(max_entries_);
  }
  ranked_.clear();
  ranked_.reserve(scratch_.size());
  for (const auto& [score, id] : scratch_) {
    const Entry& e = entries_.at(id);
    if (e.last_epoch - e.first_epoch < kMinReuseEpochs) continue;
    Nomination n;
    n.page = e.page;
    n.count = static_cast<std::uint64_t>(std::llround(score));
    n.words = e.words;
    n.page_class = classify(e.words, sparse_max_words);
    n.location = TierLocation::kSlow;
    ranked_.push_back(n);
  }
  return ranked_;
}

}  // namespace cxlpool::tiering::manager
