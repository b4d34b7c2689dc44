// SPDX-License-Identifier: Apache-2.0
// A tiering policy as the simulator drives it: it sees the accesses its
// tracking mechanism would see, acts at its own periods, moves pages through
// Tiers, and says which pages it currently believes are hot (for the
// access-count ratio).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "prepared_trace.hpp"
#include "tiers.hpp"

namespace cxlpool::tiering::eval {

struct SimConfig;

struct SimContext {
  Tiers& tiers;
  const PreparedTrace& trace;
  const SimConfig& config;
  std::uint64_t now_ns = 0;
  // The true per-page access counts of the measurement epoch that just
  // ended and its pages; valid only inside Policy::hot_pages. Only the
  // oracle reads them: every other policy must find hot pages itself.
  const std::vector<std::uint32_t>* epoch_counts = nullptr;
  const std::vector<std::uint32_t>* epoch_pages = nullptr;
};

using Counters = std::vector<std::pair<std::string, std::uint64_t>>;

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string name() const = 0;

  // Before the first access, after the initial placement.
  virtual void start(SimContext& ctx) { (void)ctx; }
  // A batch of consecutive accesses (at most a few hundred, all before
  // next_event_ns()). Migrations made here take effect from the next batch.
  virtual void observe(std::span<const Access> batch, SimContext& ctx) = 0;
  // The policy's own clock: sampling, scanning, aggregation, promotion periods.
  virtual std::uint64_t next_event_ns() const { return kNever; }
  virtual void on_event(SimContext& ctx) { (void)ctx; }

  // Called once at the end of every measurement epoch: the pages this policy
  // identifies as hot right now, hottest first, at most k. Returns false if
  // the policy never identifies hot pages (no migration): no ratio for it.
  virtual bool hot_pages(std::vector<std::uint32_t>& out, std::size_t k, SimContext& ctx) = 0;

  // Policy-specific event counts for the report (hint faults, samples, ...).
  virtual Counters counters() const { return {}; }
  // CPU time spent inside observe/on_event in code that models hardware
  // (M5's controller trackers): reported apart from the host's tracking cost.
  virtual std::uint64_t hardware_ns() const { return 0; }
};

}  // namespace cxlpool::tiering::eval
