// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/tiering/manager/promoter.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_set>

#include "cxlpool/tiering/manager/page_id.hpp"

namespace cxlpool::tiering::manager {
namespace {

struct Victim {
  double score = 0;
  std::size_t order = 0;  // position in the caller's list: ties keep its order
  PageKey page;
};

std::uint64_t watermark_pages(double fraction, std::uint64_t capacity) {
  return static_cast<std::uint64_t>(std::floor(fraction * static_cast<double>(capacity)));
}

// The plan's shape before pages are picked.
struct Shape {
  std::uint64_t promote = 0;
  std::uint64_t demote = 0;
};

class Planner {
 public:
  // A swap pairs a candidate whose value is c with a victim whose value is
  // v when v * gap + margin < c and c >= swap_min.
  Planner(std::uint64_t used, std::uint64_t high, std::uint64_t low, std::uint64_t p_max, double swap_min, double gap,
          double margin, const std::vector<double>& cand_min_benefit, const std::vector<Victim>& victims)
      : swap_min_(swap_min),
        gap_(gap),
        margin_(margin),
        used_(used),
        high_(high),
        pressure_(used > high ? used - low : 0),
        p_max_(p_max),
        cand_min_(cand_min_benefit),
        victims_(victims) {}

  Shape shape(std::uint64_t budget) const {
    for (std::uint64_t p = p_max_ + 1; p-- > 0;) {
      if (feasible(p, budget)) return {p, demotions(p)};
    }
    // Not even the pressure demotions fit: do what the budget allows.
    return {0, std::min<std::uint64_t>({pressure_, victims_.size(), budget})};
  }

 private:
  // Pressure demotions first, then one swap per promotion past the room
  // left below the high watermark.
  std::uint64_t demotions(std::uint64_t p) const {
    const std::uint64_t after = used_ - pressure_ + p;
    return pressure_ + (after > high_ ? after - high_ : 0);
  }

  bool feasible(std::uint64_t p, std::uint64_t budget) const {
    const std::uint64_t d = demotions(p);
    if (d > victims_.size() || p + d > budget) return false;
    // Swap victims (past the pressure ones) must be clearly colder than every
    // candidate promoted (victims are coldest first).
    return d <= pressure_ || p == 0 ||
           (victims_[d - 1].score * gap_ + margin_ < cand_min_[p - 1] && cand_min_[p - 1] >= swap_min_);
  }

