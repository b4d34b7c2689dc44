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

class OraclePolicy final : public Policy {
 public:
  std::string name() const override { return "oracle"; }
  void start(SimContext& ctx) override;
  void observe(std::span<const Access>, SimContext&) override {}
  std::uint64_t next_event_ns() const override { return next_epoch_ns_; }
  void on_event(SimContext& ctx) override;
  bool hot_pages(std::vector<std::uint32_t>& out, std::size_t k, SimContext& ctx) override;

 private:
  // Places the true top pages of [ctx.now_ns, ctx.now_ns + epoch) on the fast tier.
  void place_epoch(SimContext& ctx);

  std::uint64_t next_epoch_ns_ = kNever;
  std::size_t cursor_ = 0;  // first access not yet counted
  std::vector<std::uint32_t> counts_;
  std::vector<std::uint32_t> touched_;
  std::vector<std::uint8_t> wanted_;
};

}  // namespace cxlpool::tiering::eval
