// SPDX-License-Identifier: Apache-2.0
// The two reference points: no migration at all (the initial placement
// stays), and the oracle (each oracle epoch the fast tier holds exactly that
// epoch's true top pages, known in advance, moved at no cost limit). Its
// hot pages for the access-count ratio are the measurement epoch's true top-K.
#pragma once

#include "policy.hpp"

namespace cxlpool::tiering::eval {

class NoMigrationPolicy final : public Policy {
 public:
  std::string name() const override { return "no-migration"; }
  void observe(std::span<const Access>, SimContext&) override {}
  bool hot_pages(std::vector<std::uint32_t>&, std::size_t, SimContext&) override { return false; }
};

// Re-places every oracle period with exact per-page counts. kNext: the top
// pages of the period to come (future knowledge: the upper bound of any
// policy that re-places once per period). kLast ("hindsight"): the top pages
// of the period just ended -- perfect detection and nothing predicted, the
// bound of a placement that follows what it detected, once per period.
enum class OracleWindow : std::uint8_t { kNext, kLast };

class OraclePolicy final : public Policy {
 public:
  explicit OraclePolicy(OracleWindow window = OracleWindow::kNext) : window_(window) {}
  std::string name() const override { return window_ == OracleWindow::kNext ? "oracle" : "hindsight"; }
  void start(SimContext& ctx) override;
  void observe(std::span<const Access>, SimContext&) override {}
  std::uint64_t next_event_ns() const override { return next_epoch_ns_; }
  void on_event(SimContext& ctx) override;
  bool hot_pages(std::vector<std::uint32_t>& out, std::size_t k, SimContext& ctx) override;

 private:
  // Places the true top pages of [now, now + period) (kNext) or
  // [now - period, now) (kLast) on the fast tier.
  void place_epoch(SimContext& ctx);

  OracleWindow window_;
  std::uint64_t next_epoch_ns_ = kNever;
  std::size_t cursor_ = 0;  // first access not yet counted
  std::vector<std::uint32_t> counts_;
  std::vector<std::uint32_t> touched_;
  std::vector<std::uint8_t> wanted_;
};

}  // namespace cxlpool::tiering::eval