  double swap_min_, gap_, margin_;
  std::uint64_t used_, high_, pressure_, p_max_;
  const std::vector<double>& cand_min_;
  const std::vector<Victim>& victims_;
};

struct Candidate {
  double benefit = 0;
  std::size_t order = 0;
  const Nomination* nomination = nullptr;
};

}  // namespace

double promotion_benefit(const Nomination& n, double score, const M5Config& config) {
  const bool full_credit = config.promote_sparse || config.nominator == NominatorMode::kHwt;
  return n.page_class == PageClass::kSparse && !full_credit ? score * kSparseBenefit : score;
}

PromoterResult plan_migrations(const PromoterInput& input, const M5Config& config, const PlacementView& placement,
                               const HotnessTable& hotness, TokenBucket& bucket) {
  PromoterResult result;
  if (bucket.rate() == 0) return result;  // migration disabled: nothing to defer either

  const std::uint64_t capacity = input.fast.capacity_pages;
  const auto floor = static_cast<double>(config.min_accesses);
  std::vector<Candidate> candidates;
  if (capacity != 0) {
    std::unordered_set<std::uint64_t> seen;
    seen.reserve(input.nominations.size());
    for (std::size_t i = 0; i < input.nominations.size(); ++i) {
      const Nomination& n = input.nominations[i];
      if (n.location != TierLocation::kSlow) continue;
      const std::uint64_t id = page_id(n.page);
      if (!seen.insert(id).second) continue;
      const double benefit = promotion_benefit(n, hotness.score(id, input.epoch), config);
      if (benefit < floor) continue;
      candidates.push_back({benefit, i, &n});
    }
    std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
      return a.benefit != b.benefit ? a.benefit > b.benefit : a.order < b.order;
    });
  }
  const std::uint64_t used = input.fast.used_pages;
  const std::uint64_t high = watermark_pages(config.high_watermark, capacity);
  const std::uint64_t low = watermark_pages(config.low_watermark, capacity);
  const std::uint64_t p_max = std::min<std::uint64_t>(candidates.size(), input.batch_pages);

  // What a swap compares: the least value among the first p candidates
  // (sorted by benefit, so that is the p-th one's benefit; their activity
  // needs the running minimum).
  const HotnessTable* activity = input.activity;
  std::vector<double> cand_min(p_max);
  for (std::uint64_t i = 0; i < p_max; ++i) {
    if (activity == nullptr) {
      cand_min[i] = candidates[i].benefit;
      continue;
    }
    const double a = activity->score(page_id(candidates[i].nomination->page), input.epoch);
    cand_min[i] = i == 0 ? a : std::min(cand_min[i - 1], a);
  }

  std::vector<Victim> victims;
  if (capacity != 0 && used + p_max > high) {
    const std::uint64_t pressure = used > high ? used - low : 0;
    const std::uint64_t after = used - pressure + p_max;
    const std::uint64_t wanted = pressure + (after > high ? after - high : 0);
    // With accessed bits every fast page is ranked by what was seen of it;
    // without, the caller's order (LRU) is only refined.
    const std::uint64_t look = activity != nullptr ? std::max(used, wanted) : wanted * kVictimScanFactor;
    const std::size_t scan =
        static_cast<std::size_t>(std::clamp<std::uint64_t>(look, kMinVictimScan, kMaxVictimScan));
    std::vector<PageKey> fast;
    placement.fast_pages(fast, scan);
    std::unordered_set<std::uint64_t> nominated;
    nominated.reserve(input.nominations.size());
    for (const Nomination& n : input.nominations) nominated.insert(page_id(n.page));
    victims.reserve(fast.size());
    for (std::size_t i = 0; i < fast.size() && i < scan; ++i) {
      const std::uint64_t id = page_id(fast[i]);
      if (nominated.count(id) != 0) continue;
      victims.push_back({activity != nullptr ? activity->score(id, input.epoch) : hotness.score(id, input.epoch), i,
                         fast[i]});
    }
    const auto colder = [](const Victim& a, const Victim& b) {
      return a.score != b.score ? a.score < b.score : a.order < b.order;
    };
    const std::size_t keep = static_cast<std::size_t>(std::min<std::uint64_t>(victims.size(), wanted));
    std::partial_sort(victims.begin(), victims.begin() + static_cast<std::ptrdiff_t>(keep), victims.end(), colder);
    victims.resize(keep);
  }

  const Planner planner = activity != nullptr
                             ? Planner(used, high, low, p_max, 0, kActivityGap, kActivityMargin, cand_min, victims)
                             : Planner(used, high, low, p_max, input.swap_min_benefit, kSwapGap, 0, cand_min, victims);
  const Shape unlimited = planner.shape(std::numeric_limits<std::uint64_t>::max() / 4);
  const Shape shape = planner.shape(bucket.tokens() / kPageBytes);

  result.plan.promote.reserve(shape.promote);
  for (std::uint64_t i = 0; i < shape.promote; ++i) result.plan.promote.push_back(candidates[i].nomination->page);
  result.plan.demote.reserve(shape.demote);
  for (std::uint64_t i = 0; i < shape.demote; ++i) result.plan.demote.push_back(victims[i].page);
  result.plan.deferred_by_rate_limit = unlimited.promote > shape.promote ? unlimited.promote - shape.promote : 0;
  result.promotions_deferred = result.plan.deferred_by_rate_limit != 0;
  // Fewer promotions need fewer demotions; only a cut beyond that is a deferral.
  result.demotions_deferred = shape.demote + result.plan.deferred_by_rate_limit < unlimited.demote;
  result.pressure_demotions = std::min<std::uint64_t>(shape.demote, used > high ? used - low : 0);
  bucket.take((shape.promote + shape.demote) * kPageBytes);
  return result;
}

}  // namespace cxlpool::tiering::manager
